"""The client's slash commands in one table: every row runs a method the chat has, no spelling is
taken twice, and /help shows every command the table holds."""

from __future__ import annotations

import inspect

from chat._command_table import CLIENT_COMMANDS, COMMANDS, HANDLERS
from chat.app import ChatApp
from chat.render import HELP_TEXT


def test_every_command_runs_a_coroutine_the_chat_has() -> None:
    for command in COMMANDS:
        method = getattr(ChatApp, command.handler, None)
        assert method is not None and inspect.iscoroutinefunction(method), command.handler


def test_no_spelling_names_two_commands() -> None:
    names = [name for command in COMMANDS for name in command.names]
    assert len(names) == len(set(names)) == len(HANDLERS)


def test_help_shows_every_command_and_the_completer_offers_every_name() -> None:
    for command in COMMANDS:
        assert f"  {command.usage} " in HELP_TEXT, command.usage
    assert set(CLIENT_COMMANDS) == set(HANDLERS) - {"?"}
