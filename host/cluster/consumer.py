"""Reading a JetStream stream in order, with no timer per consumer: :class:`InOrder`.

What the cluster's log reads in stream order (``host.cluster.jetstream_log``: the follower, a
reconnect's replay, a group's records; ``host.cluster.leases``: the leases bucket's changes) it
reads through one push consumer each, made here on nats-py's public API only
(``JetStreamContext.subscribe`` with a consumer configuration, ``Msg.metadata``,
``PushSubscription.delivered``, ``unsubscribe``), not through nats-py's *ordered consumer*. That one
asks the server for flow control and then polls, in a task of its own, every 0.25 s whether a
flow-control reply is due, for as long as the consumer lives, messages or not; nats-py has no way
to turn it off. A cluster process follows the log and the leases bucket for its whole life: 8 loop
turns a second, idle or streaming (``benchmarks/README.md``, cluster mode's third round).

**The same guarantees as the ordered consumer.** Messages are handed to ``take`` one at a time, in
stream order, none twice, none of those the filter matches skipped:

* the consumer is an ephemeral push consumer, acknowledgements none, kept in memory on one replica
  (what nats-py's ordered consumer makes), without flow control; the client's queue of it is not
  bounded (pending limits 0), so the client never drops one of its messages (the server, should the
  connection fall behind by its whole buffer, closes the connection: a reconnect, below);
* every message's consumer sequence (its metadata: 1, 2, 3, ... per consumer) is checked against
  the one expected: a gap (a message lost on the way) makes the consumer again from the stream
  sequence after the last message handed over (``remakes`` counts it), and what the old one still
  brings is dropped;
* given ``heartbeat`` (seconds), the server sends an idle heartbeat whenever nothing else came for
  that long, and a consumer from which nothing at all came for two heartbeats (the server lost it)
  is made again the same way: one timer every ``2 * heartbeat`` instead of four a second;
* a NATS server restarted or a connection cut is the caller's, as with the ordered consumer before
  (``ClusterLog._resubscribe`` makes the follower and the lease watch again from what they handed
  over once the client is connected again); a gap or a silence meanwhile is caught as above.

``take(message, seq, pending)`` gets the message, its stream sequence and how many messages the
consumer had still to deliver after it (the server's count when it sent it); it may return an
awaitable, waited for before the next message is handed over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

__all__ = ["HEARTBEAT", "InOrder"]

logger = logging.getLogger(__name__)

HEARTBEAT = 5.0
"""Seconds of silence after which the server sends a long-lived consumer's idle heartbeat (nats-py's
ordered consumer's default); nothing for two of them makes the consumer again."""

Take = Callable[[Msg, int, int], "Awaitable[None] | None"]


class InOrder:
    """The messages of ``stream`` on ``subject`` (or on ``filter_subjects``, filters that do not
    overlap) from sequence ``start`` on, or, with ``last_per_subject``, the last message of each
    subject and every one after, handed to ``take`` in order (see the module docstring). Made by
    :meth:`open`; :meth:`stop` ends it."""

    def __init__(self, js: JetStreamContext, stream: str, subject: str, take: Take, *, start: int = 1,
                 filter_subjects: list[str] | None = None, last_per_subject: bool = False,
                 heartbeat: float | None = None) -> None:
        self.js = js
        self.stream = stream
        self.subject = subject
        self.take = take
        self.filter_subjects = filter_subjects
        self.last_per_subject = last_per_subject
        self.heartbeat = heartbeat
        self.last = start - 1
        """The stream sequence of the last message handed over (``start - 1`` before the first)."""
        self.remakes = 0
        """How many times the consumer was made again after a gap or a silence."""
        self._expected = 1
        """The consumer sequence the next message of the consumer of now must have."""
        self._generation = 0
        self._subscription: JetStreamContext.PushSubscription | None = None
        self._remaking: asyncio.Task[None] | None = None
        self._watchdog: asyncio.Task[None] | None = None
        self._stopped = False

    @classmethod
    async def open(cls, js: JetStreamContext, stream: str, subject: str, take: Take, **options: object) -> InOrder:
        """Make the consumer and start handing its messages over (``options``: the constructor's)."""
        reader = cls(js, stream, subject, take, **options)  # type: ignore[arg-type]
        await reader._subscribe()
        if reader.heartbeat:
            reader._watchdog = asyncio.get_running_loop().create_task(reader._watch())
        return reader

    @property
    def subscription(self) -> JetStreamContext.PushSubscription | None:
        """The subscription of now (a new one each time the consumer is made again)."""
        return self._subscription

    async def _subscribe(self) -> None:
        self._generation += 1
        generation = self._generation
        self._expected = 1
        first = self.last_per_subject and self.last == 0 and not self.remakes
        config = api.ConsumerConfig(
            deliver_policy=api.DeliverPolicy.LAST_PER_SUBJECT if first else api.DeliverPolicy.BY_START_SEQUENCE,
            opt_start_seq=None if first else self.last + 1, ack_policy=api.AckPolicy.NONE, flow_control=False,
            idle_heartbeat=self.heartbeat or None, mem_storage=True, num_replicas=1,
            filter_subjects=list(self.filter_subjects) if self.filter_subjects else None)

        async def handed(message: Msg) -> None:
            if generation != self._generation:
                return  # a consumer made again since: its messages come from the new one
            metadata = message.metadata
            sequence = metadata.sequence
            if sequence.consumer != self._expected:
                self._again(f"message {sequence.consumer} of the consumer came where {self._expected} was expected")
                return
            self._expected = sequence.consumer + 1
            seq = sequence.stream
            self.last = seq
            result = self.take(message, seq, metadata.num_pending)
            if result is not None:
                await result

        self._subscription = await self.js.subscribe(self.subject, stream=self.stream, cb=handed, config=config,
                                                     pending_msgs_limit=0, pending_bytes_limit=0)

    def _again(self, why: str) -> None:
        """Make the consumer again from the message after the last one handed over (in a task of its
        own: not inside the subscription's, which its unsubscribing ends)."""
        if self._stopped or (self._remaking is not None and not self._remaking.done()):
            return
        self._generation += 1  # nothing more of the consumer of now is handed over
        logger.debug("%s: reading %s again from #%d", why, self.subject, self.last + 1)
        self._remaking = asyncio.get_running_loop().create_task(self._remake())

    async def _remake(self) -> None:
        self.remakes += 1
        old, self._subscription = self._subscription, None
        if old is not None:
            with contextlib.suppress(Exception):
                await old.unsubscribe()
        while not self._stopped:
            try:
                await self._subscribe()
                return
            except Exception as error:  # (NATS away: tried again; a reconnect makes the caller's again too)
                logger.debug("making the consumer of %s again failed: %s", self.subject, error)
                await asyncio.sleep(0.5)

    async def _watch(self) -> None:
        """Every ``2 * heartbeat``: a consumer from which nothing came (not even a heartbeat) since
        the last look is made again."""
        assert self.heartbeat
        seen: tuple[object, int] = (None, -1)
        while not self._stopped:
            await asyncio.sleep(2 * self.heartbeat)
            subscription = self._subscription
            if subscription is None:
                continue
            now = (subscription, subscription.delivered)
            if now == seen:
                self._again("no message nor heartbeat came for two heartbeats")
                seen = (None, -1)
            else:
                seen = now

    async def stop(self) -> None:
        """Stop handing messages over and remove the consumer's subscription."""
        self._stopped = True
        self._generation += 1
        for task in (self._watchdog, self._remaking):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        subscription, self._subscription = self._subscription, None
        if subscription is not None:
            with contextlib.suppress(Exception):
                await subscription.unsubscribe()
