"""The light theme from the terminal: a real ``agent-host`` on a pty whose model is a scripted
provider server. With ``theme = "auto"`` the chat asks the terminal for its background (OSC 11,
then the device attributes request that ends the wait); a white background answered gives the
light theme's colours to the diff of an edit awaiting approval; ``--theme dark`` is taken as said,
without asking. And the pure parts: ``COLORFGBG`` and the OSC 11 answer read as dark or light."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.color import ColorSystem
from rich.style import Style as RichStyle

from chat._markdown import DARK, LIGHT
from chat._theme import resolve_theme, theme_from_colorfgbg, theme_from_reply
from tests.chat._fakehost import agent_host_chat, host_toml
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse


def _background(style: str) -> bytes:
    """How rich says this background in a 256-colour terminal (``48;5;N``, ending an SGR sequence)."""
    return RichStyle.parse(style).render("x", color_system=ColorSystem.EIGHT_BIT).split("x")[0].removeprefix("\x1b[").encode()


def _edit_replies() -> list[Reply]:
    edit = {"path": "notes.txt", "old_string": "old line", "new_string": "new line"}
    return [Reply(200, chat_sse("Editing.", tool_calls=[("call_1", "edit_file", json.dumps(edit))])), Reply(200, chat_sse("Edited."))]


async def test_a_terminal_that_answers_it_is_white_gets_the_light_theme(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("old line\nsame line\n")
    async with FakeProviderServer(_edit_replies(), base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server), tty=True, greeted=False, COLORFGBG="") as chat:
            await chat.expect("\x1b]11;?", timeout=30)  # asked before anything else is drawn
            os.write(chat.fd, b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?62;c")
            await chat.expect("/help for commands", timeout=30)
            await chat.line_editor()
            chat.send("fix the notes")
            await chat.expect("Choose [", timeout=30)
            chat.send("1")
            await chat.expect("Edited.", timeout=30)
    assert _background(LIGHT.removed) in chat.raw and _background(LIGHT.added) in chat.raw
    assert _background(DARK.removed) not in chat.raw
    assert (project / "notes.txt").read_text() == "new line\nsame line\n"
    assert "fix the notes" in json.dumps(server.requests[0].json()["messages"])


async def test_the_theme_flag_is_taken_as_said_without_asking(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("old line\nsame line\n")
    async with FakeProviderServer(_edit_replies(), base_path="/v1") as server:
        async with agent_host_chat(tmp_path, project, host_toml(server), "--theme", "dark", tty=True, COLORFGBG="") as chat:
            chat.send("fix the notes")
            await chat.expect("Choose [", timeout=30)
            chat.send("4")  # Deny: at once, no reason asked
            await chat.expect("Edited.", timeout=30)
    assert b"\x1b]11;?" not in chat.raw
    assert _background(DARK.removed) in chat.raw
    assert (project / "notes.txt").read_text() == "old line\nsame line\n"


def test_colorfgbg_and_the_osc_11_answer_say_dark_or_light() -> None:
    assert theme_from_colorfgbg("15;0") == "dark" and theme_from_colorfgbg("0;15") == "light"
    assert theme_from_colorfgbg("0;default;7") == "light" and theme_from_colorfgbg("default") is None
    assert theme_from_reply(b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\\x1b[?62;c") == "light"
    assert theme_from_reply(b"\x1b]11;rgb:28/2c/34\x07") == "dark"  # two hex digits a channel
    assert theme_from_reply(b"\x1b[?62;c") is None  # the terminal answered only the attributes
    never = lambda: (_ for _ in ()).throw(AssertionError("asked"))  # noqa: E731
    assert resolve_theme("light", {}, query=never) == "light"
    assert resolve_theme("auto", {"COLORFGBG": "0;15"}, query=never) == "light"
    assert resolve_theme("auto", {}, query=lambda: b"") == "dark"

