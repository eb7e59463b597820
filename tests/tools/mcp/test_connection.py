"""One server's lifecycle: crashes and restarts, the in-flight call, cancellation,
elicitation through the tool call's context, startup failures, and no orphans."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from tools.base import ToolContext
from tools.mcp import McpManager, McpServerConnection, McpServerSpec, RestartPolicy

from .conftest import FAST, NEVER, Recorder, eventually, kitchen_sink, let_start, process_gone, silent


async def test_call_in_flight_when_the_server_dies_fails_clearly_and_the_server_restarts(
    manager: McpManager, recorder: Recorder, call_ctx: ToolContext,
) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    first_pid = manager.connections["ks"].pid

    result = await manager.tool("mcp__ks__die").call({}, call_ctx)
    assert result["success"] is False
    assert result["error"] == {
        "message": "The MCP server 'ks' exited with code 3 while the call was running; the call was not retried. "
                   "The server is being restarted.",
        "code": "mcp_server_exited",
    }
    restarting = await recorder.status(lambda s: s.state == "restarting")
    assert restarting.message == "MCP server 'ks' exited with code 3; restarting in 0.01 s (attempt 1 of 2)"
    running_again = await recorder.status(lambda s: s.state == "running" and s.restarts == 1)
    assert running_again.message is None

    echoed = await manager.tool("mcp__ks__echo").call({"text": "back"}, call_ctx)
    assert echoed["success"] is True and echoed["content"] == [{"type": "text", "text": "back"}]
    assert manager.connections["ks"].pid != first_pid and process_gone(first_pid)


async def test_a_call_made_while_the_server_restarts_waits_and_succeeds(manager, recorder, call_ctx) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    echo = manager.tool("mcp__ks__echo")
    died = await manager.tool("mcp__ks__die").call({}, call_ctx)
    assert died["error"]["code"] == "mcp_server_exited"
    result = await asyncio.wait_for(echo.call({"text": "queued"}, call_ctx), timeout=30)
    assert result["content"] == [{"type": "text", "text": "queued"}]


async def test_a_server_that_keeps_dying_at_start_is_failed_with_its_last_words(
    manager: McpManager, recorder: Recorder, tmp_path: Path,
) -> None:
    marker = tmp_path / "starts.txt"
    await manager.start([kitchen_sink("ks", "--die-at-start", "--marker", str(marker))])
    failed = await recorder.status(lambda s: s.state == "failed")
    assert failed.message == (
        "MCP server 'ks' exited with code 7: kitchen-sink: refusing to start (asked to die); "
        f"gave up after 2 restarts. Check the server ({sys.executable} {kitchen_sink().args[0]} --die-at-start "
        f"--marker {marker}) and restart it."
    )
    assert len(marker.read_text().splitlines()) == 3  # the first start and two restarts
    assert [s.state for s in recorder.statuses] == ["starting", "restarting", "restarting", "failed"]
    assert manager.tools() == []


async def test_cancelling_a_call_returns_a_cancelled_result_and_keeps_the_server(manager, tmp_path: Path) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    running = asyncio.Event()
    ctx = ToolContext(working_directory=tmp_path, report_content=lambda content: running.set())
    pending = asyncio.ensure_future(manager.tool("mcp__ks__hang").call({}, ctx))
    await asyncio.wait_for(running.wait(), timeout=10)  # the server is inside the tool now
    ctx.cancellation.set()
    result = await asyncio.wait_for(pending, timeout=10)
    assert result == {"success": False, "pastTenseMessage": "Ran hang (ks MCP server)",
                      "error": {"message": "The call was cancelled.", "code": "cancelled"},
                      "content": [{"type": "text", "text": "The call was cancelled."}]}
    fresh = ToolContext(working_directory=tmp_path)
    assert (await manager.tool("mcp__ks__echo").call({"text": "still here"}, fresh))["success"] is True


async def test_cancelling_the_calling_task_propagates(manager, tmp_path: Path, call_ctx) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    running = asyncio.Event()
    ctx = ToolContext(working_directory=tmp_path, report_content=lambda content: running.set())
    pending = asyncio.ensure_future(manager.tool("mcp__ks__hang").call({}, ctx))
    await asyncio.wait_for(running.wait(), timeout=10)
    pending.cancel()
    with pytest.raises(asyncio.CancelledError):
        await pending
    assert (await manager.tool("mcp__ks__echo").call({"text": "ok"}, call_ctx))["success"] is True


def _answer(kind: str, value) -> dict:
    return {"state": "submitted", "value": {"kind": kind, "value": value}}


async def test_elicitation_becomes_an_input_request_on_the_calls_context(manager, tmp_path: Path) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    asked: list[dict] = []

    async def ask(request: dict) -> dict:
        asked.append(request)
        return {"response": "accept", "answers": {
            "name": _answer("text", "Ada"), "age": _answer("number", 36.0), "colour": _answer("selected", "green"),
            "subscribe": _answer("boolean", True)}}

    ctx = ToolContext(working_directory=tmp_path, ask=ask, tool_call_id="tc-7")
    result = await manager.tool("mcp__ks__ask_name").call({}, ctx)
    assert result["content"] == [{"type": "text", "text": "hello Ada (36, green, subscribe=True)"}]
    (request,) = asked
    assert request["id"] == "mcp-elicit-tc-7-1" and request["message"] == "Who are you?"
    assert [(q["id"], q["kind"], q.get("required", False)) for q in request["questions"]] == [
        ("name", "text", True), ("age", "integer", True), ("subscribe", "boolean", False),
        ("colour", "single-select", True)]


@pytest.mark.parametrize("response", ["decline", "cancel"])
async def test_declined_or_cancelled_elicitation_reaches_the_server(manager, tmp_path: Path, response: str) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)

    async def ask(request: dict) -> dict:
        return {"response": response}

    ctx = ToolContext(working_directory=tmp_path, ask=ask)
    result = await manager.tool("mcp__ks__ask_name").call({}, ctx)
    assert result["content"] == [{"type": "text", "text": f"no answer: {response}"}]


async def test_elicitation_without_anyone_to_ask_is_cancelled(manager, tmp_path: Path) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    result = await manager.tool("mcp__ks__ask_name").call({}, ToolContext(working_directory=tmp_path))
    assert result["content"] == [{"type": "text", "text": "no answer: cancel"}]


async def test_a_server_that_never_answers_the_handshake_times_out_and_leaves_nothing(recorder: Recorder) -> None:
    spec = McpServerSpec(name="mute", transport="stdio", command=sys.executable,
                         args=("-c", "import time; time.sleep(600)"))
    connection = McpServerConnection(spec, policy=RestartPolicy(max_restarts=0, startup_timeout=0.5),
                                     on_status=recorder.on_status)
    connection.start()
    failed = await recorder.status(lambda s: s.state == "failed")
    pid = connection.pid
    await connection.stop()
    assert failed.message == ("MCP server 'mute' did not finish starting within 0.5 s. "
                              f"Check the server ({spec.describe()}) and restart it.")
    assert pid is not None and await eventually(lambda: process_gone(pid))


async def test_elicitation_with_several_calls_in_flight_goes_to_the_manager_callback(
    recorder: Recorder, tmp_path: Path,
) -> None:
    asked: list[dict] = []

    async def host_ask(request: dict) -> dict:
        asked.append(request)
        return {"response": "decline"}

    async def call_ask(request: dict) -> dict:
        raise AssertionError("with two calls in flight the question cannot be tied to one of them")

    async with McpManager(policy=FAST, ask=host_ask) as manager:
        await manager.start([kitchen_sink()])
        await manager.wait_ready(timeout=30)
        running = asyncio.Event()
        hang_ctx = ToolContext(working_directory=tmp_path, report_content=lambda content: running.set())
        hanging = asyncio.ensure_future(manager.tool("mcp__ks__hang").call({}, hang_ctx))
        await asyncio.wait_for(running.wait(), timeout=10)
        result = await manager.tool("mcp__ks__ask_name").call({}, ToolContext(working_directory=tmp_path, ask=call_ask))
        hang_ctx.cancellation.set()
        await hanging
    assert result["content"] == [{"type": "text", "text": "no answer: decline"}]
    (request,) = asked
    assert request["id"].startswith("mcp-elicit-") and request["message"] == "Who are you?"


async def test_stopping_a_server_that_never_answers_does_not_wait_for_its_start_and_leaves_nothing(
        recorder: Recorder, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "pids"
    # Its start would never time out: a stop that waited for the start to end could only end by
    # giving up on the owner task (which it logs).
    connection = McpServerConnection(silent(marker=marker), policy=RestartPolicy(startup_timeout=NEVER),
                                     on_status=recorder.on_status)
    connection.start()
    assert await eventually(lambda: marker.exists() and marker.read_text().strip() != "", timeout=60)
    [pid] = [int(line) for line in marker.read_text().split()]
    await connection.stop()
    assert process_gone(pid)  # it ignores its closed stdin: a short grace, then its process group is signalled
    assert connection.status.state == "stopped"
    assert not [r for r in caplog.records if "did not shut down in time" in r.getMessage()]


async def test_a_call_that_never_returns_times_out_with_a_tool_error(recorder: Recorder, tmp_path: Path) -> None:
    declared = McpServerConnection(kitchen_sink(timeout=0.5), policy=FAST)
    defaulted = McpServerConnection(kitchen_sink("ks2"), policy=FAST, call_timeout=0.5)
    for connection in (declared, defaulted):
        connection.start()
    try:
        for connection in (declared, defaulted):
            assert (await connection.wait_ready(30)).state == "running"
        started = time.monotonic()
        results = [await connection.call("hang", {}, ToolContext(working_directory=tmp_path), "Ran hang")
                   for connection in (declared, defaulted)]
        assert time.monotonic() - started < 10
        echoed = await declared.call("echo", {"text": "still here"}, ToolContext(working_directory=tmp_path), "Ran echo")
    finally:
        await asyncio.gather(declared.stop(), defaulted.stop())
    assert [r["error"]["code"] for r in results] == ["timeout", "timeout"]
    assert results[0]["error"]["message"] == (
        "The MCP server 'ks' did not answer within 0.5 s, so the call was cancelled. A tool that needs longer can be "
        "given more time with its `timeout` in the server's declaration (milliseconds there).")
    assert results[1]["error"]["message"] == (
        "The MCP server 'ks2' did not answer within 0.5 s, so the call was cancelled. A tool that needs longer can be "
        "given more time with `[mcp] call_timeout` in the host config, or `timeout` in the server's declaration "
        "(milliseconds there).")
    assert results[0]["success"] is False and echoed["success"] is True  # the server itself is fine


async def test_a_turn_waits_for_each_servers_first_start_attempt_and_not_through_its_restarts(
        recorder: Recorder, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.mkdir()
    # Nothing here ends by a clock: 'slow' starts when the test lets it, 'crashy' is restarted
    # only after NEVER, 'mute' never answers and its start never times out.
    policy = RestartPolicy(initial_delay=NEVER, max_delay=NEVER, max_restarts=5, startup_timeout=NEVER)
    async with McpManager(policy=policy, on_status=recorder.on_status) as manager:
        await manager.start([kitchen_sink("slow", "--gate", str(gate)), silent(), kitchen_sink("crashy", "--die-at-start")])
        waiting = asyncio.ensure_future(manager.wait_started(NEVER, skip=["mute"]))
        crashed = await recorder.status(lambda s: s.name == "crashy" and s.state == "restarting")
        assert not waiting.done()  # 'slow' is still starting: it has no ticket yet
        let_start(gate)
        statuses = await waiting  # 'slow' is up; 'crashy' is not waited through its restarts, 'mute' not at all
    assert {name: status.state for name, status in statuses.items()} == {
        "slow": "running", "mute": "starting", "crashy": "restarting"}
    assert statuses["crashy"] == crashed
    assert crashed.message == (f"MCP server 'crashy' exited with code 7: kitchen-sink: refusing to start (asked to die); "
                               f"restarting in {NEVER:g} s (attempt 1 of 5)")


async def test_a_turn_waits_for_a_server_that_never_answers_no_longer_than_the_grace(recorder: Recorder) -> None:
    # Its start never times out: only the grace can end the wait, and the server is still starting then.
    async with McpManager(policy=RestartPolicy(startup_timeout=NEVER), on_status=recorder.on_status) as manager:
        await manager.start([silent()])
        statuses = await manager.wait_started(0.5)
    assert statuses["mute"].state == "starting" and statuses["mute"].message is None
    assert [s.state for s in recorder.statuses] == ["starting", "stopped"]  # it never got further
