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
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

__all__ = ["RawEventStream"]

_DATA = b"data: "


class RawEventStream:
    """``async for event_name, data in stream`` over an httpx streaming response; ``close()`` releases it.

    ``done`` names the ``data`` text that ends the stream (OpenAI's ``[DONE]``); ``error(data)`` may
    return an exception to raise for an error payload sent inside the stream. It is asked only about
    the ``data`` that can be one, a JSON object with an ``error`` key (OpenAI's ``{"error": ...}``)
    or a ``type`` of ``"error"`` (Anthropic's error event): not a call per streamed chunk.
    """

    def __init__(self, response: Any, *, done: str | None = None,
                 error: Callable[[Any], BaseException | None] | None = None) -> None:
        self.response = response
        self._done = done.encode() if done is not None else None
        self._error = error

    def __aiter__(self) -> AsyncIterator[tuple[str | None, Any]]:
        return self._events()

    async def _events(self) -> AsyncIterator[tuple[str | None, Any]]:
        # Bytes are split into lines here rather than through httpx's aiter_text/aiter_lines: one
        # generator layer instead of four, and orjson reads the ``data`` bytes without a decode.
        # Splitting bytes is safe: ``\n`` and ``\r`` never occur inside a UTF-8 sequence.
        event: str | None = None
        data: list[bytes] = []
        rest = b""
        done, error, loads = self._done, self._error, orjson.loads
        async for chunk in self.response.aiter_bytes():
            if rest:
                chunk = rest + chunk
            if b"\r" in chunk:
                # A ``\r`` at the very end may be the first half of ``\r\n``: keep it for the next read.
                keep = chunk.endswith(b"\r")
                chunk = chunk[:-1] if keep else chunk
                chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
                if keep:
                    chunk += b"\r"
            *lines, rest = chunk.split(b"\n")
            for line in lines:
                if line:
                    if line[:6] == _DATA:  # what nearly every line is: no partition for it
                        data.append(line[6:])
                        continue
                    if line[0] == 58:  # b":", a comment
                        continue
                    name, _, value = line.partition(b":")
                    if value[:1] == b" ":
                        value = value[1:]
                    if name == b"data":
                        data.append(value)
                    elif name == b"event":
                        event = value.decode("utf-8", errors="replace")
                    continue
                if data:
                    text = data[0] if len(data) == 1 else b"\n".join(data)
                    if done is not None and text.startswith(done):
                        return
                    value = loads(text)  # ``_decode``, inlined: this runs for every event
                    # Only what can be an error payload is shown to ``error`` (see the class).
                    if error is not None and type(value) is dict and ("error" in value or value.get("type") == "error"):
                        failure = error(value)
                        if failure is not None:
                            raise failure
                    yield event, value
                event, data = None, []
        if rest.endswith(b"\r"):
            rest = rest[:-1]
        if rest:  # a last line without its line ending
            name, _, value = rest.partition(b":")
            if name == b"data":
                data.append(value[1:] if value[:1] == b" " else value)
        if data:  # a last event without its blank line
            text = b"\n".join(data)
            if self._done is None or not text.startswith(self._done):
                yield event, self._decode(text)

    def _decode(self, text: bytes) -> Any:
        value = orjson.loads(text)
        if self._error is not None:
            failure = self._error(value)
            if failure is not None:
                raise failure
        return value

    async def close(self) -> None:
        await self.response.aclose()
