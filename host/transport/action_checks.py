"""The checks on client actions that every protocol version shares. Pure: no I/O, no clock.

``host.transport.validation`` judges actions of the internal (0.9.0) model and
``host.transport.dialects.v02_rules`` judges 0.2.0 actions on the state a 0.2.0 client is shown.
Where the two states have the same shape (the running turn and its tool calls, pending
messages, input requests' questions and answers, config schemas, customizations, terminal
claims), both use the rules below, so a client of either version gets the same sentence for the
same mistake. Each rule takes ``(state, action, client_id)`` and returns None when the action may
be applied, or the ``rejectionReason`` for the client; rules that depend on something the
versions place differently (who owns a tool call, where an input request lives, which config
values need a check of their own) are built by a factory that takes that difference.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from host.root_config import CLIENT_FORWARDED, MAX_UNDECLARED_KEYS, MAX_VALUE_CHARS, declared_value_problem
from host.runtime.tools.answers import ANSWERED_BY

__all__ = [
    "Rule", "active_turn", "answered_by", "config_changed", "config_value_problem", "customization_toggled",
    "input_answer_changed", "input_completed", "owned_tool_call", "pending_exists", "pending_removed",
    "root_config_changed", "shown_value", "terminal_claimed", "terminal_input", "title_changed", "tool_call",
    "tool_call_confirmed", "tool_call_result_confirmed", "turn_cancelled",
]

Rule = Callable[[dict[str, Any], dict[str, Any], str], "str | None"]
FindRequest = Callable[[dict[str, Any], Any], "dict[str, Any] | None"]


# -- the running turn and its tool calls -----------------------------------------------------------


def active_turn(state: dict[str, Any]) -> dict[str, Any] | None:
    turn = state.get("activeTurn")
    return turn if isinstance(turn, dict) else None


def answered_by(call: dict[str, Any]) -> str:
    """``" by token 'alice' (client c1)"`` for a call whose confirmation was answered, else ``""``."""
    meta = call.get("_meta")
    who = meta.get(ANSWERED_BY) if isinstance(meta, dict) else None
    if not isinstance(who, dict):
        return ""
    token, client = who.get("tokenName"), who.get("clientId")
    name = f" by token {token!r}" if isinstance(token, str) else ""
    return f"{name} (client {client})" if isinstance(client, str) else name


def tool_call(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    """The running turn's tool call the action names, if the action names the running turn."""
    turn = active_turn(state)
    if turn is None or turn.get("id") != action.get("turnId"):
        return None
    for part in turn.get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if isinstance(call, dict) and call.get("toolCallId") == action.get("toolCallId"):
            return call
    return None


def pending_exists(state: dict[str, Any], message_id: Any, kind: str | None = None) -> bool:
    steering = state.get("steeringMessage")
    if kind in (None, "steering") and isinstance(steering, dict) and steering.get("id") == message_id:
        return True
    if kind in (None, "queued"):
        return any(isinstance(item, dict) and item.get("id") == message_id for item in state.get("queuedMessages") or ())
    return False


def turn_cancelled(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    active = active_turn(state)
    if active is None:
        return "No turn is running, so there is nothing to cancel."
    if active.get("id") != action["turnId"]:
        return f"Turn {action['turnId']} is not the running turn ({active.get('id')})."
    return None


def tool_call_confirmed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    call = tool_call(state, action)
    if call is None:
        return f"Tool call {action.get('toolCallId')} is not part of the running turn."
    if call.get("status") != "pending-confirmation":
        return (f"Tool call {action['toolCallId']} was already answered{answered_by(call)}: it is {call.get('status')} "
                "now, no longer waiting for confirmation (the first answer counts).")
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


def tool_call_result_confirmed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    call = tool_call(state, action)
    if call is None or call.get("status") != "pending-result-confirmation":
        return f"Tool call {action.get('toolCallId')} has no result waiting for confirmation."
    return None


def owned_tool_call(verb: str, statuses: tuple[str, ...], owner_of: Callable[[dict[str, Any]], Any]) -> Rule:
    """Only the client that runs a client tool call may ``verb`` it, and only in ``statuses``;
    ``owner_of(call)`` is that client's id (None for a call the host runs)."""

    def rule(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
        call = tool_call(state, action)
        if call is None:
            return f"Tool call {action.get('toolCallId')} is not part of the running turn."
        owner = owner_of(call)
        if owner is None:
            return f"Tool call {action['toolCallId']} is run by the host; clients cannot {verb} it."
        if owner != client_id:
            return f"Tool call {action['toolCallId']} belongs to client {owner}; only it can {verb} it."
        if call.get("status") not in statuses:
            return f"Tool call {action['toolCallId']} is {call.get('status')}; it cannot be {verb}d now."
        return None

    return rule


def pending_removed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not pending_exists(state, action["id"], action.get("kind")):
        return f"There is no {action.get('kind')} message with id {action['id']}."
    return None


# -- input requests --------------------------------------------------------------------------------


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


def input_answer_changed(find_request: FindRequest) -> Rule:
    """An answer (draft, submitted or skipped) to a question of an open request, of its kind."""

    def rule(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
        request = find_request(state, action["requestId"])
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

    return rule


def input_completed(find_request: FindRequest) -> Rule:
    """Accepting an open request needs every required question submitted, each of its kind."""

    def rule(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
        request = find_request(state, action["requestId"])
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

    return rule


# -- configuration ---------------------------------------------------------------------------------


# JSON schema type names → the Python values that decode from them (bool is not a number).
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
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


def config_value_problem(prop: dict[str, Any], value: Any) -> str | None:
    """Why ``value`` does not fit the property's declared ``type`` / ``enum``, else None."""
    declared = prop.get("type")
    names = [declared] if isinstance(declared, str) else [t for t in declared or () if isinstance(t, str)]
    checks = [_JSON_TYPES[name] for name in names if name in _JSON_TYPES]
    if checks and not any(check(value) for check in checks):
        return f"must be {' or '.join(_TYPE_WORDS.get(n, n) for n in names)}"
    allowed = prop.get("enum")
    if isinstance(allowed, list) and value not in allowed:
        return "must be one of " + ", ".join(shown_value(v) for v in allowed[:10])
    return None


def shown_value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def config_changed(own_checks: Mapping[str, Callable[[Any], str | None]] = {}) -> Rule:
    """A session config change: known, session-mutable properties with values of their schema.
    ``own_checks`` replace the schema check for the properties they name (they return the whole
    sentence for the client, or None)."""

    def rule(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
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
            if key in own_checks:
                refused = own_checks[key](values[key])
                if refused is not None:
                    return refused
                continue
            problem = config_value_problem(prop, values[key])
            if problem is not None:
                return f"Config property {key!r} {problem}, not {shown_value(values[key])}."
        return None

    return rule


def root_config_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    """The host's root config contract (``host.root_config``): declared keys are checked against
    the schema (a read-only one refused, unless a client forwards its own state in it); undeclared
    keys are kept, within bounds, and never acted on."""
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
        if prop.get("readOnly") and key not in CLIENT_FORWARDED:
            return f"Host config property {key!r} is read-only."
        problem = config_value_problem(prop, value) or declared_value_problem(key, value)
        if problem is not None:
            return f"Host config property {key!r} {problem}, not {shown_value(value)}."
    kept.update(values)
    undeclared = sum(1 for key in kept if key not in schema)
    if undeclared > MAX_UNDECLARED_KEYS:
        return (f"This host keeps at most {MAX_UNDECLARED_KEYS} host config properties it does not declare; "
                f"this change would make it {undeclared}.")
    return None


# -- the rest of a session, and terminals ----------------------------------------------------------


def customization_toggled(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not any(isinstance(item, dict) and item.get("id") == action["id"] for item in state.get("customizations") or ()):
        return f"There is no customization container with id {action['id']}."
    return None


def title_changed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    if not isinstance(action["title"], str) or not action["title"].strip():
        return "A session title cannot be empty."
    return None


def terminal_input(exited: Callable[[dict[str, Any]], bool]) -> Rule:
    """Input goes only to a shell that runs (``exited(state)`` says it ended) and that a client
    may type in (not an agent command's terminal)."""

    def rule(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
        if exited(state):
            return ("This terminal's shell is no longer running: it exited, or it ended with the host when the host "
                    "stopped or restarted. The terminal is gone and takes no input; create a new one with createTerminal.")
        claim = state.get("claim") or {}
        if claim.get("kind") == "session" and claim.get("toolCallId"):
            return ("This terminal shows a command the agent runs, and agent commands are non-interactive (their input "
                    "is closed); create your own terminal with createTerminal to type commands.")
        return None

    return rule


def terminal_claimed(state: dict[str, Any], action: dict[str, Any], client_id: str) -> str | None:
    claim = state.get("claim") or {}
    if claim.get("kind") == "client" and claim.get("clientId") != client_id:
        return f"This terminal is held by client {claim.get('clientId')}; only the holder can hand it on."
    return None
