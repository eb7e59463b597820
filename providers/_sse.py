"""A lean reader for the server-sent-event streams the vendor SDKs would otherwise parse.

Why hand-written: the SDKs turn every streamed chunk into a typed model (openai's
``construct_type`` costs more than everything the host does with the chunk: ``benchmarks/provider_parsing.py``), while
the translators here only read plain dicts. So a provider asks the SDK for the *raw* HTTP response
(``providers._request_body``: the SDK still builds the request, authenticates, applies timeouts and
maps HTTP error statuses to its exceptions) and reads the body with :class:`RawEventStream`: each event's
``data`` decoded as JSON, nothing else. It follows the SSE format (WHATWG HTML §9.2): lines end in
``\\n``, ``\\r\\n`` or ``\\r``, a blank line dispatches the event, ``data``
lines of one event are joined with ``\\n``, ``:`` lines are comments, other fields are ignored
except ``event``, which is passed along.

A streamed piece picked out of its event's bytes (``bare``): nearly every event of a streamed
answer carries the next piece of one string (Anthropic's ``content_block_delta``: two objects, five
keys, three strings and the index parsed for the one string the translator reads). A stream given
a ``bare`` reader (the translator: :class:`BarePrefix`) gives an event whose bytes are exactly its
``bare_prefix`` (the event's bytes up to where that string begins, as the server writes them: the
``event`` line, ``\n``, the ``data`` line up to the member's value, inside an object nested one
deep), then S, then ``}``, JSON's blanks (space, tab) and ``}``, where S is one JSON string (it
starts and ends with ``"`` and orjson reads it as a non-empty ``str``), as ``(None, S decoded)``:
only S is parsed. Such an event is valid JSON whose ``data`` holds S at the place the prefix names,
which the reader takes as that piece anyway (its contract: it sets ``bare_prefix`` only so). Any
other event is read the general way, as a dict. The prefix is the reader's at the moment: it may
change with each event that is not such a piece, so ``split`` ends its list after every event it
gives whole, the reader takes them, and ``resume`` gives the rest of the same read (its ``held``
blocks) with the prefix read again (``providers._streaming.sdk_events`` does so; ``async for`` too).
Without ``bare`` (the fallback, and every other API) every event is parsed whole.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

import orjson

from ._body_bytes import body_reader

__all__ = ["BarePrefix", "RawEventStream"]

_DATA = b"data: "
_EVENT = b"event: "


def _piece(event: bytes, length: int, end: int) -> str | None:
    """The piece S of an ``event`` (its bytes, after a prefix of ``length`` bytes) that is S, ``}``,
    JSON's blanks (space, tab), ``}`` and ``end - 1`` bytes more (its blank line, if read with it);
    None when it is not so laid out, S is not one JSON string or it is empty (then the general way
    says what the event is)."""
    text = event[length:-end].rstrip(b" \t")  # S and the first ``}``, once the blanks are cut
    if text[-2:] != b'"}' or text[:1] != b'"':
        return None
    try:
        piece = orjson.loads(text[:-1])
    except orjson.JSONDecodeError:
        return None
    return piece if type(piece) is str and piece else None


class BarePrefix(Protocol):
    """A reader that takes some events' pieces bare (a translator; see the module docstring)."""

    bare_prefix: bytes | None
    """The bytes of an event whose piece it takes as a ``str`` now, up to the piece; None: none."""


class RawEventStream:
    """``async for event_name, data in stream`` over an httpx streaming response; ``close()`` releases it.

    ``done`` names the ``data`` text that ends the stream (OpenAI's ``[DONE]``); ``error(data)`` may
    return an exception to raise for an error payload sent inside the stream. It is asked only about
    the ``data`` that can be one, a JSON object with an ``error`` key (OpenAI's ``{"error": ...}``)
    or a ``type`` of ``"error"`` (Anthropic's error event): not a call per streamed chunk.
    ``names=False`` gives None for every event's name, which is then not decoded (a reader of the
    ``data`` alone: the translators, whose payloads name their own type). ``bare``: the reader
    whose ``bare_prefix`` says which events' pieces come as ``(None, str)`` (module docstring).
    """

    def __init__(self, response: Any, *, done: str | None = None,
                 error: Callable[[Any], BaseException | None] | None = None, names: bool = True,
                 bare: BarePrefix | None = None) -> None:
        self.response = response
        self._names = names
        self.bare = bare
        self.held: Iterator[bytes] | None = None
        """With ``bare``: the whole events of the last read not yet given (``resume`` gives them),
        after ``split`` or ``resume`` ended its list at an event given whole; None: none."""
        self._done = done.encode() if done is not None else None
        self._done_length = len(self._done) if self._done is not None else 0
        self._error = error
        self._rest = b""
        """The bytes read after the last whole event (its start), waiting for the rest."""
        self.ended = False
        """Whether the stream's end was read: ``done``'s text, or an error payload (then raised by
        ``ended_with`` once the events before it were taken)."""
        self._failure: BaseException | None = None

    def __aiter__(self) -> AsyncIterator[tuple[str | None, Any]]:
        return self._events()

    def reading(self) -> tuple[Callable[[], Awaitable[bytes]], AbstractContextManager[Any]]:
        """``(read, errors)``: the body's bytes as ``providers._body_bytes.body_reader`` reads them,
        for a reader that splits them itself (``split``, then ``last`` at the body's end): what
        ``async for`` does, without an async generator between the bytes and the reader
        (``providers._streaming.sdk_events``, which reads every streamed chunk so)."""
        return body_reader(self.response)  # aiohttp's own reader where it can

    async def _events(self) -> AsyncIterator[tuple[str | None, Any]]:
        next_bytes, errors = self.reading()
        split = self.split
        with errors:
            while chunk := await next_bytes():
                for item in split(chunk):
                    yield item
                while self.held is not None:  # (``bare``) the rest of the read, the prefix read again
                    for item in self.resume():
                        yield item
                if self.ended:
                    self.ended_with()
                    return
        for item in self.last():
            yield item

    def ended_with(self) -> None:
        """After ``split`` said the stream ``ended``: raise the error that ended it (an error payload,
        a ``data`` that is not JSON), if one did."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def split(self, chunk: bytes, held: Iterator[bytes] | None = None) -> list[tuple[str | None, Any]]:
        """The events whose end ``chunk`` (the body's next bytes) brings, in order: each
        ``(event name, data decoded)``. Once the stream's end is read (``done``, or an error payload,
        whose exception ``ended_with`` raises after the events before it) ``ended`` is True and
        nothing more is read. A ``data`` that is not JSON ends it too: orjson's error is raised
        here when no event came before it in the list, else by ``ended_with`` after them.
        With ``bare``, the list ends after each event given whole, the rest of the read ``held``
        for ``resume`` (see the module docstring); ``held`` is that rest, given back by ``resume``."""
        # Bytes are split here rather than through httpx's aiter_text/aiter_lines: no generator
        # layer (the bytes themselves read as ``providers._body_bytes`` says), and orjson reads
        # the ``data`` bytes without a decode. Splitting bytes is safe: ``\n`` and ``\r`` never
        # occur inside a UTF-8 sequence. Line ends made ``\n``, a blank line is ``\n\n``: the
        # body is cut into whole events at those, and an event of one ``data`` line (after one
        # ``event`` line, or none), which is what these APIs send, is read without going through
        # its lines; any other is read line by line (``_block``).
        bare = self.bare
        prefix, length = None, 0
        if bare is not None and (prefix := bare.bare_prefix) is not None:
            length = len(prefix)
            if held is None and not self._rest and not self.ended and chunk[-3:] == b"}\n\n" and chunk[:length] == prefix:
                # Nearly every read of a streamed answer at a model's pace: one whole event, a piece
                # (S, ``}``, blanks, ``}``, the blank line; S, one JSON string, holds no line end,
                # so the read is that one event and nothing else), given without splitting the read.
                piece = _piece(chunk, length, 3)
                if piece is not None:
                    return [(None, piece)]
        found: list[tuple[str | None, Any]] = []
        if self.ended:
            return found
        blocks: Iterator[bytes] | list[bytes]
        if held is None:
            rest = self._rest
            if rest:
                chunk = rest + chunk
            # ``partition``, not ``in`` or ``find``: Python 3.11's ``bytes in bytes`` first tries the
            # operand as an integer (a TypeError raised and cleared, ~1,800 instructions), and
            # ``find`` parses its arguments the old way (~600); ``partition`` takes one argument
            # and, where the separator is absent (nearly always), copies nothing.
            if chunk.partition(b"\r")[1]:
                # A ``\r`` at the very end may be the first half of ``\r\n``: keep it for the next read.
                keep = chunk.endswith(b"\r")
                chunk = chunk[:-1] if keep else chunk
                chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                if keep:
                    chunk += b"\r"
            *blocks, self._rest = chunk.split(b"\n\n")
            # (an iterator, so that the list can end at any event and the rest be held; no rest
            # to hold after a read's only event)
            holding = bare is not None and len(blocks) > 1
            if holding:
                blocks = iter(blocks)
        else:
            blocks, holding = held, True
        done, done_length, error, names, loads = self._done, self._done_length, self._error, self._names, orjson.loads
        for block in blocks:
            if prefix is not None and block[:length] == prefix and block[-1:] == b"}":
                piece = _piece(block, length, 1)  # a piece picked out (module docstring)
                if piece is not None:
                    found.append((None, piece))
                    continue
            event: str | None = None
            head, newline, tail = block.partition(b"\n")
            if not newline and head[:6] == _DATA:  # nearly every event of OpenAI's
                text = head[6:]
            elif newline and head[:7] == _EVENT and tail[:6] == _DATA and not tail.partition(b"\n")[1]:
                # nearly every event of Anthropic's and Responses'
                if names:
                    event = head[7:].decode("utf-8", errors="replace")
                text = tail[6:]
            else:
                read = self._block(block)
                if read is None:
                    continue
                event, text = read
                if not names:
                    event = None
            if done is not None and text[:done_length] == done:  # (``startswith`` parses a tuple of arguments)
                self.ended = True
                return found
            # ``_decode``, inlined: this runs for every event. Only what can be an error payload is
            # shown to ``error`` (see the class). (``in`` and a subscript, not ``get``: no method
            # call for a chunk, which has no ``type`` in Chat Completions and a ``type`` other than
            # ``error`` in the others.) An event that ends the stream (an error payload, a ``data``
            # that is not JSON, ``error`` failing) is raised after the events before it.
            try:
                value = loads(text)
                failure = error(value) if error is not None and type(value) is dict and (
                    "error" in value or ("type" in value and value["type"] == "error")) else None
            except Exception as exc:
                failure = exc
            if failure is not None:
                if not found:
                    raise failure
                self.ended, self._failure = True, failure
                return found
            found.append((event, value))
            if holding:
                # The reader takes this event before the next is read: it may change the prefix.
                self.held = blocks  # type: ignore[assignment]  # an iterator when holding
                return found
        return found

    def resume(self) -> list[tuple[str | None, Any]]:
        """With ``bare``, after ``split`` (or ``resume``) ended its list with ``held`` blocks and the
        reader took its events: the events of the rest of that read, as ``split`` gives them."""
        held, self.held = self.held, None
        return self.split(b"", held) if held is not None else []

    def last(self) -> list[tuple[str | None, Any]]:
        """At the body's end: the last event, had it no blank line after it (none once ``ended``)."""
        if self.ended:
            return []
        rest, self._rest = self._rest, b""
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        read = self._block(rest)  # a last event without its blank line
        if read is None or (self._done is not None and read[1].startswith(self._done)):
            return []
        return [(read[0] if self._names else None, self._decode(read[1]))]

    @staticmethod
    def _block(block: bytes) -> tuple[str | None, bytes] | None:
        """One event's lines (no blank line among them but a leading one): its ``event`` name and
        its ``data`` lines joined with ``\n``; None when it has no ``data`` (comments, empty)."""
        event: str | None = None
        data: list[bytes] = []
        for line in block.split(b"\n"):
            if not line or line[0] == 58:  # empty (a blank line before any data), or b":", a comment
                continue
            name, _, value = line.partition(b":")
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"event":
                event = value.decode("utf-8", errors="replace")
        if not data:
            return None
        return event, data[0] if len(data) == 1 else b"\n".join(data)

    def _decode(self, text: bytes) -> Any:
        value = orjson.loads(text)
        # As ``split`` does: only what can be an error payload is shown to ``error`` (see the class).
        if self._error is not None and type(value) is dict and ("error" in value or value.get("type") == "error"):
            failure = self._error(value)
            if failure is not None:
                raise failure
        return value

    async def close(self) -> None:
        await self.response.aclose()
