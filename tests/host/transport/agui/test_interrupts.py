"""host.transport.agui.interrupts on its own: resume entries become the AHP confirmation a person's choice
would be, and the 1.0 coverage rule (every open interrupt answered exactly once)."""

from __future__ import annotations

import pytest
from ag_ui.core import ResumeEntry

from host.transport.agui.interrupts import AnswerError, answer, answer_input, coverage_problem, interrupts

OPTIONS = [
    {"id": "allow-once", "label": "Allow once", "kind": "approve"},
    {"id": "allow-session", "label": "Allow `git` in this session", "kind": "approve"},
    {"id": "deny", "label": "Deny", "kind": "deny"},
    {"id": "deny-with-reason", "label": "Deny with a reason", "kind": "deny"},
]
CALL = {"toolCallId": "c1", "toolName": "shell", "displayName": "Shell", "status": "pending-confirmation",
        "invocationMessage": "Run `git push`", "options": OPTIONS, "editable": True}


def entry(status: str = "resolved", **payload) -> ResumeEntry:
    return ResumeEntry(interrupt_id="ahp-confirm:c1", status=status, payload=payload or None)


def test_approved_true_picks_allow_once() -> None:
    assert answer(entry(approved=True), CALL, "t1") == {
        "type": "chat/toolCallConfirmed", "turnId": "t1", "toolCallId": "c1", "approved": True,
        "confirmed": "user-action", "selectedOptionId": "allow-once"}


def test_an_option_id_is_taken_as_is_and_edited_args_replace_the_input() -> None:
    action = answer(entry(optionId="allow-session", editedArgs={"command": "git push --dry-run"}), CALL, "t1")
    assert action["selectedOptionId"] == "allow-session" and action["approved"] is True
    assert action["editedToolInput"] == '{"command": "git push --dry-run"}'


def test_a_denial_with_a_reason_uses_the_option_whose_reason_reaches_the_model() -> None:
    action = answer(entry(approved=False, reason="not on Fridays"), CALL, "t1")
    assert (action["approved"], action["selectedOptionId"], action["reasonMessage"]) == (False, "deny-with-reason", "not on Fridays")


def test_cancelled_denies_telling_the_model_the_person_dismissed_it() -> None:
    action = answer(entry("cancelled"), CALL, "t1")
    assert action["approved"] is False and action["selectedOptionId"] == "deny-with-reason"
    assert "dismissed" in action["reasonMessage"]


@pytest.mark.parametrize("payload, words", [
    ({}, ["approved"]),
    ({"optionId": "yolo"}, ["yolo", "allow-once"]),
])
def test_unclear_answers_say_what_to_send(payload, words) -> None:
    with pytest.raises(AnswerError) as raised:
        answer(entry(**payload) if payload else entry(), CALL, "t1")
    for word in words:
        assert word in str(raised.value)


def test_edited_args_on_a_call_that_cannot_be_edited_are_refused() -> None:
    with pytest.raises(AnswerError):
        answer(entry(approved=True, editedArgs="{}"), {**CALL, "editable": False}, "t1")


def test_a_result_confirmation_is_its_own_interrupt() -> None:
    call = {**CALL, "status": "pending-result-confirmation"}
    [interrupt] = interrupts({"responseParts": [{"kind": "toolCall", "toolCall": call}]})
    assert (interrupt.id, interrupt.reason) == ("ahp-result:c1", "tool_result_approval")
    resumed = ResumeEntry(interrupt_id="ahp-result:c1", status="resolved", payload={"approved": False})
    assert answer(resumed, call, "t1") == {"type": "chat/toolCallResultConfirmed", "turnId": "t1", "toolCallId": "c1", "approved": False}


def test_coverage_every_open_interrupt_once_and_nothing_else() -> None:
    open_ids = ["ahp-confirm:a", "ahp-confirm:b"]
    a, b = (ResumeEntry(interrupt_id=i, status="cancelled") for i in open_ids)
    assert coverage_problem([a, b], open_ids) is None
    assert "unanswered: ahp-confirm:b" in coverage_problem([a], open_ids)
    assert "twice" in coverage_problem([a, a, b], open_ids)
    assert "ahp-confirm:z" in coverage_problem([a, b, ResumeEntry(interrupt_id="ahp-confirm:z", status="cancelled")], open_ids)


# -- questions for the user ------------------------------------------------------------------------

REQUEST = {"id": "ask-c9", "message": "Details", "questions": [
    {"id": "size", "kind": "single-select", "message": "Size?", "required": True, "allowFreeformInput": True,
     "options": [{"id": "s", "label": "S"}, {"id": "m", "label": "M"}]},
    {"id": "extras", "kind": "multi-select", "message": "Extras?", "options": [{"id": "bag", "label": "Bag"}]},
    {"id": "n", "kind": "integer", "message": "How many?"},
    {"id": "note", "kind": "text", "message": "Anything else?"},
]}


def asked(status: str = "resolved", **payload) -> ResumeEntry:
    return ResumeEntry(interrupt_id="ahp-input:ask-c9", status=status, payload=payload or None)


def test_an_open_question_is_an_input_interrupt_after_the_confirmations() -> None:
    turn = {"responseParts": [{"kind": "toolCall", "toolCall": CALL}, {"kind": "inputRequest", "request": REQUEST},
                              {"kind": "inputRequest", "request": {"id": "done"}, "response": "accept"}]}
    first, second = interrupts(turn)
    assert (first.id, second.id, second.reason) == ("ahp-confirm:c1", "ahp-input:ask-c9", "input_required")
    answers = second.response_schema["properties"]["answers"]
    assert "enum" not in answers["properties"]["size"]  # free input is allowed
    assert answers["properties"]["extras"] == {"description": "Extras?", "type": "array", "items": {"type": "string", "enum": ["bag"]}}


def test_plain_answers_become_the_answers_each_question_takes() -> None:
    action = answer_input(asked(answers={"size": "XL", "extras": ["bag"], "n": 3.0, "note": "thanks"}), REQUEST)
    assert action == {"type": "chat/inputCompleted", "requestId": "ask-c9", "response": "accept", "answers": {
        "size": {"state": "submitted", "value": {"kind": "selected", "value": "", "freeformValues": ["XL"]}},
        "extras": {"state": "submitted", "value": {"kind": "selected-many", "value": ["bag"]}},
        "n": {"state": "submitted", "value": {"kind": "number", "value": 3.0}},
        "note": {"state": "submitted", "value": {"kind": "text", "value": "thanks"}},
    }}
    assert answer_input(asked(response="decline"), REQUEST)["response"] == "decline"
    assert answer_input(asked("cancelled"), REQUEST)["response"] == "cancel"


@pytest.mark.parametrize("payload, words", [
    ({"answers": {"size": "m", "n": 2.5}}, ["'n'", "whole number"]),
    ({"answers": {"size": "m", "extras": ["cape"]}}, ["'extras'", "cape"]),
    ({"answers": {"size": "m", "colour": "red"}}, ["'colour'", "size, extras, n, note"]),
    ({"answers": {"n": 1}}, ["'size'", "required", "decline"]),
    ({"answers": {"size": 5}}, ["'size'", "an option id"]),
    ({"response": "maybe"}, ["accept", "decline"]),
])
def test_answers_that_do_not_fit_say_which_question_and_what_it_takes(payload, words) -> None:
    with pytest.raises(AnswerError) as raised:
        answer_input(asked(**payload), REQUEST)
    for word in words:
        assert word in str(raised.value)
