"""The tool-call state machine of AHP 0.2.0 (PROTOCOL.md §8) as one transition table.

A tool call lives inside a ``{"kind": "toolCall", "toolCall": {...}}`` response part of the active
turn. Its ``status`` moves along these edges and no others::

    (start) ──toolCallStart──► streaming ──toolCallDelta──► streaming
    streaming | running ──toolCallReady{confirmed}──► running
    streaming | running ──toolCallReady{}──► pending-confirmation
    pending-confirmation ──toolCallConfirmed{approved}──► running
    pending-confirmation ──toolCallConfirmed{!approved}──► cancelled
    running | pending-confirmation ──toolCallComplete{requiresResultConfirmation}──► pending-result-confirmation
    running | pending-confirmation ──toolCallComplete{}──► completed
    running ──toolCallContentChanged──► running
    pending-result-confirmation ──toolCallResultConfirmed{approved}──► completed
    pending-result-confirmation ──toolCallResultConfirmed{!approved}──► cancelled (result-denied)
    any unfinished ──turn end──► cancelled (skipped)

Invariants:

* An action whose source status is not in its row is a no-op: the transition returns the very same
  tool-call object, which callers use to detect "nothing changed".
* Every transition except delta and content-changed rebuilds the call from the common fields
  (``toolCallId, toolName, displayName, toolClientId, _meta``) plus the fields its target status
  carries, so fields of the previous status never leak (e.g. re-confirmation drops ``content``).
* ``toolCallComplete`` spreads ``result`` last: its keys win over everything, including ``status``.
* ``selectedOption`` is resolved from the call's own ``options`` by id and only ever carried
  forward; ``_meta`` on an action other than ``toolCallStart`` is ignored.
* Flags are read with JS truthiness (``approved: 0`` denies) and absent values never reach state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.dialects.v0_2.state._js import as_dict, as_list, clean, concat, payload, truthy, without_none

__all__ = [
    "FINISHED_STATUSES",
    "RECOMPUTES_STATUS",
    "TRANSITIONS",
    "force_cancel",
    "new_tool_call",
    "transition",
]

Transition = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]
"""``(tool_call, action) -> tool_call``: the new call, or the same object for a no-op."""

FINISHED_STATUSES = frozenset({"completed", "cancelled"})
"""Statuses a turn end leaves alone; every other status (unknown ones too) is force-cancelled."""


def _base(tool_call: dict[str, Any]) -> dict[str, Any]:
    """The fields every status carries."""
    return {
        "toolCallId": tool_call.get("toolCallId"),
        "toolName": tool_call.get("toolName"),
        "displayName": tool_call.get("displayName"),
        "toolClientId": tool_call.get("toolClientId"),
        "_meta": tool_call.get("_meta"),
    }


def _selected_option(options: Any, option_id: Any) -> Any:
    """The confirmation option called ``option_id``, if both exist."""
    if not truthy(option_id) or not truthy(options):
        return None
    for option in as_list(options):
        if isinstance(option, dict) and option.get("id") == option_id:
            return option
    return None


def new_tool_call(action: dict[str, Any]) -> dict[str, Any]:
    """The ``streaming`` call ``session/toolCallStart`` creates (the only place ``_meta`` is taken)."""
    return without_none(
        {
            "toolCallId": payload(action, "toolCallId"),
            "toolName": payload(action, "toolName"),
            "displayName": payload(action, "displayName"),
            "toolClientId": payload(action, "toolClientId"),
            "_meta": payload(action, "_meta"),
            "status": "streaming",
        }
    )


def _delta(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    message = payload(action, "invocationMessage")
    prior = tool_call.get("partialInput")
    return without_none(
        {
            **tool_call,
            "partialInput": concat("" if prior is None else prior, action.get("content")),
            "invocationMessage": message if message is not None else tool_call.get("invocationMessage"),
        }
    )


def _ready(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    common = {
        **_base(tool_call),
        "invocationMessage": payload(action, "invocationMessage"),
        "toolInput": payload(action, "toolInput"),
    }
    if truthy(action.get("confirmed")):
        return without_none({"status": "running", **common, "confirmed": payload(action, "confirmed")})
    pending = {
        "status": "pending-confirmation",
        **common,
        "confirmationTitle": payload(action, "confirmationTitle"),
        "edits": payload(action, "edits"),
        "editable": payload(action, "editable"),
    }
    if truthy(action.get("options")):
        pending["options"] = payload(action, "options")
    return without_none(pending)


def _confirmed(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    selected = _selected_option(tool_call.get("options"), action.get("selectedOptionId"))
    common = {**_base(tool_call), "invocationMessage": tool_call.get("invocationMessage")}
    if truthy(action.get("approved")):
        edited = payload(action, "editedToolInput")
        result = {
            "status": "running",
            **common,
            "toolInput": edited if edited is not None else tool_call.get("toolInput"),
            "confirmed": payload(action, "confirmed"),
        }
    else:
        result = {
            "status": "cancelled",
            **common,
            "toolInput": tool_call.get("toolInput"),
            "reason": payload(action, "reason"),
            "reasonMessage": payload(action, "reasonMessage"),
            "userSuggestion": payload(action, "userSuggestion"),
        }
    if truthy(selected):
        result["selectedOption"] = selected
    return without_none(result)


def _complete(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    was_running = tool_call.get("status") == "running"
    selected = tool_call.get("selectedOption") if was_running else None
    result = {
        "status": "pending-result-confirmation" if truthy(action.get("requiresResultConfirmation")) else "completed",
        **_base(tool_call),
        "invocationMessage": tool_call.get("invocationMessage"),
        "toolInput": tool_call.get("toolInput"),
        "confirmed": tool_call.get("confirmed") if was_running else "not-needed",
    }
    if truthy(selected):
        result["selectedOption"] = selected
    # Spread last so the result's own keys (even `status`) win; a null key erases the field.
    result.update(as_dict(action.get("result")))
    cleaned: dict[str, Any] = clean(without_none(result))  # clean keeps a dict a dict
    return cleaned


def _result_confirmed(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    common = {
        **_base(tool_call),
        "invocationMessage": tool_call.get("invocationMessage"),
        "toolInput": tool_call.get("toolInput"),
    }
    if truthy(action.get("approved")):
        result = {"status": "completed", **common, "confirmed": tool_call.get("confirmed")}
        if truthy(tool_call.get("selectedOption")):
            result["selectedOption"] = tool_call["selectedOption"]
        # Only the declared result fields survive; anything else the result spread in is dropped.
        for key in ("success", "pastTenseMessage", "content", "structuredContent", "error"):
            result[key] = tool_call.get(key)
    else:
        result = {"status": "cancelled", **common, "reason": "result-denied"}
        if truthy(tool_call.get("selectedOption")):
            result["selectedOption"] = tool_call["selectedOption"]
    return without_none(result)


def _content_changed(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return without_none({**tool_call, "content": payload(action, "content")})


TRANSITIONS: dict[str, tuple[frozenset[str], Transition]] = {
    "session/toolCallDelta": (frozenset({"streaming"}), _delta),
    "session/toolCallReady": (frozenset({"streaming", "running"}), _ready),
    "session/toolCallConfirmed": (frozenset({"pending-confirmation"}), _confirmed),
    "session/toolCallComplete": (frozenset({"running", "pending-confirmation"}), _complete),
    "session/toolCallResultConfirmed": (frozenset({"pending-result-confirmation"}), _result_confirmed),
    "session/toolCallContentChanged": (frozenset({"running"}), _content_changed),
}
"""Action type → (statuses it applies to, transition). ``toolCallStart`` creates a call instead."""

RECOMPUTES_STATUS = frozenset(
    {
        "session/toolCallReady",
        "session/toolCallConfirmed",
        "session/toolCallComplete",
        "session/toolCallResultConfirmed",
    }
)
"""Tool-call actions after which ``summary.status`` is recomputed, even when they change nothing."""


def transition(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    """Apply ``action`` to ``tool_call``; the same object back when the table has no such edge."""
    action_type = action.get("type")
    row = TRANSITIONS.get(action_type) if isinstance(action_type, str) else None
    if row is None:
        return tool_call
    sources, apply = row
    status = tool_call.get("status")
    if not isinstance(status, str) or status not in sources:
        return tool_call
    return apply(tool_call, action)


def force_cancel(tool_call: dict[str, Any]) -> dict[str, Any]:
    """The call as a turn end leaves it: unfinished calls become ``cancelled`` / ``skipped``."""
    status = tool_call.get("status")
    if isinstance(status, str) and status in FINISHED_STATUSES:
        return tool_call
    streaming = status == "streaming"
    message = tool_call.get("invocationMessage")
    return without_none(
        {
            "status": "cancelled",
            **_base(tool_call),
            "invocationMessage": (message if message is not None else "") if streaming else message,
            "toolInput": None if streaming else tool_call.get("toolInput"),
            "reason": "skipped",
        }
    )
