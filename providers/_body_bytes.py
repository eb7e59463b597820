"""How a raw event stream reads its response's body: one speed trick, with the plain way beside it.

The plain way is httpx's ``response.aiter_bytes()``. Under the aiohttp-backed clients the
providers use (``openai.DefaultAioHttpClient``, ``anthropic.DefaultAioHttpClient``: the
``httpx_aiohttp`` transport, which the anthropic SDK vendors) every chunk then passes four async
generators, each resumed and finished once per chunk (httpx's ``aiter_bytes``, ``aiter_raw``, its
``BoundAsyncStream``, the transport's ``AiohttpResponseStream``) and aiohttp's chunk iterator,
before aiohttp's ``StreamReader`` hands it over; and each generator suspended in that chain is a
container the garbage collector's young collections walk, once per streaming session.

:func:`body_reader` reads the ``StreamReader`` itself (``readany``: the bytes that have arrived)
when the response came through that transport and its body is not content-encoded (the plain way
decodes gzip and the like; aiohttp is asked not to). Errors are mapped as the transport maps them
(its ``map_aiohttp_exceptions``: aiohttp's exceptions as httpx's, which the SDKs' error mapping
knows), and closing the response is unchanged (httpx's ``aclose``, which releases the connection
to the pool). Anything else, or a transport whose internals no longer look as expected, gets the
plain way: an upgrade can make streams slower, never wrong (``tests/providers/test_body_bytes.py``
checks that the installed versions take the fast way).

The reader itself is ``readany``'s way with fewer steps where that changes nothing
(:func:`_alone`): a streamed answer's read at a model's pace finds aiohttp's buffer holding the one
piece of bytes its wake-up brought, and ``readany`` then passes five calls more than that piece
needs (``_read_nowait``, its timer's check, ``_read_nowait_chunk``, and the protocol's
``resume_reading`` with a ``data_received(b"")`` and the transport's own ``resume_reading``: asked
at every read whether or not reading was paused), and its wait two more (``_wait``, the timer's
``with``). With the reader alone on its ``StreamReader`` (an answer's body has no other), no timer
(the SDKs' requests have no total timeout: ``TimerNoop``), reading not paused, one piece waiting
and nothing held back, the piece is taken as ``_read_nowait_chunk`` takes it, with the same
bookkeeping (size, cursor, the HTTP chunks' ends); anything else is ``readany``'s own, so flow
control (a paused protocol resumed once its buffer drained), end of body and errors stay
aiohttp's. A ``StreamReader`` without those internals is read with ``readany``.
"""

from __future__ import annotations

import collections
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["body_reader"]


def body_reader(response: Any) -> tuple[Callable[[], Awaitable[bytes]], contextlib.AbstractContextManager[Any]]:
    """``(read, errors)`` for an httpx (or httpx2) streaming ``response``: ``await read()`` gives the
    body's next bytes, ``b""`` at its end; read inside ``with errors:``, which maps the transport's
    exceptions as the plain way would have."""
    content = _aiohttp_content(response)
    if content is not None:
        return _alone(content[0]) or content[0].readany, content[1]()
    chunks = response.aiter_bytes().__aiter__()

    async def read() -> bytes:
        try:
            return await chunks.__anext__()
        except StopAsyncIteration:
            return b""

    return read, contextlib.nullcontext()


def _aiohttp_content(response: Any) -> tuple[Any, Callable[[], contextlib.AbstractContextManager[Any]]] | None:
    """aiohttp's ``StreamReader`` of ``response`` and its transport's exception mapping, or None."""
    if response.headers.get("content-encoding", "identity").lower() not in ("identity", ""):
        return None
    inner = getattr(getattr(response, "stream", None), "_stream", None)  # httpx's BoundAsyncStream wraps it
    if type(inner).__name__ != "AiohttpResponseStream":
        return None
    mapping = getattr(sys.modules.get(type(inner).__module__), "map_aiohttp_exceptions", None)
    content = getattr(getattr(inner, "_aiohttp_response", None), "content", None)
    if mapping is None or not callable(getattr(content, "readany", None)):
        return None
    return content, mapping


_INTERNALS = ("_buffer", "_buffer_offset", "_size", "_cursor", "_http_chunk_splits", "_eof", "_exception", "_waiter",
              "_loop", "_protocol", "_timer")
"""What :func:`_alone` reads of aiohttp's ``StreamReader`` (and of its protocol: ``_reading_paused``,
``_buffer_paused``, ``transport``)."""


def _alone(content: Any) -> Callable[[], Awaitable[bytes]] | None:
    """``content.readany`` with fewer steps (module docstring) for a reader alone on ``content``, an
    aiohttp ``StreamReader``; None when its internals are not what this expects."""
    try:
        from aiohttp.helpers import TimerNoop

        protocol = content._protocol
        usable = (all(hasattr(content, name) for name in _INTERNALS) and type(content._buffer) is collections.deque
                  and type(content._timer) is TimerNoop and hasattr(protocol, "_reading_paused")
                  and hasattr(protocol, "_buffer_paused") and hasattr(protocol, "transport"))
    except Exception:  # (another aiohttp: the plain reader)
        return None
    if not usable:
        return None
    buffer, readany, create_future = content._buffer, content.readany, content._loop.create_future

    async def readany_alone() -> bytes:
        if not buffer:
            # ``_wait``'s way, less its timer (none) and its check of a second reader (there is none)
            if content._eof or content._exception is not None or content._waiter is not None or protocol.transport is None:
                return await readany()
            waiter = content._waiter = create_future()
            try:
                await waiter  # (an error set on the reader is raised here, as from ``_wait``)
            finally:
                content._waiter = None
            if not buffer:  # (woken at an HTTP chunk's end, or at the body's end)
                return await readany()
        if (len(buffer) != 1 or content._buffer_offset or content._exception is not None
                or protocol._reading_paused or protocol._buffer_paused):
            return await readany()
        # ``_read_nowait_chunk``'s way for the one piece; reading is not paused: nothing to resume
        data = buffer.popleft()
        size = len(data)
        content._size -= size
        cursor = content._cursor = content._cursor + size
        splits = content._http_chunk_splits
        while splits and splits[0] < cursor:
            splits.popleft()
        return data

    return readany_alone
