"""providers.stream.ModelStream: a model call's events and the one message they built.

Every provider answers for its message: what ``stream.message()`` says equals what folding the
events it yielded gives (native payloads included), for each vendor over its cassettes and for
the scripted provider. A stream of plain events is folded once on its way through, checked as
strictly as a vendor's, and a call cut short answers with what streamed."""

from __future__ import annotations

import contextlib
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


async def test_a_chat_stream_read_bare_gives_its_text_chunks_as_strings_standing_for_the_same_deltas() -> None:
    name = "openai/chat-completions-stream-text-usage"
    provider = OpenAIChatProvider(api_key="test-key", http_client=replay_client(cassette(f"{name}.yaml"))[0])
    events = [event async for event in provider.stream(ModelRequest(model="gpt-4o", messages=(UserMessage.of("hi"),)))]
    bare_stream = OpenAIChatProvider(api_key="test-key", http_client=replay_client(cassette(f"{name}.yaml"))[0]).stream(
        ModelRequest(model="gpt-4o", messages=(UserMessage.of("hi"),)))
    bare = [event async for event in bare_stream.bare()]
    assert sum(isinstance(event, str) for event in bare) > 1  # the text chunks came bare
    # each str is a PartDelta of the text part started last, as iterating the stream gives it
    last_start: PartStart | None = None
    expanded: list[StreamEvent] = []
    for event in bare:
        if isinstance(event, str):
            assert last_start is not None and last_start.part_kind == "text"
            expanded.append(PartDelta(index=last_start.index, part_kind="text", content=event))
        else:
            last_start = event if isinstance(event, PartStart) else last_start
            expanded.append(event)
    assert expanded == events
    assert bare_stream.message().text == "".join(e.content for e in events if isinstance(e, PartDelta) and e.part_kind == "text")


async def _calls(vendor, name: str, model: str, *, bare: bool) -> list[tuple[list, object]]:
    """Every recorded call of cassette ``name``, one after another on one client: what the stream
    gave (read bare, or iterated) and the message it answered with."""
    client, transport = replay_client(cassette(f"{name}.yaml"))
    provider = vendor(api_key="test-key", http_client=client)
    out = []
    for _ in transport.interactions:
        stream = provider.stream(ModelRequest(model=model, messages=(UserMessage.of("hi"),)))
        async with contextlib.aclosing(stream):
            events = [event async for event in (stream.bare() if bare else stream)]
        out.append((events, stream.message()))
    return out


@pytest.mark.parametrize("vendor, name, model", [
    (AnthropicProvider, "anthropic/messages-stream-thinking-multiturn", "claude-sonnet-4-5"),
    (AnthropicProvider, "anthropic/messages-stream-parallel-tool-use-multiturn", "claude-sonnet-4-5"),
    (AnthropicProvider, "anthropic/messages-stream-text", "claude-3-haiku"),
    (AnthropicProvider, "anthropic/messages-stream-text-max-tokens", "claude-3-haiku"),
    (OpenAIResponsesProvider, "openai/responses-stream-reasoning-summary-multiturn", "gpt-5"),
    (OpenAIResponsesProvider, "openai/responses-stream-parallel-function-calls-multiturn", "gpt-5"),
])
async def test_an_event_stream_read_bare_gives_its_text_chunks_as_strings_standing_for_the_same_deltas(vendor, name: str, model: str) -> None:
    plain = await _calls(vendor, name, model, bare=False)
    bare = await _calls(vendor, name, model, bare=True)
    assert sum(isinstance(event, str) for events, _ in bare for event in events) > 1  # text chunks came bare
    for (events, message), (bare_events, bare_message) in zip(plain, bare, strict=True):
        last_start: PartStart | None = None
        expanded: list[StreamEvent] = []
        for event in bare_events:
            if isinstance(event, str):  # a PartDelta of the text part started last, which is open
                assert last_start is not None and last_start.part_kind == "text"
                expanded.append(PartDelta(index=last_start.index, part_kind="text", content=event))
            else:
                last_start = event if isinstance(event, PartStart) else last_start
                expanded.append(event)
        assert expanded == events
        assert bare_message == message
