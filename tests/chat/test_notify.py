"""Calling the user back, from the terminal: a real ``agent-host`` on a pty whose model is a
scripted provider server, with ``notify = "osc9"`` in the client's settings. A confirmation rings
the bell with a desktop notification naming what waits; a turn that ends while the terminal
reported its window out of focus does too; one that ends in focus does not. And the pure rules:
which terminals get which notification, and when a turn's end is announced without focus reports."""

from __future__ import annotations

import json
from pathlib import Path

from chat._notify import BELL, Notifier, desktop_kind, notification
from tests.chat._fakehost import host_toml, spawn_agent_host
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse

FOCUS_IN, FOCUS_OUT = "\x1b[I", "\x1b[O"


def _client_config(tmp_path: Path, text: str) -> str:
    folder = tmp_path / "client-config"
    (folder / "agent-host").mkdir(parents=True)
    (folder / "agent-host" / "client.toml").write_text(text)
    return str(folder)


async def test_a_confirmation_and_a_turn_ending_out_of_focus_call_the_user_back(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    replies = [Reply(200, chat_sse("Checking.", tool_calls=[("call_1", "shell", json.dumps({"command": "echo checked"}))])),
               Reply(200, chat_sse("All checked.")), Reply(200, chat_sse("Still here."))]
    config = _client_config(tmp_path, 'notify = "osc9"\n')
    async with FakeProviderServer(replies, base_path="/v1") as server:
        chat = spawn_agent_host(tmp_path, project, host_toml(server, '[tools]\nsandbox = "off"\n'), tty=True, XDG_CONFIG_HOME=config)
        try:
            await chat.expect("/help for commands", timeout=30)
            assert b"\x1b[?1004h" in chat.raw  # focus reports asked for
            await chat.line_editor()
            chat.send("check it")
            await chat.expect("Choose [", timeout=30)
            assert b"\x07\x1b]9;agent-host: Run Command waits for your confirmation\x07" in chat.raw
            chat.type(FOCUS_OUT)  # the user went to another window
            chat.send("1")
            await chat.expect("All checked.", timeout=30)
            await chat.expect("fake-model]")
            chat.type(FOCUS_IN)  # and came back
            chat.send("still there?")
            await chat.expect("Still here.", timeout=30)
            await chat.expect("fake-model]")
            chat.send("/quit")
            assert await chat.wait(30) == 0
        finally:
            chat.close()
    assert chat.raw.count(b"\x1b]9;agent-host: the turn finished\x07") == 1  # the first turn only
    assert chat.raw.endswith(b"\x1b[?1004l") or b"\x1b[?1004l" in chat.raw[-200:]  # and turned off at exit
    assert [m["content"] for m in server.requests[2].json()["messages"] if m["role"] == "user"][-1] == "still there?"


def test_terminals_get_the_notification_they_show_and_multiplexers_the_bell() -> None:
    assert desktop_kind({"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert desktop_kind({"VTE_VERSION": "7600"}) == "osc777"
    assert desktop_kind({"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-1/default,1,0"}) is None
    assert desktop_kind({"TERM": "xterm-256color"}) is None
    assert notification(None, "x") == BELL
    assert notification("osc777", "a;b\x1b]evil") == BELL + "\x1b]777;notify;agent-host;a,b ]evil\x07"


def test_a_turn_end_is_announced_out_of_focus_or_after_a_while_when_focus_is_not_reported() -> None:
    notifier = Notifier("bell", after=30)
    assert notifier.turn_ended("done", 1, focused=False) == BELL
    assert notifier.turn_ended("done", 100, focused=True) == ""
    assert notifier.turn_ended("done", 5, focused=None) == ""
    assert notifier.turn_ended("done", 31, focused=None) == BELL
    assert notifier.waiting("confirm", focused=None) == BELL and notifier.waiting("confirm", focused=True) == ""
    assert Notifier("off").waiting("confirm", focused=False) == ""
