"""``SessionMcp`` on its own: what it publishes in ``serverTools`` next to other tools."""

from __future__ import annotations

from typing import Any

from host.runtime.customizations import SessionMcp
from host.state.embedded_log import at_once
from host.state.store import Store
from tests.tools.mcp.conftest import FAST, kitchen_sink

SESSION = "p:/restored"
BUILT_IN = {"name": "read_file", "description": "Reads a file.", "inputSchema": {"type": "object"}}
LEFT_OVER = {"name": "mcp__gone__echo", "description": "From a server of the previous host process.",
             "inputSchema": {"type": "object"}, "_meta": {"mcpServer": "gone", "mcpTool": "echo"}}


def restored_store() -> Store:
    store = Store({"agents": []}, clock=lambda: 5)
    at_once(store.recover())
    store.create(SESSION, "session", {
        "provider": "p", "title": "t", "status": 1, "lifecycle": "ready", "activeClients": [], "chats": [],
        "serverTools": [BUILT_IN, LEFT_OVER]})
    return store


async def _no_answer(request: dict[str, Any]) -> dict[str, Any]:
    return {"response": "cancel"}


async def test_mcp_tools_left_by_a_previous_host_process_are_replaced_and_others_kept() -> None:
    store = restored_store()
    mcp = SessionMcp(SESSION, store, ask=_no_answer, on_problem=lambda *args: None, policy=FAST)
    try:
        await mcp.apply([kitchen_sink("sink")], {})
        await mcp.wait_ready(30)
        running = [tool["name"] for tool in store.state(SESSION)["serverTools"]]
    finally:
        await mcp.stop()
    stopped = [tool["name"] for tool in store.state(SESSION)["serverTools"]]
    assert running[0] == "read_file"
    assert "mcp__gone__echo" not in running
    assert "mcp__sink__echo" in running
    assert stopped == ["read_file"]
