"""Hooks written for Claude Code get Claude Code's input and their answers are honoured, end to end.

Every test runs a real host on port 0 with a scripted model and a plugin whose hooks are real
scripts: ``record.py`` appends the JSON it got on stdin to the plugin's ``log.jsonl`` and answers
what the test put in ``answers/<name>[-<tool_name>].json`` (``stdout``, ``stderr``, ``exit``).
Each test checks what a script received, what the user saw (the actions the client received)
and what the model was sent (the scripted provider's requests). The published plugins' cases
(security-guidance, hookify, ralph-wiggum, superpowers) use their ``hooks.json`` shapes, with
scripts written here."""

from __future__ import annotations

import asyncio
import json
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from client import AhpClient
from host.transport.server import RunningHost
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.conftest import FrameChecker
from tests.host.runtime.agents.harness import config_for, ready_session, run_turn, serving
from tests.host.runtime.test_trust import agent
from tests.host.runtime.tools._support import session_with

RECORD = r'''import json, os, sys
name = sys.argv[1]
root = os.path.dirname(os.path.abspath(__file__))
event = json.load(sys.stdin)
with open(os.path.join(root, "log.jsonl"), "a") as log:
    log.write(json.dumps({"name": name, "input": event}) + "\n")
tool = event.get("tool_name")
for candidate in ([f"{name}-{tool}"] if tool else []) + [name]:
    path = os.path.join(root, "answers", candidate + ".json")
    if os.path.exists(path):
        answer = json.load(open(path))
        if isinstance(answer.get("stdout"), dict):
            answer["stdout"] = json.dumps(answer["stdout"])
        sys.stdout.write(answer.get("stdout", ""))
        sys.stderr.write(answer.get("stderr", ""))
        sys.exit(answer.get("exit", 0))
'''


def _command(name: str) -> dict[str, Any]:
    return {"type": "command", "command": f"python3 ${{CLAUDE_PLUGIN_ROOT}}/record.py {name}"}


def make_plugin(root: Path, hooks: dict[str, Any], name: str = "cc-hooks", scripts: dict[str, str] | None = None) -> Path:
    plugin = root / name
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": name, "version": "1.0.0"}))
    (plugin / "hooks").mkdir()
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": hooks}, indent=2))
    (plugin / "answers").mkdir()
    (plugin / "record.py").write_text(RECORD)
    for script, text in (scripts or {}).items():
        path = plugin / script
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return plugin


def answer(plugin: Path, name: str, *, stdout: Any = "", stderr: str = "", code: int = 0) -> None:
    (plugin / "answers" / f"{name}.json").write_text(json.dumps({"stdout": stdout, "stderr": stderr, "exit": code}))


def received(plugin: Path, name: str | None = None) -> list[dict[str, Any]]:
    log = plugin / "log.jsonl"
    entries = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [e["input"] for e in entries if name is None or e["name"] == name]


def text_of(message: Any) -> str:
    """What the model reads of one message (user text, tool results)."""
    if hasattr(message, "results"):
        return "\n".join(c.text for r in message.results for c in r.content if hasattr(c, "text"))
    return "\n".join(c.text for c in getattr(message, "content", ()) if hasattr(c, "text"))


def calls(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]


def notes(turn: dict[str, Any]) -> list[str]:
    return [p["content"] for p in turn["responseParts"] if p["kind"] == "systemNotification"]


class Host:
    def __init__(self, running: RunningHost, client: AhpClient, provider: ScriptedProvider, work: Path) -> None:
        self.running, self.client, self.provider, self.work = running, client, provider, work
        self.session = ""

    async def background_done(self) -> None:
        """Until the session's background hooks finished and their results were taken in."""
        ident = self.session.split(":/", 1)[1]
        runtime = next(r for uri, r in self.running.host.customizations.sessions.items() if uri.endswith(":/" + ident))
        while runtime.background:
            await asyncio.gather(*runtime.background, return_exceptions=True)

    def pending(self) -> dict[str, Any] | None:
        turn = (self.client.state(self.session) or {}).get("activeTurn") or {}
        return next((p["toolCall"] for p in turn.get("responseParts", ()) if p.get("kind") == "toolCall"
                     and p["toolCall"].get("status") == "pending-confirmation"), None)

    async def approve(self, turn_id: str) -> dict[str, Any]:
        await self.client.wait_for(lambda m, e: self.pending() is not None, timeout=20)
        call = self.pending()
        assert call is not None
        option = next(o for o in call["options"] if o["kind"] == "approve")
        self.client.dispatch(self.session, {"type": "session/toolCallConfirmed", "turnId": turn_id, "toolCallId": call["toolCallId"],
                                            "approved": True, "confirmed": "user-action", "selectedOptionId": option["id"]})
        return call

    async def finished(self, turn_id: str) -> dict[str, Any]:
        await self.client.wait_for(lambda m, e: any(t["id"] == turn_id for t in (self.client.state(self.session) or {}).get("turns") or ()),
                                   timeout=20)
        return next(t for t in self.client.state(self.session)["turns"] if t["id"] == turn_id)


@asynccontextmanager
async def hosting(tmp_path: Path, checker: FrameChecker, plugins: Path, *, allow: list[str] | None = None,
                  session_config: dict[str, Any] | None = None, **overrides: Any) -> AsyncIterator[Host]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    provider = ScriptedProvider([])
    config = config_for(tmp_path, plugins={"directories": [str(plugins)]}, tools={"enabled": True, "allow": allow or []},
                        sessions={"default_directory": str(work)}, **overrides)
    # The harness's 0.2.0 client: these tests read the 0.2.0 session shapes (turns on the session).
    async with serving(config, checker, [agent(provider)]) as (running, client):
        host = Host(running, client, provider, work)
        host.session = await (session_with(client, config=session_config) if session_config else ready_session(client))
        yield host


# -- input -----------------------------------------------------------------------------------------


async def test_tool_hooks_get_claude_codes_names_arguments_transcript_and_permission_mode(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {
        "PreToolUse": [{"matcher": "Write", "hooks": [_command("pre")]}],
        "PostToolUse": [{"matcher": "Write|Bash", "hooks": [_command("post")]}],
    })
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["write_file", "shell(echo:*)"]) as host:
        host.provider.add(call_tools(("write_file", {"path": "notes/a.txt", "content": "hello"}),
                                     ("shell", {"command": "echo hi", "timeout_seconds": 5}), text_before="Writing it."))
        host.provider.add(reply("Done."))
        turn = await run_turn(host.client, host.session, "write the note")
    assert turn["state"] == "complete"
    (pre,) = received(plugin, "pre")
    work = str(host.work)
    assert pre["hook_event_name"] == "PreToolUse" and pre["tool_name"] == "Write"
    assert pre["tool_input"] == {"file_path": f"{work}/notes/a.txt", "content": "hello"}
    assert pre["cwd"] == work and pre["permission_mode"] == "default"
    assert pre["session_id"] == host.session.split(":/", 1)[1] and pre["tool_use_id"]
    post_write, post_bash = sorted(received(plugin, "post"), key=lambda e: e["tool_name"], reverse=True)
    assert post_write["tool_response"] == {"type": "create", "filePath": f"{work}/notes/a.txt", "content": "hello"}
    assert post_bash["tool_input"] == {"command": "echo hi", "timeout": 5000}
    assert post_bash["tool_response"]["stdout"].strip() == "hi" and post_bash["tool_response"]["interrupted"] is False
    # The transcript: Claude Code's JSONL, compact, up to date when the hook ran.
    lines = [json.loads(line) for line in Path(post_bash["transcript_path"]).read_text().splitlines()]
    assert '"role":"assistant"' in Path(post_bash["transcript_path"]).read_text()
    assert lines[0]["type"] == "user" and lines[0]["message"] == {"role": "user", "content": "write the note"}
    assert lines[1]["message"]["content"] == [{"type": "text", "text": "Writing it."}]
    uses = [block for line in lines for block in line["message"]["content"] if isinstance(line["message"]["content"], list)
            and block.get("type") == "tool_use"]
    assert [(u["name"], u["input"]) for u in uses] == [
        ("Write", {"file_path": f"{work}/notes/a.txt", "content": "hello"}), ("Bash", {"command": "echo hi", "timeout": 5000})]
    results = [block for line in lines if line["type"] == "user" and isinstance(line["message"]["content"], list)
               for block in line["message"]["content"]]
    assert results and all(r["type"] == "tool_result" and not r["is_error"] for r in results)
    assert all(line["sessionId"] == pre["session_id"] and line["cwd"] == work for line in lines)
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]


async def test_the_transcript_is_removed_with_the_session(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"UserPromptSubmit": [{"hooks": [_command("prompt")]}]})
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        host.provider.add(reply("hello"))
        await run_turn(host.client, host.session, "hi there")
        (prompt,) = received(plugin, "prompt")
        assert prompt["prompt"] == "hi there"
        transcript = Path(prompt["transcript_path"])
        assert transcript.exists() and transcript.parent == tmp_path / "data" / "transcripts"
        assert oct(transcript.stat().st_mode & 0o777) == "0o600"
        await host.client.dispose_session(host.session)
        await host.client.wait_for(lambda m, e: not transcript.exists(), timeout=20)


async def test_session_start_matchers_see_the_source_as_superpowers_uses_them(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # obra/superpowers: {"matcher": "startup|resume|clear|compact"} on SessionStart; here without "resume".
    plugin = make_plugin(tmp_path / "plugins", {"SessionStart": [
        {"matcher": "startup|clear|compact", "hooks": [_command("start")]},
        {"matcher": "resume", "hooks": [_command("resumed")]},
    ]})
    answer(plugin, "start", stdout={"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                           "additionalContext": "You have superpowers."},
                                    "systemMessage": "superpowers loaded"})
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        host.provider.add(reply("ok"))
        turn = await run_turn(host.client, host.session, "hello")
    (start,) = received(plugin, "start")
    assert start["source"] == "startup" and start["hook_event_name"] == "SessionStart"
    assert received(plugin, "resumed") == []
    assert "You have superpowers." in (host.provider.requests[0].system or "")
    assert "superpowers loaded" in notes(turn)


# -- PreToolUse answers -------------------------------------------------------------------------


async def test_allow_skips_the_confirmation_and_ask_forces_it_with_the_reason(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"PreToolUse": [{"matcher": "Bash", "hooks": [_command("pre")]}]})
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["shell(echo:*)"]) as host:
        # allow: "ls" would need a confirmation; the hook's allow skips it.
        answer(plugin, "pre", stdout={"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                                             "permissionDecisionReason": "ls is harmless"}})
        host.provider.add(call_tools(("shell", {"command": "ls"})))
        host.provider.add(reply("listed"))
        turn = await run_turn(host.client, host.session, "list")
        (call,) = calls(turn)
        assert (call["status"], call["success"], call["confirmed"]) == ("completed", True, "setting")
        # ask: "echo" is allowed by a rule; the hook's ask makes the user confirm, with its reason.
        answer(plugin, "pre", stdout={"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                                             "permissionDecisionReason": "echo prints secrets here"}})
        host.provider.add(call_tools(("shell", {"command": "echo hi"})))
        host.provider.add(reply("echoed"))
        turn_id = host.client.send_message(host.session, "echo")
        pending = await host.approve(turn_id)
        turn = await host.finished(turn_id)
    assert "echo prints secrets here" in pending["confirmationTitle"]
    (call,) = calls(turn)
    assert (call["status"], call["success"], call["confirmed"]) == ("completed", True, "user-action")


async def test_deny_and_exit_2_refuse_the_call_and_the_model_reads_why(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"PreToolUse": [{"matcher": "*", "hooks": [_command("pre")]}]})
    answer(plugin, "pre-Bash", stdout={"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                              "permissionDecisionReason": "no shell on Fridays"}})
    answer(plugin, "pre-Write", stderr="writing there is not allowed", code=2)
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["shell", "write_file"]) as host:
        host.provider.add(call_tools(("shell", {"command": "touch ran"}), ("write_file", {"path": "x.txt", "content": "x"})))
        host.provider.add(reply("ok"))
        turn = await run_turn(host.client, host.session, "go")
    shell, write = calls(turn)
    assert (shell["success"], shell["error"]["message"]) == (False, "no shell on Fridays")
    assert (write["success"], write["error"]["message"]) == (False, "writing there is not allowed")
    assert not (host.work / "ran").exists() and not (host.work / "x.txt").exists()
    seen = text_of(host.provider.requests[1].messages[-1])
    assert "no shell on Fridays" in seen and "writing there is not allowed" in seen


async def test_updated_input_runs_instead_and_the_user_sees_it(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"PreToolUse": [{"matcher": "Bash", "hooks": [_command("pre")]}]})
    answer(plugin, "pre", stdout={"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                                         "updatedInput": {"command": "echo changed", "timeout": 9000},
                                                         "additionalContext": "Commands run in the staging sandbox."}})
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        host.provider.add(call_tools(("shell", {"command": "echo original"})))
        host.provider.add(reply("ok"))
        turn = await run_turn(host.client, host.session, "go")
    (call,) = calls(turn)
    assert json.loads(call["toolInput"]) == {"command": "echo changed", "timeout_seconds": 9.0}
    result = text_of(host.provider.requests[1].messages[-1])
    assert call["success"] and "changed" in result and result.endswith("Commands run in the staging sandbox.")
    assert any("changed the input of this Bash call" in n and "echo changed" in n for n in notes(turn))


async def test_if_conditions_use_permission_rule_syntax(tmp_path: Path, frame_checker: FrameChecker) -> None:
    conditional = {**_command("git-guard"), "if": "Bash(git *)"}
    plugin = make_plugin(tmp_path / "plugins", {"PreToolUse": [{"matcher": "Bash", "hooks": [conditional]}]})
    answer(plugin, "git-guard", stderr="no git here", code=2)
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["shell"]) as host:
        host.provider.add(call_tools(("shell", {"command": "echo fine"}), ("shell", {"command": "echo x && git push"})))
        host.provider.add(reply("ok"))
        turn = await run_turn(host.client, host.session, "go")
    fine, git = calls(turn)
    assert fine["success"] and (git["success"], git["error"]["message"]) == (False, "no git here")
    assert [e["tool_input"]["command"] for e in received(plugin, "git-guard")] == ["echo x && git push"]


# -- after the call, the prompt, the stop ---------------------------------------------------------


async def test_post_tool_use_feedback_and_failure_input(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {
        "PostToolUse": [{"matcher": "Bash", "hooks": [_command("post")]}],
        "PostToolUseFailure": [{"matcher": "Bash", "hooks": [_command("failed")]}],
    })
    answer(plugin, "post", stdout={"decision": "block", "reason": "the output has a typo; fix it",
                                   "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "lint: 0 errors"}})
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["shell"]) as host:
        host.provider.add(call_tools(("shell", {"command": "echo helo"}), ("shell", {"command": "exit 3"})))
        host.provider.add(reply("ok"))
        await run_turn(host.client, host.session, "go")
    (failed,) = received(plugin, "failed")
    assert failed["hook_event_name"] == "PostToolUseFailure" and failed["tool_input"] == {"command": "exit 3"}
    assert failed["error"] and failed["is_interrupt"] is False
    seen = text_of(host.provider.requests[1].messages[-1])
    assert "the output has a typo; fix it" in seen and "lint: 0 errors" in seen


async def test_continue_false_stops_the_turn_and_the_user_reads_the_stop_reason(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"PostToolUse": [{"hooks": [_command("post")]}]})
    answer(plugin, "post", stdout={"continue": False, "stopReason": "build is red: stopping", "suppressOutput": True})
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["shell"]) as host:
        host.provider.add(call_tools(("shell", {"command": "echo a"})))
        host.provider.add(reply("never sent"))
        turn = await run_turn(host.client, host.session, "go")
    assert turn["state"] == "complete" and len(host.provider.requests) == 1
    assert "A plugin hook stopped this turn: build is red: stopping" in notes(turn)


async def test_user_prompt_submit_blocks_adds_context_and_stops(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"UserPromptSubmit": [{"hooks": [_command("prompt")]}]})
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        answer(plugin, "prompt", stdout={"decision": "block", "reason": "no secrets in prompts", "systemMessage": "prompt refused"})
        refused = await run_turn(host.client, host.session, "my password is hunter2")
        answer(plugin, "prompt", stdout={"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "Sprint S42"}})
        host.provider.add(reply("ok"))
        await run_turn(host.client, host.session, "plan the sprint")
        answer(plugin, "prompt", stdout={"continue": False, "stopReason": "quiet hours"})
        stopped = await run_turn(host.client, host.session, "anything")
    assert refused["state"] == "error" and "no secrets in prompts" in refused["error"]["message"]
    assert "prompt refused" in notes(refused)
    assert len(host.provider.requests) == 1  # neither the refused nor the stopped prompt reached the model
    assert text_of(host.provider.requests[0].messages[-1]).endswith("[Context added by a plugin hook]\nSprint S42")
    assert not any("hunter2" in text_of(m) for m in host.provider.requests[0].messages)  # erased, as in Claude Code
    assert stopped["state"] == "complete" and "A plugin hook stopped this turn: quiet hours" in notes(stopped)
    assert [e["prompt"] for e in received(plugin, "prompt")] == ["my password is hunter2", "plan the sprint", "anything"]


async def test_async_hooks_run_in_the_background_and_speak_at_the_next_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # The hook waits for a file the test writes only after the turn ended: a turn that waited for it
    # would never end.
    release = tmp_path / "release"
    script = f"""#!/bin/sh
cat > /dev/null
while [ ! -e {release} ]; do sleep 0.05; done
echo '{{"systemMessage": "tests passed in the background", "hookSpecificOutput": {{"hookEventName": "PostToolUse", "additionalContext": "background: 12 tests passed"}}}}'
echo done >> {tmp_path / "async.log"}
"""
    plugin = make_plugin(tmp_path / "plugins", {"PostToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/run-tests.sh", "async": True, "timeout": 60}]}]},
        scripts={"run-tests.sh": script})
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["write_file"]) as host:
        host.provider.add(call_tools(("write_file", {"path": "a.py", "content": "x = 1\n"})))
        host.provider.add(reply("written"))
        first = await run_turn(host.client, host.session, "write it")
        assert first["state"] == "complete"
        assert "background" not in text_of(host.provider.requests[1].messages[-1])
        release.write_text("go")
        await asyncio.wait_for(host.background_done(), 20)
        assert (tmp_path / "async.log").read_text() == "done\n"
        host.provider.add(reply("noted"))
        second = await run_turn(host.client, host.session, "next")
    assert "background: 12 tests passed" in text_of(host.provider.requests[2].messages[-1])
    assert "tests passed in the background" in text_of(host.provider.requests[2].messages[-1])
    assert "tests passed in the background" in notes(second)


async def test_an_async_rewake_hooks_exit_2_reaches_the_model_with_the_next_turn(tmp_path: Path, frame_checker: FrameChecker) -> None:
    release = tmp_path / "release"
    script = f"""#!/bin/sh
cat > /dev/null
while [ ! -e {release} ]; do sleep 0.05; done
echo "3 tests failed: test_a, test_b, test_c" >&2
exit 2
"""
    plugin = make_plugin(tmp_path / "plugins", {"PostToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/run-tests.sh", "asyncRewake": True,
         "rewakeMessage": "Background test run: fix these.", "rewakeSummary": "Tests failed"}]}]},
        scripts={"run-tests.sh": script})
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["write_file"]) as host:
        (loaded,) = host.running.host.customizations.plugins
        assert any("does not start a turn by itself" in str(d) for d in loaded.warnings)  # the plugin's diagnostics say so
        host.provider.add(call_tools(("write_file", {"path": "a.py", "content": "x = 1\n"})))
        host.provider.add(reply("written"))
        first = await run_turn(host.client, host.session, "write it")
        assert first["state"] == "complete"
        release.write_text("go")
        await asyncio.wait_for(host.background_done(), 20)
        host.provider.add(reply("I will fix them"))
        second = await run_turn(host.client, host.session, "next")
    assert "[PostToolUse hook, ran in the background] Background test run: fix these.\n3 tests failed" in text_of(
        host.provider.requests[2].messages[-1])
    assert "Tests failed: 3 tests failed: test_a, test_b, test_c" in notes(second)


async def test_hook_failures_are_shown_to_the_user_and_the_turn_goes_on(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"Stop": [{"hooks": [_command("stop")]}]})
    answer(plugin, "stop", stderr="lint crashed", code=1)
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        host.provider.add(reply("hello"))
        turn = await run_turn(host.client, host.session, "hi")
    assert turn["state"] == "complete"
    assert any("Stop hook failed" in n and "lint crashed" in n for n in notes(turn))


# -- the published plugins' cases (their hooks.json shapes; the scripts are written here) ----------

SECURITY_HOOKS = {  # anthropics/claude-code plugins/security-guidance/hooks/hooks.json
    "description": "Security reminder hook that warns about potential security issues when editing files",
    "hooks": {"PreToolUse": [
        {"hooks": [{"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/security_reminder_hook.py"}],
         "matcher": "Edit|Write|MultiEdit"},
        {"hooks": [{"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/git_pre_commit_hook.py", "timeout": 30}],
         "matcher": "Bash"},
    ]},
}

SECURITY_REMINDER = r'''import json, os, sys
# Warns once per file, rule and session about a risky pattern in an edit (exit 2: the model reads it).
PATTERNS = [("eval_injection", "eval(", "Security Warning: eval() executes arbitrary code; use json.loads or ast.literal_eval."),
            ("os_system_injection", "os.system", "Security Warning: os.system with user input allows command injection.")]
data = json.load(sys.stdin)
if data.get("tool_name") not in ("Edit", "Write", "MultiEdit"):
    sys.exit(0)
tool_input = data.get("tool_input", {})
path = tool_input.get("file_path", "")
content = tool_input.get("new_string") or tool_input.get("content") or ""
state = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"state_{data['session_id']}.json")
shown = set(json.load(open(state))) if os.path.exists(state) else set()
for rule, needle, warning in PATTERNS:
    if path and needle in content and f"{path}-{rule}" not in shown:
        shown.add(f"{path}-{rule}")
        json.dump(sorted(shown), open(state, "w"))
        print(warning, file=sys.stderr)
        sys.exit(2)
'''


async def test_security_guidance_warns_the_model_about_an_edit_once(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {}, name="security-guidance",
                         scripts={"hooks/security_reminder_hook.py": SECURITY_REMINDER,
                                  "hooks/git_pre_commit_hook.py": "import sys; sys.stdin.read()\n"})
    (plugin / "hooks" / "hooks.json").write_text(json.dumps(SECURITY_HOOKS, indent=2))
    edit = ("edit_file", {"path": "app.py", "old_string": "x = 1", "new_string": "x = eval(s)"})
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["edit_file"]) as host:
        (host.work / "app.py").write_text("x = 1\n")
        host.provider.add(call_tools(edit))
        host.provider.add(call_tools(edit))  # the model read the warning and goes on anyway
        host.provider.add(reply("done"))
        turn = await run_turn(host.client, host.session, "use eval")
    warned, edited = calls(turn)
    assert warned["success"] is False and warned["error"]["message"].startswith("Security Warning: eval()")
    assert "Security Warning: eval()" in text_of(host.provider.requests[1].messages[-1])
    assert edited["success"] is True and (host.work / "app.py").read_text() == "x = eval(s)\n"
    session_id = host.session.split(":/", 1)[1]
    assert json.loads((plugin / "hooks" / f"state_{session_id}.json").read_text()) == [f"{host.work}/app.py-eval_injection"]


HOOKIFY_HOOKS = {  # anthropics/claude-code plugins/hookify/hooks/hooks.json
    "description": "Hookify plugin - User-configurable hooks from .local.md files",
    "hooks": {event: [{"matcher": "*", "hooks": [{"type": "command", "command": f"python3 ${{CLAUDE_PLUGIN_ROOT}}/hooks/{script}.py",
                                                   "timeout": 10}]}]
              for event, script in (("PreToolUse", "pretooluse"), ("PostToolUse", "posttooluse"), ("Stop", "stop"),
                                    ("UserPromptSubmit", "userpromptsubmit"))},
}

HOOKIFY_RULES = {  # .claude/hookify.*.local.md files, in hookify's rule format
    "hookify.block-env.local.md": "---\nname: block-env\nenabled: true\nevent: file\naction: block\nfield: file_path\n"
                                  "operator: regex_match\npattern: \\.env$\n---\nDo not touch .env files: secrets live there.\n",
    "hookify.require-tests.local.md": "---\nname: require-tests\nenabled: true\nevent: stop\naction: block\nfield: transcript\n"
                                      "operator: not_contains\npattern: make check\n---\nRun the tests (make check) before you stop.\n",
}

HOOKIFY_ENGINE = r'''import glob, json, os, re, sys
# A small rule engine in hookify's manner: rules are .claude/hookify.*.local.md files in the project.
event_kinds = {"PreToolUse": ("file", "bash", "all"), "PostToolUse": ("file", "bash", "all"), "Stop": ("stop", "all"),
               "UserPromptSubmit": ("prompt", "all")}
data = json.load(sys.stdin)
event = data["hook_event_name"]
def rules():
    for path in sorted(glob.glob(os.path.join(data["cwd"], ".claude", "hookify.*.local.md"))):
        head, body = open(path).read().split("---\n", 2)[1:]
        meta = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
        if meta.get("enabled") == "true" and meta.get("event") in event_kinds.get(event, ()):
            yield meta, body.strip()
def value(field):
    tool_input = data.get("tool_input") or {}
    if field in tool_input:
        return str(tool_input[field])
    if field == "transcript":
        return open(data["transcript_path"]).read()
    return None
blocked, warned = [], []
for meta, message in rules():
    if meta["event"] == "file" and data.get("tool_name") not in ("Edit", "Write", "MultiEdit"):
        continue
    got = value(meta["field"])
    if got is None:
        continue
    hit = re.search(meta["pattern"], got) if meta["operator"] == "regex_match" else meta["pattern"] not in got
    if hit:
        (blocked if meta["action"] == "block" else warned).append(f"**[{meta['name']}]**\n{message}")
if blocked:
    text = "\n\n".join(blocked)
    if event == "Stop":
        print(json.dumps({"decision": "block", "reason": text, "systemMessage": text}))
    else:
        print(json.dumps({"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny"}, "systemMessage": text}))
elif warned:
    print(json.dumps({"systemMessage": "\n\n".join(warned)}))
'''


async def test_hookify_file_and_transcript_rules_act_and_the_user_reads_their_messages(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {}, name="hookify",
                         scripts={f"hooks/{name}.py": HOOKIFY_ENGINE for name in ("pretooluse", "posttooluse", "stop", "userpromptsubmit")})
    (plugin / "hooks" / "hooks.json").write_text(json.dumps(HOOKIFY_HOOKS, indent=2))
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["write_file", "shell(echo:*)"]) as host:
        (host.work / ".claude").mkdir()
        for name, text in HOOKIFY_RULES.items():
            (host.work / ".claude" / name).write_text(text)
        host.provider.add(call_tools(("write_file", {"path": ".env", "content": "TOKEN=1"})))
        host.provider.add(reply("I will not touch it."))  # Stop: no "make check" in the transcript yet
        host.provider.add(call_tools(("shell", {"command": "echo make check: 3 passed"})))
        host.provider.add(reply("Tests pass."))
        turn = await run_turn(host.client, host.session, "set the token")
    assert turn["state"] == "complete"
    (denied, tests) = calls(turn)
    assert denied["success"] is False and "Do not touch .env files" in denied["error"]["message"]
    assert not (host.work / ".env").exists()
    shown = notes(turn)
    assert "**[block-env]**\nDo not touch .env files: secrets live there." in shown
    assert "**[require-tests]**\nRun the tests (make check) before you stop." in shown
    assert text_of(host.provider.requests[2].messages[-1]) == (
        "[A Stop hook asked you to continue]\n**[require-tests]**\nRun the tests (make check) before you stop.")
    assert tests["success"] and len(host.provider.requests) == 4  # the second stop found "make check" in the transcript


RALPH_HOOKS = {  # anthropics/claude-code plugins/ralph-wiggum/hooks/hooks.json
    "description": "Ralph Wiggum plugin stop hook for self-referential loops",
    "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/stop-hook.sh", "timeout": 10}]}]},
}

RALPH_STOP = r'''#!/bin/sh
# Keeps the session going while .claude/ralph-loop.local.md says so, feeding the same prompt back.
set -eu
input=$(cat)
state=".claude/ralph-loop.local.md"
[ -f "$state" ] || exit 0
printf '%s\n' "$input" >> "$CLAUDE_PLUGIN_ROOT/stop-inputs.jsonl"
iteration=$(sed -n 's/^iteration: *//p' "$state")
max=$(sed -n 's/^max_iterations: *//p' "$state")
promise=$(sed -n 's/^completion_promise: *"\(.*\)"$/\1/p' "$state")
if [ "$max" -gt 0 ] && [ "$iteration" -ge "$max" ]; then rm "$state"; exit 0; fi
transcript=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["transcript_path"])')
last=$(grep '"role":"assistant"' "$transcript" | tail -1 | python3 -c '
import json, sys
line = json.loads(sys.stdin.read())
print("\n".join(b["text"] for b in line["message"]["content"] if b["type"] == "text"))')
case "$last" in *"<promise>$promise</promise>"*) rm "$state"; exit 0;; esac
next=$((iteration + 1))
sed "s/^iteration: .*/iteration: $next/" "$state" > "$state.tmp" && mv "$state.tmp" "$state"
prompt=$(awk '/^---$/{i++; next} i>=2' "$state")
python3 -c 'import json,sys; print(json.dumps({"decision": "block", "reason": sys.argv[1], "systemMessage": sys.argv[2]}))' \
  "$prompt" "Ralph iteration $next | To stop: output <promise>$promise</promise>"
'''


async def test_ralph_wiggums_stop_hook_loops_keeping_its_state_until_the_promise(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {}, name="ralph-wiggum", scripts={"hooks/stop-hook.sh": RALPH_STOP})
    (plugin / "hooks" / "hooks.json").write_text(json.dumps(RALPH_HOOKS, indent=2))
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        state = host.work / ".claude" / "ralph-loop.local.md"
        state.parent.mkdir()
        state.write_text('---\nactive: true\niteration: 1\nmax_iterations: 10\ncompletion_promise: "DONE"\n---\n\nFix the flaky test.\n')
        for text in ("Working on it.", "Still going.", "All fixed. <promise>DONE</promise>"):
            host.provider.add(reply(text))
        turn = await run_turn(host.client, host.session, "/ralph-loop Fix the flaky test.")
    assert turn["state"] == "complete" and len(host.provider.requests) == 3
    for request in host.provider.requests[1:]:
        assert text_of(request.messages[-1]) == "[A Stop hook asked you to continue]\nFix the flaky test."
    shown = notes(turn)
    assert any(n.startswith("Ralph iteration 2 |") for n in shown) and any(n.startswith("Ralph iteration 3 |") for n in shown)
    inputs = [json.loads(line) for line in (plugin / "stop-inputs.jsonl").read_text().splitlines()]
    assert [i["stop_hook_active"] for i in inputs] == [False, True, True]
    assert [i["last_assistant_message"] for i in inputs] == ["Working on it.", "Still going.", "All fixed. <promise>DONE</promise>"]
    assert not state.exists()  # the promise ended the loop; the hook deleted its state only then


# -- the other events ------------------------------------------------------------------------------


async def eventually(check: Any, timeout: float = 20) -> None:
    """Until ``check()`` holds (hooks fired by what the user is asked run alongside the turn)."""
    async def wait() -> None:
        while not check():
            await asyncio.sleep(0.02)
    await asyncio.wait_for(wait(), timeout)


async def test_pre_compact_gets_trigger_and_instructions_and_session_start_runs_with_compact(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {
        "PreCompact": [{"matcher": "manual", "hooks": [_command("precompact")]}],
        "SessionStart": [{"matcher": "compact", "hooks": [_command("recompact")]}],
    })
    answer(plugin, "recompact", stdout={"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "Re-read PLAN.md."}})
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        for text in ("one", "SUMMARY of the API talk", "three"):
            host.provider.add(reply(text))
        await run_turn(host.client, host.session, "design the API")
        compacted = await run_turn(host.client, host.session, "/compact the API")
        await run_turn(host.client, host.session, "go on")
    assert compacted["state"] == "complete"
    (pre,) = received(plugin, "precompact")
    assert (pre["hook_event_name"], pre["trigger"], pre["custom_instructions"]) == ("PreCompact", "manual", "the API")
    assert [e["source"] for e in received(plugin, "recompact")] == ["compact"]
    assert "Re-read PLAN.md." in (host.provider.requests[2].system or "")


async def test_notification_hooks_hear_when_the_user_is_asked(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"Notification": [{"matcher": "permission_prompt", "hooks": [_command("notify")]}]})
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        host.provider.add(call_tools(("shell", {"command": "ls"})))
        host.provider.add(reply("listed"))
        turn_id = host.client.send_message(host.session, "list")
        await host.client.wait_for(lambda m, e: host.pending() is not None, timeout=20)
        await eventually(lambda: received(plugin, "notify"))
        await host.approve(turn_id)
        await host.finished(turn_id)
    (notified,) = received(plugin, "notify")
    assert notified["hook_event_name"] == "Notification" and notified["notification_type"] == "permission_prompt"
    assert notified["message"] == "The agent needs your permission to use Bash"


async def test_sub_agents_fire_subagent_start_and_stop_not_the_sessions_prompt_and_stop_hooks(
        tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {
        "UserPromptSubmit": [{"hooks": [_command("prompt")]}],
        "SubagentStart": [{"matcher": "general-purpose", "hooks": [_command("sub-start")]}],
        "SubagentStop": [{"hooks": [_command("sub-stop")]}],
        "Stop": [{"hooks": [_command("stop")]}],
    })
    task = {"description": "Find TODOs", "prompt": "Find all TODOs."}
    async with hosting(tmp_path, frame_checker, plugin.parent, allow=["task"]) as host:
        host.provider.add(call_tools(("task", task)))
        host.provider.add(reply("Found 3 TODOs."))  # the sub-agent
        host.provider.add(reply("There are 3 TODOs."))
        turn = await run_turn(host.client, host.session, "how many TODOs?")
    assert turn["state"] == "complete"
    assert [e["prompt"] for e in received(plugin, "prompt")] == ["how many TODOs?"]
    (start,) = received(plugin, "sub-start")
    (stop,) = received(plugin, "sub-stop")
    (call,) = calls(turn)
    assert (start["agent_type"], start["agent_id"]) == ("general-purpose", call["toolCallId"])
    assert (stop["hook_event_name"], stop["stop_hook_active"], stop["agent_id"]) == ("SubagentStop", False, call["toolCallId"])
    assert len(received(plugin, "stop")) == 1


async def test_clearing_the_conversation_ends_and_starts_the_session_with_clear(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {
        "SessionStart": [{"matcher": "startup|clear", "hooks": [_command("start")]}],
        "SessionEnd": [{"hooks": [_command("end")]}],
        "UserPromptSubmit": [{"hooks": [_command("prompt")]}],
    })
    async with hosting(tmp_path, frame_checker, plugin.parent) as host:
        host.provider.add(reply("one"))
        host.provider.add(reply("two"))
        await run_turn(host.client, host.session, "first")
        host.client.dispatch(host.session, {"type": "session/truncated"})
        await eventually(lambda: [e["source"] for e in received(plugin, "start")] == ["startup", "clear"])
        await run_turn(host.client, host.session, "second")
    assert [e["reason"] for e in received(plugin, "end")][:1] == ["clear"]
    transcript = Path(received(plugin, "prompt")[-1]["transcript_path"]).read_text()
    assert "second" in transcript and "first" not in transcript  # the cleared conversation is gone from it too


async def test_mcp_tools_are_named_mcp__server__tool_and_matched_by_patterns(tmp_path: Path, frame_checker: FrameChecker) -> None:
    from tests.host.runtime.customizations.test_mcp_sessions import sink_server, wait_tools

    plugin = make_plugin(tmp_path / "plugins", {"PreToolUse": [{"matcher": "mcp__sink__.*", "hooks": [_command("pre")]}],
                                                "PostToolUse": [{"matcher": "mcp__sink__echo", "hooks": [_command("post")]}]})
    answer(plugin, "pre", stdout={"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
    async with hosting(tmp_path, frame_checker, plugin.parent, mcp={"servers": {"sink": sink_server()}, "start": "session"}) as host:
        names = await wait_tools(host.client, host.session, "sink", "echo")
        host.provider.add(call_tools((names["echo"], {"text": "ping"})))
        host.provider.add(reply("pong"))
        turn = await run_turn(host.client, host.session, "echo ping")
    (call,) = calls(turn)
    assert call["success"]
    (pre,) = received(plugin, "pre")
    (post,) = received(plugin, "post")
    assert (pre["tool_name"], pre["tool_input"]) == ("mcp__sink__echo", {"text": "ping"})
    assert post["tool_response"] == [{"type": "text", "text": "ping"}]


async def test_permission_mode_is_told_in_claude_codes_words(tmp_path: Path, frame_checker: FrameChecker) -> None:
    plugin = make_plugin(tmp_path / "plugins", {"UserPromptSubmit": [{"hooks": [_command("prompt")]}]})
    async with hosting(tmp_path, frame_checker, plugin.parent, session_config={"permissionMode": "accept-edits"}) as host:
        host.provider.add(reply("ok"))
        await run_turn(host.client, host.session, "hi")
    assert [e["permission_mode"] for e in received(plugin, "prompt")] == ["acceptEdits"]
