"""Who runs an owner group (a session and its chats): leases in a JetStream key-value bucket.

A lease is the key ``token(group)`` of the bucket, its value ``{"holder": <process id>, "until":
<wall-clock ms>}``. Taking one is *create-if-absent* (the key has no value) or, once ``until`` has
passed, *update-if-revision* on the expired value: two processes racing for the same group both
send the revision they read and the bucket lets exactly one through. The holder renews before
``until`` (update-if-revision on its own last revision, every ``ttl / 3``); a renewal that finds
another revision has lost the lease. Releasing deletes the key at the holder's revision.

A lease alone does not fence: a holder that was paused past ``until`` does not know it lost the
lease until it tries to renew. What makes a lost lease harmless is the log's fence (every append
expects the group's last sequence, and a new holder writes a marker first, ``jetstream_log``); the
lease decides who *should* write, the fence guarantees that no one else *can*.

**Noticing a dead holder.** A holder killed with SIGKILL leaves its leases in the bucket, never
renewed again; no event says so. :meth:`Leases.watch` keeps a table of every lease of the bucket
(``{group: Seen}``, from the bucket's own change stream: no read per group) and :func:`lapsed`
says, from that table and the clock alone, which groups another process held and let lapse:
those a live process takes over (``host.cluster.ordered_log``). A lease *released* (deleted: a
clean stop) is not in the table: its groups are taken by whoever next appends to them.

``until`` is read on the wall clock of each process: on one machine they agree; across machines
their clocks must agree to well within ``ttl`` (NTP), or a takeover comes early or late by the skew.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from host.cluster.consumer import HEARTBEAT, InOrder
from host.cluster.subjects import token, untoken

__all__ = ["DEFAULT_TTL", "Lease", "Leases", "Seen", "lapsed"]

_WRONG_LAST_SEQUENCE = 10071
"""The server's error code for a write whose expected last revision is not the last."""

_KV_OPERATION = "KV-Operation"
_GONE = frozenset({"DEL", "PURGE"})
"""A key's change that removes it (the header's values of a delete and a purge)."""
_MARKER_REASON = "Nats-Marker-Reason"
_EXPIRED = frozenset({"MaxAge", "Purge", "Remove"})
"""A marker the server places (nats-server 2.11+) when a key expires or is removed: gone too."""

DEFAULT_TTL = 6.0
"""Seconds a lease lasts unrenewed: a killed holder's groups are taken over within this (plus the
time to notice), inside the issue's 10 s."""


@dataclass(slots=True)
class Lease:
    """A lease this process holds."""

    group: str
    revision: int
    """The bucket revision of the value this process last wrote."""
    until: float
    """When it lapses unless renewed (wall-clock seconds)."""


@dataclass(frozen=True, slots=True)
class Seen:
    """A lease as the bucket last showed it."""

    holder: str
    until: float
    """When it lapses unless renewed (wall-clock seconds)."""


def lapsed(seen: Mapping[str, Seen], now: float, me: str) -> list[str]:
    """The groups of ``seen`` whose lease another process than ``me`` held and let lapse by ``now``
    (pure): a holder that stops renewing is dead or cut off, and its groups are free to take."""
    return [group for group, lease in seen.items() if lease.holder != me and lease.until <= now]


class Leases:
    """The leases of one bucket, taken and renewed as ``holder``."""

    def __init__(self, bucket: KeyValue, holder: str, ttl: float = DEFAULT_TTL,
                 clock: Callable[[], float] = time.time, stream: tuple[JetStreamContext, str] | None = None) -> None:
        self.bucket = bucket
        self.holder = holder
        self.ttl = ttl
        self._clock = clock
        self.stream = stream
        """The JetStream context and the bucket's name, for :meth:`watch` to read the bucket's
        stream itself; None: through nats-py's key watcher."""

    def _value(self) -> tuple[bytes, float]:
        until = self._clock() + self.ttl
        return json.dumps({"holder": self.holder, "until": int(until * 1000)}).encode(), until

    async def holder_of(self, group: str) -> str | None:
        """The process holding ``group``'s lease now, ``None`` when no lease is in force."""
        try:
            entry = await self.bucket.get(token(group))
        except KeyNotFoundError:
            return None
        holder, until = _read(entry.value)
        return holder if until > self._clock() else None

    async def acquire(self, group: str) -> Lease | str:
        """Take ``group``'s lease (or renew it when this process holds it): the :class:`Lease`, or
        the id of the process that holds it now."""
        key = token(group)
        value, until = self._value()
        try:
            entry = await self.bucket.get(key)
        except KeyNotFoundError:
            try:
                return Lease(group, await self.bucket.create(key, value), until)
            except KeyWrongLastSequenceError:
                return await self.holder_of(group) or "another process"
        holder, current_until = _read(entry.value)
        if holder != self.holder and current_until > self._clock():
            return holder
        try:
            return Lease(group, await self.bucket.update(key, value, last=entry.revision), until)
        except KeyWrongLastSequenceError:
            return await self.holder_of(group) or "another process"

    async def renew(self, lease: Lease) -> bool:
        """Extend ``lease``; False when it was lost (someone else's revision is there)."""
        value, until = self._value()
        try:
            lease.revision = await self.bucket.update(token(lease.group), value, last=lease.revision)
        except (KeyWrongLastSequenceError, KeyNotFoundError):
            return False
        lease.until = until
        return True

    async def release(self, lease: Lease) -> None:
        """Give ``lease`` up at once (a clean stop), so another process need not wait for it to lapse."""
        try:
            await self.bucket.delete(token(lease.group), last=lease.revision)
        except (KeyWrongLastSequenceError, KeyNotFoundError):
            pass  # already someone else's
        except APIError as error:  # nats-py's delete says a wrong revision as a bare API error
            if error.err_code != _WRONG_LAST_SEQUENCE:
                raise
            # someone else's now, or a renewal whose answer was cut off by the stop: left to lapse


    def now(self) -> float:
        """The clock leases are read on (wall-clock seconds)."""
        return self._clock()

    async def watch(self, seen: dict[str, Seen],
                    shown: Callable[[Seen], None] | None = None) -> Callable[[], Awaitable[None]]:
        """Keep ``seen`` (``{group: Seen}``) equal to the bucket's leases from now on: filled with
        every lease in force or lapsed once this returns, then changed as the bucket changes (a
        released lease leaves it); ``shown(lease)`` (when given) is called with each lease put in
        it. Returns the coroutine function that stops watching.

        Read from the bucket's stream (``KV_<bucket>``, a key's changes on ``$KV.<bucket>.<key>``)
        through ``host.cluster.consumer.InOrder`` when the leases know it (``stream``): no
        flow-control poll four times a second, no queue and task between the messages and
        ``seen``. Otherwise (``stream`` None: the plain way) through nats-py's own key watcher."""
        if self.stream is None:
            return await self._watch_plain(seen, shown)
        js, name = self.stream
        prefix = f"$KV.{name}."
        cut = len(prefix)
        first = asyncio.get_running_loop().create_future()

        def take(message: Msg, seq: int, pending: int) -> None:
            group = untoken(message.subject[cut:])
            if group is not None:
                headers = message.headers
                gone = headers is not None and (headers.get(_KV_OPERATION) in _GONE or headers.get(_MARKER_REASON) in _EXPIRED)
                _note(seen, shown, group, None if gone else message.data)
            if not pending and not first.done():
                first.set_result(None)

        reader = await InOrder.open(js, f"KV_{name}", f"{prefix}>", take, last_per_subject=True, heartbeat=HEARTBEAT)
        try:
            subscription = reader.subscription
            if subscription is not None:
                info = await subscription.consumer_info()
                if not info.num_pending and not subscription.delivered and not first.done():
                    first.set_result(None)  # (an empty bucket: no message says the leases are all in)
            await asyncio.wait_for(asyncio.shield(first), 10)
        except TimeoutError:
            pass  # (as before: watched on, filled as the messages come)
        except BaseException:
            await reader.stop()
            raise
        return reader.stop

    async def _watch_plain(self, seen: dict[str, Seen], shown: Callable[[Seen], None] | None) -> Callable[[], Awaitable[None]]:
        """``watch`` through nats-py's key watcher (an ordered consumer, a queue and a task)."""
        watcher = await self.bucket.watchall()
        first = asyncio.get_running_loop().create_future()

        async def take() -> None:
            async for entry in watcher:
                if entry is None:  # the bucket's leases as they were are all in
                    if not first.done():
                        first.set_result(None)
                    continue
                group = untoken(entry.key)
                if group is None:
                    continue
                _note(seen, shown, group, None if entry.operation in ("DEL", "PURGE") else entry.value)

        task = asyncio.get_running_loop().create_task(take())
        await asyncio.wait([first, task], timeout=10, return_when=asyncio.FIRST_COMPLETED)

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await watcher.stop()
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

        return stop



def _note(seen: dict[str, Seen], shown: Callable[[Seen], None] | None, group: str, value: bytes | None) -> None:
    """A lease's entry as the watch reads it, either way: ``value`` its bytes, or None once it is
    deleted, purged or expired (the group forgotten)."""
    if value is None:
        seen.pop(group, None)
        return
    holder, until = _read(value)
    lease = seen[group] = Seen(holder, until)
    if shown is not None:
        shown(lease)

def _read(value: bytes | None) -> tuple[str, float]:
    try:
        body = json.loads(value or b"{}")
        return str(body["holder"]), float(body["until"]) / 1000
    except (ValueError, KeyError, TypeError):
        return "", 0.0  # unreadable: treated as expired

