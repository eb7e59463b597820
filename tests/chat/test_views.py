"""The session views (``/tools``, ``/mcp``, ``/plugins``, ``/context``, ``/cost``): in a real pty
against a real host whose session has a working and a crashing MCP server, and as pure renderers
over crafted states (including states that lack the fields a view reads)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from chat.render import Style
from chat.views import render_context, render_cost, render_mcp, render_plugins, render_tools, render_trust
from host.config import load_config
from host.runtime.agents import OfflineAgent
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from tests.chat._hostwait import sessions, until_host
from tests.chat._pty import ChatProcess
from tests.chat._scenario import ScenarioAgent
from tests.conftest import TOKEN
from tests.tools.mcp.conftest import KITCHEN_SINK

PLAIN = Style(color=False)


@pytest.fixture
async def mcp_host(tmp_path: Path, workdir: Path, scenario: ScenarioAgent) -> AsyncIterator[RunningHost]:
    servers = {
        "sink": {"command": sys.executable, "args": [str(KITCHEN_SINK), "stdio"]},
        "broken": {"command": sys.executable, "args": [str(KITCHEN_SINK), "stdio", "--die-at-start"]},
    }
    config = load_config(
        None,
        overrides={
            "server": {"port": 0, "data_dir": str(tmp_path / "data"), "token": TOKEN},
            "sessions": {"default_directory": str(workdir), "offline_delay": 0},
            "mcp": {"servers": servers, "start": "session"},
        },
        environ={},
    )
    host = AgentHost(config, agents=[scenario, OfflineAgent(delay=0)])
    scenario.store = host.store
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


def _mcp_container(host: RunningHost) -> dict[str, Any]:
    [(_, state)] = sessions(host)
    return next((c for c in state.get("customizations") or () if c.get("id") == "mcp-servers"), {})


async def test_mcp_shows_a_crashing_servers_error_and_the_running_ones_tools(mcp_host: RunningHost, workdir: Path) -> None:
    chat = ChatProcess.spawn([mcp_host.url], cwd=workdir)
    try:
        await chat.expect("/help for commands")
        chat.send("hello")
        await chat.expect("Hello from the scenario agent")
        await chat.expect("> ")
        await until_host(mcp_host, lambda: (_mcp_container(mcp_host).get("load") or {}).get("kind") == "degraded", timeout=60)
        await until_host(mcp_host, lambda: any((t.get("_meta") or {}).get("mcpServer") == "sink" for t in sessions(mcp_host)[0][1].get("serverTools") or ()), timeout=60)
        # The client's mirror follows the host's state a moment later: ask until it has caught up.
        for _ in range(50):
            chat.send("/mcp")
            shown = await chat.expect("> ")
            if "MCP servers (degraded)" in shown and "sink  ● running" in shown:
                break
            await asyncio.sleep(0.2)
        assert "MCP servers (degraded)" in shown
        assert "broken  ✗ failed" in shown
        assert "MCP server 'broken' exited with code 7" in shown  # restarted in the background (issue 22)
        assert "refusing to start" in shown  # the server's own stderr says why
        assert "sink  ● running" in shown
        chat.send("/tools")
        shown = await chat.expect("> ")
        assert "MCP server sink (" in shown
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_context_and_cost_read_the_sessions_usage(spawn_chat: Any) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("/cost")
    await chat.expect("No usage reported in this session yet.")
    chat.send("hello")
    await chat.expect("[3 in · 5 out · scene-1]")
    chat.send("hello again")
    await chat.expect("(effort low)")
    await chat.expect("> ")
    chat.send("/cost")
    shown = await chat.expect("prices are not known")
    assert "total: 6 in · 10 out" in shown
    assert "scene-1: 6 in · 10 out" in shown
    chat.send("/context")
    shown = await chat.expect("compactions")
    assert "3 input tokens in the last turn" in shown  # the scenario model publishes no window
    chat.send("/quit")
    assert await chat.wait() == 0


def _state(**fields: Any) -> dict[str, Any]:
    return {"summary": {"provider": "p", "model": {"id": "m"}}, **fields}


def test_context_shows_the_share_of_the_window_and_the_latest_compaction() -> None:
    agents = [{"provider": "p", "models": [{"id": "m", "maxContextWindow": 1000}]}]
    turns = [
        {"usage": {"inputTokens": 100}, "responseParts": []},
        {"usage": {"inputTokens": 600}, "responseParts": [{"kind": "systemNotification", "content": "Compacted the conversation as asked: 2 earlier turns"}]},
    ]
    shown = render_context(_state(turns=turns), agents, PLAIN)
    assert "600 of 1,000 tokens (60%)" in shown
    assert "compactions: 1" in shown and "2 earlier turns" in shown


def test_views_degrade_gracefully_when_the_state_lacks_their_fields() -> None:
    assert "no usage reported yet" in render_context({}, [], PLAIN)
    assert render_cost({}, PLAIN) == "No usage reported in this session yet.\n"
    assert "no tools yet" in render_tools({}, PLAIN)
    assert "no MCP servers" in render_mcp({}, PLAIN)
    assert "no plugins" in render_plugins({"customizations": [{"id": "mcp-servers"}]}, PLAIN)
    # A container without a load state, children without names.
    shown = render_plugins({"customizations": [{"id": "x", "children": [{"type": "skill"}]}]}, PLAIN)
    assert "x unknown — 1 skill" in shown


def test_plugins_show_load_state_problems_and_contents() -> None:
    state = {
        "customizations": [
            {"id": "a", "name": "tidy", "load": {"kind": "loaded"}, "children": [{"type": "skill"}, {"type": "skill"}, {"type": "agent"}]},
            {"id": "b", "name": "broken-plugin", "load": {"kind": "error", "message": "plugin.json ==> name: required"}},
        ]
    }
    shown = render_plugins(state, PLAIN)
    assert "● tidy loaded — 1 agent, 2 skills" in shown
    assert "✗ broken-plugin error" in shown
    assert "plugin.json ==> name: required" in shown


def test_permissions_view_says_what_the_host_lists_and_what_a_revocation_sends_back() -> None:
    from chat.views import render_permissions, without_remembered

    style = PLAIN
    schema = {"properties": {"rememberedApprovals": {"type": "array", "title": "Remembered approvals"}}}
    entries = [{"rule": "write_file", "scope": "host", "addedAt": 0},
               {"rule": "shell(git status:*)", "scope": "project", "project": "/work/my app"}]
    shown = render_permissions({"schema": schema, "values": {"rememberedApprovals": entries}}, style)
    assert " 1) write_file" in shown and "every project (host-wide)" in shown
    assert " 2) shell(git status:*)" in shown and "this project only: /work/my app" in shown
    assert "No remembered approvals" in render_permissions({"schema": schema, "values": {"rememberedApprovals": []}}, style)
    assert render_permissions({"schema": {"properties": {}}, "values": {}}, style) == "This host does not list remembered approvals.\n"
    assert render_permissions(None, style) == "This host does not list remembered approvals.\n"
    config = {"schema": schema, "values": {"rememberedApprovals": entries}}
    assert without_remembered(config, 1) == ([entries[1]], entries[0])
    assert without_remembered(config, 3) is None and without_remembered(None, 1) is None


def test_mcp_and_trust_say_what_waits_for_the_folder_to_be_trusted() -> None:
    waiting = ("Waiting for trust: the .mcp.json servers 'evil' start once you trust /repo; "
               "'sink' failed to start: it exited")
    state = {"customizations": [{"id": "mcp-servers", "name": "MCP servers", "load": {"kind": "degraded", "message": waiting},
                                 "children": [{"type": "mcpServer", "id": "mcp-servers#evil", "name": "evil"},
                                              {"type": "mcpServer", "id": "mcp-servers#sink", "name": "sink"}]},
                                {"id": "file:///repo/.github/hooks", "name": ".github/hooks",
                                 "load": {"kind": "degraded", "message": "Waiting for trust: its hooks run once you trust /repo"}}]}
    shown = render_mcp(state, PLAIN)
    assert "evil  ◌ waiting for you to trust this folder (/trust add)" in shown
    assert "sink  ✗ failed" in shown
    root = {"config": {"values": {"trustedFolders": ["/elsewhere"]}}}
    assert "This folder: /repo — not trusted" in render_trust(root, "/repo", state, PLAIN)
    assert "  /elsewhere" in render_trust(root, "/repo", state, PLAIN)
    assert "This folder: /elsewhere/sub — trusted" in render_trust(root, "/elsewhere/sub", {}, PLAIN)
    assert "no session yet" in render_trust({}, "/repo", None, PLAIN)
