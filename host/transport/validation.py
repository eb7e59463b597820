"""Whether a client may dispatch an action of the internal (0.9.0) model (PROTOCOL.md §9-§10, in
0.9.0's terms). Pure: no I/O, no clock.

``check_client_action(kind, state, action, client_id)`` returns None when the action may be
applied, or a sentence for the client (the ``rejectionReason``) saying what was wrong and what to
do instead. It runs on what the client's dialect lifted (``host.transport.dialects``: a 0.2.0 client's
action was first judged by 0.2.0's own rules on the state that client sees), after the channel is
known to exist and before the reducer; the reducer never sees a refused action.

The rules, in order: the action is a JSON object with a string ``type``; the type is one of the
internal model's, belongs to this channel kind and clients may dispatch it (``HOST_ONLY`` lists
those only the host produces); and the semantic rules: no second concurrent turn in a chat,
confirmations only for calls that wait for one, only a client tool's owner completes or updates
it, a client sets or removes only its own active-client entry, answers fit their questions, the
config contracts of sessions and of the host, terminal input only to a running shell a client
may type in, and no messages into a chat whose ``interactivity`` is ``read-only`` or ``hidden``
(a sub-agent's: its one turn is the host's).
"""

from __future__ import annotations

import operator
from typing import Any

from ahp.dialects.catalogue import ACTION_INTRODUCED_IN
from host.runtime.tools.session_config import AUTO_APPROVE, AutoApproveValueError, auto_approve_value
from host.transport import action_checks as shared
from host.transport.action_checks import Rule, active_turn, pending_exists

__all__ = ["HOST_ONLY", "check_client_action"]


HOST_ONLY = frozenset({
    "root/agentsChanged", "root/activeSessionsChanged", "root/terminalsChanged",
    "session/ready", "session/creationFailed", "session/serverToolsChanged", "session/activityChanged",
    "session/customizationsChanged", "session/customizationUpdated", "session/customizationRemoved",
    "session/changesetsChanged", "session/metaChanged", "session/chatAdded", "session/chatRemoved",
    "session/chatUpdated", "session/defaultChatChanged", "session/inputNeededSet", "session/inputNeededRemoved",
    "session/mcpServerStateChanged", "session/chatsReordered",
    "chat/delta", "chat/reasoning", "chat/responsePart", "chat/usage", "chat/turnComplete", "chat/error",
    "chat/toolCallStart", "chat/toolCallDelta", "chat/toolCallReady", "chat/toolCallAuthRequired",
    "chat/toolCallAuthResolved", "chat/inputRequested", "chat/turnsLoaded", "chat/activityChanged",
    "chat/backgroundWorkSet", "chat/backgroundWorkRemoved", "chat/changesetsChanged", "chat/canvasesChanged",
    "chat/movableChanged",
    "terminal/data", "terminal/exited", "terminal/cwdChanged", "terminal/commandDetectionAvailable",
    "terminal/commandExecuted", "terminal/commandFinished",
    "changeset/statusChanged", "changeset/fileSet", "changeset/fileRemoved", "changeset/operationsChanged",
    "changeset/cleared", "changeset/contentChanged", "changeset/operationStatusChanged",
    "resourceWatch/changed",
    "automation/set", "automation/removed", "automationRun/lifecycleChanged", "automationRun/sessionSet",
    "automationRun/sessionRemoved", "automationRun/primarySessionChanged",
    "canvas/stateChanged",
})
"""Internal action types only the host dispatches."""

_KIND_OF_PREFIX = {"automationRun": "automationRun", "resourceWatch": "resourceWatch"}


def check_client_action(kind: str, state: dict[str, Any], action: Any, client_id: str,
                        session: dict[str, Any] | None = None) -> str | None:
    """``session``: for a chat channel, its session's state (an input request asked while the chat
    runs no turn lives only in the session's ``inputNeeded``, and is answered on the chat)."""
    if not isinstance(action, dict):
        return "The action must be a JSON object with a string \"type\"."
    action_type = action.get("type")
    if not isinstance(action_type, str) or not action_type:
        return "The action must have a string \"type\", for example \"chat/turnStarted\"."
    if action_type not in ACTION_INTRODUCED_IN:
        return f"Unknown action type {action_type!r}."
    prefix = action_type.split("/", 1)[0]
    owner = _KIND_OF_PREFIX.get(prefix, prefix)
    if owner != kind:
        return f"{action_type} belongs on a {owner} channel, not on a {kind} channel."
    if action_type in HOST_ONLY:
        return f"{action_type} is produced by the host only; clients cannot dispatch it."
    rule = _RULES.get(action_type)
    if rule is None:
        return None
    if session is not None and kind == "chat" and action_type in ("chat/inputAnswerChanged", "chat/inputCompleted"):
        state = {**state, "inputNeeded": session.get("inputNeeded")}
    try:
        return rule(state, action, client_id)
    except (KeyError, TypeError, AttributeError):
        return f"Malformed {action_type}: a required field is missing or has the wrong type."


# -- chat rules ------------------------------------------------------------------------------------


def _not_read_only(state: dict[str, Any]) -> str | None:
    if state.get("interactivity") in ("read-only", "hidden"):
        return ("This chat is read-only (a sub-agent's chat: the host runs its turn). Watch it, answer its "
                "confirmations or cancel its turn; send messages in the chat that started it.")
    return None


def _turn_started(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    refused = _not_read_only(state)
    if refused is not None:
        return refused
    active = active_turn(state)
    if active is not None:
        return (f"Turn {active.get('id')} is still running; cancel it first, or send the message as a "
                "queued or steering message (chat/pendingMessageSet).")
    turn_id = action["turnId"]
    if not isinstance(turn_id, str) or not turn_id:
        return "Malformed chat/turnStarted: turnId must be a non-empty string."
    if not isinstance(action.get("message"), dict):
        return "Malformed chat/turnStarted: message is required."
    if _turn_id_used(state.get("turns") or (), turn_id):
        return f"Turn id {turn_id} is already used in this chat; pick a new id."
    queued_id = action.get("queuedMessageId")
    if queued_id is not None and not pending_exists(state, queued_id):
        return f"There is no pending message with id {queued_id}."
    return None


_TURN_ID = operator.itemgetter("id")


def _turn_id_used(turns: Any, turn_id: str) -> bool:
    """Whether a turn of ``turns`` has the id ``turn_id``. Asked at every turn's start, of every
    turn the chat holds: compared in C over the turns' ids (turn states are dicts with an id), and
    only a list that holds something else is walked in Python."""
    try:
        return turn_id in map(_TURN_ID, turns)
    except (KeyError, TypeError, IndexError):
        return any(isinstance(turn, dict) and turn.get("id") == turn_id for turn in turns)


def _turn_resume(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    """The turn must be the chat's latest, ended in an error whose last part says it can resume
    [1.0.0 ``ChatTurnResumeAction``]; the reducer ignores anything else, so it is refused here."""
    refused = _not_read_only(state)
    if refused is not None:
        return refused
    active = active_turn(state)
    if active is not None:
        return f"Turn {active.get('id')} is running; only an ended turn can be resumed."
    turns = state.get("turns") or []
    latest = turns[-1] if turns and isinstance(turns[-1], dict) else None
    turn_id = action["turnId"]
    if latest is None or latest.get("id") != turn_id:
        return (f"There is no turn {turn_id!r} to resume: only the chat's latest turn "
                f"({latest.get('id') if latest else 'none yet'}) can be resumed.")
    parts = latest.get("responseParts") or []
    last = parts[-1] if parts and isinstance(parts[-1], dict) else {}
    if latest.get("state") != "error" or last.get("kind") != "error" or last.get("resumable") is not True:
        return f"Turn {turn_id} did not end in an error that can be resumed; send a new message instead."
    return None


def _input_request(state: dict[str, Any], request_id: Any) -> dict[str, Any] | None:
    turn = active_turn(state)
    for part in (turn or {}).get("responseParts") or ():
        if isinstance(part, dict) and part.get("kind") == "inputRequest" and part.get("response") is None:
            request = part.get("request")
            if isinstance(request, dict) and request.get("id") == request_id:
                return request
    for entry in state.get("inputNeeded") or ():  # asked outside a turn (see check_client_action)
        if isinstance(entry, dict) and entry.get("kind") == "chatInput" and entry.get("chat") == state.get("resource"):
            request = entry.get("request")
            if isinstance(request, dict) and request.get("id") == request_id:
                return request
    return None


# -- session rules ---------------------------------------------------------------------------------


def _active_client_set(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    wanted = action.get("activeClient")
    if not isinstance(wanted, dict) or wanted.get("clientId") != client_id:
        return "A client can only add itself as an active client (activeClient.clientId must be your clientId)."
    return None


def _active_client_removed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if action.get("clientId") != client_id:
        return f"Only client {action.get('clientId')} can give up its active-client role."
    return None


def _client_owner(call: dict[str, Any]) -> Any:
    contributor = call.get("contributor")
    return contributor.get("clientId") if isinstance(contributor, dict) and contributor.get("kind") == "client" else None


def _auto_approve_problem(value: Any) -> str | None:
    """A boolean, or one of VS Code's approval levels."""
    try:
        auto_approve_value(value)
    except AutoApproveValueError as error:
        return str(error)
    return None


def _terminal_exited(state: dict[str, Any]) -> bool:
    lifecycle = state.get("lifecycle")
    return isinstance(lifecycle, dict) and lifecycle.get("status") == "exited"


_RULES: dict[str, Rule] = {
    "chat/turnStarted": _turn_started,
    "chat/turnResume": _turn_resume,
    "chat/turnCancelled": shared.turn_cancelled,
    "chat/toolCallConfirmed": shared.tool_call_confirmed,
    "chat/toolCallResultConfirmed": shared.tool_call_result_confirmed,
    "chat/toolCallComplete": shared.owned_tool_call("complete", ("running", "pending-confirmation"), _client_owner),
    "chat/toolCallContentChanged": shared.owned_tool_call("update", ("running",), _client_owner),
    "chat/pendingMessageSet": lambda state, action, client_id: _not_read_only(state),
    "chat/pendingMessageRemoved": shared.pending_removed,
    "chat/inputAnswerChanged": shared.input_answer_changed(_input_request),
    "chat/inputCompleted": shared.input_completed(_input_request),
    "session/activeClientSet": _active_client_set,
    "session/activeClientRemoved": _active_client_removed,
    "session/configChanged": shared.config_changed({AUTO_APPROVE: _auto_approve_problem}),
    "session/customizationToggled": shared.customization_toggled,
    "session/titleChanged": shared.title_changed,
    "root/configChanged": shared.root_config_changed,
    "terminal/input": shared.terminal_input(_terminal_exited),
    "terminal/claimed": shared.terminal_claimed,
}
