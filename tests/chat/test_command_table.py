"""The client's slash commands in one table: every row runs a coroutine of one of the chat's parts,
no spelling is taken twice, and /help shows every command the table holds."""

from __future__ import annotations

import inspect
import io
from pathlib import Path

from chat._command_table import CLIENT_COMMANDS, COMMANDS, HANDLERS
from chat._core import ChatCore
from chat._terminal import Terminal
from chat.app import ChatApp
from chat.render import HELP_TEXT, Style
from client import AhpClient


def test_every_command_runs_a_coroutine_of_one_of_the_chats_parts(tmp_path: Path) -> None:
    client = AhpClient("ws://127.0.0.1:9/", token=None, client_id="table", origin=None, frame_hook=None,
                       clock=lambda: 0, request_timeout=1.0)  # never connected: the chat is only built
    app = ChatApp(ChatCore(client, Terminal(io.StringIO()), Style(color=False), io.StringIO(), cwd=tmp_path))
    for command in COMMANDS:
        part, _, method = command.handler.partition(".")
        handler = getattr(getattr(app, part, None), method, None)
        assert handler is not None and inspect.iscoroutinefunction(handler), command.handler


def test_no_spelling_names_two_commands() -> None:
    names = [name for command in COMMANDS for name in command.names]
    assert len(names) == len(set(names)) == len(HANDLERS)


def test_help_shows_every_command_and_the_completer_offers_every_name() -> None:
    for command in COMMANDS:
        assert f"  {command.usage} " in HELP_TEXT, command.usage
    assert set(CLIENT_COMMANDS) == set(HANDLERS) - {"?"}
