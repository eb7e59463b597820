"""The provider interface the turn loop drives.

Contract:

* ``provider.stream(request)`` is a :class:`providers.stream.ModelStream`: an async iterator of
  :data:`providers.events.StreamEvent` for one model call that answers, with ``message()``, for
  the assistant message the events built. Consume it with ``async for``; break or cancel at any
  time (the HTTP response is closed when the stream is closed or garbage-collected; use
  ``contextlib.aclosing`` to close it promptly).
* Failures raise :class:`providers.errors.ProviderError` subclasses, before the first event or
  mid-stream. ``asyncio.CancelledError`` is never swallowed or converted.
* Providers never retry (the SDK's own retries are switched off): retry policy belongs to the
  turn loop, which reads ``err.retryable`` / ``err.retry_after``.
* ``provider.api`` names the wire API; the stream's message carries it, so native payloads are
  replayed only to the same API. A provider that yields plain events (a wrapper, a test's fake)
  is taken through ``ModelStream.of(stream, api=provider.api)``, which folds them once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # annotations only: the interface does not load the message and event models
    from .messages import ApiName, ModelRequest
    from .stream import ModelStream


@runtime_checkable
class Provider(Protocol):
    """Anything that can stream one model call as neutral events."""

    name: str
    """Human-facing provider name used in errors and logs, e.g. ``anthropic``."""
    api: ApiName
    """The wire API whose native payloads this provider produces and accepts."""

    def stream(self, request: ModelRequest) -> ModelStream:
        """The call's events and the message they build (see the module docstring)."""
        ...

    async def aclose(self) -> None:
        """Release HTTP connections; the provider must not be used afterwards."""
        ...
