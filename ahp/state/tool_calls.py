"""The tool-call state machine of the internal model (AHP 0.9.0) as one transition table.

A tool call lives inside a ``{"kind": "toolCall", "toolCall": {...}}`` response part of a chat's
active turn. Its ``status`` moves along these edges and no others::

    (start) ──toolCallStart──► streaming ──toolCallDelta──► streaming
    streaming | running | pending-confirmation ──toolCallReady{confirmed}──► running
    streaming | running | pending-confirmation ──toolCallReady{}──► pending-confirmation
    pending-confirmation ──toolCallConfirmed{approved}──► running
    pending-confirmation ──toolCallConfirmed{!approved}──► cancelled
    running | pending-confirmation | auth-required ──toolCallComplete──► completed
    running | pending-confirmation ──toolCallComplete{requiresResultConfirmation}──► pending-result-confirmation
    auth-required ──toolCallComplete{result.success}──► (no-op: only a failed result cancels a paused call)
    pending-result-confirmation ──toolCallResultConfirmed{approved}──► completed
    pending-result-confirmation ──toolCallResultConfirmed{!approved}──► cancelled (result-denied)
    running ──toolCallContentChanged──► running
    running (contributor kind mcp) ──toolCallAuthRequired──► auth-required
    auth-required ──toolCallAuthResolved──► running
    any unfinished ──turn end──► cancelled (skipped)

Invariants:

* An action whose source status is not in its row is a no-op: the transition returns the very same
  tool-call object, which callers use to detect "nothing changed".
* Every transition except delta and content-changed rebuilds the call from the common fields
  (``toolCallId, toolName, displayName, intention, contributor, _meta``) plus the fields its target
  status carries, so fields of the previous status never leak. An action's ``_meta`` replaces the
  call's when present.
* ``toolCallReady`` refines ``intention`` and ``contributor`` but never changes who executes the
  call: a client contributor stays (unless the same client is named again), and a late client
  contributor is ignored [0.7.0: "may finalize a tool call's provisional contributor and intention
  without changing client execution ownership"]. Re-readying a pending call keeps what the new
  action omits (title, risk assessment, edits, options), and a call that is not streaming keeps its
  ``toolInput`` unless the action brings one.
* An approved confirmation replaces ``toolInput`` with ``editedToolInput`` only when the input is
  inline text; a content reference is swapped by the host at the resource.
* ``toolCallComplete`` spreads ``result`` last: its keys win over everything, even ``status``.
  Completing from ``auth-required`` keeps the content produced before the pause.
* Flags are read with JS truthiness (``approved: 0`` denies); absent values never reach state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state._js import as_dict, as_list, clean, concat, payload, truthy, without_none

__all__ = [
    "BLOCKING_STATUSES",
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

BLOCKING_STATUSES = frozenset({"pending-confirmation", "pending-result-confirmation", "auth-required"})
"""Statuses that wait on something outside the turn: they make the chat's activity InputNeeded."""


def _base(tool_call: dict[str, Any], action: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fields every status carries; an action's ``_meta`` wins over the call's."""
    meta = payload(action, "_meta") if action is not None else None
    return {
        "toolCallId": tool_call.get("toolCallId"),
        "toolName": tool_call.get("toolName"),
        "displayName": tool_call.get("displayName"),
        "intention": tool_call.get("intention"),
        "contributor": tool_call.get("contributor"),
        "_meta": meta if meta is not None else tool_call.get("_meta"),
    }


def _selected_option(options: Any, option_id: Any) -> Any:
    if not truthy(option_id) or not truthy(options):
        return None
    for option in as_list(options):
        if isinstance(option, dict) and option.get("id") == option_id:
            return option
    return None


def _refined_contributor(current: Any, proposed: Any) -> Any:
    """The contributor after ``toolCallReady``: execution ownership never moves to or from a client."""
    if not truthy(proposed):
        return current
    current_kind = as_dict(current).get("kind")
    proposed_kind = as_dict(proposed).get("kind")
    if current_kind == "client":
        same_client = as_dict(proposed).get("clientId") == as_dict(current).get("clientId")
        return proposed if proposed_kind == "client" and same_client else current
    if proposed_kind == "client":
        return current
    return proposed


def new_tool_call(action: dict[str, Any]) -> dict[str, Any]:
    """The ``streaming`` call ``chat/toolCallStart`` creates."""
    return without_none(
        {
            "toolCallId": payload(action, "toolCallId"),
            "toolName": payload(action, "toolName"),
            "displayName": payload(action, "displayName"),
            "intention": payload(action, "intention"),
            "contributor": payload(action, "contributor"),
            "_meta": payload(action, "_meta"),
            "status": "streaming",
        }
    )


def _delta(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    message = payload(action, "invocationMessage")
    meta = payload(action, "_meta")
    prior = tool_call.get("partialInput")
    content = action.get("content")
    return without_none(
        {
            **tool_call,
            "_meta": meta if meta is not None else tool_call.get("_meta"),
            # A delta without content only updates the message or metadata.
            "partialInput": prior if content is None else concat("" if prior is None else prior, content),
            "invocationMessage": message if message is not None else tool_call.get("invocationMessage"),
        }
    )


def _first(*values: Any) -> Any:
    """JS ``a ?? b ?? ...``: the first value that is not absent."""
    for value in values:
        if value is not None:
            return value
    return None


def _ready(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    status = tool_call.get("status")
    base = _base(tool_call, action)
    base["contributor"] = _refined_contributor(tool_call.get("contributor"), payload(action, "contributor"))
    base["intention"] = _first(payload(action, "intention"), tool_call.get("intention"))
    tool_input = _first(payload(action, "toolInput"), None if status == "streaming" else tool_call.get("toolInput"))
    if truthy(action.get("confirmed")):
        return without_none(
            {
                "status": "running",
                **base,
                "invocationMessage": payload(action, "invocationMessage"),
                "toolInput": tool_input,
                "confirmed": payload(action, "confirmed"),
            }
        )
    pending = tool_call if status == "pending-confirmation" else {}
    ready = {
        "status": "pending-confirmation",
        **base,
        "invocationMessage": payload(action, "invocationMessage"),
        "toolInput": tool_input,
        "confirmationTitle": _first(payload(action, "confirmationTitle"), pending.get("confirmationTitle")),
        "riskAssessment": _first(payload(action, "riskAssessment"), pending.get("riskAssessment")),
        "edits": _first(payload(action, "edits"), pending.get("edits")),
        "editable": _first(payload(action, "editable"), pending.get("editable")),
    }
    options = _first(payload(action, "options"), pending.get("options"))
    if truthy(options):
        ready["options"] = options
    return without_none(ready)


def _confirmed(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    selected = _selected_option(tool_call.get("options"), action.get("selectedOptionId"))
    common = {**_base(tool_call, action), "invocationMessage": tool_call.get("invocationMessage")}
    if truthy(action.get("approved")):
        edited = payload(action, "editedToolInput")
        inline = isinstance(tool_call.get("toolInput"), str)
        result = {
            "status": "running",
            **common,
            "toolInput": edited if edited is not None and inline else tool_call.get("toolInput"),
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
    status = tool_call.get("status")
    paused = status == "auth-required"
    if paused and truthy(as_dict(action.get("result")).get("success")):
        return tool_call  # a paused call never resumed, so it cannot have succeeded
    carried = status in ("running", "auth-required")
    pending_result = truthy(action.get("requiresResultConfirmation")) and not paused
    result = {
        "status": "pending-result-confirmation" if pending_result else "completed",
        **_base(tool_call, action),
        "invocationMessage": tool_call.get("invocationMessage"),
        "toolInput": tool_call.get("toolInput"),
        "confirmed": tool_call.get("confirmed") if carried else "not-needed",
    }
    if carried and truthy(tool_call.get("selectedOption")):
        result["selectedOption"] = tool_call["selectedOption"]
    if paused and truthy(tool_call.get("content")):
        result["content"] = tool_call["content"]
    # Spread last so the result's own keys (even `status`) win; a null key erases the field.
    result.update(as_dict(action.get("result")))
    cleaned: dict[str, Any] = clean(without_none(result))  # clean keeps a dict a dict
    return cleaned


def _result_confirmed(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    common = {
        **_base(tool_call, action),
        "invocationMessage": tool_call.get("invocationMessage"),
        "toolInput": tool_call.get("toolInput"),
    }
    if truthy(action.get("approved")):
        result = {"status": "completed", **common, "confirmed": tool_call.get("confirmed")}
        # Only the declared result fields survive; anything else the result spread in is dropped.
        for key in ("success", "pastTenseMessage", "content", "structuredContent", "error"):
            result[key] = tool_call.get(key)
    else:
        result = {"status": "cancelled", **common, "reason": "result-denied"}
    if truthy(tool_call.get("selectedOption")):
        result["selectedOption"] = tool_call["selectedOption"]
    return without_none(result)


def _content_changed(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    meta = payload(action, "_meta")
    return without_none(
        {
            **tool_call,
            "_meta": meta if meta is not None else tool_call.get("_meta"),
            "content": payload(action, "content"),
        }
    )


def _carry_running_fields(tool_call: dict[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    if truthy(tool_call.get("selectedOption")):
        target["selectedOption"] = tool_call["selectedOption"]
    if truthy(tool_call.get("content")):
        target["content"] = tool_call["content"]
    return target


def _auth_required(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    if as_dict(tool_call.get("contributor")).get("kind") != "mcp":
        return tool_call  # only an MCP server's tool can pause on that server's authentication
    paused = {
        "status": "auth-required",
        **_base(tool_call, action),
        "invocationMessage": tool_call.get("invocationMessage"),
        "toolInput": tool_call.get("toolInput"),
        "confirmed": tool_call.get("confirmed"),
    }
    paused = _carry_running_fields(tool_call, paused)
    paused["auth"] = payload(action, "auth")
    return without_none(paused)


def _auth_resolved(tool_call: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    resumed = {
        "status": "running",
        **_base(tool_call, action),
        "invocationMessage": tool_call.get("invocationMessage"),
        "toolInput": tool_call.get("toolInput"),
        "confirmed": tool_call.get("confirmed"),
    }
    return without_none(_carry_running_fields(tool_call, resumed))


TRANSITIONS: dict[str, tuple[frozenset[str], Transition]] = {
    "chat/toolCallDelta": (frozenset({"streaming"}), _delta),
    "chat/toolCallReady": (frozenset({"streaming", "running", "pending-confirmation"}), _ready),
    "chat/toolCallConfirmed": (frozenset({"pending-confirmation"}), _confirmed),
    "chat/toolCallComplete": (frozenset({"running", "pending-confirmation", "auth-required"}), _complete),
    "chat/toolCallResultConfirmed": (frozenset({"pending-result-confirmation"}), _result_confirmed),
    "chat/toolCallContentChanged": (frozenset({"running"}), _content_changed),
    "chat/toolCallAuthRequired": (frozenset({"running"}), _auth_required),
    "chat/toolCallAuthResolved": (frozenset({"auth-required"}), _auth_resolved),
}
"""Action type → (statuses it applies to, transition). ``toolCallStart`` creates a call instead."""

RECOMPUTES_STATUS = frozenset(TRANSITIONS) - {"chat/toolCallDelta", "chat/toolCallContentChanged"}
"""Tool-call actions after which the chat's status is recomputed (they may enter or leave a
blocking status)."""


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
