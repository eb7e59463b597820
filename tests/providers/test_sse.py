"""providers._sse: the lean SSE reader gives the events the SSE format defines, nothing more."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from providers._sse import RawEventStream


def stream_of(*pieces: bytes, names: bool = True, bare: Any = None) -> RawEventStream:
    async def body():
        for piece in pieces:
            yield piece

    return RawEventStream(httpx.Response(200, content=body()), done="[DONE]", names=names, bare=bare,
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


class Taker:
    """A ``bare`` reader: ``{"open": 1}`` makes it take the pieces of ``{"d":{"t":...}}`` bare,
    ``{"close": 1}`` stops that; it notes every item it takes."""

    def __init__(self) -> None:
        self.bare_prefix: bytes | None = None
        self.taken: list = []

    def take(self, item: tuple) -> None:
        self.taken.append(item[1])
        data = item[1]
        if type(data) is dict and "open" in data:
            self.bare_prefix = b'data: {"d":{"t":'
        elif type(data) is dict and "close" in data:
            self.bare_prefix = None


PIECES_BODY = (b'data: {"d":{"t":"before"}}\n\ndata: {"open": 1}\n\ndata: {"d":{"t":"hi"}}\n\n'
               b'data: {"d":{"t":"yo"} \t}\n\ndata: {"d":{"t":"x","u":1}}\n\ndata: {"close": 1}\n\ndata: {"d":{"t":"no"}}\n\n')
PIECES_TAKEN = [{"d": {"t": "before"}}, {"open": 1}, "hi", "yo", {"d": {"t": "x", "u": 1}}, {"close": 1}, {"d": {"t": "no"}}]


async def test_a_bare_reader_gets_its_pieces_with_the_prefix_it_has_after_taking_each_event_before() -> None:
    # split's list ends at each event given whole; the reader takes it, then resume gives the rest
    # of the same read with the prefix read again (a piece only while it is open: "hi", "yo")
    taker = Taker()
    stream = RawEventStream(httpx.Response(200, content=b""), names=False, bare=taker)
    lists = [stream.split(PIECES_BODY)]
    while True:
        for item in lists[-1]:
            taker.take(item)
        if stream.held is None:
            break
        lists.append(stream.resume())
    assert taker.taken == PIECES_TAKEN
    assert [len(items) for items in lists] == [1, 1, 3, 1, 1, 0]
    # ``async for`` the same, in reads of any size; without a bare reader every event is parsed whole
    for size in (1, 5, len(PIECES_BODY)):
        taker = Taker()
        async for item in stream_of(*(PIECES_BODY[i:i + size] for i in range(0, len(PIECES_BODY), size)), names=False, bare=taker):
            taker.take(item)
        assert taker.taken == PIECES_TAKEN
    plain = await events(RawEventStream(httpx.Response(200, content=PIECES_BODY), names=False))
    assert [data for _, data in plain] == [{"d": {"t": "hi"}} if data == "hi" else {"d": {"t": "yo"}} if data == "yo" else data
                                           for data in PIECES_TAKEN]


async def test_with_a_bare_reader_the_events_before_a_failing_one_in_a_read_come_first() -> None:
    import orjson

    body = b'data: {"open": 1}\n\ndata: {"d":{"t":"hi"}}\n\ndata: {nope\n\ndata: {"d":{"t":"after"}}\n\n'
    taker = Taker()
    with pytest.raises(orjson.JSONDecodeError):
        async for item in RawEventStream(httpx.Response(200, content=body), names=False, bare=taker):
            taker.take(item)
    assert taker.taken == [{"open": 1}, "hi"]
    # and the error payload the provider maps, right after an event given whole
    taker = Taker()
    body = b'data: {"open": 1}\n\ndata: {"error": "overloaded"}\n\ndata: {"d":{"t":"after"}}\n\n'
    with pytest.raises(RuntimeError, match="overloaded"):
        async for item in RawEventStream(httpx.Response(200, content=body), names=False, bare=taker,
                                         error=lambda data: RuntimeError(data["error"]) if "error" in data else None):
            taker.take(item)
    assert taker.taken == [{"open": 1}]
