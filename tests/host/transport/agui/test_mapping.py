"""RunTranslator on its own: chat actions of the internal model (applied with the real chat
reducer, ``ahp.state``) → AG-UI events."""

from __future__ import annotations

from typing import Any

from ahp.protocol import builders
from ahp.state import reduce
from host.transport.agui.mapping import RunTranslator, token_usage

TURN = "turn-1"
CLIENT = "agui:thread"
STARTED_AT = "2026-01-01T00:00:00.000Z"


class Session:
    """A chat state driven by the real reducer, feeding a translator as actions apply."""

    def __init__(self, translator: RunTranslator) -> None:
        self.state: dict[str, Any] = {"resource": "ahp-chat://default/cDovcw", "title": "", "status": 1,
                                      "modifiedAt": STARTED_AT, "turns": []}
        self.translator = translator
        self.events: list[Any] = []

    def apply(self, *actions: dict[str, Any]) -> list[Any]:
        out = []
        for action in actions:
            self.state = reduce("chat", self.state, action, 1)
            out += self.translator.feed(action, self.state)
        self.events += out
        return out

    def types(self) -> list[str]:
        return [event.type.value for event in self.events]


def started(turn_id: str = TURN) -> dict[str, Any]:
    return builders.chat_turn_started(turn_id=turn_id, started_at=STARTED_AT, message={"text": "hi", "origin": {"kind": "user"}})


def part(kind: str, part_id: str) -> dict[str, Any]:
    return builders.chat_response_part(turn_id=TURN, part={"kind": kind, "id": part_id, "content": ""})


def delta(part_id: str, text: str, kind: str = "chat/delta") -> dict[str, Any]:
    build = builders.chat_delta if kind == "chat/delta" else builders.chat_reasoning
    return build(turn_id=TURN, part_id=part_id, content=text)


def tool_start(call_id: str, name: str, owner: str | None = None) -> dict[str, Any]:
    return builders.chat_tool_call_start(turn_id=TURN, tool_call_id=call_id, tool_name=name, display_name=name.title(),
                                         contributor={"kind": "client", "clientId": owner} if owner else None)


def tool_delta(call_id: str, content: str) -> dict[str, Any]:
    return builders.chat_tool_call_delta(turn_id=TURN, tool_call_id=call_id, content=content)


def tool_ready(call_id: str, tool_input: str) -> dict[str, Any]:
    return builders.chat_tool_call_ready(turn_id=TURN, tool_call_id=call_id, invocation_message="Run",
                                         tool_input=tool_input, confirmed="not-needed")


def tool_complete(call_id: str, text: str, success: bool = True) -> dict[str, Any]:
    result = {"success": success, "pastTenseMessage": "Ran", "content": [{"type": "text", "text": text}]}
    return builders.chat_tool_call_complete(turn_id=TURN, tool_call_id=call_id, result=result)


def complete() -> dict[str, Any]:
    return builders.chat_turn_complete(turn_id=TURN, duration=5)


def new_session() -> Session:
    return Session(RunTranslator("thread", "run-1", TURN, CLIENT))


def test_streamed_text_becomes_one_text_message_then_run_finished() -> None:
    session = new_session()
    session.apply(started(), part("markdown", "p1"), delta("p1", "Hel"), delta("p1", ""), delta("p1", "lo"))
    session.apply(complete())
    assert session.types() == [
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"
    ]
    assert session.events[0].role == "assistant" and session.events[0].message_id == "p1"
    assert "".join(e.delta for e in session.events if e.type.value == "TEXT_MESSAGE_CONTENT") == "Hello"
    assert session.translator.done


def test_reasoning_then_text_closes_the_reasoning_message_first() -> None:
    session = new_session()
    session.apply(started(), part("reasoning", "r1"), delta("r1", "think", "chat/reasoning"), part("markdown", "p2"), delta("p2", "answer"))
    session.apply(complete())
    assert session.types() == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]


def test_a_host_tool_streams_its_arguments_and_reports_its_result() -> None:
    session = new_session()
    session.apply(started(), part("markdown", "p1"), delta("p1", "Let me look."))
    session.apply(tool_start("c1", "echo"), tool_delta("c1", '{"text":'))
    session.apply(tool_delta("c1", '"hi"}'))
    session.apply(tool_ready("c1", '{"text":"hi"}'), tool_complete("c1", "HI"))
    assert not session.translator.done
    assert session.types()[3:] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    start = session.events[3]
    assert (start.tool_call_id, start.tool_call_name, start.parent_message_id) == ("c1", "echo", "p1")
    result = session.events[-1]
    assert (result.tool_call_id, result.content, result.role) == ("c1", "HI", "tool")


def test_a_tool_input_that_was_not_streamed_is_sent_whole_before_the_end() -> None:
    session = new_session()
    session.apply(started(), tool_start("c1", "echo"), tool_ready("c1", '{"a":1}'))
    assert session.types() == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert session.events[1].delta == '{"a":1}'


def test_a_call_waiting_for_confirmation_ends_the_run_with_an_interrupt() -> None:
    session = new_session()
    session.apply(started(), tool_start("c1", "rm"))
    ready = {**tool_ready("c1", "{}"), "options": [{"id": "allow-once", "label": "Allow once", "kind": "approve"},
                                                   {"id": "deny", "label": "Deny", "kind": "deny"}]}
    del ready["confirmed"]
    session.apply(ready)
    assert session.types() == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    outcome = session.events[-1].outcome
    assert outcome.type == "interrupt"
    [interrupt] = outcome.interrupts
    assert (interrupt.id, interrupt.reason, interrupt.tool_call_id) == ("ahp-confirm:c1", "tool_approval", "c1")
    assert interrupt.response_schema["properties"]["optionId"]["enum"] == ["allow-once", "deny"]
    assert session.translator.interrupted == ["ahp-confirm:c1"]


def test_a_denied_tool_call_gets_a_result_saying_so_in_the_resumed_run() -> None:
    session = new_session()
    session.apply(started(), tool_start("c1", "rm"))
    ready = dict(tool_ready("c1", "{}"))
    del ready["confirmed"]
    session.apply(ready)
    session.translator = RunTranslator("thread", "run-2", TURN, CLIENT)
    session.translator.adopt_calls(["c1"])
    session.events = []
    session.apply(builders.chat_tool_call_denied(turn_id=TURN, tool_call_id="c1", reason="denied"))
    assert session.types() == ["TOOL_CALL_RESULT"]
    assert "declined" in session.events[-1].content


def test_a_front_end_tool_suspends_the_run_once_it_is_running() -> None:
    session = new_session()
    session.apply(started(), tool_start("c1", "pick_color", owner=CLIENT))
    session.apply(tool_delta("c1", "{}"))
    assert not session.translator.done
    session.apply(tool_ready("c1", "{}"))
    assert session.types() == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert session.translator.done and session.translator.suspended_on == ["c1"]
    assert session.events[-1].outcome.pending_tool_call_ids == ["c1"]
    assert session.state["activeTurn"]["id"] == TURN  # the turn itself goes on, waiting


def test_the_run_does_not_suspend_while_another_call_is_still_streaming() -> None:
    session = new_session()
    session.apply(started(), tool_start("c1", "pick_color", owner=CLIENT), tool_start("c2", "echo"))
    session.apply(tool_ready("c1", "{}"))
    assert not session.translator.done
    session.apply(tool_ready("c2", "{}"), tool_complete("c2", "done"))
    assert session.translator.done and session.translator.suspended_on == ["c1"]


def test_a_resumed_run_reports_no_result_for_its_own_front_end_call_and_only_its_own_usage() -> None:
    first = new_session()
    first.apply(started(), tool_start("c1", "pick_color", owner=CLIENT), tool_ready("c1", "{}"))
    first.apply(builders.chat_usage(turn_id=TURN, usage={"inputTokens": 10, "outputTokens": 2}))
    second = Session(RunTranslator("thread", "run-2", TURN, CLIENT, usage_before={"inputTokens": 10, "outputTokens": 2}))
    second.state = first.state
    second.apply(tool_complete("c1", "blue"), part("markdown", "p9"), delta("p9", "Blue it is."))
    second.apply(builders.chat_usage(turn_id=TURN, usage={"inputTokens": 25, "outputTokens": 7, "model": "m"}))
    second.apply(complete())
    assert second.types() == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    [usage] = second.events[-1].usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.model) == (15, 5, 20, "m")


def test_an_error_closes_what_is_open_and_ends_the_run_with_the_error_message() -> None:
    session = new_session()
    session.apply(started(), part("markdown", "p1"), delta("p1", "Partial"))
    error = {"errorType": "rate_limit", "message": "The provider is rate limiting; send your message again later."}
    session.apply(builders.chat_error(turn_id=TURN, duration=5, part={"kind": "error", "error": error}))
    assert session.types() == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_ERROR"]
    assert (session.events[-1].message, session.events[-1].code) == (error["message"], "rate_limit")


def test_a_cancelled_turn_finishes_the_run_with_a_cancelled_outcome() -> None:
    session = new_session()
    session.apply(started(), tool_start("c1", "echo"), builders.chat_turn_cancelled(turn_id=TURN, duration=5))
    assert session.types() == ["TOOL_CALL_START", "TOOL_CALL_END", "RUN_FINISHED"]
    assert session.events[-1].outcome.type == "cancelled"


def test_actions_of_other_turns_and_after_the_end_are_ignored() -> None:
    session = new_session()
    session.apply(started(), complete())
    assert session.apply(started("turn-2"), {**part("markdown", "x"), "turnId": "turn-2"}) == []
    assert session.types() == ["RUN_FINISHED"]


def test_token_usage_is_none_without_counts() -> None:
    assert token_usage(None) is None
    assert token_usage({"model": "m"}) is None
    assert token_usage({"inputTokens": 3, "cacheReadTokens": 1}).cached_input_tokens == 1
