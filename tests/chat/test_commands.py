"""Slash commands with arguments in the interactive chat, in a real pty against a real host:
a project ``.claude/commands`` command and ``/compact [FOCUS]`` are matched by their name and sent
with their arguments; ``/help`` lists the host's commands beside the client's. ``/init`` on a real
``agent-host`` whose model is a scripted provider server: the model receives the fixed instruction
to study the project and write (or improve) its AGENTS.md, with the user's focus; its edit goes
through the usual confirmation, diff first."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from chat._commands import INIT_PROMPT
from host.config import load_config
from host.runtime.agents import OfflineAgent
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.chat._hostwait import chats, until_host
from tests.chat._pty import ChatProcess
from tests.chat._scenario import ScenarioAgent
from tests.conftest import TOKEN
from tests.providers.fake_server import FakeProviderServer, Reply, SeenRequest, chat_sse

Spawn = Callable[..., ChatProcess]


def _fixdoc(workdir: Path) -> None:
    commands = workdir / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "fixdoc.md").write_text("---\ndescription: Fix a file's docs\n---\nFix the docstrings of $1 ($ARGUMENTS).\n")


def _last_message(host: RunningHost) -> dict:
    [(_, state)] = chats(host)
    return state["turns"][-1]["message"]


async def test_a_project_command_with_arguments_is_sent_whole_with_its_attachment(
    spawn_chat: Spawn, chat_host: RunningHost, workdir: Path
) -> None:
    _fixdoc(workdir)
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello")  # the session exists (and has read .claude/commands) before the command
    await chat.expect("Hello from the scenario agent (effort low)")
    chat.send("/fixdoc src/x.py")
    await chat.expect("Hello from the scenario agent (effort low) with /fixdoc")
    await until_host(chat_host, lambda: len(chats(chat_host)[0][1].get("turns") or ()) == 2)
    message = _last_message(chat_host)
    assert message["text"] == "/fixdoc src/x.py"
    assert [a.get("label") for a in message.get("attachments") or ()] == ["/fixdoc"]
    assert "unknown command" not in chat.text
    chat.send("/quit")
    assert await chat.wait() == 0


async def test_an_unknown_command_is_named_and_nothing_is_sent(spawn_chat: Spawn, chat_host: RunningHost, workdir: Path) -> None:
    _fixdoc(workdir)
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello")
    await chat.expect("Hello from the scenario agent (effort low)")
    chat.send("/fixd0c src/x.py")
    await chat.expect("unknown command /fixd0c")
    assert len(chats(chat_host)[0][1].get("turns") or ()) == 1
    chat.send("/quit")
    assert await chat.wait() == 0


async def test_compact_with_a_focus_is_sent_to_the_agent_as_the_host_reads_it(spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello")
    await chat.expect("Hello from the scenario agent (effort low)")
    chat.send("/compact   the API  ")
    await until_host(chat_host, lambda: len(chats(chat_host)[0][1].get("turns") or ()) == 2)
    assert _last_message(chat_host)["text"] == "/compact the API"  # host.agents.turn: "/compact FOCUS"
    assert "unknown command" not in chat.text
    chat.send("/quit")
    assert await chat.wait() == 0


async def test_help_lists_the_hosts_commands_of_this_session(spawn_chat: Spawn, workdir: Path) -> None:
    _fixdoc(workdir)
    chat = spawn_chat()
    await chat.expect("/help for commands")
    chat.send("hello")
    await chat.expect("Hello from the scenario agent (effort low)")
    chat.send("/help")
    await chat.expect("The host offers, in this session")
    await chat.expect("/fixdoc")
    assert "/compact [FOCUS]" in chat.text
    chat.send("/quit")
    assert await chat.wait() == 0


@pytest.fixture
async def plugin_host(tmp_path: Path, workdir: Path, scenario: ScenarioAgent) -> AsyncIterator[RunningHost]:
    """The scenario host with a Claude Code plugin ``styleplug`` offering the command ``gitctx``."""
    plugin = tmp_path / "plugins" / "styleplug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(json.dumps({"name": "styleplug", "version": "1.0.0"}))
    (plugin / "commands").mkdir()
    (plugin / "commands" / "gitctx.md").write_text("---\ndescription: Git context\n---\nExplain $ARGUMENTS with git context.\n")
    config = load_config(None, environ={}, overrides={
        "server": {"port": 0, "data_dir": str(tmp_path / "data"), "token": TOKEN},
        "sessions": {"offline_delay": 0, "default_directory": str(workdir)},
        "plugins": {"directories": [str(tmp_path / "plugins")]},
    })
    host = AgentHost(config, agents=[scenario, OfflineAgent(delay=0)])
    scenario.store = host.store
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


@pytest.mark.parametrize("typed", ["/styleplug:gitctx the edit", "/gitctx the edit"])
async def test_a_plugin_command_with_arguments_runs_by_its_full_or_bare_name(plugin_host: RunningHost, workdir: Path, typed: str) -> None:
    chat = ChatProcess.spawn([plugin_host.url], cwd=workdir)
    try:
        await chat.expect("/help for commands")
        chat.send("hello")
        await chat.expect("Hello from the scenario agent (effort low)")
        chat.send(typed)
        await chat.expect("Hello from the scenario agent (effort low) with /styleplug:gitctx")
        await until_host(plugin_host, lambda: len(chats(plugin_host)[0][1].get("turns") or ()) == 2)
        message = _last_message(plugin_host)
        assert message["text"] == typed
        assert message["attachments"][0]["_meta"] == {"slash": "styleplug:gitctx", "kind": "command"}
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()


async def test_permissions_lists_remembered_approvals_with_their_scope_and_revokes_one(tmp_path: Path, workdir: Path) -> None:
    from providers import ScriptedProvider
    from tests.host.runtime.tools._support import scripted, tools_config

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    host = AgentHost(tools_config(tmp_path), agents=[scripted(ScriptedProvider([]))])
    running = await start_host(host, token=TOKEN)
    host.tools.settings.add(["write_file"], None)  # as an earlier version kept it
    host.tools.settings.add(["shell(npm test:*)"], str(elsewhere))
    host.tools.publish_remembered()
    chat = ChatProcess.spawn([running.url], cwd=workdir)
    try:
        await chat.expect("/help for commands")
        chat.send("/permissions")
        await chat.expect("Remembered approvals (2)")
        await chat.expect("1) write_file")
        await chat.expect("every project (host-wide)")
        await chat.expect("2) shell(npm test:*)")
        await chat.expect(f"this project only: {elsewhere}")
        chat.send("/permissions revoke 3")
        await chat.expect("there is no remembered approval 3")
        chat.send("/permissions revoke 1")
        await chat.expect("(revoked: write_file for every project (host-wide); such calls ask again)")
        await until_host(running, lambda: len(host.tools.settings.remembered()) == 1)
        assert [(r.rule, r.project) for r in host.tools.settings.remembered()] == [("shell(npm test:*)", str(elsewhere))]
        chat.send("/permissions")
        await chat.expect("Remembered approvals (1)")
        await chat.expect("1) shell(npm test:*)")
        chat.send("/quit")
        assert await chat.wait() == 0
    finally:
        chat.close()
        await running.stop()


GUIDE = "# AGENTS.md\n\nRun the tests with `pytest -q`.\n\nCode lives in `src/shop/`.\n"


def _user_text(request: SeenRequest) -> str:
    content = [m for m in request.json()["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


async def test_init_asks_the_model_to_improve_agents_md_and_the_write_is_confirmed_first(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    (project / "src" / "shop").mkdir(parents=True)
    (project / "AGENTS.md").write_text("# AGENTS.md\n\nRun the tests.\n")
    edit = {"path": "AGENTS.md", "content": GUIDE}
    replies = [Reply(200, chat_sse("I read the project.", tool_calls=[("call_1", "write_file", json.dumps(edit))])),
               Reply(200, chat_sse("AGENTS.md now says how to run the tests and where the code lives."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("/help")
            await chat.expect("/init [FOCUS]")
            chat.send("/init mention the src layout")
            await chat.expect("(asking the agent to study the project and write AGENTS.md")
            shown = await chat.expect("Choose [", timeout=30)
            assert (project / "AGENTS.md").read_text() == "# AGENTS.md\n\nRun the tests.\n"  # nothing written before the answer
            chat.send("1")
            await chat.expect("AGENTS.md now says how to run the tests", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    lines = shown.splitlines()
    assert lines.index("-Run the tests.") < lines.index("+Run the tests with `pytest -q`.") < lines.index("  1) Allow once")
    assert (project / "AGENTS.md").read_text() == GUIDE
    first = server.requests[0]
    assert _user_text(first) == INIT_PROMPT + "\n\nThe user adds: mention the src layout"
    assert "If an AGENTS.md is already there, read it first and improve it in place" in INIT_PROMPT
    assert {"read_file", "write_file"} <= {t["function"]["name"] for t in first.json()["tools"]}


async def test_init_asks_before_writing_agents_md_even_when_writes_are_always_allowed(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "AGENTS.md").write_text("# AGENTS.md\n\nhand-written\n")
    def write(call: str, path: str, content: str) -> Reply:
        return Reply(200, chat_sse(tool_calls=[(call, "write_file", json.dumps({"path": path, "content": content}))]))
    replies = [write("call_1", "notes.txt", "one\n"), Reply(200, chat_sse("Wrote the notes.")),
               write("call_2", "AGENTS.md", GUIDE), Reply(200, chat_sse("Left AGENTS.md as it was.")),
               write("call_3", "notes.txt", "two\n"), Reply(200, chat_sse("Wrote the notes again."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("write the notes")
            await chat.expect("Choose [", timeout=30)
            chat.send("3")  # Always allow
            await chat.expect("Wrote the notes.", timeout=30)
            chat.send("/init")
            await chat.expect("you confirm the file before it is written")
            await chat.expect("Choose [", timeout=30)  # asked, whatever was always allowed before
            chat.send("n")
            await chat.expect("Left AGENTS.md as it was.", timeout=30)
            chat.send("write the notes again")
            await chat.expect("Wrote the notes again.", timeout=30)  # the remembered choice applies again after /init
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    assert (project / "AGENTS.md").read_text() == "# AGENTS.md\n\nhand-written\n"
    assert (project / "notes.txt").read_text() == "two\n"


async def test_bang_runs_a_shell_command_without_asking_the_model_and_the_next_message_carries_its_output(tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    (project / "menu.txt").write_text("green tea\n")
    replies = [Reply(200, chat_sse("You have green tea."))]
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server, '[tools]\nsandbox = "off"\n'))
        try:
            await chat.expect("/help for commands", timeout=30)
            chat.send("!cat menu.txt")
            await chat.expect("green tea", timeout=30)  # run at once: no confirmation asked
            await chat.expect("> ")
            assert server.requests == []  # no model was asked
            chat.send("!touch seen.txt")  # one that writes runs without asking too: the user typed it
            await chat.expect("touch seen.txt", timeout=30)
            await chat.expect("> ")
            assert (project / "seen.txt").exists()
            chat.send("what do I have?")
            await chat.expect("You have green tea.", timeout=30)
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    [request] = server.requests
    sent = json.dumps(request.json())
    assert "$ cat menu.txt" in sent and "green tea" in sent
