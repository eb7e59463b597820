"""Whether a 0.2.0 client may dispatch a 0.2.0 action (PROTOCOL.md §9-§10), judged on the state
that client is shown (the 0.2.0 projection of the internal model). Pure: no I/O, no clock.

``check_v02_action(kind, state, action, client_id)`` returns None when the action may be taken
up (``ahp.dialects.v0_2.action_up``; ``host.transport.validation`` then applies the internal model's rules
to what it becomes), or a sentence for the client (the ``rejectionReason``) saying what was wrong
and what to do instead. These are the rules, and the sentences, 0.2.0 clients always had: the
shape of each 0.2.0 action (the generated 0.2.0 models) and 0.2.0's own semantics (one active
client at a time, input requests beside the turn...).

The rules, in order: the action is a JSON object with a string ``type``; the type belongs to this
channel kind and clients may dispatch it; its fields have the schema's shape; and the semantic
rules of §10 (no second concurrent turn, confirmations only for calls that wait for one, only a
client tool's owner completes it, one active client at a time, answers that fit their question...).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ahp.dialects.v0_2.wire.actions import ACTIONS, CLIENT_DISPATCHABLE, action_model
from host.transport import action_checks as shared
from host.transport.action_checks import Rule, active_turn, pending_exists

__all__ = ["check_v02_action"]


def check_v02_action(kind: str, state: dict[str, Any], action: Any, client_id: str) -> str | None:
    if not isinstance(action, dict):
        return "The action must be a JSON object with a string \"type\"."
    action_type = action.get("type")
    if not isinstance(action_type, str) or not action_type:
        return "The action must have a string \"type\", for example \"session/turnStarted\"."
    spec = ACTIONS.get(action_type)
    if spec is None:
        return f"Unknown action type {action_type!r}; see the AHP 0.2.0 action catalogue."
    if spec.channel_kind != kind:
        return f"{action_type} belongs on a {spec.channel_kind} channel, not on a {kind} channel."
    if action_type not in CLIENT_DISPATCHABLE:
        return f"{action_type} is produced by the host only; clients cannot dispatch it."
    shape_error = _check_shape(action_type, action)
    if shape_error is not None:
        return shape_error
    rule = _RULES.get(action_type)
    return rule(state, action, client_id) if rule is not None else None


def _check_shape(action_type: str, action: dict[str, Any]) -> str | None:
    try:
        action_model(action_type).validate_python(action)
    except ValidationError as error:
        problems = []
        for item in error.errors()[:3]:
            where = ".".join(str(part) for part in item.get("loc", ()) if not _is_union_tag(part)) or "action"
            if item.get("type") == "missing":
                problems.append(f"{where} is required")
            else:
                problems.append(f"{where} has the wrong type or value")
        return f"Malformed {action_type}: " + "; ".join(problems) + "."
    return None


def _is_union_tag(part: Any) -> bool:
    # pydantic puts model names into error locations for unions; they mean nothing to a client.
    return isinstance(part, str) and (part[:1].isupper() or part.startswith("function-"))


# -- session rules ---------------------------------------------------------------------------------


def _turn_started(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if state.get("lifecycle") == "creationFailed":
        return "This session failed to start; create a new session."
    active = active_turn(state)
    if active is not None:
        return (
            f"Turn {active.get('id')} is still running; cancel it first, or send the message as a "
            "queued or steering message (session/pendingMessageSet)."
        )
    turn_id = action["turnId"]
    if any(turn.get("id") == turn_id for turn in state.get("turns", ())):
        return f"Turn id {turn_id} is already used in this session; pick a new id."
    queued_id = action.get("queuedMessageId")
    if queued_id is not None and not pending_exists(state, queued_id):
        return f"There is no pending message with id {queued_id}."
    return None


def _active_client_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    current = state.get("activeClient")
    current_id = current.get("clientId") if isinstance(current, dict) else None
    wanted = action.get("activeClient")
    if wanted is None:
        if current_id is not None and current_id != client_id:
            return f"Client {current_id} is the active client; only it can release the role."
        return None
    if wanted.get("clientId") != client_id:
        return "A client can only make itself the active client (activeClient.clientId must be your clientId)."
    if current_id is not None and current_id != client_id:
        return f"Client {current_id} is already the active client of this session."
    return None


def _active_client_tools(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    current = state.get("activeClient")
    if not isinstance(current, dict) or current.get("clientId") != client_id:
        return "Only the session's active client can publish client tools; claim the role first."
    return None


def _input_request(state: dict[str, Any], request_id: Any) -> dict[str, Any] | None:
    for request in state.get("inputRequests") or ():
        if request.get("id") == request_id:
            return request
    return None


def _tool_client(call: dict[str, Any]) -> Any:
    return call.get("toolClientId")


_RULES: dict[str, Rule] = {
    "terminal/input": shared.terminal_input(lambda state: state.get("exitCode") is not None),
    "terminal/claimed": shared.terminal_claimed,
    "session/turnStarted": _turn_started,
    "session/turnCancelled": shared.turn_cancelled,
    "session/toolCallConfirmed": shared.tool_call_confirmed,
    "session/toolCallResultConfirmed": shared.tool_call_result_confirmed,
    "session/toolCallComplete": shared.owned_tool_call("complete", ("running", "pending-confirmation"), _tool_client),
    "session/toolCallContentChanged": shared.owned_tool_call("update", ("running",), _tool_client),
    "session/activeClientChanged": _active_client_changed,
    "session/activeClientToolsChanged": _active_client_tools,
    "session/pendingMessageRemoved": shared.pending_removed,
    "session/inputAnswerChanged": shared.input_answer_changed(_input_request),
    "session/inputCompleted": shared.input_completed(_input_request),
    "session/configChanged": shared.config_changed(),
    "session/customizationToggled": shared.customization_toggled,
    "session/titleChanged": shared.title_changed,
    "root/configChanged": shared.root_config_changed,
}
