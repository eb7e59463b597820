"""Pure reducer for the terminal channel (``TerminalState``, AHP 0.2.0 PROTOCOL.md §11).

Content is a list of parts: ``unclassified{value}`` and
``command{commandId, commandLine, output, timestamp, isComplete, exitCode?, durationMs?}``.

Invariants:

* ``terminal/data`` appends to the tail part if it is an unfinished command (``output``) or an
  unclassified part (``value``); otherwise it starts a new unclassified part.
* ``terminal/input`` changes nothing (the host writes it to the pty).
* Setters replace their fields; an absent value deletes the field (``exited`` without
  ``exitCode`` erases an earlier one, ``resized`` sets both ``cols`` and ``rows``).
* ``commandFinished`` completes every command part with that id.
* Unknown or malformed actions return ``state`` itself; inputs are never mutated; no ``None`` is
  written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.dialects.v0_2.state._dispatch import dispatch
from ahp.dialects.v0_2.state._js import as_list, assign, concat, payload, truthy

__all__ = ["TERMINAL_ACTION_TYPES", "reduce_terminal"]

Handler = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def _data(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    content = list(as_list(state.get("content")))
    tail = content[-1] if content else None
    data = action.get("data")
    if isinstance(tail, dict) and tail.get("type") == "command" and not truthy(tail.get("isComplete")):
        content[-1] = {**tail, "output": concat(tail.get("output"), data)}
    elif isinstance(tail, dict) and tail.get("type") == "unclassified":
        content[-1] = {**tail, "value": concat(tail.get("value"), data)}
    else:
        content.append(assign({"type": "unclassified"}, value=payload(action, "data")))
    return {**state, "content": content}


def _input(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return state


def _set(*fields: str) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
        return assign(state, **{field: payload(action, field) for field in fields})

    return handler


def _cleared(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return {**state, "content": []}


def _detection_available(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return {**state, "supportsCommandDetection": True}


def _command_executed(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    part = assign(
        {"type": "command", "output": "", "isComplete": False},
        commandId=payload(action, "commandId"),
        commandLine=payload(action, "commandLine"),
        timestamp=payload(action, "timestamp"),
    )
    content = [*as_list(state.get("content")), part]
    return {**state, "content": content, "supportsCommandDetection": True}


def _command_finished(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    command_id = action.get("commandId")
    content = []
    for part in as_list(state.get("content")):
        if isinstance(part, dict) and part.get("type") == "command" and part.get("commandId") == command_id:
            part = assign(
                part,
                isComplete=True,
                exitCode=payload(action, "exitCode"),
                durationMs=payload(action, "durationMs"),
            )
        content.append(part)
    return {**state, "content": content}


_HANDLERS: dict[str, Handler] = {
    "terminal/data": _data,
    "terminal/input": _input,
    "terminal/resized": _set("cols", "rows"),
    "terminal/claimed": _set("claim"),
    "terminal/titleChanged": _set("title"),
    "terminal/cwdChanged": _set("cwd"),
    "terminal/exited": _set("exitCode"),
    "terminal/cleared": _cleared,
    "terminal/commandDetectionAvailable": _detection_available,
    "terminal/commandExecuted": _command_executed,
    "terminal/commandFinished": _command_finished,
}

TERMINAL_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the terminal reducer understands."""


def reduce_terminal(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    """The terminal state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action)
