"""The loop every SDK-backed provider runs (``providers._streaming.sdk_events``): what a stalled,
slow or cancelled stream looks like to the turn loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from providers._sse import RawEventStream
from providers._streaming import sdk_events
from providers.errors import ProviderError, ProviderStalledError
from providers.events import PartDelta, StreamEvent


class _Stream:
    """A vendor stream: items after the given pauses (seconds), then the end."""

    def __init__(self, pauses: list[float]) -> None:
        self.pauses = pauses
        self.closed = False

    def __aiter__(self) -> AsyncIterator[str]:
        return self._items()

    async def _items(self) -> AsyncIterator[str]:
        for index, pause in enumerate(self.pauses):
            await asyncio.sleep(pause)
            yield f"item {index}"

    async def close(self) -> None:
        self.closed = True


def _events(stream: _Stream, stall_timeout: float | None) -> AsyncIterator[StreamEvent]:
    async def open_stream() -> _Stream:
        return stream

    return sdk_events(
        open_stream,
        lambda raw: [PartDelta(index=0, part_kind="text", content=raw)],
        lambda exc: ProviderError(f"mapped {exc!r}"),
        finished=lambda: True,
        dropped="dropped",
        provider="fake",
        stall_timeout=stall_timeout,
    )


async def test_a_stream_silent_longer_than_the_stall_timeout_is_stopped_and_closed() -> None:
    stream = _Stream([0.0, 0.0, 5.0])
    seen: list[str] = []

    with pytest.raises(ProviderStalledError) as raised:
        async for event in _events(stream, stall_timeout=0.2):
            seen.append(event.content)

    assert seen == ["item 0", "item 1"]
    assert "sent nothing for 0.2 s while streaming" in str(raised.value)
    assert stream.closed


async def test_time_the_consumer_spends_between_items_is_not_a_stall() -> None:
    stream = _Stream([0.0, 0.0, 0.0])  # the stream never keeps the consumer waiting
    seen: list[str] = []

    async for event in _events(stream, stall_timeout=0.1):
        seen.append(event.content)
        await asyncio.sleep(0.3)  # e.g. the turn loop waiting on something slow

    assert seen == ["item 0", "item 1", "item 2"]


async def test_many_short_waits_adding_up_past_the_timeout_are_not_a_stall() -> None:
    stream = _Stream([0.05] * 10)

    seen = [event.content async for event in _events(stream, stall_timeout=0.2)]

    assert len(seen) == 10


async def test_cancelling_the_turn_during_a_wait_stays_a_cancellation() -> None:
    stream = _Stream([5.0])

    async def consume() -> None:
        async for _ in _events(stream, stall_timeout=0.2):
            pass

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stream.closed


async def test_what_prepares_the_request_fails_as_it_fails_and_closing_events_follow_a_finished_stream() -> None:
    stream = _Stream([0.0, 0.0])
    opened_with: list[object] = []

    async def open_stream(prepared: object) -> _Stream:
        opened_with.append(prepared)
        return stream

    def events(prepare, finished: bool = True) -> AsyncIterator[StreamEvent]:
        return sdk_events(
            open_stream,
            lambda data: [PartDelta(index=0, part_kind="text", content=data)],
            lambda exc: ProviderError(f"mapped {exc!r}"),
            finished=lambda: finished,
            dropped="dropped",
            provider="fake",
            prepare=prepare,
            then=lambda: [PartDelta(index=0, part_kind="text", content="closing")],
            data_only=True,
        )

    def bad_request() -> object:
        raise ValueError("no such tool schema")

    with pytest.raises(ValueError, match="no such tool schema"):  # the caller's error, not a provider's
        [event async for event in events(bad_request)]
    assert opened_with == []

    stream.pauses = [0.0, 0.0]
    seen = [event.content async for event in events(lambda: "params")]
    assert opened_with == ["params"]
    assert seen == ["t", "t", "closing"]  # ``data_only``: item[1] of each raw item ("item 0"[1])

    stream.pauses = [0.0]
    seen = []
    with pytest.raises(ProviderError, match="dropped"):
        async for event in events(lambda: "params", finished=False):
            seen.append(event.content)
    assert seen == ["t"]  # no closing events after a dropped stream


def _raw_events(pieces: list[bytes | float], stall_timeout: float | None = None) -> AsyncIterator[StreamEvent]:
    """``sdk_events`` over a raw SSE body (``providers._sse.RawEventStream``, which it reads and
    splits itself): the body's bytes in the given pieces, a float a pause (seconds) before the next."""
    async def body() -> AsyncIterator[bytes]:
        for piece in pieces:
            if isinstance(piece, float):
                await asyncio.sleep(piece)
            else:
                yield piece

    async def open_stream() -> RawEventStream:
        return RawEventStream(httpx.Response(200, content=body()), done="[DONE]",
                              error=lambda data: RuntimeError(data["error"]) if "error" in data else None)

    return sdk_events(
        open_stream,
        lambda data: [PartDelta(index=0, part_kind="text", content=str(data))],
        lambda exc: ProviderError(f"mapped {exc!r}"),
        finished=lambda: True,
        dropped="dropped",
        provider="fake",
        stall_timeout=stall_timeout,
        data_only=True,
    )


async def test_a_raw_event_stream_gives_the_events_of_its_own_reading_in_any_pieces() -> None:
    body = b"".join(b'data: {"n": %d}\r\n\r\n' % n for n in range(30)) + b"data: [DONE]\n\ndata: 99\n\n"
    expected = [str(data) async for _, data in RawEventStream(httpx.Response(200, content=body), done="[DONE]")]
    for size in (1, 7, len(body)):
        pieces: list[bytes | float] = [body[i:i + size] for i in range(0, len(body), size)]
        assert [event.content async for event in _raw_events(pieces)] == expected == [str({"n": n}) for n in range(30)]
    # A last event without its blank line is kept.
    assert [event.content async for event in _raw_events([b"data: 1\n\ndata: 2"])] == ["1", "2"]


async def test_a_raw_event_stream_s_error_payload_comes_after_the_events_read_with_it() -> None:
    seen: list[str] = []
    with pytest.raises(ProviderError, match="overloaded"):
        async for event in _raw_events([b'data: {"n": 1}\n\ndata: {"error": "overloaded"}\n\ndata: {"n": 2}\n\n']):
            seen.append(event.content)
    assert seen == [str({"n": 1})]


async def test_a_raw_event_stream_silent_longer_than_the_stall_timeout_is_stopped() -> None:
    seen: list[str] = []
    with pytest.raises(ProviderStalledError):
        async for event in _raw_events([b"data: 1\n\n", 5.0, b"data: 2\n\n"], stall_timeout=0.2):
            seen.append(event.content)
    assert seen == ["1"]
