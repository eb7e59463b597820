"""The store: the host's one mutable object.

It holds every channel's state, stamps accepted actions with the next host-wide ``serverSeq``,
runs the pure reducers of the internal model (``ahp.state``: AHP 0.9.0 shapes; each channel's
reducer is bound by the kind given to ``create``), appends to the journal, keeps a bounded replay buffer for
``reconnect`` and fans each envelope out to the channel's subscribers. It holds no business
logic: which actions are allowed, and what happens because of them, is decided elsewhere
(``host.service``, ``host.runtime.turns``), the latter through *observers* called after each change.

Invariants:

* ``seq`` only grows, across restarts too (it is recovered from the journal).
* An envelope is journaled before anyone sees it, and serialised exactly once (``action_frame``);
  every subscriber that takes the store's own shapes gets the same text. Every frame the store
  sends is built by ``ahp.jsonrpc``: ``action_frame`` for envelopes (rejections and echoes too),
  ``notification`` for notifications. A subscriber of another
  protocol version brings a ``Translator`` (its connection's dialect, ``host.transport.dialects``):
  subscribers are grouped by translator, each group's translator sees each envelope and
  notification once, and what it returns is serialised once for the whole group (not at all when
  it returns the envelope unchanged, or ``None``: that group is not sent it). ``replace`` is the
  one change that reaches no subscriber (start-up only). Journal writes are committed in groups: ``flush`` runs
  ``FLUSH_DELAY`` after the first unflushed append (at once past ``FLUSH_ROWS`` rows), and
  transports wait for it before sending any frame (``when_durable``, or ``flush`` before a write),
  so a frame never leaves before its action is durable.
* Streamed tokens (``chat/delta``, ``chat/reasoning``, ``chat/toolCallDelta``) reach
  ``observers`` and ``token_observers``; everything else reaches ``observers`` and
  ``change_observers`` (those that never act on a streamed token).
* ``subscribe`` captures the snapshot and registers the subscriber in one synchronous step, so a
  subscriber sees every envelope with ``serverSeq > fromSeq`` and none at or below it.
* States are never mutated in place (reducers return new objects), so a snapshot is just a
  reference to the current state.
* Streamed text costs O(1) per token: consecutive joinable appends to one target
  (``ahp.state.appends.TextRun``, the one definition of a run, which the journal holds too) are
  kept as a list of strings in the channel and reduced, as one joined append, when the state is next read (``state``, ``channels``, ``subscribe``, snapshots, an
  entry in ``observers``, any other action on the channel). Whoever reads gets exactly the dicts
  and plain strings the reducers would have produced action by action; ``active_turn_id`` answers
  the per-token "is my turn still running" without that. ``observers`` make each token pay for
  that read, so the host's own services use ``change_observers`` and ``token_observers``.

  Why here and not in the values: a rope or ``str`` subclass in the state would have to be
  understood by every reader (orjson, the journal, tools, clients' tests comparing with plain
  JSON), while a run held by the one mutable object is invisible outside it, and the reducers stay
  the single definition of every state.
* The replay buffer holds a contiguous run of the newest envelopes, at most ``replay_capacity`` of
  them and ``replay_chars`` characters of their JSON (the newest always); a gap it cannot cover
  makes ``replay`` return None and the caller falls back to snapshots. The journal keeps the same
  window across restarts.
* The journal stays bounded on disk: a snapshot is taken after ``snapshot_every`` entries or
  ``snapshot_chars`` characters journaled (the store says when and which channels changed; the
  journal plans and writes what of them: ``Journal.plan``, ``encode_plans``, ``write_planned``),
  and after each commit the WAL's size decides a
  checkpoint (``_check_wal``: a worker thread past ``WAL_CHECKPOINT_BYTES``, this thread past
  ``WAL_LIMIT_BYTES``).
* **Older turns** (AHP ``turnsNextCursor``, ``fetchTurns``, ``chat/turnsLoaded``). With a journal
  and ``recent_turns`` > 0, a chat's state holds its newest ``recent_turns`` completed turns and
  ``turnsNextCursor``; the older ones are not in memory. They stay where the journal's snapshots
  keep every chat turn by turn (one row or more per turn, ``host.state.turn_pages``): every snapshot
  lists their rows again, so they are never pruned, and ``turns`` / ``load_older`` read them back.
  A subscriber holds exactly the state it was given plus what it was sent, and no action takes
  turns away from the front, so turns leave a state (``_trim``) only when nobody subscribes to the
  chat: when its last subscriber leaves, after a snapshot, and at recovery; and only turns whose
  rows the last snapshot wrote (``Journal.turn_rows``; never while a snapshot's plans are out). While clients watch a
  chat its state grows with new and loaded turns as theirs do. Turns come back only by
  ``chat/turnsLoaded`` (``load_older``: ``fetchTurns``, and before a truncation at an older turn),
  which every subscriber sees, so every subscriber converges. After a trim, a ``reconnect``
  replay from before it is refused (the client would hold turns the state lacks): the client
  gets a snapshot. Recovery reads whole snapshots (every turn) and applies later entries to them,
  then trims: the reducers give the same newest turns on a longer list.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from ahp.jsonrpc import action_frame, notification
from ahp.protocol import builders
from ahp.state import reduce as _reduce_internal
from ahp.state.appends import RUN_ACTION_TYPES, TEXT_APPENDS, AppendingState, expand
from host.state.journal import (
    WAL_CHECKPOINT_BYTES,
    WAL_LIMIT_BYTES,
    Journal,
    SnapshotPieces,
    SnapshotPlan,
    encode_plans,
)
from host.state.turn_pages import split_turns, turn_of, turns_cursor

__all__ = ["Change", "Store", "Subscriber", "Translator", "Observer", "RejectionObserver", "TokenObserver", "ROOT", "STREAMED",
           "TEXT_APPENDS", "action_frame"]

logger = logging.getLogger(__name__)

ROOT = "ahp-root://"

Observer = Callable[[str, dict[str, Any], dict[str, Any], dict[str, Any]], None]
"""``observer(channel, before, after, envelope)``, called after every accepted action."""

RejectionObserver = Callable[[str, dict[str, Any], str], None]
"""``observer(channel, action, client_id)``, called after a client's action was refused: a refusal
can still mean something (an owner declining its running tool call too late)."""

TokenObserver = Callable[[str, dict[str, Any]], None]
"""``observer(channel, envelope)``, called after each streamed token (``STREAMED``), without the
states: building them for every token would cost a copy of the streamed text each time."""

STREAMED = RUN_ACTION_TYPES
"""Streamed-token actions (text appends and tool-call input): shown to ``observers`` and
``token_observers``, never to ``change_observers``; held as runs in the channel's state."""

FLUSH_DELAY = 0.002
"""Seconds an appended journal entry may wait for its commit when no frame forces one sooner."""

FLUSH_ROWS = 1_000
"""Pending journal rows past which the store commits at once."""

MIN_COMMIT_INTERVAL = 0.001
"""Seconds between two commits made for frames waiting to leave (``when_durable``)."""

REPLAY_CHARS = 4_000_000
"""Most characters of envelopes the replay buffer (and the journal's replay window) holds, besides
its count, by default (``server.replay_buffer_chars``): a terminal printing megabytes must not make
reconnect replay, or the journal, hold them."""

SNAPSHOT_CHARS = 8_000_000
"""Characters journaled since the last snapshot past which the next one is taken, besides
``snapshot_every`` entries, by default (``server.snapshot_every_chars``): what the journal holds
beyond its states stays under this plus ``REPLAY_CHARS``, however large the actions."""


class Subscriber(Protocol):
    """Anything that can take a ready-to-send text frame without blocking. One with a
    ``translator`` attribute that is not None gets frames in that translator's shapes. One with
    a ``channel_removed(uri)`` method is told when a channel it subscribes to is removed (so that
    it lets go of what it keeps for that subscription)."""

    def send(self, text: str) -> None: ...


@dataclass(frozen=True)
class Change:
    """What a translator may read about one accepted action: the channel's states around it
    (``None`` unless the translator's ``wants_states`` asked for them) and the store, for the
    other channels it needs (a 0.2.0 session is a session channel and its default chat)."""

    before: dict[str, Any] | None
    after: dict[str, Any] | None
    store: Store


class Translator(Protocol):
    """Turns the store's envelopes and notifications into the shapes of a group of subscribers
    (a protocol version other than the store's own): the very object it was given to send it as
    is (the frame already built is reused), a new one (or a list of them, sent in order) to send
    instead, None to send nothing. Called once per envelope per channel for the whole group.
    ``wants_states(kind, action)`` says whether it needs the states around the action (reading
    them costs a reduction of a pending text run: translators say no for streamed tokens)."""

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool: ...

    def envelope(self, kind: str, envelope: dict[str, Any], change: Change) -> Any: ...

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Store) -> dict[str, Any] | None: ...


def reduce(kind: str, state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The internal reducers as the host runs them, exactly as a client's mirror runs them (so a
    session channel's ``status`` is what a subscriber computes; the session list's status, which
    follows the chats, is ``host.service``'s ``SessionSummary``)."""
    return _reduce_internal(kind, state, action, now)


def _translator(subscriber: Subscriber) -> Translator | None:
    return getattr(subscriber, "translator", None)


class _Channel(AppendingState):
    """One channel's state (runs of text appends held back, ``ahp.state.appends``) and who
    subscribes to it."""

    __slots__ = ("subscribers", "translated")

    def __init__(self, kind: str, state: dict[str, Any]) -> None:
        super().__init__(kind, state, reduce)
        self.subscribers: set[Subscriber] = set()
        """Subscribers that take the store's own shapes (the shared frame)."""
        self.translated: dict[Translator, set[Subscriber]] = {}
        """Subscribers of other shapes, grouped by their translator."""


def _drop(entry: _Channel, subscriber: Subscriber) -> bool:
    """Forget ``subscriber``; whether it was one."""
    found = subscriber in entry.subscribers
    entry.subscribers.discard(subscriber)
    for translator, group in tuple(entry.translated.items()):
        found = found or subscriber in group
        group.discard(subscriber)
        if not group:
            del entry.translated[translator]
    return found


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("writing a snapshot failed; the journal keeps every entry until one succeeds",
                     exc_info=task.exception())


class Store:
    def __init__(
        self,
        root_state: dict[str, Any],
        *,
        clock: Callable[[], int],
        journal: Journal | None = None,
        replay_capacity: int = 10_000,
        snapshot_every: int = 5_000,
        recent_turns: int = 0,
        replay_chars: int = REPLAY_CHARS,
        snapshot_chars: int = SNAPSHOT_CHARS,
    ) -> None:
        self.seq = 0
        self._recent_turns = recent_turns if journal is not None else 0
        """Completed turns a chat nobody watches keeps in its state (0: all); see "Older turns"."""
        self._older: dict[str, list[tuple[Any, list[int]]]] = {}
        """Per chat: its turns older than its state's, oldest first, as (turn id, part ids)."""
        self._trimmed: dict[str, int] = {}
        """Per chat: the serverSeq when its state last lost older turns (``replay`` cannot cover it)."""
        self._snapshotting = False
        """A snapshot's plans are out: part ids may not move from states to ``_older`` meanwhile."""
        self._clock = clock
        self._journal = journal
        self._flush_timer: asyncio.TimerHandle | None = None
        self._last_commit = 0.0
        self._on_commit: list[Callable[[], None]] = []
        self._snapshot_every = snapshot_every
        self._snapshot_chars = snapshot_chars
        self._replay: deque[tuple[int, str, dict[str, Any], int]] = deque(maxlen=replay_capacity)
        """``(serverSeq, channel, envelope, characters of its JSON)``, oldest first."""
        self._replay_chars = replay_chars
        self._replay_size = 0
        """Characters the replay buffer holds."""
        self._checkpoint_task: asyncio.Future[None] | None = None
        self._commits_held = False
        """A checkpoint's last pass runs in a worker: the store's own commits wait (``_flush_soon``)."""
        self._channels: dict[str, _Channel] = {ROOT: _Channel("root", root_state)}
        self._changed: set[str] = {ROOT}
        """Channels whose state changed since the last snapshot (only these are written again)."""
        self._removed: set[str] = set()
        """Channels removed since the last snapshot."""
        self._snapshot_task: asyncio.Task[None] | None = None
        self.observers: list[Observer] = []
        """Called after every accepted action (each streamed token then costs a read of the state)."""
        self.change_observers: list[Observer] = []
        """Called after every accepted action except streamed tokens (``STREAMED``)."""
        self.token_observers: list[TokenObserver] = []
        """Called after each streamed token (``STREAMED``) only, without states."""
        self.rejection_observers: list[RejectionObserver] = []
        """Called after a client's action was refused (state and seq unchanged)."""
        self._unread = Change(None, None, self)
        """What translators get when none wanted the states (every streamed token): one shared
        object, as a ``Change`` is immutable."""

    # -- reading -------------------------------------------------------------------------------

    def state(self, channel: str) -> dict[str, Any] | None:
        entry = self._channels.get(channel)
        return entry.state if entry else None

    def active_turn_id(self, channel: str) -> Any:
        """The id of the channel's active turn, or None; cheap on every streamed token (it does
        not reduce a pending text run, which never changes the active turn)."""
        entry = self._channels.get(channel)
        turn = entry.shape.get("activeTurn") if entry else None
        return turn.get("id") if isinstance(turn, dict) else None

    def kind(self, channel: str) -> str | None:
        entry = self._channels.get(channel)
        return entry.kind if entry else None

    def channels(self, kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
        for uri, entry in self._channels.items():
            if entry.kind == kind:
                yield uri, entry.state

    def __contains__(self, channel: str) -> bool:
        return channel in self._channels

    # -- older turns ---------------------------------------------------------------------------

    @property
    def recent_turns(self) -> int:
        """Completed turns a chat nobody watches keeps in its state, and the size of a page of
        older ones (0: every turn stays in the state)."""
        return self._recent_turns

    def older_turn_count(self, chat: str) -> int:
        """How many of a chat's completed turns are older than its state holds."""
        return len(self._older.get(chat, ()))

    def turn_ids(self, chat: str) -> list[Any]:
        """Every completed turn id of a chat, oldest first: its older turns' and its state's."""
        window = (self.state(chat) or {}).get("turns") or ()
        return [turn_id for turn_id, _ in self._older.get(chat, ())] + [
            turn.get("id") if isinstance(turn, dict) else None for turn in window]

    def turns(self, chat: str, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """A chat's completed turns ``[start:end]``, counted over all of them: the older ones read
        back from the journal, the rest from its state. For what needs the whole conversation (a
        provider's history, a fork, an AHP 0.2.0 view); a client of a newer version pages in."""
        older = self._older.get(chat, [])
        window = (self.state(chat) or {}).get("turns") or []
        start, end, _ = slice(start, end).indices(len(older) + len(window))
        out = self._read_older(chat, older[start:end]) if start < len(older) else []
        out.extend(window[max(0, start - len(older)):max(0, end - len(older))])
        return out

    def load_older(self, chat: str, start: int) -> dict[str, Any] | None:
        """Bring a chat's older turns from position ``start`` on back into its state with one
        ``chat/turnsLoaded``, which every subscriber sees (AHP: the host loads turns so before it
        answers ``fetchTurns``, and before it applies an action naming a turn its state lacks).
        Its envelope; None when no older turn is at or after ``start``."""
        older = self._older.get(chat)
        start = max(0, start)
        if not older or start >= len(older):
            return None
        page, rest = older[start:], older[:start]
        turns = self._read_older(chat, page)
        if rest:
            self._older[chat] = rest
        else:
            del self._older[chat]
        action = builders.chat_turns_loaded(turns=turns, turns_next_cursor=turns_cursor(page[0][0]) if rest else None)
        envelope = self.dispatch(chat, action)
        # The loaded turns head the state as the very objects read, in the same rows: a snapshot
        # keeps those rows rather than writing the turns again.
        if self._journal is not None:
            written_turns, written_ids = self._journal.turn_rows(chat)
            loaded_ids: list[list[int] | None] = [ids for _, ids in page]
            self._journal.note_turn_rows(chat, [*turns, *written_turns], [*loaded_ids, *written_ids])
        return envelope

    def _read_older(self, chat: str, entries: list[tuple[Any, list[int]]]) -> list[dict[str, Any]]:
        if not entries or self._journal is None:
            return []
        texts = iter(self._journal.read_parts(chat, [part for _, parts in entries for part in parts]))
        return [turn_of([next(texts) for _ in parts]) for _, parts in entries]

    def _trim(self, chat: str) -> None:
        """Move a chat's oldest completed turns out of its state, down to ``recent_turns``, when
        nobody subscribes to it (a subscriber holds the state it was given: see "Older turns").
        Only turns whose rows the last snapshot wrote move (they are read back from there), and
        never while a snapshot's plans are out. Silent, as nobody holds the state: a ``reconnect``
        from before it gets a snapshot instead of a replay."""
        entry = self._channels.get(chat)
        if (self._recent_turns <= 0 or self._journal is None or self._snapshotting or entry is None
                or entry.kind != "chat" or entry.subscribers or entry.translated):
            return
        state = entry.state
        turns = state.get("turns")
        if not isinstance(turns, list) or len(turns) <= self._recent_turns:
            return
        written_turns, written_ids = self._journal.turn_rows(chat)
        excess = len(turns) - self._recent_turns
        moved = 0
        while moved < min(excess, len(written_turns)) and turns[moved] is written_turns[moved] and isinstance(turns[moved], dict):
            moved += 1
        unwritten = moved == len(written_turns) or turns[moved] is not written_turns[moved]
        if excess - moved >= self._recent_turns and unwritten:
            # A page or more of turns without rows of their own yet: write them soon, then move them.
            self._changed.add(chat)
            self._snapshot_soon()
        if not moved:
            return
        self._older.setdefault(chat, []).extend((turns[index].get("id"), written_ids[index]) for index in range(moved))
        self._journal.note_turn_rows(chat, written_turns[moved:], list(written_ids[moved:]))
        entry.state = {**state, "turns": turns[moved:], "turnsNextCursor": turns_cursor(turns[moved].get("id"))}
        self._changed.add(chat)
        self._trimmed[chat] = self.seq

    def _before_apply(self, channel: str, action: dict[str, Any]) -> None:
        """What an action on a chat with older turns needs first: a truncation at an older turn
        loads the turns from there on (so it reduces against them); one of every turn drops them;
        resuming the last turn loads the one before it if the state holds no other (AHP 0.2.0
        shows a resume as a truncation at that turn)."""
        action_type = action.get("type")
        if action_type == "chat/turnResume":
            if len(self._channels[channel].shape.get("turns") or ()) < 2:
                self.load_older(channel, len(self._older[channel]) - 1)
            return
        if action_type != "chat/truncated":
            return
        turn_id = action.get("turnId")
        if turn_id is None:
            del self._older[channel]
            return
        for position, (older_id, _) in enumerate(self._older[channel]):
            if older_id == turn_id:
                self.load_older(channel, position)
                return

    # -- changing ------------------------------------------------------------------------------

    def create(self, channel: str, kind: str, state: dict[str, Any]) -> None:
        """Add a channel (a new session, terminal...). Creating takes no serverSeq."""
        if channel in self._channels:
            raise ValueError(f"channel {channel} already exists")
        if self._journal is not None:
            self._journal.append_created(channel, state, kind)
            self._schedule_flush()
        self._channels[channel] = _Channel(kind, state)
        self._changed.add(channel)
        self._removed.discard(channel)
        self._maybe_snapshot()

    def replace(self, channel: str, state: dict[str, Any]) -> None:
        """Swap a channel's whole state outside the action stream, journaled like ``create`` and
        without a serverSeq. Start-up only (before any client subscribes: nobody is told), for a
        change no action can express, e.g. a new root config schema after an upgrade."""
        entry = self._channels[channel]
        if entry.subscribers or entry.translated:
            raise RuntimeError(f"replace({channel}) while clients subscribe to it")
        if self._journal is not None:
            self._journal.append_created(channel, state, entry.kind)
            self._schedule_flush()
        self._channels[channel] = _Channel(entry.kind, state)
        self._changed.add(channel)
        self._older.pop(channel, None)  # the new state is whole

    def remove(self, channel: str) -> None:
        """Drop a channel and all its subscriptions."""
        if channel == ROOT or channel not in self._channels:
            return
        if self._journal is not None:
            self._journal.append_removed(channel)
            self._schedule_flush()
        entry = self._channels.pop(channel)
        self._changed.discard(channel)
        self._removed.add(channel)
        for subscriber in {*entry.subscribers, *(s for group in entry.translated.values() for s in group)}:
            removed = getattr(subscriber, "channel_removed", None)
            if removed is not None:
                removed(channel)
        self._older.pop(channel, None)
        self._trimmed.pop(channel, None)

    def dispatch(self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None = None) -> dict[str, Any]:
        """Apply an accepted action, journal it and send it to every subscriber of ``channel``."""
        entry = self._channels[channel]
        if channel in self._older:
            self._before_apply(channel, action)
        now = self._clock()
        streamed = action.get("type") in STREAMED
        observers = tuple(self.observers) if streamed else (*self.observers, *self.change_observers)
        translated = entry.translated
        wants_states = False
        if translated:
            kind = entry.kind
            for translator in tuple(translated):
                if translator.wants_states(kind, action):
                    wants_states = True
                    break
        # A streamed token stays in the channel's run unless an observer wants the states now.
        before = entry.state if observers or wants_states else None
        changed = entry.apply(action, now)
        self.seq += 1
        envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": self.seq}
        if origin is not None:
            envelope["origin"] = origin
        envelope_json, frame = action_frame(envelope)
        if self._journal is not None:
            self._journal.append_action(channel, self.seq, now, envelope_json, action if origin is None else None)
            self._schedule_flush()
        if changed:
            self._changed.add(channel)
        self._remember(self.seq, channel, envelope, len(envelope_json))
        for subscriber in tuple(entry.subscribers):
            subscriber.send(frame)
        after = entry.state if observers or wants_states else None
        if translated:
            change = self._unread if before is None else Change(before, after, self)
            self._send_translated(entry, envelope, frame, change)
        if observers:
            assert before is not None and after is not None  # both read above whenever there are observers
            for observer in observers:
                try:
                    observer(channel, before, after, envelope)
                except Exception:
                    logger.exception("store observer failed on %s", action.get("type"))
        if streamed:
            for token_observer in tuple(self.token_observers):
                try:
                    token_observer(channel, envelope)
                except Exception:
                    logger.exception("store token observer failed on %s", action.get("type"))
        self._maybe_snapshot()
        return envelope

    def reject(
        self, channel: str, action: Any, origin: dict[str, Any], reason: str, to: Subscriber,
        internal: list[tuple[str, Any]] | None = None,
    ) -> None:
        """Tell only the dispatcher that its action was refused (state and seq unchanged). The
        envelope carries the action as the client sent it; ``internal`` is what it is in the
        store's model (when the client's version differs), for the rejection observers."""
        envelope = {
            "channel": channel,
            "action": action,
            "serverSeq": self.seq,
            "origin": origin,
            "rejectionReason": reason,
        }
        to.send(action_frame(envelope)[1])
        seen = internal if internal is not None else [(channel, action)]
        for target, item in seen:
            if not isinstance(item, dict):
                continue
            for observer in tuple(self.rejection_observers):
                try:
                    observer(target, item, str(origin.get("clientId") or ""))
                except Exception:
                    logger.exception("store rejection observer failed on %s", item.get("type"))

    def echo(self, channel: str, action: Any, origin: dict[str, Any], to: Subscriber) -> None:
        """Tell only the dispatcher that its action was taken though it changes nothing in the
        store (a no-op in the client's protocol version): its echo, at the current serverSeq."""
        envelope = {"channel": channel, "action": action, "serverSeq": self.seq, "origin": origin}
        to.send(action_frame(envelope)[1])

    def _send_translated(self, entry: _Channel, envelope: dict[str, Any], frame: str, change: Change) -> None:
        """Each translator group gets ``envelope`` in its shapes, serialised once for the group."""
        for translator, group in tuple(entry.translated.items()):
            try:
                shown = translator.envelope(entry.kind, envelope, change)
            except Exception:  # a translation bug must not stop the store or the other groups
                logger.exception("translating %s failed", envelope["action"].get("type"))
                continue
            if shown is None:
                continue
            if shown is envelope:  # the store's own shape (every streamed token of a 0.9.0 group)
                for subscriber in tuple(group):
                    subscriber.send(frame)
                continue
            if isinstance(shown, list):
                texts = [frame if item is envelope else action_frame(item)[1] for item in shown]
            else:
                texts = [action_frame(shown)[1]]
            for subscriber in tuple(group):
                for text in texts:
                    subscriber.send(text)

    def notify(self, channel: str, method: str, params: dict[str, Any]) -> None:
        """Send a protocol notification (never journaled or replayed) to a channel's subscribers."""
        entry = self._channels.get(channel)
        if entry is None or not (entry.subscribers or entry.translated):
            return
        frame = notification(method, params) if entry.subscribers else None
        if frame is not None:
            for subscriber in tuple(entry.subscribers):
                subscriber.send(frame)
        for translator, group in tuple(entry.translated.items()):
            try:
                shown = translator.notification(entry.kind, method, params, self)
            except Exception:
                logger.exception("translating %s failed", method)
                continue
            if shown is None:
                continue
            text = frame if frame is not None and shown is params else notification(method, shown)
            for subscriber in tuple(group):
                subscriber.send(text)

    # -- subscriptions -------------------------------------------------------------------------

    def subscribe(self, channel: str, subscriber: Subscriber, translator: Translator | None = None) -> dict[str, Any]:
        """Register ``subscriber`` and return the snapshot (in the store's own shapes: the caller
        projects it for a subscriber of another version). ``translator``, when given, replaces
        the subscriber's own for this channel (a channel it names differently)."""
        entry = self._channels[channel]
        translator = translator or _translator(subscriber)
        if translator is None:
            entry.subscribers.add(subscriber)
        else:
            entry.translated.setdefault(translator, set()).add(subscriber)
        return {"resource": channel, "state": entry.state, "fromSeq": self.seq}

    def unsubscribe(self, channel: str, subscriber: Subscriber, translator: Translator | None = None) -> None:
        """Stop sending ``channel`` to ``subscriber`` in the shapes it subscribed with
        (``translator``, else its own)."""
        entry = self._channels.get(channel)
        if entry is None:
            return
        translator = translator or _translator(subscriber)
        if translator is None:
            found = subscriber in entry.subscribers
            entry.subscribers.discard(subscriber)
        else:
            group = entry.translated.get(translator) or set()
            found = subscriber in group
            group.discard(subscriber)
            if not group:
                entry.translated.pop(translator, None)
        if found:
            self._trim(channel)

    def unsubscribe_all(self, subscriber: Subscriber) -> None:
        for channel, entry in tuple(self._channels.items()):
            if _drop(entry, subscriber):
                self._trim(channel)

    def has_subscribers(self, channel: str) -> bool:
        entry = self._channels.get(channel)
        return entry is not None and bool(entry.subscribers or entry.translated)

    def is_subscribed(self, channel: str, subscriber: Subscriber) -> bool:
        entry = self._channels.get(channel)
        if entry is None:
            return False
        translator = _translator(subscriber)
        if translator is None:
            return subscriber in entry.subscribers
        return subscriber in entry.translated.get(translator, ())

    def replay(self, since: int, channels: Iterable[str]) -> list[dict[str, Any]] | None:
        """Envelopes on ``channels`` with serverSeq > since, or None when the buffer has a gap."""
        if since > self.seq:
            return None
        if since < self.seq:
            if not self._replay or self._replay[0][0] > since + 1:
                return None
        wanted = set(channels)
        if any(self._trimmed.get(channel, -1) >= since for channel in wanted):
            return None  # a chat lost older turns from its state since: the client holds them
        return [envelope for seq, channel, envelope, _ in self._replay if seq > since and channel in wanted]

    # -- durability ----------------------------------------------------------------------------

    def recover(self) -> None:
        """Rebuild every channel from the journal (newest snapshot + later entries)."""
        if self._journal is None:
            return
        snapshot = self._journal.latest_snapshot(raw_kinds=frozenset({"chat"}))
        upto = 0
        if snapshot is not None:
            upto = snapshot.upto
            self.seq = snapshot.seq
            for uri, saved in snapshot.channels.items():
                if "parts" in saved:  # a chat: which rows hold each turn, to page them out again
                    state, groups = split_turns(saved["parts"])
                    turns = state.get("turns")
                    if not isinstance(turns, list):
                        turns = []
                    self._journal.note_turn_rows(uri, turns, groups)
                else:
                    state = saved["state"]
                self._channels[uri] = _Channel(saved["kind"], state)
        self._changed = set() if snapshot is not None else set(self._channels)
        for item in self._journal.entries_after(upto):
            if item.kind == "created":
                body = json.loads(item.body or "{}")
                self._channels[item.channel] = _Channel(body["kind"], body["state"])
                self._changed.add(item.channel)
                self._removed.discard(item.channel)
            elif item.kind == "removed":
                self._channels.pop(item.channel, None)
                self._changed.discard(item.channel)
                self._removed.add(item.channel)
            elif item.kind == "action":
                envelope = json.loads(item.body or "{}")
                entry = self._channels.get(item.channel)
                if entry is not None:  # a coalesced row is one joined append, and rows join runs
                    entry.apply(envelope["action"], item.now or 0)
                    self._changed.add(item.channel)
                self.seq = max(self.seq, item.seq or 0)
        for uri, entry in self._channels.items():
            if entry.kind == "chat":
                if "turnsNextCursor" in entry.shape:  # every turn is in the state again
                    entry.state = {key: value for key, value in entry.state.items() if key != "turnsNextCursor"}
                self._trim(uri)
        recent: list[tuple[int, str, dict[str, Any]]] = []
        for item in self._journal.recent_actions(self._replay.maxlen or 0):
            for envelope in expand(json.loads(item.body or "{}")):
                recent.append((envelope["serverSeq"], item.channel, envelope))
        recent.sort(key=lambda entry: entry[0])  # runs of different channels interleave in seq
        self._replay.clear()
        self._replay_size = 0
        for seq, channel, envelope in self._contiguous(recent):
            self._remember(seq, channel, envelope, len(action_frame(envelope)[0]))

    def snapshot_now(self) -> None:
        """Write a snapshot at once, on this thread (start-up, shutdown, tests)."""
        if self._journal is None:
            return
        upto, seq, plans, removed = self._begin_snapshot()
        try:
            for _ in self._write_snapshot(self._journal, upto, seq, encode_plans(plans), removed):
                self._check_wal(background=False)
        finally:
            self._snapshotting = False
        self._journal.checkpoint_here()

    async def _snapshot_in_background(self) -> None:
        """A snapshot that never holds the event loop long: states are serialised in a worker
        thread (they are immutable, so it reads them safely while the loop goes on), and the
        journal writes them in small steps with the loop running in between."""
        journal = self._journal
        if journal is None:
            return
        upto, seq, plans, removed = self._begin_snapshot()
        try:
            pieces = await asyncio.to_thread(encode_plans, plans)
            for _ in self._write_snapshot(journal, upto, seq, pieces, removed):
                self._check_wal(background=True)
                task = self._checkpoint_task
                if task is not None and not task.done():
                    await asyncio.wait({task})  # its commits would keep a checkpoint from completing
                else:
                    await asyncio.sleep(0)
                if self._journal is not journal:
                    return  # closed meanwhile: close() wrote a full snapshot
            self._check_wal(background=True)
        except BaseException:
            self._changed.update(plans)  # not written: the next snapshot takes them
            self._removed.update(removed)
            self._snapshotting = False
            raise

    def _begin_snapshot(self) -> tuple[int, int, dict[str, SnapshotPlan], set[str]]:
        """Which channels a snapshot writes (those changed since the last, all of them for a full
        one); the journal plans what of each (``Journal.plan``)."""
        journal = self._journal
        assert journal is not None
        self._snapshotting = True
        if journal.needs_full_snapshot:
            self._changed.update(self._channels)
        upto = journal.begin_snapshot()
        plans = {uri: journal.plan(uri, self._channels[uri].kind, self._channels[uri].state,
                                   [ids for _, ids in self._older.get(uri, ())])
                 for uri in self._changed if uri in self._channels}
        removed = self._removed
        self._changed, self._removed = set(), set()
        return upto, self.seq, plans, removed

    def _write_snapshot(self, journal: Journal, upto: int, seq: int, pieces: dict[str, SnapshotPieces],
                        removed: set[str]) -> Iterator[None]:
        """The steps of writing a snapshot (``Journal.write_planned``) and pruning after it; the
        caller may let the event loop run between them."""
        yield from journal.write_planned(upto, seq, pieces, removed)
        self._snapshotting = False
        yield
        yield from journal.prune(upto, self._replay.maxlen or 0, self._replay_chars)
        for uri, (_, plan, *_) in pieces.items():
            if plan.turns is not None:  # their turns now have rows to be read back from
                self._trim(uri)

    def close(self) -> None:
        if self._journal is not None:
            if self._snapshot_task is not None and not self._snapshot_task.done():
                self._snapshot_task.cancel()
                self._changed.update(self._channels)  # what it was writing is written here instead
            self.snapshot_now()
            self._journal.close()
            self._journal = None

    def flush(self) -> None:
        """Make every journaled entry durable (cheap when there is nothing to commit), then run the
        callbacks ``when_durable`` deferred."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        if self._journal is not None and self._journal.dirty:
            self._journal.flush()
            self._last_commit = time.monotonic()
            self._check_wal(background=True)
        if self._on_commit:
            callbacks, self._on_commit = self._on_commit, []
            for callback in callbacks:
                callback()

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once everything journaled so far is committed: at once if nothing is
        pending; else at the next commit, which is now if the last one is ``MIN_COMMIT_INTERVAL``
        old, or when it is (group commit: under load one commit serves the frames of several ticks,
        at the cost of at most that interval of latency)."""
        if self._journal is None or not self._journal.dirty:
            callback()
            return
        self._on_commit.append(callback)
        wait = self._last_commit + MIN_COMMIT_INTERVAL - time.monotonic()
        if wait <= 0:
            self._flush_soon()
        else:
            self._arm_flush(wait)

    def _schedule_flush(self) -> None:
        if self._flush_timer is not None:
            if self._journal is not None and self._journal.pending >= FLUSH_ROWS:
                self._flush_soon()
            return
        self._arm_flush(FLUSH_DELAY)

    def _arm_flush(self, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no event loop (tools, tests): commit at once
            return
        due = loop.time() + delay
        if self._flush_timer is not None:
            if self._flush_timer.when() <= due:
                return
            self._flush_timer.cancel()
        self._flush_timer = loop.call_at(due, self._flush_soon)

    def _flush_soon(self) -> None:
        """The store's own commits (timer, size, ``when_durable``): ``flush``, unless a checkpoint's
        last pass runs (a few milliseconds), whose end commits what waited meanwhile."""
        if self._commits_held:
            self._flush_timer = None
            return
        self.flush()

    def _snapshot_soon(self) -> None:
        """Start a snapshot in the background now, unless one is running (it then covers this)."""
        if self._journal is None or (self._snapshot_task is not None and not self._snapshot_task.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (tools, tests): the next snapshot does it
        self._snapshot_task = loop.create_task(self._snapshot_in_background())
        self._snapshot_task.add_done_callback(_log_failure)

    def _maybe_snapshot(self) -> None:
        journal = self._journal
        if journal is None or (journal.entries_since_snapshot < self._snapshot_every
                               and journal.chars_since_snapshot < self._snapshot_chars):
            return
        if self._snapshot_task is not None and not self._snapshot_task.done():
            return  # one at a time; this one's changes go in the next
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.snapshot_now()  # no event loop (tools, tests)
            return
        self._snapshot_task = loop.create_task(self._snapshot_in_background())
        self._snapshot_task.add_done_callback(_log_failure)

    def _check_wal(self, background: bool) -> None:
        """Keep the WAL near ``WAL_CHECKPOINT_BYTES``: past it, checkpoint (in a worker thread when
        ``background`` and an event loop runs, else here); past ``WAL_LIMIT_BYTES``, here at once."""
        journal = self._journal
        if journal is None:
            return
        size = journal.wal_bytes()
        if size < WAL_CHECKPOINT_BYTES:
            return
        if size >= WAL_LIMIT_BYTES or not background:
            journal.checkpoint_here()  # after a worker's pass that is running, if any
            return
        task = self._checkpoint_task
        if task is not None and not task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            journal.checkpoint_here()
            return
        self._checkpoint_task = loop.create_task(self._checkpoint_in_background(journal))

    async def _checkpoint_in_background(self, journal: Journal) -> None:
        """Copy the WAL from a worker thread, so that its copying and fsyncs stay off the event loop.
        A pass copies the frames committed when it started: the first copies the bulk, the second
        what was committed meanwhile (fewer), and the third, while the store's own commits wait
        (frames wait for it, the loop runs on), what is left, so that it completes and the commit
        after it starts the WAL again. If a commit came in anyway (``flush`` from outside), the next
        commit past the threshold starts another round."""
        try:
            for _ in range(2):
                await asyncio.to_thread(journal.checkpoint)
                if self._journal is not journal:
                    return  # closed meanwhile (closing checkpoints)
            self._commits_held = True
            await asyncio.to_thread(journal.checkpoint)
        finally:
            self._commits_held = False
        if self._journal is journal and (self._on_commit or journal.dirty):
            self.flush()

    def _contiguous(self, items: list[tuple[int, str, dict[str, Any]]]) -> list[tuple[int, str, dict[str, Any]]]:
        """The newest run of consecutive seqs of ``items`` (sorted) ending at ``self.seq``."""
        kept: list[tuple[int, str, dict[str, Any]]] = []
        expected = self.seq
        for item in reversed(items):
            if item[0] != expected:
                break
            kept.append(item)
            expected -= 1
        kept.reverse()
        return kept

    def _remember(self, seq: int, channel: str, envelope: dict[str, Any], size: int) -> None:
        """Add an envelope to the replay buffer, dropping the oldest past its count or characters
        (the newest always stays)."""
        replay = self._replay
        if replay.maxlen == 0:
            return
        if len(replay) == replay.maxlen:
            self._replay_size -= replay.popleft()[3]
        replay.append((seq, channel, envelope, size))
        self._replay_size += size
        while self._replay_size > self._replay_chars and len(replay) > 1:
            self._replay_size -= replay.popleft()[3]
