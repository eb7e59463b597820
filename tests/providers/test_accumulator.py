"""StreamAccumulator: vendor keys → part indexes, raw JSON arguments, typed errors, message building."""

from __future__ import annotations

import pytest

from providers import (
    AssistantMessage,
    Finish,
    MessageAdapter,
    PartDelta,
    PartStart,
    StreamAccumulator,
    StreamEventAdapter,
    UnexpectedDeltaError,
)


def test_interleaved_vendor_blocks_get_stable_indexes_and_raw_arguments():
    acc = StreamAccumulator(api="anthropic")
    assert acc.start("a", "tool_call", tool_call_id="c1", tool_name="read").index == 0
    assert acc.start("b", "tool_call", tool_call_id="c2", tool_name="write").index == 1
    acc.delta("b", '{"pa')
    acc.delta("a", '{"x": ')
    acc.delta("b", 'th": "f"}')
    acc.delta("a", "1}")
    acc.end("a", native={"type": "tool_use"})
    acc.end("b")
    acc.apply(Finish(reason="tool_calls", response_id="r1"))
    message = acc.message()
    assert [(c.tool_call_id, c.arguments) for c in message.tool_calls] == [("c1", '{"x": 1}'), ("c2", '{"path": "f"}')]
    assert message.parts[0].native == {"type": "tool_use"} and message.api == "anthropic" and message.response_id == "r1"


def test_delta_for_unknown_or_finished_block_raises_a_typed_error():
    acc = StreamAccumulator()
    with pytest.raises(UnexpectedDeltaError, match="unknown block"):
        acc.delta(7, "x")
    acc.start(7, "text")
    acc.end(7)
    with pytest.raises(UnexpectedDeltaError, match="finished"):
        acc.delta(7, "x")
    assert UnexpectedDeltaError.error_type == "provider_protocol"


def test_host_side_fold_rejects_out_of_order_events():
    acc = StreamAccumulator()
    with pytest.raises(UnexpectedDeltaError):
        acc.apply(PartStart(index=1, part_kind="text"))
    acc.apply(PartStart(index=0, part_kind="text"))
    with pytest.raises(UnexpectedDeltaError):
        acc.apply(PartDelta(index=0, part_kind="reasoning", content="x"))
    with pytest.raises(UnexpectedDeltaError, match="finish before"):
        acc.apply(Finish(reason="stop"))


def test_partial_message_keeps_text_of_unfinished_parts():
    acc = StreamAccumulator(api="openai-responses")
    acc.start("m", "text")
    acc.delta("m", "Half an ans")
    assert acc.message().text == "Half an ans"
    assert acc.message().parts[0].native is None


def test_events_and_messages_round_trip_through_json():
    acc = StreamAccumulator(api="anthropic")
    events = [acc.start(0, "reasoning"), acc.delta(0, "hmm"), acc.end(0, {"type": "thinking", "thinking": "hmm", "signature": "sig"})]
    for event in events:
        assert StreamEventAdapter.validate_json(StreamEventAdapter.dump_json(event)) == event
    message = acc.message()
    assert MessageAdapter.validate_json(MessageAdapter.dump_json(message)) == message
    assert isinstance(message, AssistantMessage)


def test_a_bare_delta_stands_for_a_delta_of_the_open_part_started_last_whatever_its_kind():
    acc = StreamAccumulator(api="anthropic")
    acc.start("think", "reasoning")
    pieces = acc.bare_pieces("think")
    assert pieces is not None
    pieces.append("hmm")  # what a translator does with a bare delta
    assert acc.bare_delta("hmm") == PartDelta(index=0, part_kind="reasoning", content="hmm")
    acc.end("think")
    assert acc.bare_pieces("think") is None  # ended: its deltas are no longer bare
    acc.start("a", "tool_call", tool_call_id="c1", tool_name="read")
    acc.start("b", "tool_call", tool_call_id="c2", tool_name="read")
    assert acc.bare_pieces("a") is None  # open, but not the part started last
    acc.bare_pieces("b").append('{"p": 1}')  # type: ignore[union-attr]
    assert acc.unbared('{"p": 1}') == [PartDelta(index=2, part_kind="tool_call", content='{"p": 1}')]
    acc.end_all()
    acc.finish_call(Finish(reason="tool_calls"))
    message = acc.message()
    assert message.parts[0].text == "hmm" and message.tool_calls[1].arguments == '{"p": 1}'  # type: ignore[union-attr]
