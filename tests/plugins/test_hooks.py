"""Running hook commands as real subprocesses, with the sample-toolkit scripts."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from plugins import (
    Hook,
    HookEvent,
    HookOutcome,
    LifecyclePoint,
    hook_payload,
    load_plugin,
    run_hook,
    run_hooks,
    select_hooks,
)

from .conftest import SAMPLES


def _hook(tmp_path: Path, command: str, timeout: float = 10) -> Hook:
    return Hook(event=HookEvent.PRE_TOOL_USE, command=command, plugin_root=tmp_path,
                source=tmp_path / "hooks.json", timeout=timeout, env={"PLUGIN_ROOT": str(tmp_path)})


def _env(log: Path) -> dict[str, str]:
    return {**os.environ, "SAMPLE_TOOLKIT_HOOK_LOG": str(log)}


async def test_session_start_hook_gets_the_event_json_on_stdin_and_plugin_root(toolkit_copy: Path, tmp_path: Path) -> None:
    log = tmp_path / "hooks.log"
    plugin = load_plugin(toolkit_copy)
    (hook,) = select_hooks([plugin], LifecyclePoint.SESSION_START)
    payload = hook_payload(HookEvent.SESSION_START, session_id="s-1", cwd=tmp_path, source="startup")
    result = await run_hook(hook, payload, cwd=tmp_path, base_env=_env(log))
    assert result.outcome is HookOutcome.SUCCESS and result.exit_code == 0
    (line,) = log.read_text().splitlines()
    _epoch, event, size, root = line.split(" ")
    assert event == "SessionStart"
    assert size == f"bytes={len(json.dumps(payload).encode())}"
    assert root == "plugin_root=yes"


async def test_guard_hook_exit_2_blocks_with_stderr_as_the_reason(toolkit_copy: Path, tmp_path: Path) -> None:
    plugin = load_plugin(toolkit_copy)
    hooks = select_hooks([plugin], HookEvent.PRE_TOOL_USE, "bash")
    assert [h.matcher for h in hooks] == [None, "[Bb]ash|[Ss]hell|[Tt]erminal"]
    blocked = hook_payload(HookEvent.PRE_TOOL_USE, session_id="s", cwd=tmp_path, tool_name="bash",
                           tool_input={"command": "echo SAMPLE_TOOLKIT_BLOCK_ME"})
    results = await run_hooks(hooks, blocked, cwd=tmp_path, base_env=_env(tmp_path / "log"))
    assert [r.outcome for r in results] == [HookOutcome.SUCCESS, HookOutcome.BLOCKED]
    assert results[-1].exit_code == 2
    assert results[-1].reason == "sample-toolkit guard: this command carries the block sentinel, refusing it"

    allowed = hook_payload(HookEvent.PRE_TOOL_USE, session_id="s", cwd=tmp_path, tool_name="bash",
                           tool_input={"command": "ls"})
    results = await run_hooks(hooks, allowed, cwd=tmp_path, base_env=_env(tmp_path / "log"))
    assert [r.outcome for r in results] == [HookOutcome.SUCCESS, HookOutcome.SUCCESS]


async def test_guard_does_not_fire_for_tools_its_matcher_rejects(toolkit_copy: Path) -> None:
    plugin = load_plugin(toolkit_copy)
    assert [h.matcher for h in select_hooks([plugin], HookEvent.PRE_TOOL_USE, "read_file")] == [None]
    assert select_hooks([plugin], LifecyclePoint.AFTER_TOOL_CALL, "read_file") == []
    assert len(select_hooks([plugin], LifecyclePoint.AFTER_TOOL_CALL, "edit_file")) == 1


async def test_plugin_root_with_spaces_still_runs(toolkit_copy: Path, tmp_path: Path) -> None:
    spaced = tmp_path / "my plugins" / "toolkit"
    shutil.copytree(toolkit_copy, spaced, symlinks=True)
    log = tmp_path / "spaced.log"
    (hook,) = select_hooks([load_plugin(spaced)], HookEvent.STOP)
    result = await run_hook(hook, {"hook_event_name": "Stop"}, base_env=_env(log))
    assert result.outcome is HookOutcome.SUCCESS
    assert " Stop " in log.read_text()


async def test_other_exit_codes_are_non_blocking_errors(tmp_path: Path) -> None:
    result = await run_hook(_hook(tmp_path, "echo 'disk full' >&2; exit 1"), {})
    assert result.outcome is HookOutcome.ERROR and not result.blocked
    assert result.reason == "hook exited with status 1: disk full"


async def test_json_stdout_can_deny_and_add_context(tmp_path: Path) -> None:
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                     "permissionDecisionReason": "no network tools today",
                                     "additionalContext": "policy v2"}}
    result = await run_hook(_hook(tmp_path, f"cat >/dev/null; echo '{json.dumps(output)}'"), {"x": 1})
    assert result.outcome is HookOutcome.BLOCKED
    assert (result.reason, result.permission_decision, result.additional_context) == (
        "no network tools today", "deny", "policy v2")


async def test_hook_runs_in_the_session_cwd_with_the_hook_env(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    result = await run_hook(_hook(tmp_path, 'printf "%s|%s" "$PWD" "$PLUGIN_ROOT"'), {}, cwd=workdir)
    assert result.stdout == f"{workdir}|{tmp_path}"


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1].startswith("Z")
    except FileNotFoundError:
        return True


async def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    command = f"sleep 30 & echo $! > {pid_file}; wait"
    result = await run_hook(_hook(tmp_path, command, timeout=0.5), {})
    assert result.outcome is HookOutcome.TIMEOUT and not result.blocked
    assert "timed out after 0.5 s" in result.reason
    grandchild = int(pid_file.read_text())

    async def until_gone() -> None:
        while not _gone(grandchild):
            await asyncio.sleep(0.01)

    await asyncio.wait_for(until_gone(), timeout=5)


async def test_a_hook_that_cannot_start_is_an_error(tmp_path: Path) -> None:
    hook = Hook(event=HookEvent.STOP, command="true", plugin_root=tmp_path / "missing", source=tmp_path)
    result = await run_hook(hook, {})
    assert result.outcome is HookOutcome.ERROR and "could not start" in result.reason


@pytest.mark.parametrize("point", list(LifecyclePoint))
def test_broken_plugin_contributes_no_hooks_at_any_point(point: LifecyclePoint) -> None:
    broken = load_plugin(SAMPLES / "sample-broken")
    assert select_hooks([broken], point, "bash") == []


def test_matchers_also_see_claude_style_aliases(toolkit_copy: Path) -> None:
    plugin = load_plugin(toolkit_copy)
    assert len(select_hooks([plugin], HookEvent.POST_TOOL_USE, "apply_text_change")) == 0
    assert len(select_hooks([plugin], HookEvent.POST_TOOL_USE, "apply_text_change", aliases=("Edit",))) == 1


def test_claude_code_matchers_are_exact_names_unless_they_are_regular_expressions(tmp_path: Path) -> None:
    def hook(matcher: str | None) -> Hook:
        return Hook(event=HookEvent.PRE_TOOL_USE, command="true", plugin_root=tmp_path, source=tmp_path, matcher=matcher)

    assert hook("Edit").matches("Edit") and not hook("Edit").matches("NotebookEdit")
    assert hook("Edit|Write").matches("Write") and not hook("Edit|Write").matches("MultiEdit")
    assert hook("startup|clear|compact").matches("compact") and not hook("startup|clear|compact").matches("resume")
    assert hook("mcp__github__.*").matches("mcp__github__create_issue") and not hook("mcp__github__.*").matches("mcp__git__x")
    assert hook("^Notebook").matches("NotebookEdit")
    assert all(hook(m).matches("Anything") for m in (None, "", "*"))


async def test_every_answer_field_is_read(tmp_path: Path) -> None:
    output = {"continue": False, "stopReason": "enough", "systemMessage": "note for you", "suppressOutput": True,
              "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                     "permissionDecisionReason": "check it", "updatedInput": {"command": "ls -a"},
                                     "additionalContext": "more"}}
    result = await run_hook(_hook(tmp_path, f"cat >/dev/null; echo '{json.dumps(output)}'"), {})
    assert result.outcome is HookOutcome.SUCCESS and result.stopped
    assert (result.stop_reason, result.system_message, result.suppress_output) == ("enough", "note for you", True)
    assert (result.permission_decision, result.permission_reason, result.updated_input, result.additional_context) == (
        "ask", "check it", {"command": "ls -a"}, "more")
    older = await run_hook(_hook(tmp_path, """cat >/dev/null; echo '{"decision": "block", "reason": "no"}'"""), {})
    assert (older.blocked, older.permission_decision, older.reason) == (True, "deny", "no")


async def test_a_hook_answering_async_on_its_first_line_goes_on_in_the_background(tmp_path: Path) -> None:
    done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    command = """cat >/dev/null; echo '{"async": true, "asyncTimeout": 5000}'; sleep 0.2; echo '{"systemMessage": "later"}'"""
    result = await run_hook(_hook(tmp_path, command), {}, on_background=done.set_result)
    assert result.asynchronous and result.system_message is None
    late = await asyncio.wait_for(done, 10)
    assert late.system_message == "later"


def test_claude_code_action_fields_are_read_and_what_this_host_cannot_do_is_said(tmp_path: Path) -> None:
    plugin = tmp_path / "p"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "p"}))
    (plugin / "hooks").mkdir()
    action = {"type": "command", "command": "true"}
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{**action, "if": "Bash(git *)"}, {**action, "async": True},
                                                     {**action, "asyncRewake": True}, {**action, "once": True}]}],
        "Stop": [{"hooks": [{**action, "if": "Bash(git *)"}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{**action, "if": "Bash(git *"}]}],
    }}))
    loaded = load_plugin(plugin)
    conditional, background, rewake, once = loaded.hooks
    assert conditional.condition == "Bash(git *)" and background.run_async and not background.async_rewake
    assert rewake.run_async and rewake.async_rewake and not once.run_async
    said = {(d.severity.value, d.keys[-1]): d.message for d in loaded.diagnostics}
    assert "never runs" in said[("warning", "if")]  # on Stop: skipped, as Claude Code would never run it
    assert "does not start a turn by itself" in said[("warning", "asyncRewake")]
    assert "runs every time" in said[("info", "once")]
    assert len(loaded.hooks) == 4  # the Stop hook and the one whose 'if' is no rule are not loaded
