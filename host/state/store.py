"""The store: the host's one mutable object, and the composition of the state's parts.

Each accepted action goes one way: **reduce → serverSeq → log → fan-out**, then the observers.
The parts, each with one job:

* ``host.state.channels``: every channel's state, reduced by the pure reducers of the internal
  model (``ahp.state``: AHP 0.9.0 shapes; each channel's reducer is bound by the kind given to
  ``create``), streamed text held as runs (O(1) per token);
* ``host.state.log``: the ordered log, the port that numbers envelopes (``serverSeq``), makes them
  durable, replays them for ``reconnect`` and keeps snapshots; ``host.state.embedded_log`` is the
  default (the SQLite journal, ``host.state.journal``), made here from the ``journal`` given;
* ``host.state.fanout``: sending to this process's subscribers, each protocol version's group
  through its ``Translator``, one serialisation per envelope;
* ``host.state.older_turns``: a chat's older turns kept out of its state and paged back in.

The store holds no business logic: which actions are allowed, and what happens because of them, is
decided elsewhere (``host.service``, ``host.runtime.turns``), the latter through *observers* called
after each change.

Invariants (each part states its own; these are the ones of the composition):

* An envelope reaches no subscriber and no observer before the log numbered it, and leaves the
  process only once the log says it is durable (transports wait on ``when_durable`` or ``flush``).
  It is serialised exactly once, by the log's ``append``: the log keeps that JSON and every
  subscriber of the store's own shapes gets that frame (``host.state.fanout`` for the others).
  ``replace`` is the one change that reaches no subscriber (start-up only).
  A log whose ``append`` answers later (``answers_later``, a networked one) has each action
  reduced at once and finished, fan-out and observers, when its number comes, in ``serverSeq``
  order; an action it refuses is undone and its client told (``host.state.awaiting``). A
  streamed append of a session this process runs takes the lean way over such a log too, when
  it offers ``append_told`` (``dispatch_streamed``): no state read (a mark of it to undo to),
  finished where the log hands out its acknowledgement. Records other processes appended, taken
  in (``take_in``), are sent in ``serverSeq`` order with this process's frames, both waiting for
  each other as little as the log lets them know (``host.state.awaiting``).
* ``seq`` is the log's: it only grows, across restarts too.
* Streamed tokens (``chat/delta``, ``chat/reasoning``, ``chat/toolCallDelta``: ``STREAMED``) reach
  ``observers`` and ``token_observers``; everything else reaches ``observers`` and
  ``change_observers`` (those that never act on a streamed token). ``observers`` make each token
  pay for a read of the state (a pending text run reduced), so the host's own services use
  ``change_observers`` and ``token_observers``; ``active_turn_id`` (and ``dispatch_streamed``
  given the turn, in the same lookup) answers the per-token "is my turn still running" without
  that read.
* ``subscribe`` captures the snapshot and registers the subscriber in one synchronous step, so a
  subscriber sees every envelope with ``serverSeq > fromSeq`` and none at or below it. Over a
  log that answers later, the caller first awaits ``settle`` of the channels (then subscribes
  with no await in between): the state holds this process's actions before they are numbered.
* ``replay`` gives what the log's replay window holds, unless a chat lost older turns from its
  state since (``host.state.older_turns``): then None, and the client gets a snapshot.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, cast

from ahp.jsonrpc import action_frame
from ahp.state.appends import TEXT_APPENDS
from host.state import fanout
from host.state.awaiting import Awaiting, Pending
from host.state.channels import ROOT, STREAMED, Channel, reduce
from host.state.embedded_log import REPLAY_CHARS, SNAPSHOT_CHARS, EmbeddedLog
from host.state.fanout import Change, Subscriber, Translator, fan_out, fan_out_streamed
from host.state.journal import WAL_CHECKPOINT_BYTES, WAL_LIMIT_BYTES, Journal, SnapshotPieces, SnapshotPlan
from host.state.log import LogRecord, OrderedLog
from host.state.older_turns import OlderTurns

__all__ = ["Change", "Store", "Subscriber", "Translator", "Observer", "RejectionObserver", "TokenObserver", "ROOT", "STREAMED",
           "TEXT_APPENDS", "action_frame", "reduce"]

logger = logging.getLogger(__name__)

SETTLE_SECONDS = 2.0
"""How long ``settle`` waits for a channel with an action of this process in flight to go quiet
before its subscriber is registered anyway (a few of the log's acknowledgements under load)."""

Observer = Callable[[str, dict[str, Any], dict[str, Any], dict[str, Any]], None]
"""``observer(channel, before, after, envelope)``, called after every accepted action."""

RejectionObserver = Callable[[str, dict[str, Any], str], None]
"""``observer(channel, action, client_id)``, called after a client's action was refused: a refusal
can still mean something (an owner declining its running tool call too late)."""

TokenObserver = Callable[[str, dict[str, Any]], None]
"""``observer(channel, envelope)``, called after each streamed token (``STREAMED``), without the
states: building them for every token would cost a copy of the streamed text each time."""


class _AnsweringLog(Protocol):
    """An ``OrderedLog`` whose ``append`` answers at once, as ``Store.dispatch`` takes it."""

    def append(self, channel: str, now: int, envelope: dict[str, Any]) -> str: ...


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
        log: OrderedLog | None = None,
    ) -> None:
        """``journal`` and the numbers after it configure the default log (``EmbeddedLog``);
        ``log`` is another implementation of the port instead (then without ``journal``)."""
        self._clock = clock
        if log is not None and journal is not None:
            raise ValueError("give the store a journal (for its embedded log) or a log, not both")
        if log is None:
            # The WAL thresholds are read from this module when a store is made, so that a
            # deployment or a test may set them here.
            log = EmbeddedLog(journal, replay_capacity=replay_capacity, replay_chars=replay_chars,
                              snapshot_every=snapshot_every, snapshot_chars=snapshot_chars,
                              wal_checkpoint_bytes=WAL_CHECKPOINT_BYTES, wal_limit_bytes=WAL_LIMIT_BYTES)
        self.log = log
        """The ordered log every change goes through (``host.state.log``)."""
        self._embedded = log if isinstance(log, EmbeddedLog) else None
        """The log when it is the embedded one: older turns are paged from its journal's rows."""
        self._answering = cast(_AnsweringLog, log)
        """The log as ``dispatch`` calls it when it answers at once (the embedded log)."""
        self._log_caught_up: Callable[[int, frozenset[str]], Any] | None = getattr(log, "caught_up", None)
        self._gated: frozenset[str] | None = None
        """The channels whose frames wait for the log's follower (``_gated_channels``), kept until
        one subscribes or unsubscribes, or the log's owners change (``_gated_at``)."""
        self._gated_at: Any = None
        """The log's ``owners_changed`` when ``_gated`` was computed."""
        self._foreign: frozenset[str] = frozenset()
        """With ``_gated``: the channels served here that another process runs (``caught_up`` asks
        about their records only)."""
        self._log_end_of_tick: Callable[[Callable[[], None]], None] | None = getattr(log, "at_end_of_tick", None)
        self._handing: list[Callable[[], None]] = []
        """Writes asked for (``at_end_of_tick``) while frames numbered earlier were handed out with
        no observer in between (``_numbered``): run once they are, not after other ticks."""
        self._collecting = False
        self._awaiting = Awaiting(self._numbered, self._refused, self._caught_up if self._log_caught_up is not None else None,
                                  self._run_handed if self._log_end_of_tick is not None else None,
                                  self._gated_channels) \
            if getattr(log, "answers_later", False) else None
        """For a log whose ``append`` answers later (``host.state.log``): the actions waiting for their
        number (``host.state.awaiting``); None for a log that answers at once."""
        self._append_told: Callable[[str, int, dict[str, Any], Pending], bool] | None = None
        """A log that answers later and can tell an append's outcome at once (its optional
        ``append_told``): the lean way for streamed appends over it (``dispatch_streamed``)."""
        if self._awaiting is not None:
            # ``dispatch`` is this one for such a log: the embedded log's path pays no check for it.
            self.dispatch = self._dispatch_later  # type: ignore[method-assign]
            self._append_told = getattr(log, "append_told", None)
        self._shared: Callable[[str], bool] | None = getattr(log, "shared", None) if hasattr(log, "forward") else None
        """A shared log's ``shared(channel)``: whether every process changes ``channel`` (the root),
        each change forwarded to the one process that writes it (``_forward_shared``)."""
        self._forwarding: set[asyncio.Future[Any]] = set()
        self._channels: dict[str, Channel] = {ROOT: Channel("root", root_state)}
        self._changed: set[str] = {ROOT}
        """Channels whose state changed since the last snapshot (only these are written again)."""
        self._removed: set[str] = set()
        """Channels removed since the last snapshot."""
        self._older_turns = OlderTurns(self._channels, self._changed, self._embedded, recent_turns, self.load_older)
        self._older = self._older_turns.older
        """Per chat with turns out of its state: checked on every action (``OlderTurns.before_apply``)."""
        self.log.bind(self)
        self.observers: list[Observer] = []
        """Called after every accepted action (each streamed token then costs a read of the state)."""
        self.change_observers: list[Observer] = []
        """Called after every accepted action except streamed tokens (``STREAMED``)."""
        self.token_observers: list[TokenObserver] = []
        """Called after each streamed token (``STREAMED``) only, without states."""
        self.followed_observers: list[Callable[[LogRecord], None]] = []
        """Called after a channel another process created or removed was taken in (``take_in``;
        not for its actions, which stream)."""
        self.rejection_observers: list[RejectionObserver] = []
        """Called after a client's action was refused (state and seq unchanged)."""
        self.at_end_of_tick: Callable[[Callable[[], None]], None] | None = (
            self._embedded.at_end_of_tick if self._embedded is not None else getattr(log, "at_end_of_tick", None))
        """``at_end_of_tick(callback)``: ``callback`` at the end of this event-loop tick once
        everything logged is durable, from the log's own end-of-tick commit (the embedded log's),
        or, over a networked log that offers it (its optional ``at_end_of_tick``), where it hands
        out what it numbered (a write asked for there carries only those frames, durable: it
        waits for no other tick; ``host.state.awaiting``), or where the store sends frames the
        log numbered earlier, before any observer of them runs (``_numbered``); None for another
        log: wait with ``when_durable`` then."""
        if self._awaiting is not None and self._log_end_of_tick is not None:
            self.at_end_of_tick = self._end_of_tick_later
        self._unread = Change(None, None, self)
        """What translators get when none wanted the states (every streamed token): one shared
        object, as a ``Change`` is immutable."""

    @property
    def seq(self) -> int:
        """The last ``serverSeq`` (the log's)."""
        return self.log.seq

    @property
    def answers_later(self) -> bool:
        """Whether the log numbers an action after ``dispatch`` returns (a networked log): then an
        envelope's ``serverSeq`` is 0 until it is sent, and the log may refuse it."""
        return self._awaiting is not None

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

    # -- older turns (host.state.older_turns) --------------------------------------------------

    @property
    def recent_turns(self) -> int:
        """Completed turns a chat nobody watches keeps in its state, and the size of a page of
        older ones (0: every turn stays in the state)."""
        return self._older_turns.recent_turns

    def older_turn_count(self, chat: str) -> int:
        """How many of a chat's completed turns are older than its state holds."""
        return self._older_turns.count(chat)

    def turn_ids(self, chat: str) -> list[Any]:
        """Every completed turn id of a chat, oldest first: its older turns' and its state's."""
        window = (self.state(chat) or {}).get("turns") or ()
        return self._older_turns.ids(chat) + [turn.get("id") if isinstance(turn, dict) else None for turn in window]

    def turns(self, chat: str, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
        """A chat's completed turns ``[start:end]``, counted over all of them: the older ones read
        back from the journal, the rest from its state. For what needs the whole conversation (a
        provider's history, a fork, an AHP 0.2.0 view); a client of a newer version pages in."""
        older = self._older_turns.count(chat)
        window = (self.state(chat) or {}).get("turns") or []
        start, end, _ = slice(start, end).indices(older + len(window))
        out = self._older_turns.read(chat, start, end) if start < older else []
        out.extend(window[max(0, start - older):max(0, end - older)])
        return out

    def load_older(self, chat: str, start: int) -> dict[str, Any] | None:
        """Bring a chat's older turns from position ``start`` on back into its state with one
        ``chat/turnsLoaded``, which every subscriber sees (AHP: the host loads turns so before it
        answers ``fetchTurns``, and before it applies an action naming a turn its state lacks).
        Its envelope; None when no older turn is at or after ``start``."""
        paged = self._older_turns.page(chat, start)
        if paged is None:
            return None
        action, page, turns = paged
        envelope = self.dispatch(chat, action)
        self._older_turns.loaded(chat, page, turns)
        return envelope

    # -- the log's snapshot source (host.state.log.SnapshotSource) -----------------------------

    def take_changes(self, full: bool) -> tuple[dict[str, tuple[str, dict[str, Any], list[list[int]]]], set[str]]:
        if full:
            self._changed.update(self._channels)
        channels = self._channels
        changes = {uri: (channels[uri].kind, channels[uri].state, self._older_turns.rows(uri))
                   for uri in self._changed if uri in channels}
        removed = set(self._removed)
        self._changed.clear()  # the very set older_turns adds to
        self._removed.clear()
        return changes, removed

    def restore_changes(self, channels: Iterable[str], removed: Iterable[str]) -> None:
        self._changed.update(channels)
        self._removed.update(removed)

    def snapshot_written(self, chats: Iterable[str]) -> None:
        for chat in chats:
            self._older_turns.trim(chat)

    # -- changing ------------------------------------------------------------------------------

    def create(self, channel: str, kind: str, state: dict[str, Any]) -> None:
        """Add a channel (a new session, terminal...). Creating takes no serverSeq."""
        if channel in self._channels:
            raise ValueError(f"channel {channel} already exists")
        self._channels[channel] = Channel(kind, state)
        self._changed.add(channel)
        self._removed.discard(channel)
        self.log.created(channel, kind, state)

    def replace(self, channel: str, state: dict[str, Any]) -> None:
        """Swap a channel's whole state outside the action stream, logged like ``create`` and
        without a serverSeq. Start-up only (before any client subscribes: nobody is told), for a
        change no action can express, e.g. a new root config schema after an upgrade."""
        entry = self._channels[channel]
        if fanout.has_subscribers(entry):
            raise RuntimeError(f"replace({channel}) while clients subscribe to it")
        self._channels[channel] = Channel(entry.kind, state)
        self._changed.add(channel)
        self._older_turns.forget(channel, removed=False)  # the new state is whole
        self.log.created(channel, entry.kind, state)

    def remove(self, channel: str) -> None:
        """Drop a channel and all its subscriptions."""
        if channel == ROOT or channel not in self._channels:
            return
        self.log.removed(channel)
        self._gated = None
        entry = self._channels.pop(channel)
        self._changed.discard(channel)
        self._removed.add(channel)
        for subscriber in fanout.everyone(entry):
            removed = getattr(subscriber, "channel_removed", None)
            if removed is not None:
                removed(channel)
        self._older_turns.forget(channel, removed=True)

    def dispatch(self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None = None,
                 on_refused: Callable[[str], None] | None = None) -> dict[str, Any]:
        """Apply an accepted action, log it (which numbers it) and send it to every subscriber of
        ``channel``. With a log that answers later the envelope's ``serverSeq`` is set, and it is
        sent and observed, once the log numbered it; ``on_refused(reason)`` is called if the log
        refuses it instead (the client that dispatched it is told, in its own version's shapes)."""
        entry = self._channels[channel]
        if channel in self._older:
            self._older_turns.before_apply(channel, action)
        now = self._clock()
        streamed = action.get("type") in STREAMED
        observers = tuple(self.observers) if streamed else (*self.observers, *self.change_observers)
        translated = entry.translated
        wants_states = False
        if translated:  # a translator group may ask for the states around the action
            kind = entry.kind
            for translator in tuple(translated):
                if translator.wants_states(kind, action):
                    wants_states = True
                    break
        # A streamed token stays in the channel's run unless an observer wants the states now.
        reads = observers or wants_states
        before = entry.state if reads else None
        if entry.apply(action, now):
            self._changed.add(channel)
        after = entry.state if reads else None
        envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": 0}  # the log numbers it
        if origin is not None:
            envelope["origin"] = origin
        embedded = self._embedded
        if embedded is not None:  # the channel worked out the action's run key: the journal's runs take it
            frame = embedded.append(channel, now, envelope, entry.key)
        else:
            frame = self._answering.append(channel, now, envelope)
        if entry.subscribers or translated:
            fan_out(entry, envelope, frame, self._unread if before is None or not translated else Change(before, after, self))
        if observers or streamed:
            self._observe(channel, observers, before, after, envelope, streamed)
        return envelope

    def dispatch_streamed(self, channel: str, action: dict[str, Any], key: tuple[Any, ...] | None = None,
                          turn: Any = None) -> dict[str, Any] | None:
        """``dispatch`` of a streamed append (``STREAMED``: ``chat/delta``, ``chat/reasoning``,
        ``chat/toolCallDelta``) of the host's own, the lean way when nothing needs more than the
        channel's run, its journal row, its frame and its token observers: over the embedded log
        (or a networked log that tells an append's outcome at once: ``_dispatch_streamed_later``),
        with no ``observers``, no older turns held out of the chat, and no translator group that
        wants the states. Anything else is ``dispatch`` itself. The same steps as ``dispatch``
        (reduce into the run, number, serialise once, journal, replay window, fan-out, token
        observers), without the ones that cannot apply. ``key``: the action's run key
        (``ahp.state.appends.run_key(action)``) when the caller knows it already (a turn's appender
        works it out once per part). ``turn``: dispatch only while ``turn`` is the channel's active
        turn (``active_turn_id``, asked here rather than by the caller per token: a call fewer),
        else dispatch nothing and return None (the channel gone, the turn over)."""
        if turn is not None:
            found = self._channels.get(channel)
            if found is None or not isinstance(active := found.shape.get("activeTurn"), dict) or active.get("id") != turn:
                return None
            entry = found
        else:
            entry = self._channels[channel]
        embedded = self._embedded
        translated = entry.translated
        if self.observers or channel in self._older:
            return self.dispatch(channel, action)
        if embedded is None:  # a networked log's lean way, when it has one
            if self._append_told is not None:
                return self._dispatch_streamed_later(channel, entry, action, key)
            return self.dispatch(channel, action)
        as_is = True  # every translator group takes the frame unchanged (``fanout.fan_out_streamed``)
        if translated:
            kind = entry.kind
            for translator in translated:
                if getattr(translator, "streams_as_is", False):
                    continue
                as_is = False
                if translator.wants_states(kind, action):
                    return self.dispatch(channel, action)
        now = self._clock()
        if (entry.apply(action, now) if key is None else entry.apply_keyed(action, now, key)):
            self._changed.add(channel)
        envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": 0}  # the log numbers it
        frame = embedded.append(channel, now, envelope, entry.key)
        if entry.subscribers or translated:
            if as_is:
                fan_out_streamed(entry, frame)
            else:
                fan_out(entry, envelope, frame, self._unread)
        if self.token_observers:  # (none, mostly: no copy of the empty list per token)
            for token_observer in tuple(self.token_observers):
                try:
                    token_observer(channel, envelope)
                except Exception:
                    logger.exception("store token observer failed on %s", action.get("type"))
        return envelope

    def _dispatch_streamed_later(self, channel: str, entry: Channel, action: dict[str, Any],
                                 key: tuple[Any, ...] | None) -> dict[str, Any]:
        """``dispatch_streamed`` over a log that answers later and tells an append's outcome at
        once (``append_told``): the same steps as ``_dispatch_later`` without the ones that cannot
        apply to a streamed append of a session this process runs (nothing read of the states: the
        channel's state before it is kept as a mark, ``AppendingState.mark``, which a refusal
        restores); the log hands the frame to the action's ``Pending`` itself, in the callback
        that reads the acknowledgement, and it is sent there (``_numbered``), in ``serverSeq``
        order with the rest (``host.state.awaiting``). Anything else is ``dispatch``: a session
        this process does not own now (run elsewhere, not claimed yet, a claim under way: the log
        says so, ``append_told``), a translator group that wants the states."""
        awaiting, told = self._awaiting, self._append_told
        assert awaiting is not None and told is not None
        translated = entry.translated
        if translated:
            kind = entry.kind
            for translator in translated:
                if not getattr(translator, "streams_as_is", False) and translator.wants_states(kind, action):
                    return self.dispatch(channel, action)
        now = self._clock()
        envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": 0}  # the log numbers it
        pending = Pending(channel, entry, envelope, entry.mark(), None, None, None, streamed=True)
        if not told(channel, now, envelope, pending):  # not this process's session (now): the general way
            return self.dispatch(channel, action)
        awaiting.told(pending)
        if (entry.apply(action, now) if key is None else entry.apply_keyed(action, now, key)):
            self._changed.add(channel)
        return envelope

    def _dispatch_later(self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None = None,
                        on_refused: Callable[[str], None] | None = None) -> dict[str, Any]:
        """``dispatch`` over a log that answers later: reduce now, finish in ``_numbered`` (every
        state is read: a network round trip per tick dwarfs reducing a pending run)."""
        assert self._awaiting is not None
        entry = self._channels[channel]
        now = self._clock()
        envelope: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": 0}
        if origin is not None:
            envelope["origin"] = origin
        owner = self.log.owner(channel)
        if owner is not None and self._shared is not None and self._shared(channel):
            self._forward_shared(owner, channel, action, origin, on_refused)
            return envelope
        if owner is not None:  # run elsewhere: reduced only if the log takes it
            answer = cast(Any, self.log.append(channel, now, envelope))
            self._awaiting.add(Pending(channel, entry, envelope, {}, {}, answer, on_refused, now=now, reduced=False))
            return envelope
        if channel in self._older:
            self._older_turns.before_apply(channel, action)
        before = entry.state
        if entry.apply(action, now):
            self._changed.add(channel)
        after = entry.state
        answer = cast(Any, self.log.append(channel, now, envelope))
        self._awaiting.add(Pending(channel, entry, envelope, before, after, answer, on_refused))
        return envelope

    def dispatch_where_run(self, channel: str, action: dict[str, Any]) -> None:
        """``dispatch`` a change only this process knows to make (its own client left) on
        ``channel``: here if this process runs it, else handed to the process that does (a
        cluster), as a client's dispatch is; a refusal there is logged. (A plain ``dispatch`` of a
        channel run elsewhere is refused by the log unless the owner's lease lapsed.) An owner that
        is dead cannot take it: the process that takes the session over drops the active clients
        no live process has connected (``AgentHost.taken_over``)."""
        owner = self.owner_elsewhere(channel) if self._awaiting is not None else None
        if owner is None:
            self.dispatch(channel, action)
        else:
            self._forward_shared(owner, channel, action, None, None)

    def _forward_shared(self, owner: str, channel: str, action: dict[str, Any], origin: dict[str, Any] | None,
                        on_refused: Callable[[str], None] | None) -> None:
        """A change of a channel ``owner`` writes (the root, which every process changes:
        ``shared``; or a session ``owner`` runs: ``dispatch_where_run``): handed to it and
        dispatched there, and reduced here when the log brings it back (``take_in``), in the log's
        order, as every other process does; not reduced now, so there is nothing to undo when the
        owner refuses it (told as any refusal is)."""
        forwarded = asyncio.ensure_future(self.forward(owner, channel, action, origin))
        self._forwarding.add(forwarded)

        def answered(done: asyncio.Future[str | None]) -> None:
            self._forwarding.discard(done)
            reason = done.result() if not done.cancelled() and done.exception() is None else str(done.exception())
            if reason is None:
                return
            if on_refused is None:
                logger.warning("%s on %s refused by %s, which writes it: %s", action.get("type"), channel, owner, reason)
            else:
                on_refused(reason)

        forwarded.add_done_callback(answered)

    def _gated_channels(self) -> frozenset[str]:
        """The channels whose frames of this process wait for the log's follower before they leave
        (``host.state.awaiting``, ``caught_up``): those a connection follows that also follows a
        channel another process runs (whose records the follower brings, later than this
        process's acknowledgements), so that such a connection reads ``serverSeq`` in order. A
        connection that follows only channels run here is not held: nothing it follows is taken
        in. Computed again only when a subscription or the log's owners changed (its
        ``owners_changed``; every time for a log that does not say), not per frame."""
        owners_changed = getattr(self.log, "owners_changed", None)
        gated = self._gated
        if gated is not None and owners_changed is not None and owners_changed == self._gated_at:
            return gated
        owner = self.log.owner
        served = [(channel, entry) for channel, entry in self._channels.items() if fanout.has_subscribers(entry)]
        followers: set[Any] = set()
        foreign: list[str] = []
        for channel, entry in served:
            if owner(channel) is not None:
                foreign.append(channel)
                followers |= fanout.everyone(entry)
        gated = frozenset(channel for channel, entry in served if followers and not followers.isdisjoint(fanout.everyone(entry))) \
            if followers else frozenset()
        self._gated, self._gated_at, self._foreign = gated, owners_changed, frozenset(foreign)
        return gated

    def _caught_up(self, seq: int) -> Any:
        """The log's ``caught_up`` for frames up to ``seq`` of the gated channels
        (``_gated_channels``, computed just before): only the records of the channels another
        process runs that their connections follow matter."""
        assert self._log_caught_up is not None
        return self._log_caught_up(seq, self._foreign)

    def _end_of_tick_later(self, callback: Callable[[], None]) -> None:
        """``at_end_of_tick`` over a log that answers later: a write asked for while frames are
        sent from a drain of the awaiting actions (numbered, durable; ``_send``) runs once they
        are, before any observer (which may send what reads states not durable yet) and at the
        drain's end (``_run_handed``); any other, as the log says."""
        if self._collecting:
            self._handing.append(callback)
        else:
            assert self._log_end_of_tick is not None
            self._log_end_of_tick(callback)

    def _send(self, to: Any, envelope: dict[str, Any], frame: str, change: Change | None) -> None:
        """Fan-out of a numbered frame from the awaiting actions (``_numbered``); the writes it asks
        for are collected when a drain outside the log's handing out runs (``_end_of_tick_later``)."""
        awaiting = self._awaiting
        self._collecting = awaiting is not None and awaiting.handing and self._log_end_of_tick is not None
        try:
            if change is None:
                fan_out_streamed(to, frame)
            else:
                fan_out(to, envelope, frame, change)
        finally:
            self._collecting = False

    def _run_handed(self) -> None:
        """Run the writes ``_end_of_tick_later`` collected: they carry frames only, durable."""
        handing = self._handing
        if not handing:
            return
        self._handing = []
        for callback in handing:
            try:
                callback()
            except Exception:
                logger.exception("a write of frames handed out failed")

    def _numbered(self, pending: Pending) -> None:
        """An action the log numbered (in ``serverSeq`` order): to its subscribers and observers."""
        channel, entry, envelope = pending.channel, pending.entry, pending.envelope
        action = envelope["action"]
        assert pending.frame is not None
        if pending.taken is not None:  # another process's record, held (``take_in``): sent, not observed
            recipients, change = pending.taken
            self._send(recipients, envelope, pending.frame, change)
            return
        if pending.streamed:  # the lean way (``_dispatch_streamed_later``): no states, no observers
            if self._channels.get(channel) is entry and (entry.subscribers or entry.translated):
                if not entry.translated or _as_is(entry):
                    self._send(entry, envelope, pending.frame, None)
                else:
                    self._send(entry, envelope, pending.frame, self._unread)
            for token_observer in tuple(self.token_observers):
                try:
                    token_observer(channel, envelope)
                except Exception:
                    logger.exception("store token observer failed on %s", action.get("type"))
            return
        if not pending.reduced:  # taken over from a lapsed owner: reduced now, in log order
            pending.before = entry.state
            if entry.apply(action, pending.now):
                self._changed.add(channel)
            pending.after = entry.state
        before = cast(dict[str, Any], pending.before)  # (a mark only for the lean way, above)
        if self._channels.get(channel) is entry and (entry.subscribers or entry.translated):
            self._send(entry, envelope, pending.frame, Change(before, pending.after, self))
        streamed = action.get("type") in STREAMED
        observers = tuple(self.observers) if streamed else (*self.observers, *self.change_observers)
        if observers or streamed:
            self._run_handed()  # (what they send waits as any other write: they read states)
        self._observe(channel, observers, before, pending.after, envelope, streamed)

    def _observe(self, channel: str, observers: tuple[Observer, ...], before: dict[str, Any] | None,
                 after: dict[str, Any] | None, envelope: dict[str, Any], streamed: bool) -> None:
        """An action sent to its subscribers reaches ``observers`` (given the states around it, read
        whenever there are observers), then, a streamed token, the token observers. One that fails
        is logged and the others are still called."""
        action = envelope["action"]
        if observers:
            assert before is not None and after is not None  # read by the caller whenever there are observers
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

    def _refused(self, pending: Pending, reason: str) -> None:
        """The log refused an action (its state is undone already): whoever dispatched it is told,
        and the rejection observers hear of it."""
        self._run_handed()  # (what they send waits as any other write)
        self._changed.add(pending.channel)
        action = pending.envelope["action"]
        if pending.on_refused is None:
            logger.warning("%s on %s refused by the log: %s", action.get("type"), pending.channel, reason)
        else:
            try:
                pending.on_refused(reason)
            except Exception:
                logger.exception("telling a client of a refused %s failed", action.get("type"))
        client = str((pending.envelope.get("origin") or {}).get("clientId") or "")
        for observer in tuple(self.rejection_observers):
            try:
                observer(pending.channel, action, client)
            except Exception:
                logger.exception("store rejection observer failed on %s", action.get("type"))

    def reject(
        self, channel: str, action: Any, origin: dict[str, Any], reason: str, to: Subscriber,
        internal: list[tuple[str, Any]] | None = None,
    ) -> None:
        """Tell only the dispatcher that its action was refused (state and seq unchanged). The
        envelope carries the action as the client sent it; ``internal`` is what it is in the
        store's model (when the client's version differs), for the rejection observers."""
        fanout.reject(channel, action, origin, reason, self.seq, to)
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
        fanout.echo(channel, action, origin, self.seq, to)

    def notify(self, channel: str, method: str, params: dict[str, Any]) -> None:
        """Send a protocol notification (never logged or replayed) to a channel's subscribers."""
        entry = self._channels.get(channel)
        if entry is None or not fanout.has_subscribers(entry):
            return
        fanout.notify(entry, method, params, self)

    # -- subscriptions -------------------------------------------------------------------------

    def subscribe(self, channel: str, subscriber: Subscriber, translator: Translator | None = None) -> dict[str, Any]:
        """Register ``subscriber`` and return the snapshot (in the store's own shapes: the caller
        projects it for a subscriber of another version). ``translator``, when given, replaces
        the subscriber's own for this channel (a channel it names differently)."""
        entry = self._channels[channel]
        fanout.subscribe(entry, subscriber, translator or fanout.translator_of(subscriber))
        self._gated = None
        return {"resource": channel, "state": entry.state, "fromSeq": self.seq}

    async def settle(self, channels: Iterable[str], within: float | None = None) -> None:
        """Return at a moment when no action of this process on ``channels`` waits for its number
        (at once over a log that answers at once), so that a ``subscribe`` in the same step (no
        await in between) gets a snapshot whose ``fromSeq`` is at or above the number of every
        action its state holds: none comes again as a frame (``host.state.awaiting``). Per
        channel: actions on others do not delay it. Bounded by ``within`` seconds
        (``SETTLE_SECONDS``): a channel that never goes quiet so long is subscribed anyway, with a
        warning (its subscriber may get an action of its snapshot again); the wait is woken by the
        queue's progress, so a stream slower than the log's acknowledgements leaves it quiet
        between two chunks."""
        awaiting = self._awaiting
        if awaiting is None:
            return
        wanted = set(channels)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (SETTLE_SECONDS if within is None else within)
        while awaiting.busy(wanted):  # checked last in the step that returns to the subscribing caller
            left = deadline - loop.time()
            if left > 0:
                try:
                    await asyncio.wait_for(awaiting.quiet(wanted), left)
                    continue
                except TimeoutError:
                    pass
            logger.warning("subscribing to %s while an action of this process on it still waits for its number: "
                           "the subscriber may get it twice", ", ".join(sorted(wanted)))
            return

    def unsubscribe(self, channel: str, subscriber: Subscriber, translator: Translator | None = None) -> None:
        """Stop sending ``channel`` to ``subscriber`` in the shapes it subscribed with
        (``translator``, else its own)."""
        entry = self._channels.get(channel)
        if entry is None:
            return
        self._gated = None
        if fanout.unsubscribe(entry, subscriber, translator or fanout.translator_of(subscriber)):
            self._older_turns.trim(channel)

    def unsubscribe_all(self, subscriber: Subscriber) -> None:
        self._gated = None
        for channel, entry in tuple(self._channels.items()):
            if fanout.drop(entry, subscriber):
                self._older_turns.trim(channel)

    def has_subscribers(self, channel: str) -> bool:
        entry = self._channels.get(channel)
        return entry is not None and fanout.has_subscribers(entry)

    def served(self) -> list[str]:
        """The channels some subscriber of this process follows now."""
        return [channel for channel, entry in self._channels.items() if fanout.has_subscribers(entry)]

    def is_subscribed(self, channel: str, subscriber: Subscriber) -> bool:
        entry = self._channels.get(channel)
        return entry is not None and fanout.is_subscribed(entry, subscriber)

    def replay(self, since: int, channels: Iterable[str]) -> list[dict[str, Any]] | None:
        """Envelopes on ``channels`` with serverSeq > since, or None when the log's replay window
        has a gap or a chat lost older turns from its state since (the client holds them)."""
        wanted = set(channels)
        if self._older_turns.refuses_replay(since, wanted):
            return None
        return self.log.replay(since, wanted)  # type: ignore[return-value]  # the embedded log answers at once

    async def replay_settled(self, since: int, channels: Iterable[str], tries: int = 5) -> list[dict[str, Any]] | None:
        """``replay`` over a log that answers later, read so that a subscriber registered right
        after it returns misses nothing and gets nothing twice: it returns at a moment when no
        action of this process waits for its number and none was numbered after what it read. None
        (the client gets snapshots, which is always right) when the log's window has a gap, or when
        the moment did not come in ``tries`` rounds."""
        wanted = list(channels)
        out: list[dict[str, Any]] = []
        last = since
        read: Any = self.replay(since, wanted)
        for _ in range(tries):
            got = await read if read is not None and not isinstance(read, list) else read
            if got is None:
                return None
            out.extend(got)
            last = max([last, *(envelope["serverSeq"] for envelope in got)])
            if self._awaiting is not None and len(self._awaiting):
                await self._awaiting.idle()
            if (self._awaiting is None or not len(self._awaiting)) and self.seq <= last:
                return out  # checked in the same step as the caller's subscribing
            read = self.replay(last, wanted) if self.seq > last else []
        return None

    # -- durability (the log's) ----------------------------------------------------------------

    async def recover(self) -> None:
        """Rebuild every channel from the log (newest snapshot + later entries). Over the
        embedded log it never waits (``host.state.embedded_log.at_once`` runs it with no loop)."""
        recovery = await self.log.recover()
        if recovery is None:
            return
        for uri, saved in recovery.channels.items():
            if "parts" in saved:  # a chat held turn by turn: which rows hold each turn, to page them out again
                state = self._older_turns.recovered(uri, saved["parts"])
            else:
                state = saved["state"]
            self._channels[uri] = Channel(saved["kind"], state)
        self._changed.clear()
        if not recovery.from_snapshot:
            self._changed.update(self._channels)
        for item in recovery.records:
            if item.kind == "created":
                body = item.body or {}
                self._channels[item.channel] = Channel(body["kind"], body["state"])
                self._changed.add(item.channel)
                self._removed.discard(item.channel)
            elif item.kind == "removed":
                self._channels.pop(item.channel, None)
                self._changed.discard(item.channel)
                self._removed.add(item.channel)
            elif item.kind == "action":
                entry = self._channels.get(item.channel)
                if entry is not None and item.body is not None:  # a coalesced row is one joined append, and rows join runs
                    entry.apply(item.body["action"], item.now or 0)
                    self._changed.add(item.channel)
        for uri, entry in self._channels.items():
            if entry.kind == "chat":
                if "turnsNextCursor" in entry.shape:  # every turn is in the state again
                    entry.state = {key: value for key, value in entry.state.items() if key != "turnsNextCursor"}
                self._older_turns.trim(uri)

    async def follow(self) -> bool:
        """Take in what other processes append to a shared log from now on (``take_in``), when
        the log can deliver it (its optional ``follow``); whether it can. After ``recover``."""
        follow = getattr(self.log, "follow", None)
        if follow is None:
            return False
        await follow(self.take_in)
        return True

    async def hold(self, channels: Iterable[str]) -> None:
        """Make sure ``channels`` are held whole before they are served (a subscription, a
        replay, ``fetchTurns``): a shared log may keep the chats of sessions another process
        runs without their streamed text until asked (its optional ``hold``). Raises its
        ``LogError`` when it cannot read them."""
        hold = getattr(self.log, "hold", None)
        if hold is None:
            return
        waiting = hold(channels)
        if waiting is not None:
            await waiting

    async def serve_forwarded(self) -> bool:
        """Take the dispatches other processes forward to this one, the owner of their sessions
        (``take_forwarded``), when the log can carry them; whether it can."""
        serve = getattr(self.log, "serve_forwarded", None)
        if serve is None:
            return False
        await serve(self.take_forwarded)
        return True

    async def take_over_lapsed(self, taken: Callable[[str], None]) -> bool:
        """Have the log take over the sessions of a process whose lease lapsed (killed, cut off),
        when it can (its optional ``take_over_lapsed``); whether it can. ``taken(group)`` is called
        once this process owns the group (a session's URI, or the host-wide group) and its
        channels hold everything the previous owner logged. After ``follow``."""
        take = getattr(self.log, "take_over_lapsed", None)
        if take is None:
            return False
        await take(taken)
        return True

    def watch_log_connection(self, changed: Callable[[bool], None]) -> bool:
        """Have ``changed(False)`` called when a networked log becomes unreachable (this process
        cut off: every append is refused) and ``changed(True)`` when it is back, when the log can
        say (its optional ``watch_connection``); whether it can."""
        watch = getattr(self.log, "watch_connection", None)
        if watch is None:
            return False
        watch(changed)
        return True

    async def take_forwarded(self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None) -> str | None:
        """A client's dispatch another process forwarded here: dispatched as if local (its echo
        reaches that client through the log); None once it is logged, else why it was refused."""
        if channel not in self._channels:
            return f"{channel} does not exist on its owner"
        refused: list[str] = []
        self.dispatch(channel, action, origin, refused.append)
        if self._awaiting is not None and len(self._awaiting):
            # Its own answer (the awaiting's callback, which tells a refusal, runs before this wakes).
            await asyncio.gather(self._awaiting.newest_answer(), return_exceptions=True)
        return refused[0] if refused else None

    def owner_elsewhere(self, channel: str) -> str | None:
        """The process that runs ``channel``'s session when it is another one this process can
        forward a dispatch to (``forward``); None to dispatch here."""
        return self.log.owner(channel) if hasattr(self.log, "forward") else None

    async def forward(self, owner: str, channel: str, action: dict[str, Any], origin: dict[str, Any] | None) -> str | None:
        """Hand a client's dispatch to ``owner``: None once logged there, else why it was refused."""
        return cast(str | None, await self.log.forward(owner, channel, action, origin))  # type: ignore[attr-defined]

    def take_in(self, record: LogRecord) -> None:
        """Fold a record another process appended to the shared log into this store, in log order,
        and send an action to this process's subscribers of its channel (the log's frame). Its
        observers are not called: what an action causes is the business of the process that runs
        its session. A channel appearing or going away is taken in the same way, unlogged."""
        channel = record.channel
        if record.kind == "created":
            body = record.body or {}
            entry = self._channels.get(channel)
            if entry is None:
                self._channels[channel] = Channel(body["kind"], body["state"])
            else:
                entry.state = body["state"]
            self._changed.add(channel)
            self._removed.discard(channel)
        elif record.kind == "removed":
            gone = self._channels.pop(channel, None) if channel != ROOT else None
            if gone is not None:
                self._gated = None
                self._changed.discard(channel)
                self._removed.add(channel)
                for subscriber in fanout.everyone(gone):
                    removed = getattr(subscriber, "channel_removed", None)
                    if removed is not None:
                        removed(channel)
        elif record.kind == "action" and record.body is not None:
            entry = self._channels.get(channel)
            if entry is None:
                return
            envelope = record.body
            translated = entry.translated
            before = entry.state if translated else None
            if entry.apply(envelope["action"], record.now or 0):
                self._changed.add(channel)
            if entry.subscribers or translated:
                change = Change(before, entry.state, self) if translated else self._unread
                frame = action_frame(envelope)[1]
                awaiting = self._awaiting
                if awaiting is not None and awaiting.must_hold(envelope["serverSeq"]):
                    # Held while an action of this process that may be numbered lower is not sent
                    # yet, for those subscribed now (a later subscriber's snapshot holds it).
                    as_is = envelope["action"].get("type") in STREAMED and (not translated or _as_is(entry))
                    awaiting.hold_taken(Pending(channel, entry, envelope, {}, None, None, None, streamed=as_is, frame=frame,
                                                answered=True, taken=(fanout.recipients(entry), change)))
                    return
                fan_out(entry, envelope, frame, change)
            return
        else:
            return
        for observer in tuple(self.followed_observers):
            try:
                observer(record)
            except Exception:
                logger.exception("store followed-record observer failed on %s of %s", record.kind, channel)

    async def open(self) -> None:
        """Reach the log before anything else when it is a service (its optional ``open``: a
        cluster's NATS), so that one that cannot be reached is said before a port is served;
        ``recover`` reaches it otherwise."""
        opener = getattr(self.log, "open", None)
        if opener is not None:
            await opener()

    async def snapshot_now(self) -> None:
        """Write a snapshot at once (start-up, shutdown, tests)."""
        await self.log.snapshot_now()

    async def close(self) -> None:
        await self.log.close()

    def flush(self) -> None:
        """Make everything logged durable now, then run the callbacks ``when_durable`` deferred."""
        self.log.flush()

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once everything logged so far is durable (``host.state.log``)."""
        self.log.when_durable(callback)

    def commit_with_next_step(self) -> None:
        """What the callbacks queued so far in this tick dispatch (a turn's task's first step)
        is made durable with what this tick logged, in one commit: the embedded log's
        (``EmbeddedLog.commit_with_next_step``), or a networked log's tick (its optional
        ``commit_with_next_step``); another log commits as it does."""
        if self._embedded is not None:
            self._embedded.commit_with_next_step()
        else:
            joins = getattr(self.log, "commit_with_next_step", None)
            if joins is not None:
                joins()

    # -- the embedded log's parts, as tests and benchmarks reach for them ----------------------

    @property
    def _journal(self) -> Journal | None:
        return self._embedded.journal if self._embedded is not None else None

    @property
    def _replay(self) -> Any:
        return self._embedded.replay_window if self._embedded is not None else None

    @property
    def _snapshot_task(self) -> Any:
        return self._embedded.snapshot_task if self._embedded is not None else None

    @property
    def _checkpoint_task(self) -> Any:
        return self._embedded.checkpoint_task if self._embedded is not None else None

    def _begin_snapshot(self) -> tuple[int, int, dict[str, SnapshotPlan], set[str]]:
        assert self._embedded is not None
        return self._embedded.begin_snapshot()

    def _write_snapshot(self, journal: Journal, upto: int, seq: int, pieces: dict[str, SnapshotPieces],
                        removed: set[str]) -> Iterator[None]:
        assert self._embedded is not None
        return self._embedded.write_snapshot(journal, upto, seq, pieces, removed)


def _as_is(entry: Channel) -> bool:
    """Whether every translator group of ``entry`` takes a streamed append's frame unchanged."""
    for translator in entry.translated:
        if not getattr(translator, "streams_as_is", False):
            return False
    return True
