"""The one loop every SDK-backed provider runs: open a stream, translate it, map its errors.

``sdk_events`` opens the vendor stream, feeds each raw item to the vendor translator and yields
the neutral events; any SDK exception (opening or mid-stream) becomes the provider's typed
``ProviderError`` through ``map_error``; the vendor stream is closed whatever happens; and a
stream that ends before the translator saw the response finish is a dropped connection
(``ProviderUnavailableError``, retryable), never a silently truncated answer.

``stall_timeout`` bounds every wait: for the response to open and for each raw stream item
(keep-alive pings count: they prove the connection lives). A wait that passes it ends the call with
``ProviderStalledError`` (retryable, so the turn loop retries it like any failure before anything
streamed) instead of hanging until the SDK's own 600 s read timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar

from providers.errors import ProviderError, ProviderStalledError, ProviderUnavailableError
from providers.events import StreamEvent

__all__ = ["sdk_events"]

T = TypeVar("T")
_END = object()


async def _within(waiting: Awaitable[T], timeout: float | None, provider: str, what: str) -> T:
    if timeout is None:
        return await waiting
    try:
        # asyncio.timeout, not wait_for: wait_for wraps each wait in a new task, once per chunk.
        async with asyncio.timeout(timeout):
            return await waiting
    except (asyncio.TimeoutError, TimeoutError):
        raise ProviderStalledError(
            f"The model's provider sent nothing for {timeout:g} s while {what}; the call was stopped. "
            "Try again; if this model often thinks that long in silence, raise stall_timeout in the agent's config.",
            provider=provider,
        ) from None


async def sdk_events(
    open_stream: Callable[[], Awaitable[Any]],
    feed: Callable[[Any], Iterable[StreamEvent]],
    map_error: Callable[[BaseException], ProviderError],
    *,
    finished: Callable[[], bool],
    dropped: str,
    provider: str,
    close: bool = True,
    stall_timeout: float | None = None,
) -> AsyncIterator[StreamEvent]:
    """``close=False`` for streams that own no connection to release (LiteLLM's wrapper)."""
    try:
        stream = await _within(open_stream(), stall_timeout, provider, "waiting for its response")
    except ProviderError:
        raise
    except Exception as exc:
        raise map_error(exc) from exc
    try:
        items = aiter(stream)
        while True:
            raw = await _within(anext(items, _END), stall_timeout, provider, "streaming")
            if raw is _END:
                break
            for event in feed(raw):
                yield event
    except ProviderError:
        raise
    except Exception as exc:
        raise map_error(exc) from exc
    finally:
        if close:
            await stream.close()
    if not finished():
        raise ProviderUnavailableError(dropped, provider=provider)
