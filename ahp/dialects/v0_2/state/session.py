"""Pure reducer for the session channel (``SessionState``, AHP 0.2.0 PROTOCOL.md §7-§9).

``reduce_session(state, action, now)`` returns the next state; ``now`` (epoch ms, supplied by the
caller) is the only clock and is written to ``summary.modifiedAt`` on turn start/end, truncation,
title/model/agent/config changes and the three input actions, and on nothing else.

Invariants (shared by every handler, see also ``_turns``, ``_inputs``, ``_pending``,
``_customizations`` and ``tool_calls``):

* Inputs are never mutated; untouched sub-objects are shared with the previous state.
* An unknown action type, or a malformed action, returns ``state`` itself; nothing here raises.
* State never receives a ``None`` value: a field the reference sets to ``undefined`` is deleted.
* ``session/ready`` changes only ``lifecycle``; ``isReadChanged``/``isArchivedChanged`` flip one
  flag bit and leave ``modifiedAt`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ahp.dialects.v0_2.state._customizations as _customizations
import ahp.dialects.v0_2.state._inputs as _inputs
import ahp.dialects.v0_2.state._pending as _pending
import ahp.dialects.v0_2.state._turns as _turns
from ahp.dialects.v0_2.state._dispatch import dispatch
from ahp.dialects.v0_2.state._js import as_dict, assign, payload, truthy
from ahp.dialects.v0_2.state.status import SessionStatus, with_flag

__all__ = ["SESSION_ACTION_TYPES", "reduce_session"]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]


def _ready(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    # Never touches status: a provisional session may already be running its first turn.
    return {**state, "lifecycle": "ready"}


def _creation_failed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, lifecycle="creationFailed", creationError=payload(action, "error"))


def _summary_change(field: str, *, bumps_modified: bool) -> Handler:
    """A handler that sets (or, when absent, deletes) one summary field from the same-named key."""

    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        changes = {field: payload(action, field)}
        if bumps_modified:
            changes["modifiedAt"] = now
        return {**state, "summary": assign(as_dict(state.get("summary")), **changes)}

    return handler


def _status_flag(flag: SessionStatus, field: str) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        summary = as_dict(state.get("summary"))
        status = with_flag(summary.get("status"), flag, truthy(action.get(field)))
        return {**state, "summary": {**summary, "status": status}}

    return handler


def _changesets_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    summary = as_dict(state.get("summary"))
    changesets = payload(action, "changesets")
    # An empty catalogue is still a catalogue (JS truthiness); absent or null removes the key.
    if truthy(changesets):
        summary = {**summary, "changesets": changesets}
    else:
        summary = {key: value for key, value in summary.items() if key != "changesets"}
    return {**state, "summary": summary}


def _config_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    config = state.get("config")
    if not truthy(config):
        return state
    config = as_dict(config)
    update = as_dict(payload(action, "config"))
    values = dict(update) if truthy(action.get("replace")) else {**as_dict(config.get("values")), **update}
    return {
        **state,
        "config": {**config, "values": values},
        "summary": {**as_dict(state.get("summary")), "modifiedAt": now},
    }


def _meta_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, _meta=payload(action, "_meta"))


def _server_tools_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, serverTools=payload(action, "tools"))


def _active_client_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, activeClient=payload(action, "activeClient"))


def _active_client_tools_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    client = state.get("activeClient")
    if not truthy(client) or not isinstance(client, dict):
        return state
    return {**state, "activeClient": assign(client, tools=payload(action, "tools"))}


_HANDLERS: dict[str, Handler] = {
    "session/ready": _ready,
    "session/creationFailed": _creation_failed,
    "session/turnStarted": _turns.on_turn_started,
    "session/delta": _turns.on_append_text,
    "session/reasoning": _turns.on_append_text,
    "session/responsePart": _turns.on_response_part,
    "session/usage": _turns.on_usage,
    "session/turnComplete": _turns.end_turn,
    "session/turnCancelled": _turns.end_turn,
    "session/error": _turns.end_turn,
    "session/truncated": _turns.on_truncated,
    "session/toolCallStart": _turns.on_tool_call_start,
    "session/toolCallDelta": _turns.on_tool_call,
    "session/toolCallReady": _turns.on_tool_call,
    "session/toolCallConfirmed": _turns.on_tool_call,
    "session/toolCallComplete": _turns.on_tool_call,
    "session/toolCallResultConfirmed": _turns.on_tool_call,
    "session/toolCallContentChanged": _turns.on_tool_call,
    "session/titleChanged": _summary_change("title", bumps_modified=True),
    "session/modelChanged": _summary_change("model", bumps_modified=True),
    "session/agentChanged": _summary_change("agent", bumps_modified=True),
    "session/activityChanged": _summary_change("activity", bumps_modified=False),
    "session/isReadChanged": _status_flag(SessionStatus.IsRead, "isRead"),
    "session/isArchivedChanged": _status_flag(SessionStatus.IsArchived, "isArchived"),
    "session/changesetsChanged": _changesets_changed,
    "session/configChanged": _config_changed,
    "session/metaChanged": _meta_changed,
    "session/serverToolsChanged": _server_tools_changed,
    "session/activeClientChanged": _active_client_changed,
    "session/activeClientToolsChanged": _active_client_tools_changed,
    "session/pendingMessageSet": _pending.on_pending_message_set,
    "session/pendingMessageRemoved": _pending.on_pending_message_removed,
    "session/queuedMessagesReordered": _pending.on_queued_messages_reordered,
    "session/inputRequested": _inputs.on_input_requested,
    "session/inputAnswerChanged": _inputs.on_input_answer_changed,
    "session/inputCompleted": _inputs.on_input_completed,
    "session/customizationsChanged": _customizations.on_customizations_changed,
    "session/customizationToggled": _customizations.on_customization_toggled,
    "session/customizationUpdated": _customizations.on_customization_updated,
    "session/customizationRemoved": _customizations.on_customization_removed,
}

SESSION_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the session reducer understands (the schema's names)."""


def reduce_session(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The session state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action, now)
