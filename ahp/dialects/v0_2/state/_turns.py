"""Session turn lifecycle: start, streamed parts, tool calls, turn end and truncation.

Handlers take ``(state, action, now)`` and return the next session state.

Invariants:

* Turn-scoped actions act only on the active turn whose ``id`` equals the action's ``turnId``
  (absent equals absent, as in JS); anything else returns ``state`` itself.
* Only the path that changes is copied: state → activeTurn → responseParts list → one part.
  A streamed token therefore costs O(parts in the turn), never a copy of the session.
* ``modifiedAt`` is set from ``now`` on turn start, turn end and truncation, and nowhere else here.
* Turn end force-cancels unfinished tool calls, appends the finished ``Turn``, drops
  ``activeTurn`` and every open input request, and recomputes ``summary.status``.
"""

from __future__ import annotations

from typing import Any

import ahp.dialects.v0_2.state.tool_calls as tool_calls
from ahp.dialects.v0_2.state._js import as_dict, as_list, assign, concat, payload, truthy, without_none
from ahp.dialects.v0_2.state.status import SessionStatus, recompute_status, refresh_status, with_flag

__all__ = [
    "end_turn",
    "on_append_text",
    "on_response_part",
    "on_tool_call",
    "on_tool_call_start",
    "on_truncated",
    "on_turn_started",
    "on_usage",
]


def _matching_turn(state: dict[str, Any], turn_id: Any) -> dict[str, Any] | None:
    """The active turn if its id is ``turn_id``; ``None`` otherwise."""
    active = state.get("activeTurn")
    if not truthy(active) or not isinstance(active, dict):
        return None
    return active if active.get("id") == turn_id else None


def _with_parts(state: dict[str, Any], active: dict[str, Any], parts: list[Any]) -> dict[str, Any]:
    return {**state, "activeTurn": {**active, "responseParts": parts}}


def on_turn_started(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    active = {"id": payload(action, "turnId"), "userMessage": payload(action, "userMessage"), "responseParts": []}
    nxt = {**state, "activeTurn": without_none(active)}
    summary = as_dict(state.get("summary"))
    status = with_flag(recompute_status(nxt), SessionStatus.IsRead, False)
    nxt["summary"] = {**summary, "status": status, "modifiedAt": now}

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
    """``session/delta`` and ``session/reasoning``: append to the first part with that id."""
    kind = "markdown" if action.get("type") == "session/delta" else "reasoning"
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
    if active is None or not isinstance(part, dict):
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
        return refresh_status(nxt)
    return nxt


def end_turn(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """``turnComplete``, ``turnCancelled`` and ``error``: finalise the matching active turn."""
    active = _matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    action_type = action["type"]  # dispatch ran this handler for a str type
    turn_state = {"session/turnComplete": "complete", "session/turnCancelled": "cancelled"}.get(action_type, "error")

    parts = []
    for part in as_list(active.get("responseParts")):
        if isinstance(part, dict) and part.get("kind") == "toolCall":
            call = as_dict(part.get("toolCall"))
            cancelled = tool_calls.force_cancel(call)
            # A force-cancelled part is rebuilt: extra keys on the part itself are dropped.
            part = part if cancelled is call else {"kind": "toolCall", "toolCall": cancelled}
        parts.append(part)

    turn = without_none(
        {
            "id": active.get("id"),
            "userMessage": active.get("userMessage"),
            "responseParts": parts,
            "usage": active.get("usage"),
            "state": turn_state,
            "error": payload(action, "error") if turn_state == "error" else None,
        }
    )
    nxt = {key: value for key, value in state.items() if key not in ("activeTurn", "inputRequests")}
    nxt["turns"] = [*as_list(state.get("turns")), turn]
    status = recompute_status(nxt, ended_in_error=turn_state == "error")
    nxt["summary"] = {**as_dict(state.get("summary")), "modifiedAt": now, "status": status}
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
            return state  # an unknown turn id leaves the whole session untouched
    nxt = {key: value for key, value in state.items() if key not in ("activeTurn", "inputRequests")}
    nxt["turns"] = kept
    summary = {**as_dict(state.get("summary")), "modifiedAt": now}
    nxt["summary"] = summary
    summary["status"] = recompute_status(nxt)
    return nxt
