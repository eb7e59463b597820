"""``chat._stream``: the JSON events of a turn, from successive snapshots of it."""

from __future__ import annotations

from chat._stream import TurnEvents, model_rounds, result_object


def _call(status: str, **fields: object) -> dict:
    return {"kind": "toolCall", "toolCall": {"toolCallId": "c1", "toolName": "shell", "status": status, "toolInput": '{"command": "ls"}', **fields}}


def test_text_is_reported_once_as_deltas_and_each_tool_status_once() -> None:
    events = TurnEvents()
    assert events.update({"responseParts": [{"kind": "markdown", "id": "p1", "content": "Hel"}]}) == [
        {"type": "text_delta", "part_id": "p1", "text": "Hel"}
    ]
    turn = {"responseParts": [{"kind": "markdown", "id": "p1", "content": "Hello"}, _call("streaming")]}
    assert events.update(turn) == [{"type": "text_delta", "part_id": "p1", "text": "lo"}]
    turn["responseParts"][1] = _call("running")
    assert [e["type"] for e in events.update(turn)] == ["tool_call"]
    assert events.update(turn) == []
    turn["responseParts"][1] = _call("completed", success=True, content=[{"type": "text", "text": "a b"}])
    assert events.update(turn)[1] == {"type": "tool_result", "tool_call_id": "c1", "tool": "shell", "success": True, "output": "a b", "error": None}


def test_rounds_count_the_model_answering_after_each_run_of_tool_calls() -> None:
    text = {"kind": "markdown", "id": "p", "content": "x"}
    assert model_rounds({"responseParts": [text]}) == 1
    assert model_rounds({"responseParts": [text, _call("completed"), _call("completed"), text]}) == 2
    assert model_rounds({"responseParts": [_call("completed"), text, _call("running")]}) == 3


def test_the_result_names_the_session_and_says_whether_it_errored() -> None:
    turn = {"responseParts": [{"kind": "markdown", "id": "p", "content": "done"}], "usage": {"inputTokens": 7, "outputTokens": 2}}
    result = result_object(session="ahp-session:/abc", turn=turn, exit_code=1, subtype="timeout", error="slow", duration_ms=5)
    assert (result["session_id"], result["result"], result["is_error"], result["usage"]["input_tokens"]) == ("abc", "done", True, 7)
    assert result_object(session=None, turn=None, exit_code=3, subtype="denied", error=None, duration_ms=0)["is_error"] is False


def test_a_call_the_turns_end_cut_short_says_how_the_turn_ended_as_the_terminal_does() -> None:
    events = TurnEvents()
    events.update({"responseParts": [_call("running")]})
    cancelled = {"state": "cancelled", "responseParts": [_call("cancelled", reason="skipped")]}
    assert events.update(cancelled)[1]["error"] == "cancelled with the turn"
    denied = TurnEvents().update({"responseParts": [_call("cancelled", reason="denied")]})
    assert denied[1]["error"] == "denied"
    said = TurnEvents().update({"responseParts": [_call("cancelled", reason="denied", reasonMessage="not now")]})
    assert said[1]["error"] == "not now"


def test_a_calls_input_is_the_json_object_not_its_text() -> None:
    [event] = TurnEvents().update({"responseParts": [_call("running")]})
    assert event["input"] == {"command": "ls"}
    broken = {"kind": "toolCall", "toolCall": {"toolCallId": "c2", "toolName": "shell", "status": "running", "toolInput": '{"command": '}}
    assert TurnEvents().update({"responseParts": [broken]})[0]["input"] == '{"command": '
