"""providers._sse: the lean SSE reader gives the events the SSE format defines, nothing more."""

from __future__ import annotations

import httpx
import pytest

from providers._sse import RawEventStream


def stream_of(*pieces: bytes) -> RawEventStream:
    async def body():
        for piece in pieces:
            yield piece

    return RawEventStream(httpx.Response(200, content=body()), done="[DONE]",
                          error=lambda data: RuntimeError(data["error"]) if isinstance(data, dict) and "error" in data else None)


async def events(stream: RawEventStream) -> list:
    return [item async for item in stream]


async def test_events_split_across_network_reads_with_any_line_ending() -> None:
    stream = stream_of(b'data: {"a":', b' 1}\r\n\r\n: a comment\n', b'event: delta\ndata: {"b": "\xc3', b'\xa9"}\r\rdata: [1,\ndata: 2]\n\n')
    assert await events(stream) == [(None, {"a": 1}), ("delta", {"b": "é"}), (None, [1, 2])]


async def test_done_ends_the_stream_and_a_last_event_without_a_blank_line_is_kept() -> None:
    assert await events(stream_of(b"data: 1\n\ndata: [DONE]\n\ndata: 2\n\n")) == [(None, 1)]
    assert await events(stream_of(b"data: 1\n\ndata:2")) == [(None, 1), (None, 2)]


async def test_an_error_payload_raises_what_the_provider_says() -> None:
    with pytest.raises(RuntimeError, match="overloaded"):
        await events(stream_of(b'data: {"n": 1}\n\ndata: {"error": "overloaded"}\n\n'))


async def test_data_that_is_not_json_raises_a_json_error() -> None:
    import json

    with pytest.raises(json.JSONDecodeError):
        await events(stream_of(b"data: {nope\n\n"))


async def test_a_carriage_return_split_from_its_line_feed_across_reads_is_one_line_end() -> None:
    stream = stream_of(b'data: 1\r', b'\n\r', b'\ndata: "\xc3', b'\xa9"\r', b'\r', b'data: 3\r')
    assert await events(stream) == [(None, 1), (None, "é"), (None, 3)]


async def test_one_event_per_read_and_many_events_in_one_read_give_the_same_events() -> None:
    body = b"".join(b'event: e\ndata: {"n": %d}\n\n' % n for n in range(50))
    whole = await events(stream_of(body))
    split = await events(stream_of(*(body[i:i + 7] for i in range(0, len(body), 7))))
    assert whole == split == [("e", {"n": n}) for n in range(50)]


async def test_events_of_any_shape_read_as_the_format_says_whatever_the_short_ways_take() -> None:
    body = (b'\n\n\nevent: a\ndata: 1\n\n'          # blank lines before an event
            b'id: 7\nretry: 10\ndata: 2\n\n'        # other fields are ignored
            b'event: b\ndata:3\n\n'                 # no space after the colon
            b'event: c\nevent: d\ndata: 4\n\n'      # the last event name counts
            b'event: e\ndata: [5,\ndata: 6]\n\n'    # data lines joined
            b'data: 7\n: comment\n\n'               # a comment inside an event
            b'event: f\n\n'                         # no data: no event
            b'data\n\n')                            # a field without a colon: empty data
    with pytest.raises(orjson_error()):
        await events(stream_of(body))
    assert await events(stream_of(body[:-len(b'data\n\n')])) == [
        ("a", 1), (None, 2), ("b", 3), ("d", 4), ("e", [5, 6]), (None, 7)]


async def test_only_payloads_that_can_be_errors_are_shown_to_the_error_mapper() -> None:
    shown: list = []

    def error(data):
        shown.append(data)
        return RuntimeError("overloaded") if data.get("type") == "error" else None

    async def body():
        yield b'data: {"n": 1}\n\ndata: [1]\n\ndata: {"error": null}\n\nevent: error\ndata: {"type": "error"}\n\n'

    with pytest.raises(RuntimeError, match="overloaded"):
        await events(RawEventStream(httpx.Response(200, content=body()), error=error))
    assert shown == [{"error": None}, {"type": "error"}]


def orjson_error() -> type[Exception]:
    import orjson

    return orjson.JSONDecodeError


async def test_a_reader_of_data_alone_gets_every_event_name_as_none_and_the_same_data() -> None:
    body = b'event: delta\ndata: {"n": 1}\n\n: comment\nevent: a\nid: 2\ndata: 2\n\nevent: last\ndata: 3'
    named = await events(RawEventStream(httpx.Response(200, content=body)))
    unnamed = await events(RawEventStream(httpx.Response(200, content=body), names=False))
    assert [name for name, _ in named] == ["delta", "a", "last"]
    assert unnamed == [(None, data) for _, data in named]
