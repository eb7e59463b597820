"""Anthropic's event stream read with each streamed piece picked out of its bytes: one seam, with
the general reader's way as its fallback for every event it does not recognise.

Nearly every event of an Anthropic answer is a ``content_block_delta`` carrying the next piece of
the block being streamed (text, thinking or a tool call's input). The general reader
(``providers._sse.RawEventStream``) parses each event's ``data`` into a dict (two objects, five
keys, three strings and the index), which the translator then reads for one string.
:class:`AnthropicEventStream` reads the body the same way (``body_reader``, the same line ends and
blank lines), but an event whose bytes are exactly

    ``event: content_block_delta`` LF ``data: {"type":"content_block_delta","index":I,"delta":{"type":"T","F":`` S ``}`` blanks ``}``

up to S being its reader's ``bare_prefix`` (kept by the translator,
``providers.anthropic._Translator``: the bytes a delta of the block it would take a bare delta of
begins with, as the API writes them, no spaces), where S is one JSON string (it starts and ends
with ``"`` and orjson reads it as a non-empty ``str``) and the blanks are JSON's spaces or tabs
(the API pads every delta there), is yielded as that string alone: only S is parsed. Such an event
is valid JSON whose ``data`` is ``{"type": "content_block_delta", "index": I, "delta": {"type": T,
F: S}}``, which the translator takes as a bare delta of S anyway. Any other event (another
layout, other members, an empty piece, JSON that does not parse, ``ping``, ``error``...) is read
as the general reader reads it (an ``event`` and one ``data`` line directly, anything else by
``RawEventStream._block``; orjson; an ``error`` event raised through ``error``) and yielded as its
dict. So the translator's result is the same either way (``tests/providers/test_anthropic_sse.py``
compares both over the recordings cut into reads of every size, and over events laid out in other
ways; ``tests/host/runtime/agents/test_bare_text.py`` compares what a client sees).

Items are ``(None, data)`` pairs as ``RawEventStream(names=False)`` gives them; ``data`` is a
``str`` (a piece picked out) or the event's parsed ``data``. What it saves a chunk is in
``benchmarks/README.md`` ("Streamed chunk end to end, Anthropic: a delta's piece read out of its bytes").
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import orjson

from ._body_bytes import body_reader
from ._sse import RawEventStream

__all__ = ["AnthropicEventStream", "BarePrefix", "delta_prefix"]

_EVENT = b"event: "
_DATA = b"data: "
_EVENT_AND_DATA = b'event: content_block_delta\ndata: {"type":"content_block_delta","index":'


def delta_prefix(index: int, delta_type: str, field: str) -> bytes:
    """The bytes of a ``content_block_delta`` event of block ``index`` up to its content: the
    ``event`` line, then the ``data`` as the API writes it (no spaces) up to the string of
    ``field`` of a delta of ``delta_type``."""
    return b"%s%d,\"delta\":{\"type\":\"%s\",\"%s\":" % (_EVENT_AND_DATA, index, delta_type.encode(), field.encode())


class BarePrefix(Protocol):
    """Whoever says which pieces the reader may give as a ``str`` (the translator)."""

    bare_prefix: bytes | None
    """The prefix (``delta_prefix``) of the event whose piece may be yielded as a ``str`` now; None: none."""


class AnthropicEventStream:
    """``async for _, data in stream`` over an Anthropic streaming response (see the module
    docstring); ``close()`` releases it. ``reader.bare_prefix`` is read before each event;
    ``error(data)`` may return the exception to raise for an error event."""

    def __init__(self, response: Any, reader: BarePrefix, error: Callable[[Any], BaseException | None]) -> None:
        self.response = response
        self._reader = reader
        self._error = error

    def __aiter__(self) -> AsyncIterator[tuple[None, Any]]:
        return self._events()

    async def _events(self) -> AsyncIterator[tuple[None, Any]]:
        rest = b""
        reader, error, loads, block_of = self._reader, self._error, orjson.loads, RawEventStream._block
        next_bytes, errors = body_reader(self.response)
        with errors:
            while chunk := await next_bytes():
                if rest:
                    chunk = rest + chunk
                if chunk.partition(b"\r")[1]:  # line ends made ``\n`` (``providers._sse``)
                    keep = chunk.endswith(b"\r")
                    chunk = chunk[:-1] if keep else chunk
                    chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                    if keep:
                        chunk += b"\r"
                *blocks, rest = chunk.split(b"\n\n")
                for block in blocks:
                    prefix = reader.bare_prefix
                    if prefix is not None and block[:(length := len(prefix))] == prefix and block[-1:] == b"}":
                        # S, then ``}``, blanks and ``}``: S is what is left once those are cut
                        text = block[length:-1].rstrip(b" \t")
                        if text[-2:] == b'"}' and text[:1] == b'"':
                            try:
                                piece = loads(text[:-1])
                            except orjson.JSONDecodeError:
                                piece = None  # not one JSON string: the general way says what it is
                            if type(piece) is str and piece:
                                yield None, piece
                                continue
                    # Otherwise as ``RawEventStream`` reads it: an ``event`` line and one ``data`` line
                    # (nearly every event the API sends) without going through its lines, any other
                    # block line by line.
                    head, newline, tail = block.partition(b"\n")
                    if newline and head[:7] == _EVENT and tail[:6] == _DATA and not tail.partition(b"\n")[1]:
                        text = tail[6:]
                    else:
                        read = block_of(block)
                        if read is None:
                            continue
                        text = read[1]
                    value = loads(text)
                    if type(value) is dict and ("error" in value or value.get("type") == "error"):
                        failure = error(value)
                        if failure is not None:
                            raise failure
                    yield None, value
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        read = block_of(rest)  # a last event without its blank line
        if read is not None:
            value = loads(read[1])
            failure = error(value)
            if failure is not None:
                raise failure
            yield None, value

    async def close(self) -> None:
        await self.response.aclose()
