"""Pure reducer for the chat channel (``ChatState``, AHP 0.9.0; 1.0.0 ``state.schema.json``).

``reduce_chat(state, action, now)`` returns the next chat state. The turn lifecycle, tool calls,
input requests and pending messages live in ``_turns``, ``tool_calls``, ``_inputs`` and
``_pending``; this module holds the table and the chat-level setters:

* ``chat/activityChanged``, ``chat/draftChanged``, ``chat/movableChanged`` set (absent: delete)
  their field; ``chat/changesetsChanged`` sets the catalogue, absent or null removes it.
* ``chat/isReadChanged`` / ``chat/isArchivedChanged`` flip one status flag of this chat only
  [0.9.0].
* ``chat/workingDirectorySet`` appends a URI not yet listed (creating the list);
  ``chat/workingDirectoryRemoved`` removes a listed one.
* ``chat/backgroundWorkSet`` upserts an entry by ``id``; ``chat/backgroundWorkRemoved`` removes
  one (unknown ids are a no-op) and leaves the list absent rather than empty [0.9.0].
* ``chat/turnsLoaded`` prepends the older turns the chat does not hold yet (by id) and replaces
  ``turnsNextCursor`` (absent: delete).

Invariants (every handler): inputs are never mutated and untouched sub-objects are shared; an
unknown or malformed action returns ``state`` itself and nothing raises; no ``None`` is written;
``now`` (epoch ms) is read only where a turn's own timestamps cannot be (see ``_turns``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ahp.state._inputs as _inputs
import ahp.state._pending as _pending
import ahp.state._turns as _turns
from ahp.state._dispatch import dispatch
from ahp.state._js import as_dict, as_list, assign, payload, truthy
from ahp.state._lists import index_by, remove_at, upsert_by, without_value
from ahp.state.status import SessionStatus, with_flag

__all__ = ["CHAT_ACTION_TYPES", "reduce_chat"]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]


def _set(field: str, source: str | None = None) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        return assign(state, **{field: payload(action, source or field)})

    return handler


def _flag(flag: SessionStatus, field: str) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        return {**state, "status": with_flag(state.get("status"), flag, truthy(action.get(field)))}

    return handler


def _changesets_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    changesets = payload(action, "changesets")
    # An empty catalogue is still a catalogue (JS truthiness); absent or null removes the key.
    return assign(state, changesets=changesets if truthy(changesets) else None)


def _working_directory_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    directory = action.get("directory")
    if not isinstance(directory, str):
        return state
    directories = as_list(state.get("workingDirectories"))
    if directory in directories:
        return state
    return {**state, "workingDirectories": [*directories, directory]}


def _working_directory_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    directories, removed = without_value(as_list(state.get("workingDirectories")), action.get("directory"))
    return {**state, "workingDirectories": directories} if removed else state


def _background_work_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    work = payload(action, "work")
    if not isinstance(work, dict):
        return state
    return {**state, "backgroundWork": upsert_by(as_list(state.get("backgroundWork")), "id", work)}


def _background_work_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entries = as_list(state.get("backgroundWork"))
    index = index_by(entries, "id", action.get("id"))
    if index < 0:
        return state
    return assign(state, backgroundWork=remove_at(entries, index) or None)


def _turns_loaded(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    loaded = payload(action, "turns")
    if not isinstance(loaded, list):
        return state
    turns = as_list(state.get("turns"))
    known = {as_dict(turn).get("id") for turn in turns if isinstance(as_dict(turn).get("id"), str)}
    older = [turn for turn in loaded if as_dict(turn).get("id") not in known]
    return assign({**state, "turns": [*older, *turns]}, turnsNextCursor=payload(action, "turnsNextCursor"))


_HANDLERS: dict[str, Handler] = {
    "chat/turnStarted": _turns.on_turn_started,
    "chat/delta": _turns.on_append_text,
    "chat/reasoning": _turns.on_append_text,
    "chat/responsePart": _turns.on_response_part,
    "chat/usage": _turns.on_usage,
    "chat/turnComplete": _turns.end_turn,
    "chat/turnCancelled": _turns.end_turn,
    "chat/error": _turns.end_turn,
    "chat/turnResume": _turns.on_turn_resume,
    "chat/truncated": _turns.on_truncated,
    "chat/turnsLoaded": _turns_loaded,
    "chat/toolCallStart": _turns.on_tool_call_start,
    "chat/toolCallDelta": _turns.on_tool_call,
    "chat/toolCallReady": _turns.on_tool_call,
    "chat/toolCallConfirmed": _turns.on_tool_call,
    "chat/toolCallComplete": _turns.on_tool_call,
    "chat/toolCallResultConfirmed": _turns.on_tool_call,
    "chat/toolCallContentChanged": _turns.on_tool_call,
    "chat/toolCallAuthRequired": _turns.on_tool_call,
    "chat/toolCallAuthResolved": _turns.on_tool_call,
    "chat/inputRequested": _inputs.on_input_requested,
    "chat/inputAnswerChanged": _inputs.on_input_answer_changed,
    "chat/inputCompleted": _inputs.on_input_completed,
    "chat/pendingMessageSet": _pending.on_pending_message_set,
    "chat/pendingMessageRemoved": _pending.on_pending_message_removed,
    "chat/queuedMessagesReordered": _pending.on_queued_messages_reordered,
    "chat/activityChanged": _set("activity"),
    "chat/draftChanged": _set("draft"),
    "chat/movableChanged": _set("movable"),
    "chat/changesetsChanged": _changesets_changed,
    "chat/isReadChanged": _flag(SessionStatus.IsRead, "isRead"),
    "chat/isArchivedChanged": _flag(SessionStatus.IsArchived, "isArchived"),
    "chat/workingDirectorySet": _working_directory_set,
    "chat/workingDirectoryRemoved": _working_directory_removed,
    "chat/backgroundWorkSet": _background_work_set,
    "chat/backgroundWorkRemoved": _background_work_removed,
}

CHAT_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the chat reducer understands (the schema's names)."""


def reduce_chat(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The chat state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action, now)
