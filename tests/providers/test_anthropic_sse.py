"""A streamed piece picked out of an Anthropic event's bytes (``providers._sse.RawEventStream`` given
the translator as its ``bare`` reader, as ``providers.anthropic`` reads a response) gives the
provider's stream exactly what the plain way gives (the same reader without ``bare``, each event
parsed whole), for every recorded stream cut into network reads of any size, for events laid out
in any other way, and for reads holding a block's start and its deltas or its end and what follows
(the prefix read after the events before it were fed); and the recordings do take the short way."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
import yaml

from providers import ProviderError
from providers._sse import RawEventStream
from providers._streaming import sdk_events
from providers.anthropic import _Translator, delta_prefix, map_error, stream_error
from providers.stream import ModelStream

from .streams import cassette

RECORDINGS = ("messages-stream-text", "messages-stream-text-max-tokens", "messages-stream-thinking-multiturn",
              "messages-stream-parallel-tool-use-multiturn")


def recorded_bodies() -> list[tuple[str, bytes]]:
    """Every streamed response body of the Anthropic recordings, named ``recording#index``."""
    bodies = []
    for name in RECORDINGS:
        interactions = yaml.safe_load(cassette(f"anthropic/{name}.yaml").read_text())["interactions"]
        for index, interaction in enumerate(interactions):
            body = interaction["response"]["body"]["string"]
            if body.startswith("event:"):
                bodies.append((f"{name}#{index}", body.encode()))
    return bodies


def cut(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)]


def one_event_a_read(body: bytes) -> list[bytes]:
    """``body`` read one whole event at a time, as a server writing at a model's pace sends it."""
    events = body.split(b"\n\n")
    return [event + b"\n\n" for event in events[:-1]] + ([events[-1]] if events[-1] else [])


class Read:
    """What one provider stream gave: its bare items, each as the turn reads it, the events every
    other consumer reads, the message, the error it ended with, and how many pieces the reader
    picked out of the bytes."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.events: list[Any] = []
        self.message: Any = None
        self.error: tuple[type, str] | None = None
        self.pieces = 0

    def same(self) -> tuple[Any, ...]:
        return self.items, self.events, self.message, self.error


async def read(pieces: list[bytes], short_way: bool) -> Read:
    """``pieces`` (the body's network reads) through the provider's translator and ``sdk_events``,
    as ``AnthropicProvider.stream`` reads a response: with the translator as the reader's ``bare``
    reader, which picks pieces out of the bytes (``short_way``), or without (the plain way)."""
    out = Read()
    translator = _Translator()

    async def body():
        for piece in pieces:
            yield piece

    response = httpx.Response(200, content=body())

    def error(data: Any) -> BaseException | None:
        return stream_error(response, data)

    stream = RawEventStream(response, error=error, names=False, bare=translator if short_way else None)

    async def opened() -> Any:
        return stream

    def feed(data: Any) -> Any:
        out.pieces += type(data) is str
        return translator.feed_bare(data)

    events = sdk_events(opened, feed, map_error, finished=lambda: translator.finished, dropped="dropped",
                        provider="anthropic", data_only=True)
    model_stream = ModelStream(events, translator.acc, bare=True)
    try:
        async for item in model_stream.bare():
            out.items.append(item)
            # the event it stands for, made now (a bare delta stands for one of the part started last)
            out.events.extend(translator.acc.unbared(item) if type(item) is str else [item])
    except ProviderError as exc:
        out.error = (type(exc), str(exc))
    out.message = model_stream.message()
    return out


@pytest.mark.parametrize(("name", "body"), recorded_bodies(), ids=[name for name, _ in recorded_bodies()])
async def test_a_recorded_stream_read_in_reads_of_any_size_gives_what_the_general_reader_gives(name: str, body: bytes) -> None:
    plain = await read([body], short_way=False)
    assert plain.error is None and plain.message.parts
    deltas = sum(1 for event in plain.events if event.kind == "part_delta")
    for size in (len(body), 1, 2, 3, 7, 13, 64, 97, 1000, None):
        short = await read(cut(body, size) if size is not None else one_event_a_read(body), short_way=True)
        assert short.same() == plain.same(), size
        # every streamed piece of the recording was picked out of its bytes, none parsed whole
        # (but a tool call's first, empty, input delta, which makes no event)
        assert short.pieces == deltas, size


EVENTS = {
    "start": b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    "thinking": b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}\n\n',
    "tool": (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
             b'"content_block":{"type":"tool_use","id":"toolu_1","name":"look","input":{}}}\n\n'),
    "stop": b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    "end": (b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
            b'"usage":{"output_tokens":3}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'),
}
OPENING = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant",'
           b'"model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n')
TEXT = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":'

ODD_DELTAS = {
    # taken the short way: the API's layout, padded or not
    "as sent": (TEXT + b'"a"}}', True),
    "padded": (TEXT + b'"a \\"b\\""}   \t  }', True),
    "escapes": (TEXT + b'"\\u00e9\\n\\ud83d\\ude00}"}}', True),
    # every other layout: the general way
    "spaces": (b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a"}}', False),
    "no event line": (b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}', False),
    "another member after": (TEXT + b'"a","x":"y"}}', False),
    "another object after": (TEXT + b'"a"},"x":{"y":"z"}}', False),
    "blank before the brace": (TEXT + b'"a" }}', False),
    "empty piece": (TEXT + b'""}}', False),
    "not a string": (TEXT + b'1}}', False),
    "a string cut short": (TEXT + b'"a\\"}}', False),
    "two strings": (TEXT + b'"a" "b"}}', False),
    "form feed as a blank": (TEXT + b'"a"}\x0c}', False),
    "string on the next line": (TEXT + b'\ndata: "a"}}', False),
    "brace on the next line": (TEXT + b'"a"\n}}', False),
    "string on a line of its own": (TEXT + b'\n"a"}}', False),
    "another index": (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"a"}}', False),
    "another kind of delta": (b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}', False),
    "invalid UTF-8": (TEXT + b'"\xff"}}', False),
    "an error event": (b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', False),
}

FAILING = {"not a string", "a string cut short", "two strings", "form feed as a blank",
           "brace on the next line", "string on a line of its own", "another index", "invalid UTF-8", "an error event"}
"""The cases whose event ends the stream with an error (not JSON, a delta of no open block, an error event)."""


@pytest.mark.parametrize("case", list(ODD_DELTAS))
@pytest.mark.parametrize("line_end", [b"\n", b"\r\n"], ids=["LF", "CRLF"])
async def test_an_event_laid_out_any_way_gives_what_the_general_reader_gives(case: str, line_end: bytes) -> None:
    event, short_way = ODD_DELTAS[case]
    body = OPENING + EVENTS["start"] + TEXT + b'"first"}}\n\n' + event + b"\n\n" + TEXT + b'" last"}}\n\n' + EVENTS["stop"] + EVENTS["end"]
    body = body.replace(b"\n", line_end)
    plain = await read([body], short_way=False)
    assert (plain.error is None) == (case not in FAILING)
    for pieces in ([body], cut(body, 1), cut(body, 5), one_event_a_read(body)):
        short = await read(pieces, short_way=True)
        assert short.same() == plain.same()
        # the first delta always, this one only if laid out as the API does, the last if the stream went on
        assert short.pieces == 1 + short_way + (case not in FAILING)


@pytest.mark.parametrize(("opening", "delta"), [
    ("thinking", b'{"type":"thinking_delta","thinking":"hm"}'),
    ("tool", b'{"type":"input_json_delta","partial_json":"{\\"q\\": 1}"}'),
])
async def test_thinking_and_tool_input_pieces_take_the_short_way_too(opening: str, delta: bytes) -> None:
    event = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":' + delta + b"}\n\n"
    body = OPENING + EVENTS[opening] + event * 3 + EVENTS["stop"] + EVENTS["end"]
    plain = await read([body], short_way=False)
    short = await read(cut(body, 11), short_way=True)
    assert short.same() == plain.same() and short.pieces == 3
    assert plain.message.parts[0].kind == ("reasoning" if opening == "thinking" else "tool_call")


async def test_a_last_event_without_its_blank_line_and_a_body_cut_mid_event_read_as_the_general_reader_reads_them() -> None:
    body = OPENING + EVENTS["start"] + TEXT + b'"a"}}\n\n' + EVENTS["stop"] + EVENTS["end"]
    for whole in (body.rstrip(b"\n"), body[:-30], body[:len(OPENING) + 20]):
        plain = await read([whole], short_way=False)
        short = await read(cut(whole, 3), short_way=True)
        assert short.same() == plain.same()


async def test_data_that_is_not_json_is_the_same_protocol_error_either_way() -> None:
    body = OPENING + EVENTS["start"] + TEXT + b'"a"}}\n\nevent: content_block_delta\ndata: {nope\n\n'
    plain, short = await read([body], short_way=False), await read([body], short_way=True)
    assert short.same() == plain.same()
    assert plain.error is not None and "not valid JSON" in plain.error[1]


def test_the_prefix_is_the_api_s_layout_up_to_the_piece() -> None:
    data = {"type": "content_block_delta", "index": 12, "delta": {"type": "input_json_delta", "partial_json": "x"}}
    event = b"event: content_block_delta\ndata: " + orjson.dumps(data)
    assert event.startswith(delta_prefix(12, "input_json_delta", "partial_json"))
    assert event[len(delta_prefix(12, "input_json_delta", "partial_json")):] == b'"x"}}'


SECOND_START = b'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}\n\n'
SECOND_TEXT = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":'
SECOND_STOP = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'


@pytest.mark.parametrize("reads", ["one read", "start apart"])
async def test_a_read_holding_a_block_s_start_and_its_deltas_picks_every_piece(reads: str) -> None:
    """A block's start changes which deltas may be picked out: read in the same network read as its
    first deltas (and the previous block's end), each of them still takes the short way."""
    first = EVENTS["start"] + TEXT + b'"a"}  }\n\n' + TEXT + b'"b"}}\n\n' + EVENTS["stop"]
    second = SECOND_START + SECOND_TEXT + b'"c"}}\n\n' + SECOND_TEXT + b'"d"}}\n\n' + SECOND_STOP
    body = OPENING + first + second + EVENTS["end"]
    pieces = [body] if reads == "one read" else [OPENING + first, second + EVENTS["end"]]
    plain = await read([body], short_way=False)
    short = await read(pieces, short_way=True)
    assert short.same() == plain.same() and plain.error is None
    assert [part.text for part in plain.message.parts] == ["ab", "cd"]
    assert short.pieces == 4


async def test_a_delta_read_with_its_block_s_end_is_not_taken_for_a_piece_of_the_closed_block() -> None:
    """After ``content_block_stop`` in the same read, a delta laid out as the API writes them for
    the block just closed is not picked out by the prefix of the block open before the stop: it is
    parsed whole and ends the stream with the same typed error as the plain way."""
    body = OPENING + EVENTS["start"] + TEXT + b'"a"}}\n\n' + EVENTS["stop"] + TEXT + b'"late"}}\n\n' + EVENTS["end"]
    plain = await read([body], short_way=False)
    short = await read([body], short_way=True)
    assert short.same() == plain.same()
    assert plain.error is not None and short.pieces == 1
    assert [item for item in plain.items if type(item) is str] == ["a"]  # what came before the error came first
