"""What the client reports as it arrives: host notifications, in order.

``Notification`` is one host notification (an ``action`` envelope or a protocol
notification such as ``root/sessionAdded``); ``EventStream`` is an async iterator over a
per-consumer queue. Invariants: every consumer sees every notification that arrived after
it subscribed, in arrival order; a stream ends (``StopAsyncIteration``) when the client is
closed on purpose and raises the connection's error when the connection is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from client.errors import AhpTimeout

__all__ = ["EventStream", "Notification"]


@dataclass(frozen=True)
class Notification:
    """One notification from the host, as received."""

    method: str
    """JSON-RPC method, e.g. ``action`` or ``root/sessionAdded``."""
    params: dict[str, Any]
    """The params object verbatim (for ``action``: the flat ActionEnvelope)."""
    replayed: bool = False
    """True for envelopes delivered inside a ``reconnect`` replay rather than live."""

    @property
    def channel(self) -> str | None:
        """The routing channel every AHP notification carries."""
        return self.params.get("channel")

    @property
    def action(self) -> dict[str, Any] | None:
        """For ``action`` notifications, the action payload; otherwise None."""
        return self.params.get("action") if self.method == "action" else None


# A queue item of None marks the end of the stream; ``failure()`` then says why.
EventQueue = asyncio.Queue["Notification | None"]


class EventStream:
    """Async iterator over notifications; subscribes on construction, not on first ``anext``."""

    def __init__(
        self,
        queue: EventQueue,
        failure: Callable[[], BaseException | None],
        release: Callable[[EventQueue], None],
    ) -> None:
        self._queue = queue
        self._failure = failure
        self._release = release
        self._done = False

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Notification:
        if self._done:
            raise StopAsyncIteration
        item = await self._queue.get()
        if item is None:
            self.close()
            error = self._failure()
            if error is not None:
                raise error
            raise StopAsyncIteration
        return item

    async def next(self, timeout: float = 10.0) -> Notification:
        """The next notification, or ``AhpTimeout`` after ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except TimeoutError:
            raise AhpTimeout(f"no notification arrived within {timeout:g} s") from None

    def close(self) -> None:
        """Stop receiving; the client forgets this stream's queue."""
        if not self._done:
            self._done = True
            self._release(self._queue)

    async def aclose(self) -> None:
        """Async-generator style alias of ``close``."""
        self.close()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
