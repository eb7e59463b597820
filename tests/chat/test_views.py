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
        "crashy": {"command": sys.executable, "args": [str(KITCHEN_SINK), "stdio", "--die-at-start"]},
        "missing": {"command": "/nonexistent/mcp-server"},
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
            if "sink  ● running" in shown and all(f"MCP server '{n}'" in shown for n in ("broken", "crashy")):
                break
            await asyncio.sleep(0.2)
        assert "MCP servers (degraded)" in shown
        # Restarted in the background (issue 22): restarting, or failed once it gave up.
        assert "broken  ↻ restarting" in shown or "broken  ✗ failed" in shown
        assert "MCP server 'broken' exited with code 7" in shown
        assert "refusing to start" in shown  # the server's own stderr says why
        assert "sink  ● running" in shown
        assert "missing  ✗ failed" in shown
        # Each problem once, under its own server: none repeated, nothing left over below them.
        lines = shown.splitlines()
        for name in ("broken", "crashy", "missing"):
            [own] = [line for line in lines if f"MCP server '{name}'" in line]
            assert own.startswith("    ") and own.count(f"'{name}'") == 1
            assert lines[lines.index(own) - 1].lstrip().startswith(name)
        assert "MCP server 'missing' failed: cannot start: command '/nonexistent/mcp-server' not found" in shown
        assert not [line for line in lines if line.startswith("  ") and not line.startswith("    ") and "MCP server" not in line
                    and not any(line.lstrip().startswith(n) for n in ("sink", "broken", "crashy", "missing"))]
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


def test_a_plugin_switched_off_by_its_deciding_enablement_is_marked_disabled() -> None:
    off = {"id": "a", "name": "tidy", "type": "plugin", "load": {"kind": "loaded"},
           "enablement": [{"kind": "session", "enabled": False}, {"kind": "user", "enabled": True}]}
    on = {**off, "id": "b", "name": "kept", "enablement": [{"kind": "user", "enabled": True}]}
    shown = render_plugins({"customizations": [off, on]}, PLAIN)
    assert "● tidy loaded (disabled)" in shown and "● kept loaded\n" in shown


def test_plugins_show_their_notes_under_a_loaded_state() -> None:
    note = "plugin kit ==> agents/a.md ==> frontmatter ==> tools: read the text '[\"Read\"]' as the list ['Read']"
    state = {"customizations": [{"id": "a", "name": "kit", "load": {"kind": "loaded"}, "_meta": {"notes": [note]}}]}
    shown = render_plugins(state, PLAIN)
    assert "● kit loaded" in shown
    assert f"    note: {note}" in shown


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


def test_trust_says_when_the_folder_is_trusted_through_the_workspace_trust_vscode_forwarded() -> None:
    vscode = {"config": {"values": {"trustedFolders": ["/mine"],
                                    "workspaceTrust": {"enabled": True, "trustedUris": ["file:///work/vs%20code"]}}}}
    shown = render_trust(vscode, "/work/vs code/sub", {}, PLAIN)
    assert "This folder: /work/vs code/sub — trusted by the client's workspace trust (VS Code's trusted folders)" in shown
    assert "/trust revoke does not change a client's workspace trust" in shown
    assert "Folders a client (VS Code) trusts, forwarded to the host:\n  /work/vs code\n" in shown
    assert "This folder: /mine — trusted by the host's trusted folders" in render_trust(vscode, "/mine", {}, PLAIN)
    off = {"config": {"values": {"workspaceTrust": {"enabled": False, "trustedUris": []}}}}
    shown = render_trust(off, "/anywhere", {}, PLAIN)
    assert "trusted by the client's workspace trust being switched off" in shown
    assert "forwarded its workspace trust switched off: the host trusts every folder" in shown


async def test_plugins_lists_what_the_folder_has_and_not_the_empty_github_folders(spawn_chat: Any, workdir: Path) -> None:
    (workdir / "AGENTS.md").write_text("# Rules\nBe brief.\n")
    (workdir / ".claude" / "commands").mkdir(parents=True)
    (workdir / ".claude" / "commands" / "fixdoc.md").write_text("Fix the docs of $ARGUMENTS.\n")
    chat = spawn_chat()
    await chat.expect("/help for commands")
    start = len(chat.text)  # (not the typed line's echo: a busy client may draw it in pieces, a menu between)
    chat.send("/plugins")
    await chat.expect("Workspace instructions")
    chat.send("/quit")
    assert await chat.wait() == 0
    shown = chat.text[start:]  # the listing, whole, and the client's goodbye
    assert "● .claude/commands loaded — 1 skill" in shown and "● Workspace instructions loaded — 1 rule" in shown
    assert ".github" not in shown and "Prompts" not in shown


def test_an_empty_workspace_folder_is_not_listed_but_one_with_a_problem_is() -> None:
    empty = {"type": "directory", "id": "p", "name": ".github/prompts", "load": {"kind": "loaded"}, "children": []}
    waiting = {"type": "directory", "id": "h", "name": ".github/hooks", "load": {"kind": "degraded", "message": "Waiting for trust"}}
    assert render_plugins({"customizations": [empty]}, PLAIN) == "This session has no plugins or workspace customizations.\n"
    assert ".github/hooks" in render_plugins({"customizations": [empty, waiting]}, PLAIN)
    assert ".github/prompts" not in render_plugins({"customizations": [empty, waiting]}, PLAIN)
def test_mcp_shows_each_servers_prompts_resources_skipped_tools_log_and_sign_in_link() -> None:
    from chat.views import MCP_LOG_SHOWN, render_mcp_log

    link = "http://127.0.0.1:9/authorize?" + "x" * 400
    log = [{"level": "info", "logger": "db", "text": f"line {i}"} for i in range(8)] + [{"level": "stderr", "text": "boom"}]
    meta = {"log": log, "logKept": 40, "prompts": ["mcp__notes__review"], "resources": 3, "resourceTemplates": 1,
            "notOffered": [{"tool": "long_job", "reason": "it can only run as an MCP task"}]}
    state = {
        "customizations": [
            {"id": "mcp-servers", "name": "MCP servers",
             "load": {"kind": "degraded", "message": f"MCP server 'remote' needs you to sign in: open {link}"},
             "children": [{"type": "mcpServer", "id": "mcp-servers#notes", "name": "notes", "_meta": meta},
                          {"type": "mcpServer", "id": "mcp-servers#remote", "name": "remote"}]},
            {"id": "file:///p", "name": "toolkit", "load": {"kind": "loaded"},
             "children": [{"type": "mcpServer", "id": "t#db", "name": "db", "state": {"kind": "error", "error": {"message": "it exited"}}},
                          {"type": "mcpServer", "id": "t#kv", "name": "kv", "state": {"kind": "ready"}}]}],
        "serverTools": [{"name": "mcp__notes__echo", "_meta": {"mcpServer": "notes"}}, {"name": "mcp__kv__get", "_meta": {"mcpServer": "kv"}}],
    }
    shown = render_mcp(state, PLAIN)
    assert "notes  ● running, 1 tool" in shown
    assert "prompts: /mcp__notes__review" in shown
    assert "resources: 3, templates: 1" in shown
    assert "long_job not offered: it can only run as an MCP task" in shown
    assert f"log (last {MCP_LOG_SHOWN} of 40):" in shown
    assert "[info] db: line 3" not in shown and "[info] db: line 4" in shown and "[stderr] boom" in shown
    assert "remote  ◌ waiting for you to sign in (open the link below)" in shown
    assert link in shown  # whole, so it can be opened
    assert "MCP servers of toolkit" in shown and "db  ✗ failed" in shown and "it exited" in shown
    assert "kv  ● running, 1 tool" in shown
    assert render_mcp_log(state, "notes", PLAIN).splitlines()[1:] == [f"[info] db: line {i}" for i in range(8)] + ["[stderr] boom"]
    assert render_mcp_log(state, "remote", PLAIN) == "The MCP server remote has logged nothing yet.\n"
    assert render_mcp_log(state, "nope", PLAIN) == "This session has no MCP server called nope.\n"


@pytest.fixture
async def notes_host(tmp_path: Path, workdir: Path, scenario: ScenarioAgent) -> AsyncIterator[RunningHost]:
    from tests.tools.mcp.conftest import CONTEXT_SERVER

    config = load_config(None, overrides={
        "server": {"port": 0, "data_dir": str(tmp_path / "data"), "token": TOKEN},
        "sessions": {"default_directory": str(workdir), "offline_delay": 0},
        "mcp": {"servers": {"notes": {"command": sys.executable, "args": [str(CONTEXT_SERVER)]}}, "start": "session"},
    }, environ={})
    host = AgentHost(config, agents=[scenario, OfflineAgent(delay=0)])
    scenario.store = host.store
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


async def test_the_terminal_completes_mcp_prompts_and_resources_and_shows_a_servers_log(
        notes_host: RunningHost, workdir: Path, tmp_path: Path) -> None:
    from tests.chat._pty import tty_env

    def published() -> bool:
        entry = next((c for c in _mcp_container(notes_host).get("children") or () if c.get("name") == "notes"), {})
        return "prompts" in (entry.get("_meta") or {})

    chat = ChatProcess.spawn([notes_host.url], cwd=workdir, env=tty_env(XDG_STATE_HOME=str(tmp_path / "state")))
    try:
        await chat.expect("/help for commands")
        await chat.line_editor()
        chat.send("hello")  # a session (completions are asked of the session)
        await chat.expect("Hello from the scenario agent", timeout=20)
        await until_host(notes_host, published, timeout=60)
        await chat.line_editor()
        # The input line and its menu are read off the screen: they are redrawn cell by cell.
        chat.type("/mcp__notes__re")
        await chat.on_screen("/mcp__notes__review", timeout=20)  # the host's item, in the menu
        chat.type("\x15")  # Ctrl-U: a fresh line
        chat.type("see @notes:notes://rea")
        shown = await chat.on_screen("@notes:notes://readme", timeout=20)
        assert "> see @notes:notes://rea" in shown
        chat.type("\x15")
        for _ in range(50):  # the client's mirror follows the host's state a moment later
            chat.send("/mcp log notes")
            shown = await chat.expect("> ")
            if "context-server: starting" in shown:
                break
            await asyncio.sleep(0.2)
        assert "Log of the MCP server notes" in shown and "[stderr] context-server: starting" in shown
        chat.send("/mcp")
        shown = await chat.expect("long_job not offered", timeout=20)
        assert "prompts: /mcp__notes__review" in shown
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()
