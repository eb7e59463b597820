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

import json
from collections.abc import Callable
from typing import Any

from ahp.protocol.actions import ACTIONS, CLIENT_DISPATCHABLE, action_model
from host.root_config import MAX_UNDECLARED_KEYS, MAX_VALUE_CHARS, declared_value_problem

__all__ = ["check_v02_action"]

Rule = Callable[[dict[str, Any], dict[str, Any], str], "str | None"]


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
    from pydantic import ValidationError

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


def _active_turn(state: dict[str, Any]) -> dict[str, Any] | None:
    turn = state.get("activeTurn")
    return turn if isinstance(turn, dict) else None


def _tool_call(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    turn = _active_turn(state)
    if turn is None or turn.get("id") != action.get("turnId"):
        return None
    for part in turn.get("responseParts", ()):
        call = part.get("toolCall") if part.get("kind") == "toolCall" else None
        if call is not None and call.get("toolCallId") == action.get("toolCallId"):
            return call
    return None


def _turn_started(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if state.get("lifecycle") == "creationFailed":
        return "This session failed to start; create a new session."
    active = _active_turn(state)
    if active is not None:
        return (
            f"Turn {active.get('id')} is still running; cancel it first, or send the message as a "
            "queued or steering message (session/pendingMessageSet)."
        )
    turn_id = action["turnId"]
    if any(turn.get("id") == turn_id for turn in state.get("turns", ())):
        return f"Turn id {turn_id} is already used in this session; pick a new id."
    queued_id = action.get("queuedMessageId")
    if queued_id is not None and not _pending_exists(state, queued_id):
        return f"There is no pending message with id {queued_id}."
    return None


def _pending_exists(state: dict[str, Any], message_id: str, kind: str | None = None) -> bool:
    steering = state.get("steeringMessage")
    if kind in (None, "steering") and isinstance(steering, dict) and steering.get("id") == message_id:
        return True
    if kind in (None, "queued"):
        return any(item.get("id") == message_id for item in state.get("queuedMessages") or ())
    return False


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
        option = next((o for o in call.get("options") or () if o.get("id") == option_id), None)
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
        owner = call.get("toolClientId")
        if owner is None:
            return f"Tool call {action['toolCallId']} is run by the host; clients cannot {verb} it."
        if owner != client_id:
            return f"Tool call {action['toolCallId']} belongs to client {owner}; only it can {verb} it."
        if call.get("status") not in statuses:
            return f"Tool call {action['toolCallId']} is {call.get('status')}; it cannot be {verb}d now."
        return None

    return rule


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


def _pending_removed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not _pending_exists(state, action["id"], action.get("kind")):
        return f"There is no {action.get('kind')} message with id {action['id']}."
    return None


def _input_request(state: dict[str, Any], request_id: Any) -> dict[str, Any] | None:
    for request in state.get("inputRequests") or ():
        if request.get("id") == request_id:
            return request
    return None


_VALUE_KIND_FOR_QUESTION = {
    "text": "text",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "single-select": "selected",
    "multi-select": "selected-many",
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


def _questions(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["id"]: q for q in request.get("questions") or () if isinstance(q, dict) and isinstance(q.get("id"), str)}


def _input_answer_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    request = _input_request(state, action["requestId"])
    if request is None:
        return f"There is no open input request {action['requestId']}."
    questions = _questions(request)
    if questions and action["questionId"] not in questions:
        return f"Input request {action['requestId']} has no question {action['questionId']}."
    answer = action.get("answer")
    if answer is not None:
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
        problem = _config_value_problem(prop, values[key])
        if problem is not None:
            return f"Config property {key!r} {problem}, not {_shown_value(values[key])}."
    return None


# JSON schema type names → the Python values that decode from them (bool is not a number).
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


_TYPE_WORDS = {"boolean": "true or false", "string": "a string", "integer": "an integer", "number": "a number",
               "array": "a list", "object": "an object", "null": "null"}


def _shown_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _root_config_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    """The host's root config contract (``host.root_config``): declared keys are checked against
    the schema; undeclared keys are kept, within bounds, and never acted on."""
    config = state.get("config")
    if not isinstance(config, dict):
        return "This host has no root configuration to change."
    values = action.get("config") or {}
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


def _customization_toggled(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not any(item.get("id") == action["id"] for item in state.get("customizations") or ()):
        return f"There is no customization container with id {action['id']}."
    return None


def _title_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not action["title"].strip():
        return "A session title cannot be empty."
    return None


# -- terminal rules --------------------------------------------------------------------------------


def _terminal_input(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if state.get("exitCode") is not None:
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
    "terminal/input": _terminal_input,
    "terminal/claimed": _terminal_claimed,
    "session/turnStarted": _turn_started,
    "session/turnCancelled": _turn_cancelled,
    "session/toolCallConfirmed": _tool_call_confirmed,
    "session/toolCallResultConfirmed": _tool_call_result_confirmed,
    "session/toolCallComplete": _owned_tool_call("complete", ("running", "pending-confirmation")),
    "session/toolCallContentChanged": _owned_tool_call("update", ("running",)),
    "session/activeClientChanged": _active_client_changed,
    "session/activeClientToolsChanged": _active_client_tools,
    "session/pendingMessageRemoved": _pending_removed,
    "session/inputAnswerChanged": _input_answer_changed,
    "session/inputCompleted": _input_completed,
    "session/configChanged": _config_changed,
    "session/customizationToggled": _customization_toggled,
    "session/titleChanged": _title_changed,
    "root/configChanged": _root_config_changed,
}
