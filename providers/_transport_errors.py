"""Recognise a dropped connection, whichever HTTP stack the SDK runs on (httpx, httpx2, aiohttp).

The SDKs only wrap transport failures raised while *opening* a request; a connection that dies
mid-stream surfaces as the raw ``httpx``/``httpx2`` exception from the body iterator. Under the
aiohttp-backed clients every aiohttp error is first translated to an httpx one, and the
``httpx-aiohttp`` transport turns a refused connection into ``httpx.ConnectTimeout``; so whether a
"timeout" really was one is decided from the aiohttp error it was raised from
(:func:`really_timed_out`).
"""

from __future__ import annotations

import sys


def is_transport_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a network-level failure (reset, truncated body, timeout)."""
    import httpx
    import httpx2

    return isinstance(exc, httpx.TransportError | httpx2.TransportError)


def really_timed_out(exc: BaseException) -> bool:
    """False when the chain of causes of an SDK timeout holds an aiohttp connection error that is
    not a timeout (connection refused, unknown host): the server could not be reached at all."""
    aiohttp = sys.modules.get("aiohttp")
    if aiohttp is None:
        return True
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, aiohttp.ClientConnectionError):
            return isinstance(cause, TimeoutError)
        cause = cause.__cause__ or cause.__context__
    return True
