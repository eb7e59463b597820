"""providers.stream.ModelStream: a model call's events and the one message they built.

Every provider answers for its message: what ``stream.message()`` says equals what folding the
events it yielded gives (native payloads included), for each vendor over its cassettes and for
the scripted provider. A stream of plain events is folded once on its way through, checked as
strictly as a vendor's, and a call cut short answers with what streamed."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator

import pytest

from providers import (
    AnthropicProvider,
    ModelRequest,
    ModelStream,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    PartDelta,
    PartStart,
    ScriptedProvider,
    StreamAccumulator,
    StreamEvent,
    UnexpectedDeltaError,
    UserMessage,
    replay_client,
)
from providers.scripted import call_tools, reply

from .recorded_calls import EXPECTED, STREAMS, read_calls
from .streams import cassette

REQUEST = ModelRequest(model="m", messages=(UserMessage.of("hi"),))


async def _both(stream: ModelStream, api: str) -> tuple[object, object]:
    """The stream's own message and the one an independent fold of its events gives."""
    acc = StreamAccumulator(api=api)  # type: ignore[arg-type]  # a provider's own api name
    async with contextlib.aclosing(stream):
        async for event in stream:
            acc.apply(event)
    return stream.message(), acc.message()


@pytest.mark.parametrize("vendor, name, model", [
    (AnthropicProvider, "anthropic/messages-stream-thinking-multiturn", "claude-sonnet-4-5"),
    (AnthropicProvider, "anthropic/messages-stream-parallel-tool-use-multiturn", "claude-sonnet-4-5"),
    (OpenAIChatProvider, "openai/chat-completions-stream-parallel-tool-calls-multiturn", "gpt-4o"),
    (OpenAIResponsesProvider, "openai/responses-stream-reasoning-summary-multiturn", "gpt-5"),
    (OpenAIResponsesProvider, "openai/responses-stream-parallel-function-calls-multiturn", "gpt-5"),
])
async def test_a_vendor_stream_answers_with_the_message_its_events_build(vendor, name: str, model: str) -> None:
    client, _ = replay_client(cassette(f"{name}.yaml"))
    provider = vendor(api_key="test-key", http_client=client)
    stream = provider.stream(ModelRequest(model=model, messages=(UserMessage.of("hi"),)))
    assert isinstance(stream, ModelStream)
    own, folded = await _both(stream, provider.api)
    assert own == folded and own.parts  # type: ignore[attr-defined]  # an AssistantMessage


async def test_the_scripted_provider_answers_with_its_message() -> None:
    provider = ScriptedProvider([call_tools(("read", {"path": "a"}), text_before="Let me look.")])
    own, folded = await _both(provider.stream(REQUEST), "scripted")
    assert own == folded
    assert [(c.tool_name, c.parsed_arguments()) for c in own.tool_calls] == [("read", {"path": "a"})]  # type: ignore[attr-defined]  # an AssistantMessage


async def _plain(events: list[StreamEvent]) -> AsyncIterator[StreamEvent]:
    for event in events:
        yield event


async def test_plain_events_are_folded_once_on_their_way_through() -> None:
    scripted = ScriptedProvider([reply("Done.", reasoning_text="easy")])
    events = [event async for event in scripted.stream(REQUEST)]
    stream = ModelStream.of(_plain(events), api="scripted")
    assert [event async for event in stream] == events
    assert [p.kind for p in stream.message().parts] == ["reasoning", "text"] and stream.message().text == "Done."


def test_a_model_stream_is_taken_as_it_is() -> None:
    stream = ScriptedProvider([reply("x")]).stream(REQUEST)
    assert ModelStream.of(stream) is stream


async def test_plain_events_that_fit_no_part_fail_as_a_malformed_stream() -> None:
    stream = ModelStream.of(_plain([PartDelta(index=0, part_kind="text", content="x")]))
    with pytest.raises(UnexpectedDeltaError):
        async for _ in stream:
            pass


async def test_a_call_cut_short_answers_with_what_streamed() -> None:
    stream = ScriptedProvider([reply("one two three")]).stream(REQUEST)
    async with contextlib.aclosing(stream):
        async for event in stream:
            if isinstance(event, PartDelta):
                break
    message = stream.message()
    assert message.text == "one two three" and message.model is None  # no finish: not complete
    assert not isinstance(message.parts[0], PartStart)


def _expanded(events: list[dict]) -> tuple[list[dict], set[str]]:
    """``events`` (``recorded_calls``' JSON) with each bare delta made the ``PartDelta`` it stands
    for, a delta of the part started last, which is open; and the kinds of the parts that had any."""
    last: dict | None = None
    ended: set[int] = set()
    out, kinds = [], set()
    for event in events:
        if "bare" in event:
            assert last is not None and last["index"] not in ended, "a bare delta while the part started last was not open"
            kinds.add(last["part_kind"])
            out.append({"kind": "part_delta", "index": last["index"], "part_kind": last["part_kind"], "content": event["bare"]})
            continue
        if event["kind"] == "part_start":
            last = event
        elif event["kind"] == "part_end":
            ended.add(event["index"])
        out.append(event)
    return out, kinds


@pytest.mark.parametrize("name", list(STREAMS))
async def test_a_recorded_stream_gives_what_it_gave_before_whether_read_bare_or_iterated(name: str) -> None:
    """Every recorded stream of the three APIs: iterating it gives the events and message main gave
    before reasoning and tool-argument deltas came bare (``expected_calls.json``), and reading it
    bare gives the same once each bare delta is made the ``PartDelta`` it stands for; its text,
    reasoning and tool arguments, whichever it streams, came bare."""
    expected = json.loads(EXPECTED.read_text())[name]
    assert await read_calls(name, bare=False) == expected
    bare = await read_calls(name, bare=True)
    streamed: set[str] = set()
    bare_kinds: set[str] = set()
    for call, before in zip(bare, expected, strict=True):
        events, kinds = _expanded(call["events"])
        assert events == before["events"] and call["message"] == before["message"]
        bare_kinds |= kinds
        streamed |= {e["part_kind"] for e in before["events"] if e["kind"] == "part_delta"}
    assert bare_kinds == streamed  # every kind of part it streams came bare


async def test_most_streamed_chunks_of_every_kind_come_bare() -> None:
    """Not a bare delta now and then: of the recorded chunks of text, reasoning and tool arguments,
    all but the first of each part (given with its start, or after another part's end) come bare."""
    for name in STREAMS:
        for call in await read_calls(name, bare=True):
            bare = sum("bare" in e for e in call["events"])
            deltas = sum(e.get("kind") == "part_delta" for e in call["events"])
            starts = sum(e.get("kind") == "part_start" for e in call["events"])
            assert deltas <= starts + 1, (name, bare, deltas, starts)
