"""The manager end to end: the sample plugin's stdio server, a streamable HTTP server,
tool lists, statuses a person can act on, and reconciling the server set."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from host.runtime.customizations.mcp_declarations import spec_from_plugin
from plugins import load_plugin
from tools.base import ToolContext
from tools.mcp import McpManager, McpServerSpec

from .conftest import FAST, KITCHEN_SINK, SAMPLES, Recorder, kitchen_sink, process_gone, served_over_http


@pytest.fixture
def toolkit(tmp_path: Path) -> Path:
    """A copy of the sample plugin under a path with a space, so ${PLUGIN_ROOT} must be exact."""
    root = tmp_path / "plugin dir" / "sample-toolkit"
    shutil.copytree(SAMPLES / "sample-toolkit", root)
    return root


async def test_sample_plugin_server_tools_are_listed_and_called_with_root_env_and_cwd(
    manager: McpManager, toolkit: Path, call_ctx: ToolContext,
) -> None:
    (server,) = load_plugin(toolkit).mcp_servers
    await manager.start([spec_from_plugin(server, "sample-toolkit")])
    statuses = await manager.wait_ready(timeout=30)
    assert statuses["tiny"].state == "running" and statuses["tiny"].tool_names == ("echo", "plugin_info")
    assert [tool.name for tool in manager.tools()] == ["mcp__tiny__echo", "mcp__tiny__plugin_info"]

    echoed = await manager.tool("mcp__tiny__echo").call({"text": "x"}, call_ctx)
    assert echoed == {"success": True, "pastTenseMessage": "Ran echo (tiny MCP server)",
                      "content": [{"type": "text", "text": "hello from sample-toolkit: x"}]}
    info = json.loads((await manager.tool("mcp__tiny__plugin_info").call({}, call_ctx))["content"][0]["text"])
    assert info["PLUGIN_ROOT"] == str(toolkit.resolve())
    assert info["cwd"] == str(toolkit.resolve())
    assert info["argv"] == [f"{toolkit.resolve()}/servers/tiny_mcp.py"]


async def test_arguments_are_validated_before_reaching_the_server(manager: McpManager, toolkit: Path, call_ctx) -> None:
    (server,) = load_plugin(toolkit).mcp_servers
    await manager.start([spec_from_plugin(server, "sample-toolkit")])
    await manager.wait_ready(timeout=30)
    result = await manager.tool("mcp__tiny__echo").call({"text": 3}, call_ctx)
    assert result["success"] is False and result["error"]["code"] == "invalid_arguments"


async def test_missing_command_fails_at_once_with_an_actionable_message(
    manager: McpManager, recorder: Recorder, call_ctx,
) -> None:
    await manager.start([McpServerSpec(name="ghost", transport="stdio", command="no-such-mcp-server-xyz"),
                         kitchen_sink()])
    failed = await recorder.status(lambda s: s.name == "ghost" and s.state == "failed")
    assert failed.message == ("MCP server 'ghost' cannot start: command 'no-such-mcp-server-xyz' not found "
                              "(is it installed and on PATH?)")
    await manager.wait_ready(timeout=30)
    assert manager.statuses()["ks"].state == "running"
    assert not [tool for tool in manager.tools() if tool.server_name == "ghost"]


async def test_missing_working_directory_is_reported(manager: McpManager, recorder: Recorder, tmp_path: Path) -> None:
    await manager.start([kitchen_sink(cwd=tmp_path / "nowhere")])
    failed = await recorder.status(lambda s: s.state == "failed")
    assert failed.message == f"MCP server 'ks' cannot start: working directory '{tmp_path / 'nowhere'}' does not exist"


async def test_tool_list_changes_reach_the_callback_and_the_new_tool_works(
    manager: McpManager, recorder: Recorder, call_ctx,
) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    assert manager.tool("mcp__ks__extra") is None
    grown = await manager.tool("mcp__ks__grow").call({}, call_ctx)
    assert grown["success"] is True
    names = await recorder.tools(lambda names: "mcp__ks__extra" in names)
    assert names[-1] == "mcp__ks__extra"
    assert manager.statuses()["ks"].tool_names[-1] == "extra"
    extra = await manager.tool("mcp__ks__extra").call({}, call_ctx)
    assert extra["content"] == [{"type": "text", "text": "extra!"}]


async def test_set_specs_stops_removed_servers_and_starts_new_ones(manager: McpManager, recorder: Recorder) -> None:
    await manager.start([kitchen_sink("one"), kitchen_sink("two")])
    await manager.wait_ready(timeout=30)
    old_pid = manager.connections["one"].pid
    await manager.set_specs([kitchen_sink("two"), kitchen_sink("three")])
    await manager.wait_ready(timeout=30)
    assert sorted(manager.statuses()) == ["three", "two"]
    assert {tool.server_name for tool in manager.tools()} == {"two", "three"}
    assert process_gone(old_pid)
    assert (await recorder.status(lambda s: s.name == "one" and s.state == "stopped")).message is None


async def test_calls_to_a_failed_server_fail_with_its_status_message(manager: McpManager, recorder, call_ctx) -> None:
    await manager.start([kitchen_sink()])
    await manager.wait_ready(timeout=30)
    tool = manager.tool("mcp__ks__echo")
    await manager.stop()
    result = await tool.call({"text": "late"}, call_ctx)
    assert result["success"] is False and result["error"]["code"] == "mcp_unavailable"
    assert result["error"]["message"] == "The MCP server 'ks' is not running."


@pytest.fixture
async def http_server() -> AsyncIterator[str]:
    """The kitchen-sink server over streamable HTTP on 127.0.0.1, port chosen by the OS."""
    async with served_over_http(KITCHEN_SINK, "http") as url:
        yield url


async def test_streamable_http_server_lists_calls_and_reports_progress(http_server: str, manager: McpManager, tmp_path) -> None:
    await manager.start([McpServerSpec(name="web", transport="http", url=http_server)])
    statuses = await manager.wait_ready(timeout=30)
    assert statuses["web"].state == "running", statuses["web"].message
    echo = manager.tool("mcp__web__echo")
    assert echo.title == "Echo text" and echo.annotations == {"readOnlyHint": True, "openWorldHint": False}

    shown: list[list[dict]] = []
    ctx = ToolContext(working_directory=tmp_path, report_content=shown.append)
    result = await manager.tool("mcp__web__slow").call({"steps": 2}, ctx)
    assert result["content"] == [{"type": "text", "text": "done after 2 steps"}]
    assert shown == [[{"type": "text", "text": "step 1 of 2 (1/2)"}], [{"type": "text", "text": "step 2 of 2 (2/2)"}]]
    assert (await echo.call({"text": "over http"}, ctx))["content"] == [{"type": "text", "text": "over http"}]


async def test_unreachable_http_server_is_retried_then_failed(recorder: Recorder) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    manager = McpManager(policy=FAST, on_status=recorder.on_status)
    try:
        await manager.start([McpServerSpec(name="web", transport="http", url=f"http://127.0.0.1:{port}/mcp")])
        failed = await recorder.status(lambda s: s.state == "failed")
    finally:
        await manager.stop()
    assert failed.message.startswith("MCP server 'web' could not be reached (")
    assert "gave up after 2 restarts" in failed.message
    assert [s.state for s in recorder.statuses] == ["starting", "restarting", "restarting", "failed"]


async def test_http_server_dying_mid_call_fails_the_call_then_reconnects_or_fails(
    http_server: str, manager: McpManager, recorder: Recorder, call_ctx,
) -> None:
    await manager.start([McpServerSpec(name="web", transport="http", url=http_server)])
    await manager.wait_ready(timeout=30)
    result = await manager.tool("mcp__web__die").call({}, call_ctx)
    assert result["error"] == {
        "message": "The connection to the MCP server 'web' was lost while the call was running; "
                   "the call was not retried. Reconnecting.",
        "code": "mcp_server_exited",
    }
    failed = await recorder.status(lambda s: s.state == "failed")  # nobody restarts a remote server for us
    assert failed.message.startswith("MCP server 'web' could not be reached (ConnectError")
    assert manager.tools() == []


async def test_duplicate_server_names_are_refused(manager: McpManager) -> None:
    from tools.mcp import McpConfigError

    with pytest.raises(McpConfigError, match="declared more than once: ks"):
        await manager.start([kitchen_sink(), kitchen_sink()])
