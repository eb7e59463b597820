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
"""

from __future__ import annotations

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
        return content[0].readany, content[1]()
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
