"""`shell`: exit codes, output, streaming, truncation, timeout and group-wide kill."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from tests.conftest import NEVER
from tests.tools.test_processes import DAEMONS, daemon_pids
from tests.tools.wire import assert_wire
from tools.base import ToolContext
from tools.builtin.shell import ShellTool


def _text(result: dict) -> str:
    return "\n".join(item["text"] for item in result["content"] if item["type"] == "text")


def _gone(pid: int) -> bool:
    """True once `pid` no longer exists or is only a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


async def _wait_until(predicate, timeout: float = 5.0) -> bool:
    # Polls a condition the kernel cannot notify us about (another process's death).
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.01)
    return predicate()


async def test_successful_command_reports_output_and_exit_code(ctx):
    result = await ShellTool(shell="/bin/sh").call({"command": "echo hello; echo oops >&2"}, ctx)
    assert result["success"] is True
    assert result["pastTenseMessage"] == "Ran `echo hello; echo oops >&2`"
    assert _text(result) == "hello\noops\n[exit code 0]"
    assert result["structuredContent"]["exitCode"] == 0
    assert_wire("ToolCallResult", result)


async def test_runs_in_the_working_directory(ctx, workspace):
    (workspace / "marker.txt").write_text("")
    result = await ShellTool(shell="/bin/sh").call({"command": "pwd; ls"}, ctx)
    assert str(workspace.resolve()) in _text(result) and "marker.txt" in _text(result)


async def test_nonzero_exit_is_a_failure_with_the_output(ctx):
    result = await ShellTool(shell="/bin/sh").call({"command": "echo partial; exit 3"}, ctx)
    assert result["success"] is False
    assert result["error"] == {"message": "The command exited with code 3.", "code": "exit_code"}
    assert "partial" in _text(result) and "[exit code 3]" in _text(result)
    assert_wire("ToolCallResult", result)


async def test_stdin_is_closed_so_reads_do_not_hang(ctx):
    result = await ShellTool(shell="/bin/sh").call({"command": "cat; echo after"}, ctx)
    assert result["success"] is True and "after" in _text(result)


async def test_huge_output_is_cut_in_the_middle_with_a_note(ctx):
    tool = ShellTool(shell="/bin/sh", max_output_bytes=3000)
    result = await tool.call({"command": "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST"}, ctx)
    text = _text(result)
    assert text.startswith("FIRST")
    assert "LAST" in text
    structured = result["structuredContent"]
    assert structured["outputBytes"] > 200000
    assert structured["truncatedBytes"] == structured["outputBytes"] - 3000
    assert f"[… {structured['truncatedBytes']:,} bytes of output cut; {structured['outputBytes']:,} bytes in total …]" in text
    assert len(text) < 3300


async def test_output_is_streamed_while_the_command_runs(workspace):
    seen: list[str] = []
    go = workspace / "go"

    def report(content):
        seen.append(content[0]["text"])
        if "started" in content[0]["text"]:
            go.write_text("")  # only now may the command finish

    ctx = ToolContext(workspace, report_content=report)
    command = "echo started; while [ ! -f go ]; do sleep 0.01; done; echo finished"
    result = await ShellTool(shell="/bin/sh", stream_interval=0.01).call({"command": command}, ctx)
    assert result["success"] is True
    assert seen and seen[0].startswith("started")
    assert "finished" in _text(result)


async def test_timeout_stops_the_command_and_says_so(ctx):
    result = await ShellTool(shell="/bin/sh", kill_grace=1).call({"command": "echo before; sleep 30", "timeout_seconds": 1}, ctx)
    assert result["success"] is False
    assert result["error"] == {"message": "The command timed out after 1 s and was stopped.", "code": "timeout"}
    assert result["structuredContent"]["timedOut"] is True
    assert "before" in _text(result)


async def test_cancel_kills_the_whole_process_group_including_grandchildren(workspace):
    pid_file = workspace / "grandchild.pid"
    ctx = ToolContext(workspace)

    def report(content):
        if "ready" in content[0]["text"]:
            ctx.cancellation.set()

    ctx.report_content = report
    # The grandchild ignores SIGTERM, so only the group-wide SIGKILL can stop it.
    command = "sh -c 'trap \"\" TERM; sleep 300' & echo $! > grandchild.pid; echo ready; wait"
    result = await ShellTool(shell="/bin/sh", stream_interval=0.01, kill_grace=0.5).call({"command": command}, ctx)
    assert result["success"] is False
    assert result["error"]["code"] == "cancelled"
    assert result["structuredContent"]["cancelled"] is True
    grandchild = int(pid_file.read_text())
    assert await _wait_until(lambda: _gone(grandchild)), "grandchild survived the cancel"


async def test_timeout_kills_grandchildren_too(workspace):
    ctx = ToolContext(workspace)
    command = "sleep 300 & echo $! > bg.pid; wait"
    result = await ShellTool(shell="/bin/sh", kill_grace=0.5).call({"command": command, "timeout_seconds": 1}, ctx)
    assert result["error"]["code"] == "timeout"
    assert await _wait_until(lambda: _gone(int((workspace / "bg.pid").read_text())))


async def test_host_task_cancellation_kills_the_group(workspace):
    ready = asyncio.Event()
    ctx = ToolContext(workspace, report_content=lambda content: ready.set())
    task = asyncio.create_task(
        ShellTool(shell="/bin/sh", stream_interval=0.01, kill_grace=0.5).call(
            {"command": "sleep 300 & echo $! > bg.pid; echo ready; wait"}, ctx
        )
    )
    await asyncio.wait_for(ready.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_until(lambda: _gone(int((workspace / "bg.pid").read_text())))


async def test_background_jobs_end_with_the_call_when_no_session_keeps_them(ctx, workspace):
    tool = ShellTool(shell="/bin/sh", kill_grace=0.5)
    result = await asyncio.wait_for(tool.call({"command": f"{DAEMONS}; echo done"}, ctx), 10)
    assert result["success"] is True and "done" in _text(result)
    assert result["structuredContent"]["backgroundProcesses"] == 4
    assert "4 background processes" in _text(result) and "stopped with the command" in _text(result)
    pids = daemon_pids(workspace)
    assert await _wait_until(lambda: all(_gone(pid) for pid in pids)), "a background job outlived its call"


async def test_background_jobs_are_kept_for_the_session_without_holding_up_the_result(workspace):
    kept = []
    ctx = ToolContext(workspace, keep_background=kept.append)
    # A result that waited for the jobs, or for the pty they hold to close (up to kill_grace), would never come.
    result = await ShellTool(shell="/bin/sh", kill_grace=NEVER).call({"command": f"{DAEMONS}; echo done"}, ctx)
    assert result["success"] is True and "still running" in _text(result)
    [process] = kept
    pids = daemon_pids(workspace)
    try:
        assert not any(_gone(pid) for pid in pids)
        assert set(pids) <= process.background()
    finally:
        await process.terminate(0.5)  # what the host does when the session is disposed
        process.close()
    assert await _wait_until(lambda: all(_gone(pid) for pid in pids))


async def test_a_cancelled_command_takes_its_daemonised_jobs_with_it(workspace):
    kept = []
    ctx = ToolContext(workspace, keep_background=kept.append)

    def report(content):
        if "ready" in content[0]["text"]:
            ctx.cancellation.set()

    ctx.report_content = report
    tool = ShellTool(shell="/bin/sh", stream_interval=0.01, kill_grace=0.5)
    result = await tool.call({"command": f"{DAEMONS}; echo ready; sleep 300"}, ctx)
    assert result["error"]["code"] == "cancelled" and kept == []
    pids = daemon_pids(workspace)
    assert await _wait_until(lambda: all(_gone(pid) for pid in pids))

async def test_missing_working_directory_is_a_clear_failure(tmp_path):
    ctx = ToolContext(tmp_path / "gone")
    result = await ShellTool(shell="/bin/sh").call({"command": "true"}, ctx)
    assert result["success"] is False and "does not exist" in result["error"]["message"]


async def test_uses_the_configured_shell(ctx):
    result = await ShellTool(shell="/bin/bash").call({"command": "echo $BASH_VERSION"}, ctx)
    assert result["success"] is True and _text(result).strip() != "[exit code 0]"


async def test_prepare_describes_the_command(ctx):
    prep = await ShellTool().prepare({"command": "make test", "description": "Run the tests"}, ctx)
    assert prep.ready_fields() == {"invocationMessage": "Run the tests", "confirmationTitle": "Run this command?"}
    prep = await ShellTool().prepare({"command": "ls"}, ctx)
    assert prep.invocation_message == "Run `ls`"


async def test_empty_command_is_refused(ctx):
    result = await ShellTool().call({"command": ""}, ctx)
    assert result["success"] is False and "argument 'command' must not be empty" in result["error"]["message"]


async def test_a_write_outside_the_working_directory_asks_again_and_runs_when_approved(ctx, workspace):
    asked: list[str] = []

    async def approve(reason: str) -> bool:
        asked.append(reason)
        return True

    ctx.reconfirm = approve
    target = workspace.parent / "outside" / "out.txt"
    result = await ShellTool(shell="/bin/sh").call({"command": "echo hi > ../outside/out.txt"}, ctx)
    assert result["success"] is True
    assert target.read_text() == "hi\n"
    [reason] = asked
    assert f"would write to {target.resolve()} outside the working directory" in reason


async def test_a_refused_write_outside_the_working_directory_runs_nothing(ctx, workspace):
    asked: list[str] = []

    async def deny(reason: str) -> bool:
        asked.append(reason)
        return False

    ctx.reconfirm = deny
    result = await ShellTool(shell="/bin/sh").call({"command": "touch inside.txt; echo hi > ../outside/out.txt"}, ctx)
    assert result["success"] is False
    assert result["error"]["code"] == "outside_write_denied"
    assert "outside the working directory" in result["error"]["message"] and "not run" in result["error"]["message"]
    assert not (workspace / "inside.txt").exists() and not (workspace.parent / "outside" / "out.txt").exists()
    assert len(asked) == 1
    assert_wire("ToolCallResult", result)


async def test_without_a_host_to_ask_a_write_outside_is_refused(ctx, workspace):
    result = await ShellTool(shell="/bin/sh").call({"command": "cd .. && ls"}, ctx)
    assert result["error"]["code"] == "outside_write_denied"


async def test_commands_writing_inside_do_not_ask(ctx, workspace):
    async def refuse(reason: str) -> bool:
        raise AssertionError(f"asked: {reason}")

    ctx.reconfirm = refuse
    result = await ShellTool(shell="/bin/sh").call({"command": "echo hi > in.txt 2>/dev/null && cat in.txt"}, ctx)
    assert result["success"] is True and (workspace / "in.txt").read_text() == "hi\n"
