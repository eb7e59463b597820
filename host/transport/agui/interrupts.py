"""Tool confirmations and questions for the user as AG-UI 1.0 interrupts, and resume entries as
their answers. Pure.

Why interrupts: the official ``@ag-ui/client`` (1.0) reads ``RUN_FINISHED`` with an ``interrupt``
outcome into ``agent.pendingInterrupts`` and refuses to start the thread's next run unless its
``resume`` answers every one of them (``buildResumeArray`` builds it). That is exactly AHP's
"the turn waits for a person": a call in ``pending-confirmation`` (or
``pending-result-confirmation``) becomes one ``Interrupt``; the run ends; the run that carries the
answers continues the same turn. A host-defined front-end tool would have needed every front end
to know that tool; an interrupt is understood by the reference client as is.

Contract:

* ``interrupt_id(call)`` is ``ahp-confirm:<toolCallId>`` for a call waiting to run and
  ``ahp-result:<toolCallId>`` for a result waiting to be accepted; unique within a run.
* ``interrupts(turn)`` lists the interrupts of a turn, in response-part order, each with the
  call's ``invocationMessage`` as its message, ``toolCallId``, a ``responseSchema`` for the answer
  and, in ``metadata.agentHost``, the host's options (Allow once, Allow in this session...) and
  whether the input may be edited.
* ``answer(entry, call, turn_id)`` turns one ``ResumeEntry`` into the AHP action a person's choice
  would be: ``status: "cancelled"`` denies; ``"resolved"`` takes ``payload.optionId`` (one of the
  options) or ``payload.approved`` (true → the first approve option, i.e. Allow once), with
  ``payload.reason`` explaining a denial and ``payload.editedArgs`` (JSON text or object) replacing
  an editable call's input. A payload that says neither raises ``AnswerError`` with what to send.
* ``coverage_problem(entries, open_ids)`` applies the 1.0 coverage rule: every open interrupt
  answered exactly once, nothing else answered.

Questions for the user (``ask_user``, an MCP server's elicitation: both an open ``inputRequest``
part of the turn, ``host.runtime.inputs``) are interrupts too:

* ``input_interrupts(turn)``: one per open request, id ``ahp-input:<requestId>``, reason
  ``input_required``, the request's message (and URL, for a URL elicitation) as its message, and
  as ``responseSchema`` a JSON Schema of the answer: ``{answers: {<questionId>: value}}`` where
  each question is a plain JSON value (text → string, number/integer → number/integer, boolean,
  single-select → an option id, or any string where free input is allowed, multi-select → a list),
  with the required questions required, or ``{response: "decline"}``. The request itself is in
  ``metadata.agentHost.request``.
* ``elsewhere(chats)``: what the session's *other* chats wait on (a sub-agent's chat: a
  confirmation or a question there), from their states, by interrupt id: the same ids with
  ``@<chat>`` appended (tool call ids repeat across chats), each with the chat, the turn and the
  call or request. Their interrupts (``elsewhere_interrupts``) carry ``metadata.agentHost.chat``.
* ``answer_input(entry, request)``: ``status: "cancelled"`` → ``chat/inputCompleted`` with
  ``response: "cancel"``; ``payload.response == "decline"`` → ``decline``; otherwise ``accept``
  with ``payload.answers`` turned into AHP answers, each checked against its question: a value of
  the wrong type, an unknown question or a missing required one raises ``AnswerError`` naming it.
* ``asked_outside(session, chats, own_chat)``: the questions asked while their chat ran no turn
  (the workspace-trust question a new session's folder raises, ``ahp.workspace_trust``): they live
  only in the session's ``inputNeeded`` (a ``chatInput`` entry that is not an open request of its
  chat's active turn) and are answered with ``chat/inputCompleted`` on the entry's chat. Ids as
  above: ``ahp-input:<requestId>`` for the thread's own chat, with ``@<chat>`` for another.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from ag_ui.core import Interrupt

from ahp.protocol import builders

__all__ = ["AnswerError", "Elsewhere", "answer", "answer_input", "asked_outside", "coverage_problem", "elsewhere",
           "elsewhere_interrupts",
           "input_interrupts", "interrupt_id", "interrupts", "open_inputs", "waiting_calls", "INPUT_PREFIX"]

_CONFIRM = "ahp-confirm:"
_RESULT = "ahp-result:"
INPUT_PREFIX = "ahp-input:"
_WAITING = ("pending-confirmation", "pending-result-confirmation")


class AnswerError(ValueError):
    """A resume entry that cannot be applied; the message says what to send instead."""


def interrupt_id(call: Mapping[str, Any]) -> str:
    prefix = _RESULT if call.get("status") == "pending-result-confirmation" else _CONFIRM
    return prefix + str(call.get("toolCallId"))


def waiting_calls(turn: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The turn's calls that wait for a person, by interrupt id."""
    found: dict[str, dict[str, Any]] = {}
    for part in (turn or {}).get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if isinstance(call, dict) and call.get("status") in _WAITING:
            found[interrupt_id(call)] = call
    return found


def interrupts(turn: Mapping[str, Any] | None) -> list[Interrupt]:
    """Every interrupt the turn waits on: confirmations, then questions for the user."""
    return [_interrupt(key, call) for key, call in waiting_calls(turn).items()] + input_interrupts(turn)


def _interrupt(key: str, call: Mapping[str, Any]) -> Interrupt:
    name = call.get("displayName") or call.get("toolName") or "a tool"
    if key.startswith(_RESULT):
        return Interrupt(
            id=key, reason="tool_result_approval", tool_call_id=call.get("toolCallId"),
            message=f"{name} finished. Let the model see its result?",
            response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}, "required": ["approved"]},
        )
    options = [dict(option) for option in call.get("options") or ()]
    properties: dict[str, Any] = {
        "approved": {"type": "boolean", "description": "Run the tool (true) or refuse it (false)."},
        "reason": {"type": "string", "description": "Why it was refused; the model reads it."},
    }
    if options:
        properties["optionId"] = {"type": "string", "enum": [o["id"] for o in options],
                                  "description": "One of the host's choices instead of approved (e.g. allow-session)."}
    if call.get("editable"):
        properties["editedArgs"] = {"type": "string", "description": "Replacement tool input (JSON) to run instead."}
    message = call.get("invocationMessage")
    if isinstance(message, dict):
        message = message.get("markdown") or message.get("text")
    return Interrupt(
        id=key, reason="tool_approval", tool_call_id=call.get("toolCallId"),
        message=f"{message or 'Run ' + name}. Allow it?",
        response_schema={"type": "object", "properties": properties},
        metadata={"agentHost": {"toolName": call.get("toolName"), "options": options, "editable": bool(call.get("editable"))}},
    )


def answer(entry: Any, call: Mapping[str, Any], turn_id: str) -> dict[str, Any]:
    call_id = call["toolCallId"]
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    if entry.interrupt_id.startswith(_RESULT):
        approved = entry.status == "resolved" and payload.get("approved") is True
        if entry.status == "resolved" and not isinstance(payload.get("approved"), bool):
            raise AnswerError(f"Answer interrupt {entry.interrupt_id} with payload {{\"approved\": true}} or false.")
        return builders.chat_tool_call_result_confirmed(turn_id=turn_id, tool_call_id=call_id, approved=approved)
    options = list(call.get("options") or ())
    if entry.status == "cancelled":
        return _denied(turn_id, call_id, options, "The person dismissed the confirmation in the front end.")
    option_id = payload.get("optionId")
    if option_id is not None:
        option = next((o for o in options if o.get("id") == option_id), None)
        if option is None:
            raise AnswerError(f"Interrupt {entry.interrupt_id} offers no option {option_id!r}; "
                              f"pick one of {[o.get('id') for o in options]} or send approved: true/false.")
        approved = option.get("kind") == "approve"
    elif isinstance(payload.get("approved"), bool):
        approved = payload["approved"]
        option = next((o for o in options if o.get("kind") == ("approve" if approved else "deny")), None)
    else:
        raise AnswerError(f"Answer interrupt {entry.interrupt_id} with payload {{\"approved\": true}} (or false, "
                          "or an optionId), or resume it with status \"cancelled\" to refuse the call.")
    if not approved:
        reason = payload.get("reason") if isinstance(payload.get("reason"), str) else None
        action = _denied(turn_id, call_id, options, reason, option)
        return action
    edited = payload.get("editedArgs")
    if edited is not None and not call.get("editable"):
        raise AnswerError(f"The call behind interrupt {entry.interrupt_id} cannot be edited; approve it without editedArgs.")
    return builders.chat_tool_call_approved(
        turn_id=turn_id, tool_call_id=call_id, confirmed="user-action",
        selected_option_id=option["id"] if option is not None and option.get("id") is not None else None,
        edited_tool_input=None if edited is None else edited if isinstance(edited, str) else json.dumps(edited),
    )


def _denied(turn_id: str, call_id: str, options: list[Any], reason: str | None, option: Any = None) -> dict[str, Any]:
    if option is None:
        option = next((o for o in options if o.get("kind") == "deny"), None)
    if reason and option is not None and option.get("id") == "deny":
        # "Deny with a reason" is the option whose reason reaches the model.
        option = next((o for o in options if o.get("id") == "deny-with-reason"), option)
    return builders.chat_tool_call_denied(
        turn_id=turn_id, tool_call_id=call_id, reason="denied",
        selected_option_id=option["id"] if option is not None and option.get("id") is not None else None,
        reason_message=reason or None,
    )


def coverage_problem(entries: Iterable[Any], open_ids: Iterable[str]) -> str | None:
    """Why ``entries`` do not answer exactly the open interrupts, or None."""
    wanted = list(open_ids)
    seen: set[str] = set()
    for entry in entries:
        if entry.interrupt_id in seen:
            return f"Interrupt {entry.interrupt_id} is answered twice; answer each once."
        seen.add(entry.interrupt_id)
        if entry.interrupt_id not in wanted:
            listed = ", ".join(wanted) or "none"
            return f"No open interrupt has id {entry.interrupt_id!r} (open: {listed})."
    missing = [key for key in wanted if key not in seen]
    if missing:
        return "A resume must answer every open interrupt; unanswered: " + ", ".join(missing) + "."
    return None


# -- questions for the user ------------------------------------------------------------------------


def open_inputs(turn: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The turn's input requests nobody has answered yet, by interrupt id."""
    found: dict[str, dict[str, Any]] = {}
    for part in (turn or {}).get("responseParts") or ():
        if isinstance(part, dict) and part.get("kind") == "inputRequest" and part.get("response") is None:
            request = part.get("request")
            if isinstance(request, dict) and isinstance(request.get("id"), str):
                found[INPUT_PREFIX + request["id"]] = request
    return found


def input_interrupts(turn: Mapping[str, Any] | None) -> list[Interrupt]:
    return [_input_interrupt(key, request) for key, request in open_inputs(turn).items()]


_JSON_TYPE = {"text": "string", "number": "number", "integer": "integer", "boolean": "boolean"}


def _question_schema(question: Mapping[str, Any]) -> dict[str, Any]:
    kind = question.get("kind")
    schema: dict[str, Any] = {"description": str(question.get("message") or question.get("title") or "")}
    options = [o.get("id") for o in question.get("options") or () if isinstance(o, dict)]
    if kind in _JSON_TYPE:
        schema["type"] = _JSON_TYPE[kind]
    elif kind == "single-select":
        schema["type"] = "string"
        if not question.get("allowFreeformInput"):
            schema["enum"] = options
    elif kind == "multi-select":
        item: dict[str, Any] = {"type": "string"}
        if not question.get("allowFreeformInput"):
            item["enum"] = options
        schema.update(type="array", items=item)
    return schema


def _input_interrupt(key: str, request: Mapping[str, Any]) -> Interrupt:
    questions = [q for q in request.get("questions") or () if isinstance(q, dict)]
    answers: dict[str, Any] = {
        "type": "object",
        "properties": {str(q.get("id")): _question_schema(q) for q in questions},
        "additionalProperties": False,
    }
    required = [str(q.get("id")) for q in questions if q.get("required")]
    if required:
        answers["required"] = required
    message = str(request.get("message") or "The agent asks for your input.")
    if request.get("url"):
        message += f" Open {request['url']}, then accept (or decline)."
    return Interrupt(
        id=key, reason="input_required", message=message,
        response_schema={"type": "object", "properties": {
            "answers": answers,
            "response": {"type": "string", "enum": ["accept", "decline"],
                         "description": "accept (the default) with the answers, or decline to answer."},
        }},
        metadata={"agentHost": {"request": dict(request)}},
    )


def answer_input(entry: Any, request: Mapping[str, Any]) -> dict[str, Any]:
    request_id = str(request["id"])
    if entry.status == "cancelled":
        return builders.chat_input_completed(request_id=request_id, response="cancel")
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    response = payload.get("response", "accept")
    if response == "decline":
        return builders.chat_input_completed(request_id=request_id, response="decline")
    if response != "accept":
        raise AnswerError(f"Interrupt {entry.interrupt_id}: response must be \"accept\" or \"decline\", not {response!r}.")
    given = payload.get("answers", {})
    if not isinstance(given, dict):
        raise AnswerError(f"Interrupt {entry.interrupt_id}: answers must be an object keyed by question id.")
    questions = {str(q.get("id")): q for q in request.get("questions") or () if isinstance(q, dict)}
    unknown = [key for key in given if key not in questions]
    if unknown:
        raise AnswerError(f"Interrupt {entry.interrupt_id} has no question {unknown[0]!r} "
                          f"(its questions: {', '.join(questions) or 'none'}).")
    answers = {key: {"state": "submitted", "value": _answer_value(entry.interrupt_id, questions[key], value)}
               for key, value in given.items() if value is not None}
    missing = [key for key, q in questions.items() if q.get("required") and key not in answers]
    if missing:
        raise AnswerError(f"Interrupt {entry.interrupt_id}: question {missing[0]!r} is required; answer it, "
                          "or send {\"response\": \"decline\"}.")
    return builders.chat_input_completed(request_id=request_id, response="accept", answers=answers or None)


def _answer_value(interrupt: str, question: Mapping[str, Any], value: Any) -> dict[str, Any]:
    """A plain JSON answer as the AHP answer value its question takes."""
    kind = question.get("kind")
    name = question.get("id")
    options = [o.get("id") for o in question.get("options") or () if isinstance(o, dict)]
    free = bool(question.get("allowFreeformInput"))
    if kind == "text" and isinstance(value, str):
        return {"kind": "text", "value": value}
    if kind in ("number", "integer") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if kind == "integer" and not float(value).is_integer():
            raise AnswerError(f"Interrupt {interrupt}: question {name!r} takes a whole number, not {value!r}.")
        return {"kind": "number", "value": value}
    if kind == "boolean" and isinstance(value, bool):
        return {"kind": "boolean", "value": value}
    if kind == "single-select" and isinstance(value, str):
        if value in options:
            return {"kind": "selected", "value": value}
        if free:
            return {"kind": "selected", "value": "", "freeformValues": [value]}
        raise AnswerError(f"Interrupt {interrupt}: question {name!r} takes one of {options}, not {value!r}.")
    if kind == "multi-select" and isinstance(value, list) and all(isinstance(item, str) for item in value):
        chosen = [item for item in value if item in options]
        other = [item for item in value if item not in options]
        if other and not free:
            raise AnswerError(f"Interrupt {interrupt}: question {name!r} takes some of {options}, not {other[0]!r}.")
        return {"kind": "selected-many", "value": chosen, **({"freeformValues": other} if other else {})}
    wanted = {"text": "a string", "number": "a number", "integer": "a whole number", "boolean": "true or false",
              "single-select": "an option id", "multi-select": "a list of option ids"}.get(str(kind), "a value")
    raise AnswerError(f"Interrupt {interrupt}: question {name!r} takes {wanted}, not {value!r}.")


# -- what the session's other chats wait on ---------------------------------------------------------


class Elsewhere(NamedTuple):
    """A confirmation (``call``) or a question (``request``) open in another chat of the session."""

    chat: str
    turn_id: str | None
    call: Mapping[str, Any] | None
    request: Mapping[str, Any] | None


def elsewhere(chats: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Elsewhere]:
    """What the given chats (the session's others) wait on, from their states, by interrupt id."""
    found: dict[str, Elsewhere] = {}
    for where, state in chats.items():
        turn = (state or {}).get("activeTurn")
        if not isinstance(turn, dict):
            continue
        for key, call in waiting_calls(turn).items():
            found[f"{key}@{where}"] = Elsewhere(where, turn.get("id"), call, None)
        for key, request in open_inputs(turn).items():
            found[f"{key}@{where}"] = Elsewhere(where, turn.get("id"), None, request)
    return found


def asked_outside(session: Mapping[str, Any], chats: Mapping[str, Mapping[str, Any] | None],
                  own_chat: str) -> dict[str, Elsewhere]:
    """The questions of ``session`` (its state) asked while their chat ran no turn, by interrupt
    id; ``chats`` are the session's chats' states (a request open in its chat's active turn is that
    turn's interrupt, not one of these)."""
    found: dict[str, Elsewhere] = {}
    for entry in session.get("inputNeeded") or ():
        if not isinstance(entry, dict) or entry.get("kind") != "chatInput":
            continue
        request, where = entry.get("request"), entry.get("chat")
        if not isinstance(request, dict) or not isinstance(request.get("id"), str) or not isinstance(where, str):
            continue
        key = INPUT_PREFIX + request["id"]
        if key in open_inputs((chats.get(where) or {}).get("activeTurn")):
            continue
        found[key if where == own_chat else f"{key}@{where}"] = Elsewhere(where, None, None, request)
    return found


def elsewhere_interrupts(waiting: Mapping[str, Elsewhere]) -> list[Interrupt]:
    made = []
    for key, item in waiting.items():
        interrupt = _interrupt(key, item.call) if item.call is not None else _input_interrupt(key, item.request or {})
        metadata = dict(interrupt.metadata or {})
        metadata["agentHost"] = {**(metadata.get("agentHost") or {}), "chat": item.chat}
        made.append(interrupt.model_copy(update={"metadata": metadata}))
    return made
