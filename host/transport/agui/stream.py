"""One AG-UI run's event stream, under the host's outbound budget (``host.transport.outbound``).

uvicorn hands a response's body to the socket only as fast as the client reads (flow control):
a ``POST /agui`` client that stops reading would leave the run's events piling up unseen inside
the host. So an ``AguiStream`` reads the run's events as they come (``start``: a pump task),
encodes them into its outbox, counts the characters waiting there (``backlog``) and reports them
to the same ``OutboundBudget`` the WebSocket connections report to: one client past
``[server] max_queued_bytes_per_client``, or the largest when all together pass
``max_queued_bytes``, is cut off.

``body()`` is the response body: everything waiting at once (one write per wake-up), the store
flushed first (nothing leaves the process before it is durable). The stream ends after the
run's last event.

Cut off (``cut_off``): what waits is dropped and the run's event iterator is closed, as when the
client goes away (the turn goes on for the AHP clients watching it, or is cancelled when the run
asked for that with ``cancelOnDisconnect``); the stream then ends with one ``RUN_ERROR`` (code
``tooSlow``) giving the reason and how to catch up (a run that joins the thread). A client that
reads again gets what was already in the socket's buffer, then that event. If ``CUT_OFF_GRACE``
seconds later the stream has not ended or the connection still holds bytes the client has not
read (``UNSENT_EXTENSION``), the connection is aborted (``ABORT_EXTENSION``, both from
``host.transport.http_protocol``), which frees its buffer.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable

from ag_ui.core import BaseEvent, RunErrorEvent

from host.transport.outbound import OutboundBudget

__all__ = ["AguiStream", "CUT_OFF_CODE_AGUI", "CUT_OFF_GRACE"]

logger = logging.getLogger(__name__)

CUT_OFF_CODE_AGUI = "tooSlow"
"""The ``RUN_ERROR`` code of a stream cut off for not being read."""
CUT_OFF_GRACE = 10.0
"""Seconds a cut-off client has to read the end of its stream before its connection is aborted."""


class AguiStream:
    """The outgoing side of one ``POST /agui`` response (``host.transport.outbound.Outbound``)."""

    def __init__(self, client_id: str, *, budget: OutboundBudget, encode: Callable[[BaseEvent], str],
                 flush: Callable[[], None], abort: Callable[[], None] | None = None,
                 unsent: Callable[[], int] | None = None) -> None:
        self.client_id: str | None = client_id
        self._budget = budget
        self._encode = encode
        self._flush = flush
        self._abort = abort
        self._unsent = unsent
        self._body_done = False
        self._waiting: deque[str] = deque()
        self._chars = 0
        self._wake = asyncio.Event()
        self._ended = False
        """The run's last event is in the outbox (or the stream was cut off)."""
        self._pump: asyncio.Task[None] | None = None
        self.cut_off_reason: str | None = None
        self._abort_timer: asyncio.TimerHandle | None = None

    def start(self, events: AsyncIterator[BaseEvent]) -> None:
        """Read ``events`` (the run) into the outbox from now on, whether or not the client reads."""
        self._pump = asyncio.get_running_loop().create_task(self._read(events))

    async def _read(self, events: AsyncIterator[BaseEvent]) -> None:
        try:
            async for event in events:
                self._queue(self._encode(event))
        except Exception:  # a defect: the client is told, the log has the traceback
            logger.exception("the AG-UI run of %s failed", self.client_id)
            self._queue(self._encode(RunErrorEvent(message="The host failed while running this thread; its log has "
                                                   "the details.", code="internalError")))
        finally:
            self._ended = True
            self._wake.set()

    def _queue(self, text: str) -> None:
        if self.cut_off_reason is not None:
            return
        self._waiting.append(text)
        self._chars += len(text)
        self._wake.set()
        self._budget.note(self, self._chars)

    def backlog(self) -> int:
        """Characters of encoded events waiting for the client's socket."""
        return self._chars

    def cut_off(self, code: int, reason: str) -> None:
        """The budget cut this client off: drop what waits, stop following the run, end the
        stream with a ``RUN_ERROR`` saying why; abort the connection if that is not read soon."""
        if self.cut_off_reason is not None:
            return
        self.cut_off_reason = reason
        self._waiting.clear()
        self._chars = 0
        if self._pump is not None:
            self._pump.cancel()
        message = (reason.replace("reconnect to resume", "send a run with no new message to see the thread "
                                  "and follow its turn") + " (this stream was closed)")
        self._waiting.append(self._encode(RunErrorEvent(message=message, code=CUT_OFF_CODE_AGUI)))
        self._ended = True
        self._wake.set()
        if self._abort is not None:
            self._abort_timer = asyncio.get_running_loop().call_later(CUT_OFF_GRACE, self._abort_unread)

    def _abort_unread(self) -> None:
        self._abort_timer = None
        if not self._body_done or (self._unsent is not None and self._unsent() > 0):
            assert self._abort is not None
            self._abort()

    async def body(self) -> AsyncIterator[str]:
        """The response body: what waits, in one piece per wake-up, until the stream ends. Ending
        early (the client went away) closes the run's event iterator."""
        try:
            while True:
                if not self._waiting:
                    if self._ended:
                        self._body_done = True
                        return
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                chunk = "".join(self._waiting)
                self._waiting.clear()
                self._chars = 0
                self._flush()
                yield chunk
        finally:
            self.close()

    def close(self) -> None:
        """The response is over (finished, or the client went away)."""
        self._budget.forget(self)
        if self._pump is not None and not self._pump.done():
            self._pump.cancel()
        if self._abort_timer is not None and self.cut_off_reason is None:
            self._abort_timer.cancel()  # (a cut-off client still has CUT_OFF_GRACE to read what is buffered)
            self._abort_timer = None
