"""A lean reader for the server-sent-event streams the vendor SDKs would otherwise parse.

Why hand-written: the SDKs turn every streamed chunk into a typed model (openai's
``construct_type`` costs about 100 µs a chunk, more than everything the host does with it), while
the translators here only read plain dicts. So a provider asks the SDK for the *raw* HTTP response
(``with_raw_response``: the SDK still builds the request, authenticates, applies timeouts and maps
HTTP error statuses to its exceptions) and reads the body with ``sse_data``: each event's ``data``
decoded as JSON, nothing else. It follows the SSE format (WHATWG HTML §9.2): lines end in
``\\n``, ``\\r\\n`` or ``\\r`` (httpx splits them), a blank line dispatches the event, ``data``
lines of one event are joined with ``\\n``, ``:`` lines are comments, other fields are ignored
except ``event``, which is passed along.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson

__all__ = ["RawEventStream"]


class RawEventStream:
    """``async for event_name, data in stream`` over an httpx streaming response; ``close()`` releases it.

    ``done`` names the ``data`` text that ends the stream (OpenAI's ``[DONE]``); ``error(data)`` may
    return an exception to raise for an error payload sent inside the stream.
    """

    def __init__(self, response: Any, *, done: str | None = None,
                 error: Callable[[Any], BaseException | None] | None = None) -> None:
        self.response = response
        self._done = done
        self._error = error

    def __aiter__(self) -> AsyncIterator[tuple[str | None, Any]]:
        return self._events()

    async def _events(self) -> AsyncIterator[tuple[str | None, Any]]:
        event: str | None = None
        data: list[str] = []
        async for line in self.response.aiter_lines():
            if line:
                if line[0] == ":":
                    continue
                name, _, value = line.partition(":")
                if value[:1] == " ":
                    value = value[1:]
                if name == "data":
                    data.append(value)
                elif name == "event":
                    event = value
                continue
            if data:
                text = data[0] if len(data) == 1 else "\n".join(data)
                if self._done is not None and text.startswith(self._done):
                    return
                yield event, self._decode(text)
            event, data = None, []
        if data:  # a last event without its blank line
            text = "\n".join(data)
            if self._done is None or not text.startswith(self._done):
                yield event, self._decode(text)

    def _decode(self, text: str) -> Any:
        value = orjson.loads(text)
        if self._error is not None:
            failure = self._error(value)
            if failure is not None:
                raise failure
        return value

    async def close(self) -> None:
        await self.response.aclose()
