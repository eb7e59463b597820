"""Chat turn lifecycle: start, streamed parts, tool calls, turn end, resume and truncation.

Handlers take ``(state, action, now)`` and return the next chat state.

Invariants:

* Turn-scoped actions act only on the active turn whose ``id`` equals the action's ``turnId``;
  anything else returns ``state`` itself.
* Only the path that changes is copied: state → activeTurn → responseParts list → one part.
* ``modifiedAt`` comes from the turn's data [0.9.0]: ``startedAt`` when a turn starts,
  ``startedAt + duration`` when it ends; ``now`` only stands in when that data cannot be read.
  Nothing else here touches it.
* A turn ends (complete, cancelled, error) by force-cancelling unfinished tool calls, appending
  ``chat/error``'s error part (errors are durable response parts since 0.9.0; ``Turn.error`` is
  gone), clamping ``duration`` at zero and moving the turn to ``turns``. Open input requests stay
  in the ended turn's parts, unanswered.
* ``chat/responsePart`` never appends an error part (only ``chat/error`` does, as it ends the turn).
* ``chat/turnResume`` reopens the latest turn, with its message, parts (the error included) and
  usage, only when no turn is active and that turn ended in an error whose final part says
  ``resumable: true``.
"""

from __future__ import annotations

from typing import Any

import ahp.state.tool_calls as tool_calls
from ahp.state._chat_status import chat_status, refresh_chat_status
from ahp.state._js import as_dict, as_list, assign, concat, payload, truthy, without_none
from ahp.state.clock import add_milliseconds, iso_timestamp
from ahp.state.status import SessionStatus, with_flag

__all__ = [
    "end_turn",
    "on_append_text",
    "on_response_part",
    "on_tool_call",
    "on_tool_call_start",
    "on_truncated",
    "on_turn_resume",
    "on_turn_started",
    "on_usage",
]


def _matching_turn(state: dict[str, Any], turn_id: Any) -> dict[str, Any] | None:
    active = state.get("activeTurn")
    if not truthy(active) or not isinstance(active, dict):
        return None
    return active if active.get("id") == turn_id else None


def _with_parts(state: dict[str, Any], active: dict[str, Any], parts: list[Any]) -> dict[str, Any]:
    return {**state, "activeTurn": {**active, "responseParts": parts}}


def _timestamp(value: Any, now: int) -> Any:
    """``value`` when it is an ISO timestamp string, else the caller's clock."""
    return value if isinstance(value, str) and value else iso_timestamp(now)


def on_turn_started(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = {
        "id": payload(action, "turnId"),
        "startedAt": payload(action, "startedAt"),
        "message": payload(action, "message"),
        "responseParts": [],
    }
    nxt = {**state, "activeTurn": without_none(active)}
    nxt["status"] = with_flag(chat_status(nxt), SessionStatus.IsRead, False)
    nxt = assign(nxt, modifiedAt=_timestamp(action.get("startedAt"), now))

    # A turn started from a pending message consumes that message.
    consumed = action.get("queuedMessageId")
    if truthy(consumed):
        steering = nxt.get("steeringMessage")
        if isinstance(steering, dict) and steering.get("id") == consumed:
            nxt.pop("steeringMessage")
        queued = nxt.get("queuedMessages")
        if truthy(queued):
            remaining = [m for m in as_list(queued) if as_dict(m).get("id") != consumed]
            nxt = assign(nxt, queuedMessages=remaining or None)
    return nxt


def on_append_text(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """``chat/delta`` and ``chat/reasoning``: append to the first part with that id."""
    kind = "markdown" if action.get("type") == "chat/delta" else "reasoning"
    active = _matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    parts = as_list(active.get("responseParts"))
    part_id = action.get("partId")
    for index, part in enumerate(parts):
        part = as_dict(part)
        # Tool-call parts are addressed by their call id; every other part by its own `id`.
        own_id = as_dict(part.get("toolCall")).get("toolCallId") if part.get("kind") == "toolCall" else part.get("id")
        if own_id != part_id:
            continue
        if part.get("kind") != kind:
            return state  # the first part with this id decides, and it is of another kind
        new_parts = list(parts)
        new_parts[index] = {**part, "content": concat(part.get("content"), action.get("content"))}
        return _with_parts(state, active, new_parts)
    return state


def on_response_part(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = _matching_turn(state, action.get("turnId"))
    part = payload(action, "part")
    if active is None or not isinstance(part, dict) or part.get("kind") == "error":
        return state
    return _with_parts(state, active, [*as_list(active.get("responseParts")), part])


def on_usage(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = _matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    return {**state, "activeTurn": assign(active, usage=payload(action, "usage"))}


def on_tool_call_start(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = _matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    part = {"kind": "toolCall", "toolCall": tool_calls.new_tool_call(action)}
    return _with_parts(state, active, [*as_list(active.get("responseParts")), part])


def _apply_to_tool_calls(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    active = _matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    parts = as_list(active.get("responseParts"))
    call_id = action.get("toolCallId")
    new_parts = list(parts)
    changed = False
    # Every part carrying this call id is updated (ids are meant to be unique, but are not checked).
    for index, part in enumerate(parts):
        if not isinstance(part, dict) or part.get("kind") != "toolCall":
            continue
        call = part.get("toolCall")
        if not isinstance(call, dict) or call.get("toolCallId") != call_id:
            continue
        updated = tool_calls.transition(call, action)
        if updated is not call:
            new_parts[index] = {**part, "toolCall": updated}
            changed = True
    return _with_parts(state, active, new_parts) if changed else state


def on_tool_call(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """Every tool-call action except start, routed through the transition table."""
    nxt = _apply_to_tool_calls(state, action)
    if action.get("type") in tool_calls.RECOMPUTES_STATUS:
        return refresh_chat_status(nxt)
    return nxt


_END_STATES = {"chat/turnComplete": "complete", "chat/turnCancelled": "cancelled", "chat/error": "error"}


def _duration(value: Any) -> int | float | None:
    """``Math.max(0, duration)``; ``None`` (absent) for a value that is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return max(0, value)


def end_turn(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """``turnComplete``, ``turnCancelled`` and ``error``: finalise the matching active turn."""
    active = _matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    turn_state = _END_STATES.get(action["type"], "error")  # dispatch ran this handler for a str type

    parts = []
    for part in as_list(active.get("responseParts")):
        if isinstance(part, dict) and part.get("kind") == "toolCall":
            call = as_dict(part.get("toolCall"))
            cancelled = tool_calls.force_cancel(call)
            # A force-cancelled part is rebuilt: extra keys on the part itself are dropped.
            part = part if cancelled is call else {"kind": "toolCall", "toolCall": cancelled}
        parts.append(part)
    error_part = payload(action, "part") if turn_state == "error" else None
    if isinstance(error_part, dict):
        parts.append(error_part)

    duration = _duration(action.get("duration"))
    turn = without_none(
        {
            "id": active.get("id"),
            "startedAt": active.get("startedAt"),
            "duration": duration,
            "message": active.get("message"),
            "responseParts": parts,
            "usage": active.get("usage"),
            "state": turn_state,
        }
    )
    nxt = {key: value for key, value in state.items() if key != "activeTurn"}
    nxt["turns"] = [*as_list(state.get("turns")), turn]
    ended = add_milliseconds(active.get("startedAt"), duration if duration is not None else 0)
    nxt["modifiedAt"] = ended if ended is not None else iso_timestamp(now)
    nxt["status"] = chat_status(nxt, ended_in_error=turn_state == "error")
    return without_none(nxt)


def _resumable(turn: Any) -> bool:
    parts = as_list(as_dict(turn).get("responseParts"))
    last = as_dict(parts[-1]) if parts else {}
    return last.get("kind") == "error" and last.get("resumable") is True


def on_turn_resume(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    if truthy(state.get("activeTurn")):
        return state
    turns = as_list(state.get("turns"))
    latest = as_dict(turns[-1]) if turns else {}
    if (
        not latest
        or latest.get("id") != action.get("turnId")
        or latest.get("state") != "error"
        or not _resumable(latest)
    ):
        return state
    reopened = {
        "id": latest.get("id"),
        "startedAt": latest.get("startedAt") if latest.get("startedAt") is not None else state.get("modifiedAt"),
        "message": latest.get("message"),
        "responseParts": as_list(latest.get("responseParts")),
        "usage": latest.get("usage"),
    }
    nxt = {**state, "turns": turns[:-1], "activeTurn": without_none(reopened)}
    nxt["status"] = with_flag(chat_status(nxt), SessionStatus.IsRead, False)
    return nxt


def on_truncated(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    turns = as_list(state.get("turns"))
    turn_id = action.get("turnId")
    if turn_id is None:
        kept: list[Any] = []
    else:
        for index, turn in enumerate(turns):
            if as_dict(turn).get("id") == turn_id:
                kept = turns[: index + 1]
                break
        else:
            return state  # an unknown turn id leaves the whole chat untouched
    drop = {"activeTurn"} | ({"turnsNextCursor"} if turn_id is None else set())
    nxt = {key: value for key, value in state.items() if key not in drop}
    nxt["turns"] = kept
    nxt["status"] = chat_status(nxt)
    return nxt
