"""Tool confirmations as AG-UI 1.0 interrupts, and resume entries as confirmations. Pure.

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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ag_ui.core import Interrupt

from ahp.protocol import builders

__all__ = ["AnswerError", "answer", "coverage_problem", "interrupt_id", "interrupts", "waiting_calls"]

_CONFIRM = "ahp-confirm:"
_RESULT = "ahp-result:"
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
    return [_interrupt(key, call) for key, call in waiting_calls(turn).items()]


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
