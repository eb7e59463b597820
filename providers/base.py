"""The provider interface the turn loop drives.

Contract:

* ``provider.stream(request)`` is an async iterator of :data:`providers.events.StreamEvent` for
  one model call. Consume it with ``async for``; break or cancel at any time (the HTTP response is
  closed when the iterator is closed or garbage-collected; use ``contextlib.aclosing`` to close
  it promptly).
* Failures raise :class:`providers.errors.ProviderError` subclasses, before the first event or
  mid-stream. ``asyncio.CancelledError`` is never swallowed or converted.
* Providers never retry (the SDK's own retries are switched off): retry policy belongs to the
  turn loop, which reads ``err.retryable`` / ``err.retry_after``.
* ``provider.api`` names the wire API; build the message with
  ``StreamAccumulator(api=provider.api)`` so native payloads are replayed only to the same API.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the interface does not load the message and event models
    from .events import StreamEvent
    from .messages import ApiName, ModelRequest


@runtime_checkable
class Provider(Protocol):
    """Anything that can stream one model call as neutral events."""

    name: str
    """Human-facing provider name used in errors and logs, e.g. ``anthropic``."""
    api: ApiName
    """The wire API whose native payloads this provider produces and accepts."""

    def stream(self, request: ModelRequest) -> AsyncGenerator[StreamEvent, None]:
        """Start the call and yield its events (see the module docstring)."""
        ...

    async def aclose(self) -> None:
        """Release HTTP connections; the provider must not be used afterwards."""
        ...
