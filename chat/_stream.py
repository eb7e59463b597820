"""What ``agent-host -p --output-format json|stream-json`` prints: a turn as JSON objects. Pure.

``TurnEvents.update(turn)`` compares the turn (the model's ``ActiveTurn`` or finished ``Turn``, AHP 1.0.0,
as the client's mirror holds it) with what it saw last time and returns the stream events for
what changed, in response-part order:

* ``{"type": "text_delta", "part_id", "text"}``: answer (markdown) text as it streams;
* ``{"type": "reasoning_delta", "part_id", "text"}``: reasoning text as it streams;
* ``{"type": "tool_call", "tool_call_id", "tool", "status", "input"}``: each status a tool call
  reaches (``streaming`` is not reported; ``input`` is the arguments the agent gave as a JSON object,
  as Claude Code's ``tool_use`` blocks carry them; the raw text when it is not valid JSON; null when none);
* ``{"type": "tool_result", "tool_call_id", "tool", "success", "output", "error"}``: once, when a
  call completed (``output`` the text of its content) or was cancelled (``success`` false,
  ``error`` the reason);
* ``{"type": "notice", "text"}``: a system notification inside the turn.

``result_object(...)`` is the final object of both formats (``type: "result"``), see its docstring.
Keys are snake_case, as Claude Code's ``--output-format`` objects are; the event names are ours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["TurnEvents", "cancelled_reason", "result_object", "answer_text", "model_rounds"]


_ENDED_BY = {"cancelled": "cancelled with the turn", "error": "stopped: the turn failed"}
"""What a call the turn's end cut short (reason ``skipped``) reads as, by how the turn ended."""


def cancelled_reason(call: Mapping[str, Any], turn_state: str | None) -> str:
    """Why a cancelled call did not run, in the words the terminal and ``-p`` both use:
    ``denied``, ``result rejected``, or how the turn's end cut it short."""
    reason = call.get("reason", "")
    if reason == "skipped":  # the turn ended before the call did
        return _ENDED_BY.get(turn_state or "", "not run: the turn ended first")
    return {"denied": "denied", "result-denied": "result rejected"}.get(str(reason), "cancelled")


def _text(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("markdown", ""))
    return "" if value is None else str(value)


def _input(raw: Any) -> Any:
    """A call's input as the object it encodes; text that is not JSON (a model's broken arguments) stays text."""
    if not isinstance(raw, str):
        return raw
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _content_text(content: Any) -> str:
    return "".join(str(item.get("text", "")) for item in content or () if isinstance(item, Mapping) and item.get("type") == "text")


class TurnEvents:
    """The stream events of one turn, computed from successive snapshots of it."""

    def __init__(self) -> None:
        self._text: dict[str, int] = {}
        self._status: dict[str, str] = {}
        self._notes: set[int] = set()

    def update(self, turn: Mapping[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for index, part in enumerate(turn.get("responseParts") or ()):
            kind = part.get("kind")
            if kind in ("markdown", "reasoning"):
                key = f"{kind}:{part.get('id')}"
                content = str(part.get("content") or "")
                new = content[self._text.get(key, 0):]
                if new:
                    self._text[key] = len(content)
                    events.append({"type": "text_delta" if kind == "markdown" else "reasoning_delta", "part_id": part.get("id"), "text": new})
            elif kind == "toolCall":
                events.extend(self._tool(part.get("toolCall") or {}, turn.get("state")))
            elif kind == "systemNotification" and index not in self._notes:
                self._notes.add(index)
                events.append({"type": "notice", "text": _text(part.get("content"))})
        return events

    def _tool(self, call: Mapping[str, Any], turn_state: str | None) -> list[dict[str, Any]]:
        call_id = str(call.get("toolCallId"))
        status = str(call.get("status"))
        if status == "streaming" or self._status.get(call_id) == status:
            return []
        self._status[call_id] = status
        tool = call.get("toolName")
        events: list[dict[str, Any]] = [{"type": "tool_call", "tool_call_id": call_id, "tool": tool, "status": status, "input": _input(call.get("toolInput"))}]
        if status == "completed":
            error = call.get("error") or {}
            events.append({"type": "tool_result", "tool_call_id": call_id, "tool": tool, "success": bool(call.get("success")),
                           "output": _content_text(call.get("content")), "error": error.get("message") if error else None})
        elif status == "cancelled":
            events.append({"type": "tool_result", "tool_call_id": call_id, "tool": tool, "success": False, "output": "",
                           "error": call.get("reasonMessage") or cancelled_reason(call, turn_state)})
        return events


def answer_text(turn: Mapping[str, Any] | None) -> str:
    """The turn's answer: its markdown parts, in order."""
    return "".join(str(p.get("content") or "") for p in (turn or {}).get("responseParts") or () if p.get("kind") == "markdown")


def model_rounds(turn: Mapping[str, Any] | None) -> int:
    """How many times the model answered in the turn, as far as the parts show: one, plus one after
    each run of tool calls the turn went on from (Claude Code's ``num_turns``)."""
    rounds, in_tools = 0, False
    for part in (turn or {}).get("responseParts") or ():
        if part.get("kind") == "toolCall":
            if not in_tools:
                rounds += 1
            in_tools = True
        elif part.get("kind") in ("markdown", "reasoning"):
            in_tools = False
    return rounds + 1


def result_object(
    *, session: str | None, turn: Mapping[str, Any] | None, exit_code: int, subtype: str, error: str | None, duration_ms: int
) -> dict[str, Any]:
    """The last object printed: ``type: "result"``, ``subtype`` (``success``, ``error``,
    ``cancelled``, ``refused``, ``timeout``, ``max_turns``, ``denied``), ``is_error``, ``result``
    (the answer text), ``session_id`` and ``session`` (its URI, ``<agent>:/<id>``), ``usage`` (tokens as the
    provider reported them), ``cost_usd`` (null: prices are not known to the client),
    ``num_turns`` (``model_rounds``), ``duration_ms``, ``exit_code`` and ``error`` (or null)."""
    usage = (turn or {}).get("usage") or {}
    return {
        "type": "result",
        "subtype": subtype,
        "is_error": exit_code not in (0, 3),
        "result": answer_text(turn),
        "session_id": session.rsplit("/", 1)[-1] if session else None,
        "session": session,
        "usage": {
            "input_tokens": usage.get("inputTokens"),
            "output_tokens": usage.get("outputTokens"),
            "cache_read_tokens": usage.get("cacheReadTokens"),
            "model": usage.get("model"),
        },
        "cost_usd": None,
        "num_turns": model_rounds(turn),
        "duration_ms": duration_ms,
        "exit_code": exit_code,
        "error": error,
    }
