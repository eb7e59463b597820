"""The store: the host's one mutable object.

It holds every channel's state, stamps accepted actions with the next host-wide ``serverSeq``,
runs the pure reducers (``ahp.state``), appends to the journal, keeps a bounded replay buffer for
``reconnect`` and fans each envelope out to the channel's subscribers. It holds no business
logic: which actions are allowed, and what happens because of them, is decided elsewhere
(``host.service``, ``host.turns``), the latter through *observers* called after each change.

Invariants:

* ``seq`` only grows, across restarts too (it is recovered from the journal).
* An envelope is journaled before anyone sees it, and serialised exactly once; every subscriber
  gets the same text. Journal writes are committed in groups: ``flush`` runs at the end of the
  event-loop tick, and transports call it before sending any frame (see ``host.journal``).
* ``subscribe`` captures the snapshot and registers the subscriber in one synchronous step, so a
  subscriber sees every envelope with ``serverSeq > fromSeq`` and none at or below it.
* States are never mutated in place (reducers return new objects), so a snapshot is just a
  reference to the current state.
* The replay buffer holds a contiguous run of the newest envelopes; a gap it cannot cover makes
  ``replay`` return None and the caller falls back to snapshots.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Protocol

from host.journal import Journal
from host.rpc import encode
from ahp.state import reduce

__all__ = ["Store", "Subscriber", "Observer", "RejectionObserver", "ROOT"]

logger = logging.getLogger(__name__)

ROOT = "ahp-root://"

Observer = Callable[[str, dict[str, Any], dict[str, Any], dict[str, Any]], None]
"""``observer(channel, before, after, envelope)``, called after every accepted action."""

RejectionObserver = Callable[[str, dict[str, Any], str], None]
"""``observer(channel, action, client_id)``, called after a client's action was refused: a refusal
can still mean something (an owner declining its running tool call too late)."""


class Subscriber(Protocol):
    """Anything that can take a ready-to-send text frame without blocking."""

    def send(self, text: str) -> None: ...


@dataclass
class _Channel:
    kind: str
    state: dict[str, Any]
    subscribers: set[Subscriber] = field(default_factory=set)


class Store:
    def __init__(
        self,
        root_state: dict[str, Any],
        *,
        clock: Callable[[], int],
        journal: Journal | None = None,
        replay_capacity: int = 10_000,
        snapshot_every: int = 5_000,
    ) -> None:
        self.seq = 0
        self._clock = clock
        self._journal = journal
        self._flush_scheduled = False
        self._snapshot_every = snapshot_every
        self._replay: deque[tuple[int, str, dict[str, Any]]] = deque(maxlen=replay_capacity)
        self._channels: dict[str, _Channel] = {ROOT: _Channel("root", root_state)}
        self.observers: list[Observer] = []
        self.rejection_observers: list[RejectionObserver] = []
        """Called after a client's action was refused (state and seq unchanged)."""

    # -- reading -------------------------------------------------------------------------------

    def state(self, channel: str) -> dict[str, Any] | None:
        entry = self._channels.get(channel)
        return entry.state if entry else None

    def kind(self, channel: str) -> str | None:
        entry = self._channels.get(channel)
        return entry.kind if entry else None

    def channels(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for uri, entry in self._channels.items():
            if entry.kind == kind:
                yield uri, entry.state

    def __contains__(self, channel: str) -> bool:
        return channel in self._channels

    # -- changing ------------------------------------------------------------------------------

    def create(self, channel: str, kind: str, state: dict[str, Any]) -> None:
        """Add a channel (a new session, terminal...). Creating takes no serverSeq."""
        if channel in self._channels:
            raise ValueError(f"channel {channel} already exists")
        if self._journal is not None:
            self._journal.append_created(channel, state, kind)
            self._schedule_flush()
        self._channels[channel] = _Channel(kind, state)
        self._maybe_snapshot()

    def remove(self, channel: str) -> None:
        """Drop a channel and all its subscriptions."""
        if channel == ROOT or channel not in self._channels:
            return
        if self._journal is not None:
            self._journal.append_removed(channel)
            self._schedule_flush()
        del self._channels[channel]

    def dispatch(self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None = None) -> dict[str, Any]:
        """Apply an accepted action, journal it and send it to every subscriber of ``channel``."""
        entry = self._channels[channel]
        now = self._clock()
        before = entry.state
        after = reduce(entry.kind, before, action, now)
        self.seq += 1
        envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": self.seq}
        if origin is not None:
            envelope["origin"] = origin
        envelope_json = encode(envelope)
        if self._journal is not None:
            self._journal.append_action(channel, self.seq, now, envelope_json)
            self._schedule_flush()
        entry.state = after
        self._replay.append((self.seq, channel, envelope))
        frame = '{"jsonrpc":"2.0","method":"action","params":' + envelope_json + "}"
        for subscriber in tuple(entry.subscribers):
            subscriber.send(frame)
        for observer in tuple(self.observers):
            try:
                observer(channel, before, after, envelope)
            except Exception:
                logger.exception("store observer failed on %s", action.get("type"))
        self._maybe_snapshot()
        return envelope

    def reject(
        self, channel: str, action: Any, origin: dict[str, Any], reason: str, to: Subscriber
    ) -> None:
        """Tell only the dispatcher that its action was refused (state and seq unchanged)."""
        envelope = {
            "channel": channel,
            "action": action,
            "serverSeq": self.seq,
            "origin": origin,
            "rejectionReason": reason,
        }
        to.send(encode({"jsonrpc": "2.0", "method": "action", "params": envelope}))
        if isinstance(action, dict):
            for observer in tuple(self.rejection_observers):
                try:
                    observer(channel, action, str(origin.get("clientId") or ""))
                except Exception:
                    logger.exception("store rejection observer failed on %s", action.get("type"))

    def notify(self, channel: str, method: str, params: dict[str, Any]) -> None:
        """Send a protocol notification (never journaled or replayed) to a channel's subscribers."""
        entry = self._channels.get(channel)
        if entry is None or not entry.subscribers:
            return
        frame = encode({"jsonrpc": "2.0", "method": method, "params": params})
        for subscriber in tuple(entry.subscribers):
            subscriber.send(frame)

    # -- subscriptions -------------------------------------------------------------------------

    def subscribe(self, channel: str, subscriber: Subscriber) -> dict[str, Any]:
        entry = self._channels[channel]
        entry.subscribers.add(subscriber)
        return {"resource": channel, "state": entry.state, "fromSeq": self.seq}

    def unsubscribe(self, channel: str, subscriber: Subscriber) -> None:
        entry = self._channels.get(channel)
        if entry is not None:
            entry.subscribers.discard(subscriber)

    def unsubscribe_all(self, subscriber: Subscriber) -> None:
        for entry in self._channels.values():
            entry.subscribers.discard(subscriber)

    def has_subscribers(self, channel: str) -> bool:
        entry = self._channels.get(channel)
        return entry is not None and bool(entry.subscribers)

    def is_subscribed(self, channel: str, subscriber: Subscriber) -> bool:
        entry = self._channels.get(channel)
        return entry is not None and subscriber in entry.subscribers

    def replay(self, since: int, channels: Iterable[str]) -> list[dict[str, Any]] | None:
        """Envelopes on ``channels`` with serverSeq > since, or None when the buffer has a gap."""
        if since > self.seq:
            return None
        if since < self.seq:
            if not self._replay or self._replay[0][0] > since + 1:
                return None
        wanted = set(channels)
        return [envelope for seq, channel, envelope in self._replay if seq > since and channel in wanted]

    # -- durability ----------------------------------------------------------------------------

    def recover(self) -> None:
        """Rebuild every channel from the journal (newest snapshot + later entries)."""
        if self._journal is None:
            return
        snapshot = self._journal.latest_snapshot()
        upto = 0
        if snapshot is not None:
            upto = snapshot.upto
            self.seq = snapshot.seq
            for uri, saved in snapshot.channels.items():
                self._channels[uri] = _Channel(saved["kind"], saved["state"])
        for item in self._journal.entries_after(upto):
            if item.kind == "created":
                body = json.loads(item.body or "{}")
                self._channels[item.channel] = _Channel(body["kind"], body["state"])
            elif item.kind == "removed":
                self._channels.pop(item.channel, None)
            elif item.kind == "action":
                envelope = json.loads(item.body or "{}")
                entry = self._channels.get(item.channel)
                if entry is not None:
                    entry.state = reduce(entry.kind, entry.state, envelope["action"], item.now or 0)
                self.seq = max(self.seq, item.seq or 0)
        for item in self._journal.recent_actions(self._replay.maxlen or 0):
            self._replay.append((item.seq or 0, item.channel, json.loads(item.body or "{}")))
        self._trim_replay_to_contiguous()

    def snapshot_now(self) -> None:
        if self._journal is None:
            return
        channels = {uri: {"kind": entry.kind, "state": entry.state} for uri, entry in self._channels.items()}
        self._journal.write_snapshot(self.seq, channels, keep_actions=self._replay.maxlen or 0)

    def close(self) -> None:
        if self._journal is not None:
            self.snapshot_now()
            self._journal.close()
            self._journal = None

    def flush(self) -> None:
        """Make every journaled entry durable (cheap when there is nothing to commit)."""
        self._flush_scheduled = False
        if self._journal is not None and self._journal.dirty:
            self._journal.flush()

    def _schedule_flush(self) -> None:
        if self._flush_scheduled:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no event loop (tools, tests): commit at once
            return
        self._flush_scheduled = True
        loop.call_soon(self.flush)

    def _maybe_snapshot(self) -> None:
        if self._journal is not None and self._journal.entries_since_snapshot >= self._snapshot_every:
            self.snapshot_now()

    def _trim_replay_to_contiguous(self) -> None:
        # Keep only the newest run of consecutive seqs ending at self.seq.
        kept: list[tuple[int, str, dict[str, Any]]] = []
        expected = self.seq
        for item in reversed(self._replay):
            if item[0] != expected:
                break
            kept.append(item)
            expected -= 1
        self._replay.clear()
        self._replay.extend(reversed(kept))
