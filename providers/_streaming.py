"""The one loop every SDK-backed provider runs: open a stream, translate it, map its errors.

``sdk_events`` opens the vendor stream, feeds each raw item to the vendor translator and yields
the neutral events; any SDK exception (opening or mid-stream) becomes the provider's typed
``ProviderError`` through ``map_error``; the vendor stream is closed whatever happens; and a
stream that ends before the translator saw the response finish is a dropped connection
(``ProviderUnavailableError``, retryable), never a silently truncated answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

from providers.errors import ProviderError, ProviderUnavailableError
from providers.events import StreamEvent

__all__ = ["sdk_events"]


async def sdk_events(
    open_stream: Callable[[], Awaitable[Any]],
    feed: Callable[[Any], Iterable[StreamEvent]],
    map_error: Callable[[BaseException], ProviderError],
    *,
    finished: Callable[[], bool],
    dropped: str,
    provider: str,
    close: bool = True,
) -> AsyncIterator[StreamEvent]:
    """``close=False`` for streams that own no connection to release (LiteLLM's wrapper)."""
    try:
        stream = await open_stream()
    except ProviderError:
        raise
    except Exception as exc:
        raise map_error(exc) from exc
    try:
        async for raw in stream:
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
