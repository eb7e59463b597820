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

import json
from collections.abc import Callable
from typing import Any

from ahp.dialects.catalogue import ACTION_INTRODUCED_IN
from host.root_config import MAX_UNDECLARED_KEYS, MAX_VALUE_CHARS, declared_value_problem
from host.runtime.tools.session_config import AUTO_APPROVE, AutoApproveValueError, auto_approve_value

__all__ = ["HOST_ONLY", "check_client_action"]

Rule = Callable[[dict[str, Any], dict[str, Any], str], "str | None"]

HOST_ONLY = frozenset({
    "root/agentsChanged", "root/activeSessionsChanged", "root/terminalsChanged",
    "session/ready", "session/creationFailed", "session/serverToolsChanged", "session/activityChanged",
    "session/customizationsChanged", "session/customizationUpdated", "session/customizationRemoved",
    "session/changesetsChanged", "session/metaChanged", "session/chatAdded", "session/chatRemoved",
    "session/chatUpdated", "session/defaultChatChanged", "session/inputNeededSet", "session/inputNeededRemoved",
    "session/mcpServerStateChanged",
    "chat/delta", "chat/reasoning", "chat/responsePart", "chat/usage", "chat/turnComplete", "chat/error",
    "chat/toolCallStart", "chat/toolCallDelta", "chat/toolCallReady", "chat/toolCallAuthRequired",
    "chat/toolCallAuthResolved", "chat/inputRequested", "chat/turnsLoaded", "chat/activityChanged",
    "chat/backgroundWorkSet", "chat/backgroundWorkRemoved", "chat/changesetsChanged", "chat/canvasesChanged",
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


def _active_turn(state: dict[str, Any]) -> dict[str, Any] | None:
    turn = state.get("activeTurn")
    return turn if isinstance(turn, dict) else None


def _tool_call(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    turn = _active_turn(state)
    if turn is None or turn.get("id") != action.get("turnId"):
        return None
    for part in turn.get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if isinstance(call, dict) and call.get("toolCallId") == action.get("toolCallId"):
            return call
    return None


def _pending_exists(state: dict[str, Any], message_id: Any, kind: str | None = None) -> bool:
    steering = state.get("steeringMessage")
    if kind in (None, "steering") and isinstance(steering, dict) and steering.get("id") == message_id:
        return True
    if kind in (None, "queued"):
        return any(isinstance(item, dict) and item.get("id") == message_id for item in state.get("queuedMessages") or ())
    return False


def _not_read_only(state: dict[str, Any]) -> str | None:
    if state.get("interactivity") in ("read-only", "hidden"):
        return ("This chat is read-only (a sub-agent's chat: the host runs its turn). Watch it, answer its "
                "confirmations or cancel its turn; send messages in the chat that started it.")
    return None


def _turn_started(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    refused = _not_read_only(state)
    if refused is not None:
        return refused
    active = _active_turn(state)
    if active is not None:
        return (f"Turn {active.get('id')} is still running; cancel it first, or send the message as a "
                "queued or steering message (chat/pendingMessageSet).")
    turn_id = action["turnId"]
    if not isinstance(turn_id, str) or not turn_id:
        return "Malformed chat/turnStarted: turnId must be a non-empty string."
    if not isinstance(action.get("message"), dict):
        return "Malformed chat/turnStarted: message is required."
    if any(isinstance(turn, dict) and turn.get("id") == turn_id for turn in state.get("turns") or ()):
        return f"Turn id {turn_id} is already used in this chat; pick a new id."
    queued_id = action.get("queuedMessageId")
    if queued_id is not None and not _pending_exists(state, queued_id):
        return f"There is no pending message with id {queued_id}."
    return None


def _turn_cancelled(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    active = _active_turn(state)
    if active is None:
        return "No turn is running, so there is nothing to cancel."
    if active.get("id") != action["turnId"]:
        return f"Turn {action['turnId']} is not the running turn ({active.get('id')})."
    return None


def _tool_call_confirmed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    call = _tool_call(state, action)
    if call is None:
        return f"Tool call {action.get('toolCallId')} is not part of the running turn."
    if call.get("status") != "pending-confirmation":
        return f"Tool call {action['toolCallId']} is {call.get('status')}, not waiting for confirmation."
    option_id = action.get("selectedOptionId")
    if option_id is not None:
        option = next((o for o in call.get("options") or () if isinstance(o, dict) and o.get("id") == option_id), None)
        if option is None:
            return f"Tool call {action['toolCallId']} offers no option {option_id!r}."
        if (option.get("kind") == "approve") != bool(action.get("approved")):
            return f"Option {option_id!r} is a {option.get('kind')} option, but approved is {action.get('approved')}."
    if action.get("approved") and "editedToolInput" in action and not call.get("editable"):
        return f"Tool call {action['toolCallId']} is not editable; approve it without editedToolInput."
    return None


def _tool_call_result_confirmed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    call = _tool_call(state, action)
    if call is None or call.get("status") != "pending-result-confirmation":
        return f"Tool call {action.get('toolCallId')} has no result waiting for confirmation."
    return None


def _owned_tool_call(verb: str, statuses: tuple[str, ...]) -> Rule:
    def rule(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
        call = _tool_call(state, action)
        if call is None:
            return f"Tool call {action.get('toolCallId')} is not part of the running turn."
        contributor = call.get("contributor")
        owner = contributor.get("clientId") if isinstance(contributor, dict) and contributor.get("kind") == "client" else None
        if owner is None:
            return f"Tool call {action['toolCallId']} is run by the host; clients cannot {verb} it."
        if owner != client_id:
            return f"Tool call {action['toolCallId']} belongs to client {owner}; only it can {verb} it."
        if call.get("status") not in statuses:
            return f"Tool call {action['toolCallId']} is {call.get('status')}; it cannot be {verb}d now."
        return None

    return rule


def _pending_removed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not _pending_exists(state, action["id"], action.get("kind")):
        return f"There is no {action.get('kind')} message with id {action['id']}."
    return None


def _input_request(state: dict[str, Any], request_id: Any) -> dict[str, Any] | None:
    turn = _active_turn(state)
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


_VALUE_KIND_FOR_QUESTION = {
    "text": "text", "number": "number", "integer": "number", "boolean": "boolean",
    "single-select": "selected", "multi-select": "selected-many",
}


def _answer_problem(question: dict[str, Any] | None, answer: dict[str, Any]) -> str | None:
    if answer.get("state") == "skipped":
        return None
    value = answer.get("value")
    if not isinstance(value, dict):
        return "a draft or submitted answer needs a value"
    if question is not None:
        expected = _VALUE_KIND_FOR_QUESTION.get(question.get("kind", ""))
        if expected is not None and value.get("kind") != expected:
            return f"question {question.get('id')} takes a {expected} answer, not {value.get('kind')}"
    return None


def _questions(request: dict[str, Any]) -> dict[Any, dict[str, Any]]:
    return {q.get("id"): q for q in request.get("questions") or () if isinstance(q, dict)}


def _input_answer_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    request = _input_request(state, action["requestId"])
    if request is None:
        return f"There is no open input request {action['requestId']}."
    questions = _questions(request)
    if questions and action["questionId"] not in questions:
        return f"Input request {action['requestId']} has no question {action['questionId']}."
    answer = action.get("answer")
    if isinstance(answer, dict):
        problem = _answer_problem(questions.get(action["questionId"]), answer)
        if problem:
            return f"Answer to {action['questionId']} refused: {problem}."
    return None


def _input_completed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    request = _input_request(state, action["requestId"])
    if request is None:
        return f"There is no open input request {action['requestId']}."
    if action.get("response") != "accept":
        return None
    answers = dict(request.get("answers") or {})
    answers.update(action.get("answers") or {})
    for question_id, question in _questions(request).items():
        answer = answers.get(question_id)
        if question.get("required") and (not isinstance(answer, dict) or answer.get("state") != "submitted"):
            return f"Question {question_id} is required; submit an answer before accepting."
        if isinstance(answer, dict):
            problem = _answer_problem(question, answer)
            if problem:
                return f"Answer to {question_id} refused: {problem}."
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


def _config_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    values = action.get("config")
    if not values:
        return None
    schema = ((state.get("config") or {}).get("schema") or {}).get("properties") or {}
    for key in values:
        prop = schema.get(key)
        if prop is None:
            return f"Unknown config property {key!r}."
        if not prop.get("sessionMutable"):
            return f"Config property {key!r} cannot be changed after the session is created."
        if key == AUTO_APPROVE:  # a boolean, or one of VS Code's approval levels
            try:
                auto_approve_value(values[key])
            except AutoApproveValueError as error:
                return str(error)
            continue
        problem = _config_value_problem(prop, values[key])
        if problem is not None:
            return f"Config property {key!r} {problem}, not {_shown_value(values[key])}."
    return None


_JSON_TYPES: dict[str, Any] = {
    "boolean": lambda v: isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}
_TYPE_WORDS = {"boolean": "true or false", "string": "a string", "integer": "an integer", "number": "a number",
               "array": "a list", "object": "an object", "null": "null"}


def _config_value_problem(prop: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit the property's declared ``type`` / ``enum``, else None."""
    declared = prop.get("type")
    names = [declared] if isinstance(declared, str) else [t for t in declared or () if isinstance(t, str)]
    checks = [_JSON_TYPES[name] for name in names if name in _JSON_TYPES]
    if checks and not any(check(value) for check in checks):
        return f"must be {' or '.join(_TYPE_WORDS.get(n, n) for n in names)}"
    allowed = prop.get("enum")
    if isinstance(allowed, list) and value not in allowed:
        return "must be one of " + ", ".join(_shown_value(v) for v in allowed[:10])
    return None


def _shown_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _customization_toggled(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not any(isinstance(item, dict) and item.get("id") == action["id"] for item in state.get("customizations") or ()):
        return f"There is no customization container with id {action['id']}."
    return None


def _title_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not isinstance(action["title"], str) or not action["title"].strip():
        return "A session title cannot be empty."
    return None


# -- root and terminal rules -----------------------------------------------------------------------


def _root_config_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    """The host's root config contract (``host.root_config``): declared keys are checked against
    the schema; undeclared keys are kept, within bounds, and never acted on."""
    config = state.get("config")
    if not isinstance(config, dict):
        return "This host has no root configuration to change."
    values = action.get("config") or {}
    if not isinstance(values, dict):
        return "Malformed root/configChanged: config must be an object."
    schema = (config.get("schema") or {}).get("properties") or {}
    kept = {} if action.get("replace") else dict(config.get("values") or {})
    for key, value in values.items():
        prop = schema.get(key)
        if prop is None:
            if len(json.dumps(value, ensure_ascii=False, default=str)) > MAX_VALUE_CHARS:
                return f"Host config property {key!r} is larger than this host keeps ({MAX_VALUE_CHARS} characters of JSON)."
            continue
        if prop.get("readOnly"):
            return f"Host config property {key!r} is read-only."
        problem = _config_value_problem(prop, value) or declared_value_problem(key, value)
        if problem is not None:
            return f"Host config property {key!r} {problem}, not {_shown_value(value)}."
    kept.update(values)
    undeclared = sum(1 for key in kept if key not in schema)
    if undeclared > MAX_UNDECLARED_KEYS:
        return (f"This host keeps at most {MAX_UNDECLARED_KEYS} host config properties it does not declare; "
                f"this change would make it {undeclared}.")
    return None


def _terminal_input(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    lifecycle = state.get("lifecycle")
    if isinstance(lifecycle, dict) and lifecycle.get("status") == "exited":
        return ("This terminal's shell is no longer running: it exited, or it ended with the host when the host "
                "stopped or restarted. The terminal is gone and takes no input; create a new one with createTerminal.")
    claim = state.get("claim") or {}
    if claim.get("kind") == "session" and claim.get("toolCallId"):
        return ("This terminal shows a command the agent runs, and agent commands are non-interactive (their input "
                "is closed); create your own terminal with createTerminal to type commands.")
    return None


def _terminal_claimed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    claim = state.get("claim") or {}
    if claim.get("kind") == "client" and claim.get("clientId") != client_id:
        return f"This terminal is held by client {claim.get('clientId')}; only the holder can hand it on."
    return None


_RULES: dict[str, Rule] = {
    "chat/turnStarted": _turn_started,
    "chat/turnCancelled": _turn_cancelled,
    "chat/toolCallConfirmed": _tool_call_confirmed,
    "chat/toolCallResultConfirmed": _tool_call_result_confirmed,
    "chat/toolCallComplete": _owned_tool_call("complete", ("running", "pending-confirmation")),
    "chat/toolCallContentChanged": _owned_tool_call("update", ("running",)),
    "chat/pendingMessageSet": lambda state, action, client_id: _not_read_only(state),
    "chat/pendingMessageRemoved": _pending_removed,
    "chat/inputAnswerChanged": _input_answer_changed,
    "chat/inputCompleted": _input_completed,
    "session/activeClientSet": _active_client_set,
    "session/activeClientRemoved": _active_client_removed,
    "session/configChanged": _config_changed,
    "session/customizationToggled": _customization_toggled,
    "session/titleChanged": _title_changed,
    "root/configChanged": _root_config_changed,
    "terminal/input": _terminal_input,
    "terminal/claimed": _terminal_claimed,
}
