"""A session's chats in the terminal client, end to end: a real host on port 0 and ``agent-host chat``
on a pty, speaking AHP 1.0.0. ``/side`` starts a second chat in the session, ``/chats`` lists the
session's chats and ``/chat N`` opens one, with its own turns; a sub-agent's chat is opened from the
tool call that spawned it. What the host holds is read from its store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import AhpClient
from host.service import AgentHost
from host.transport.server import RunningHost, start_host
from providers import ScriptedProvider
from providers.scripted import call_tools, reply
from tests.chat._hostwait import sessions, until_host
from tests.chat._pty import ChatProcess
from tests.conftest import TOKEN, host_config
from tests.host.runtime.tools._support import scripted, tools_config

Spawn = Callable[..., ChatProcess]


def _texts(host: RunningHost, chat: str) -> list[str]:
    return [t["message"]["text"] for t in (host.host.store.state(chat) or {}).get("turns") or ()]


async def test_the_terminal_speaks_1_0_0_and_a_side_chat_is_a_second_conversation_of_the_session(
        spawn_chat: Spawn, chat_host: RunningHost) -> None:
    chat = spawn_chat()
    greeting = await chat.expect("/help for commands")
    assert "AHP 1.0.0" in greeting  # the newest version the host serves
    chat.send("hello one")
    await chat.expect("[3 in")
    [(session_uri, _)] = sessions(chat_host)
    main = default_chat_uri(session_uri)

    chat.send("/side")
    await chat.expect("(side chat) a new chat in this session")
    chat.send("hello two")
    await chat.expect("[3 in")
    [(_, session)] = sessions(chat_host)
    [first, side] = [c["resource"] for c in session["chats"]]
    assert first == main and side != main
    assert _texts(chat_host, main) == ["hello one"] and _texts(chat_host, side) == ["hello two"]

    chat.send("/chats")
    listing = await chat.expect("/chat N opens one")
    assert "(the session's first)" in listing and "*  2) " in listing and side in listing
    chat.send("/chat 1")
    await chat.expect("#1 you: hello one")
    chat.send("back in the first")
    await until_host(chat_host, lambda: _texts(chat_host, main) == ["hello one", "back in the first"])
    assert _texts(chat_host, side) == ["hello two"]


@pytest.fixture
async def task_host(tmp_path: Path) -> AsyncIterator[RunningHost]:
    """A host whose only agent runs a ``task`` (a sub-agent that says hello), then sums it up."""
    provider = ScriptedProvider([
        call_tools(("task", {"description": "Look around", "prompt": "Say hello."})),
        reply("hello from the sub-agent"),
        reply("The sub-agent said hello."),
    ])
    host = AgentHost(tools_config(tmp_path), agents=[scripted(provider)])
    running = await start_host(host, token=TOKEN)
    yield running
    await running.stop()


async def test_a_sub_agents_chat_is_opened_from_the_tool_call_that_spawned_it(task_host: RunningHost, tmp_path: Path) -> None:
    chat = ChatProcess.spawn([task_host.url, "--agent", "scripted"], cwd=tmp_path)
    try:
        await chat.expect("/help for commands")
        chat.send("ask a sub-agent to say hello")
        await chat.expect("The sub-agent said hello.")
        await chat.expect("> ")
        [(session_uri, session)] = sessions(task_host)
        worker = next(c["resource"] for c in session["chats"] if c["resource"] != default_chat_uri(session_uri))

        chat.send("/chats")
        listing = await chat.expect("/chat N opens one")
        assert "sub-agent: " in listing and worker in listing
        chat.send(f"/chat {worker}")
        shown: Any = await chat.expect("hello from the sub-agent")
        assert "you: Say hello." in shown
    finally:
        chat.close()


async def test_history_pages_a_long_chat_back_from_the_host_to_its_first_turn(tmp_path: Path) -> None:
    """A chat longer than the host keeps in state (3 turns after a restart): ``/history`` has the
    host load the pages before the chat's cursor (AHP 1.0.0 ``fetchTurns``) and shows them."""
    def start() -> AgentHost:
        return AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline", recent_turns=3))

    first = await start_host(start(), token=TOKEN)
    try:
        maker = await AhpClient.connect(first.url.split("?")[0], token=TOKEN)
        await maker.initialize(["ahp-root://"])
        session = await maker.create_session(provider="offline")
        chat_uri = default_chat_uri(session)
        for index in range(8):
            turn = maker.send_message(chat_uri, f"message {index}")
            await maker.wait_for(lambda m, _e, t=turn: any(x.get("id") == t for x in (m.state(chat_uri) or {}).get("turns") or ()))
        await maker.close()
    finally:
        await first.stop()
    running = await start_host(start(), token=TOKEN)
    chat = ChatProcess.spawn([running.url, "--session", session], cwd=tmp_path)
    try:
        opened = await chat.expect("> ")
        assert "you: message 7" in opened and "you: message 4" not in opened
        chat.send("/history")
        page = await chat.expect("earlier you: message 4")
        assert "earlier you: message 2" in page and "message 1" not in page
        chat.send("/history")
        page = await chat.expect("(that was the first turn)")
        assert "earlier you: message 0" in page and "earlier you: message 1" in page
        chat.send("/history")
        await chat.expect("(no earlier turns)")
        assert [t["message"]["text"] for t in running.host.store.state(chat_uri)["turns"]] == [f"message {i}" for i in range(8)]
        chat.send("one more")  # the loaded turns are history: the next thing drawn is the new turn
        after = await chat.expect('You said: "one more"')
        assert "message" not in after.replace("one more", "")
    finally:
        chat.close()
        await running.stop()
