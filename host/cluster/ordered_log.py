"""``host.state.log.OrderedLog`` on the JetStream log: what a store of a cluster process writes through.

:class:`ClusterLog` runs a :class:`host.cluster.jetstream_log.JetStreamLog` (the *core*) on the
store's own event loop: the NATS client, its read loop, the lease renewals and the follower are
tasks of that loop, and the port's coroutines (``recover`` at start, ``snapshot_now`` and ``close``
at shutdown) wait for the network there, each within ``timeout`` (``LogUnavailable`` past it).
It is opened by ``open`` (``recover`` opens it too): the constructor only keeps the address. A tick
whose owner groups are all this process's already leaves at the end of the tick it was appended in
(queued in the core and sent at once, its acknowledgements counted by callbacks; a tick of
actions only, a streamed turn's, in one pass per record, each told by the core itself:
``JetStreamLog.send_told``, ``_Tick.told``); one that must
claim a group first goes through a task that claims, in the order the ticks were flushed.

The event loop is the one thread this log runs on, so a loop held busy for longer than a lease's
renewal interval (a third of ``lease_ttl``) can let a lease lapse: another process then takes the
session over, and this one's next batch is refused by the fence (``NotOwner``): never a fork.

Per member (the port's contract in ``host.state.log``; here the ``Networked`` column):

* ``append`` returns an awaitable of the frame (an ``asyncio`` future). The envelopes of
  one tick of the loop (``created`` and ``removed`` in order with them) are handed to the
  core together (``queue_tick``), where each owner group's leave at once, each a publish
  fenced on the group's owner marker, each acknowledged with its number; the futures
  resolve when the acknowledgements come, with ``envelope["serverSeq"]`` set
  and the envelope serialised then (``ahp.jsonrpc.action_frame``: the frame). An envelope of a group this process
  does not own yet claims it first (``JetStreamLog.claim``): it fails with ``NotOwner`` while
  another process's lease is in force, and with ``LogUnavailable`` when NATS cannot be reached.
* ``owner`` answers from what this process learnt: None for its own groups and for groups no one
  was seen holding, otherwise the holder named by the group's last owner marker read (at recovery
  or while following) or by a refused claim or append. Its lease may have lapsed since: an append
  still tries, and claims the group then.
* ``flush`` hands the tick to the core now; ``when_durable`` calls back once every append handed over
  before it is acknowledged or failed (a failed append is never sent to a client: the store sees
  its future fail).
* ``replay`` returns an awaitable (a task) of the envelopes read from the stream, or None when the stream
  no longer holds ``since + 1`` (its retention: the client then gets snapshots).
* Snapshots are per owner group (``JetStreamLog.put_snapshot``): ``snapshot_now`` and
  ``snapshot_soon`` write, for every group this process owns, all of its channels as of the
  group's last sequence. ``recover`` reads every group's snapshot and the stream from its start
  (a group with no snapshot may have records anywhere; the stream's retention bounds them),
  skipping what a group's snapshot already holds, and markers; ``Recovery.seq`` is the oldest group
  snapshot's sequence, and ``seq`` then the stream's last.
* ``close`` waits for what is in flight, lets the leases go, and disconnects.
* ``open()`` (optional): connect to NATS (``LogUnavailable`` when it cannot be reached within
  ``timeout``, saying so) and learn the stream's last sequence; once, before anything else.
* ``watch_connection(changed)`` (optional): ``changed(False)`` when the NATS
  connection is lost (this process is cut off: every append fails at once, nothing is buffered),
  ``changed(True)`` when it is back (the host tells its clients: ``host.service``).

* ``await follow(deliver)`` (an optional member of the port): every record *other* processes append
  from ``seq`` on is handed to ``deliver``, in log order (``Store.take_in``
  folds it in and sends it to this process's subscribers); records of a group after this process's
  own marker on it are its own and skipped, as are owner markers. The streamed text of a chat
  (``host.cluster.subjects``) is taken in only for the groups this process serves: the server
  sends the rest to no one here, and those groups' chats are held *partial* (without the text of
  their parts) until ``hold`` (optional too) loads them whole, at the point the follower reached,
  and the follower is made again from there with their streamed text. A claim loads its group
  first in the same way. The stream also tells each process, as it stores them, of the host
  group's records and the owner markers (its ``republish``, headers only; ``_watch_told``), so
  that ``caught_up`` for the root waits for the follower without asking the server.
* ``await take_over_lapsed(taken)`` (optional too): a dead owner's groups are taken over. The leases
  bucket is watched (``Leases.watch``); a group whose holder let its lease lapse (killed, cut off)
  is claimed (``JetStreamLog.claim``: the fenced marker means the previous holder can never write
  to it again), and ``taken(group)`` is called once everything the previous
  holder logged on it has been handed to ``deliver`` first: the store then holds the group's
  channels as the dead owner left them, and the host ends what it left running
  (``host.service``). Several live processes may race for a group: the lease lets one through.

* ``watch_lost(lost)`` (optional too): ``lost(group)`` when this process stops running a group
  (its lease taken, or lapsing unrenewed: cut off, held up; a batch fenced out), so that what runs
  there stops (``host.service``); a group it lost that no other process claims is taken back once
  its own lapsed lease shows, or an append claims it, and ``taken`` is called for it as for a dead
  owner's. ``let_go_unserved(served)``: a group followed whole for this process's clients goes
  back to partial once none of its chats was served here for ``release_after`` seconds.
  ``serve_watchers``/``watched``: whether a client of any process watches a session (its owner
  keeps the session's MCP servers running past ``[mcp] unwatched_stop`` while one does);
  ``serve_presence``/``present``: which process has a client connected (a takeover drops the
  active clients no live process has).

**Claims and catching up.** Every claim (a lapsed group taken over, or an append to a group this
process does not own) goes through one place (``_claim``): at most one claim per group at a time,
and, once this process follows the log, the claim is done only when the follower has handed the
store every record up to the new marker. Until then ``owner`` still names the previous
holder, so an action dispatched meanwhile is reduced only once numbered, after those records.

What this log does not do (see the cluster section of README.md): keep a chat's turns paged out of its
state (those live in the SQLite journal's rows: a snapshot with such rows is refused with
``LogError``), and choose which process runs a session (the first to append claims it).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from typing import Any, TypeVar

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from ahp.state.appends import AppendingState
from ahp.state.channels import channel_kind
from host.cluster._wire import flushed
from host.cluster.jetstream_log import JetStreamLog, Outcome
from host.cluster.leases import Seen, lapsed
from host.cluster.subjects import HOST_GROUP, MARKER_TOKEN, group_of, is_shared, token, untoken
from host.state.log import LogError, LogRecord, LogUnavailable, NotOwner, OrderedLog, Recovery, SnapshotSource
from host.state.tick_end import at_tick_end

__all__ = ["ClusterLog"]

_TOLD_GROUPS = frozenset({HOST_GROUP})
"""The groups whose records every process is told of as the stream stores them (``_watch_told``):
the root's, which every client follows."""

_TOLD_MOST = 65536
"""Records told of and not handed over past which the watch is given up until the next reconnect."""

_TOLD_WAIT = 0.5
"""Seconds a frame waits for the follower to hand over a record told of before the server is asked."""

logger = logging.getLogger(__name__)

T = TypeVar("T")

_Item = tuple[str, str, int, dict[str, Any] | None, "asyncio.Future[Any] | Outcome | None"]
"""``(kind, channel, now, body, future)`` of one tick: an action's envelope or a created
channel's ``{"kind", "state"}``; the caller's future, or the outcome it gave (``append_told``),
None for ``created``/``removed``."""


class ClusterLog:
    """The ordered log of one process of a cluster (see the module docstring)."""

    answers_later = True
    """``append`` returns an awaitable: the store finishes each action when it resolves."""

    def __init__(self, url: str, *, holder: str | None = None, timeout: float = 10.0, release_after: float = 10.0,
                 **options: Any) -> None:
        self.url = url
        self.timeout = timeout
        self.release_after = release_after
        """Seconds a session loaded whole (``hold``) stays followed whole once no chat of it is
        served here (``let_go_unserved``)."""
        self._holder = holder
        self._closing = False
        self._connection_watch: Callable[[bool], None] | None = None
        options.setdefault("disconnected_cb", self._nats_disconnected)
        options.setdefault("reconnected_cb", self._nats_reconnected)
        self._options = options
        self._core: JetStreamLog | None = None
        self._seq = 0
        self._background: set[asyncio.Task[Any]] = set()
        """Tasks of this log not tied to a caller (snapshots in the background, a follow again
        after a reconnect): kept referenced, ended by ``close``."""
        self._source: SnapshotSource | None = None
        self._tick: list[_Item] = []
        """The records of the tick being gathered: handed to the core at its end (``_end_of_tick``)."""
        self._next_step_joins = False
        """The tick being gathered waits one loop iteration more (``commit_with_next_step``)."""
        self._only_actions = True
        """Whether the tick being gathered holds actions only, each with its future or outcome
        (``created``/``removed`` have none): then the core may tell each of them itself
        (``JetStreamLog.send_told``)."""
        self._flushed = 0
        """How many ticks were handed to the core (each tick's number, counted from 1)."""
        self._open: dict[int, None] = {}
        """The numbers of the ticks handed over and not finished, oldest first."""
        self._sends: set[asyncio.Task[Any] | _Tick] = set()
        """The ticks handed to the core and not finished yet (a snapshot waits for those before it):
        a tick that claims first as its task, the others as a :class:`_Tick`."""
        self._gate: asyncio.Future[None] | None = None
        """Done once the newest tick that had to claim a group has queued its records (``_send``)."""
        self._waiting: deque[tuple[int, Callable[[], None]]] = deque()
        """``when_durable``'s callbacks, each with the number of the newest tick it waits for."""
        self._finishing = False
        """Whether a tick's results are being handed out now (``_finish``): ``at_end_of_tick``
        then waits for its end rather than a loop turn."""
        self._ending: list[Callable[[], None]] = []
        """``at_end_of_tick``'s callbacks asked for while a tick's results are handed out: run at
        the end of that handing out."""
        self._holders: dict[str, str] = {}
        self._owners_moved = 0
        """Counts the changes of ``_holders`` and ``_claims`` (``owners_changed``)."""
        self._unfollow: Callable[[], Awaitable[None]] | None = None
        """Stops ``follow``'s subscription."""
        self._unwatch: Callable[[], Awaitable[None]] | None = None
        """Stops ``take_over_lapsed``'s watch of the leases."""
        self._follow_take: Callable[[Any, int], None] | None = None
        self._follow_skip: Callable[[str], bool] | None = None
        self._follow_stop: Callable[[], Awaitable[None]] | None = None
        """``follow``'s subscription as it is now (made again after a reconnect)."""
        self._marked: dict[str, str | None] = {}
        """Per group, who wrote the last owner marker the log showed this
        process (recovery, then the follower): the records after it are that holder's."""
        self._seen: dict[str, Seen] = {}
        """The leases of the bucket as last seen (``Leases.watch``)."""
        self._watch_stop: Callable[[], Awaitable[None]] | None = None
        self._claims: dict[str, asyncio.Future[int]] = {}
        """The claims under way, per group (``_claim``)."""
        self._following = False
        """Whether ``follow`` runs (then a claim waits for the follower to pass its marker)."""
        self._followed = 0
        """The sequence of the last record the follower handed over."""
        self._passing: list[tuple[int, asyncio.Future[None]]] = []
        """Claims waiting for the follower to pass their marker."""
        self._catching: list[tuple[int, asyncio.Future[None]]] = []
        """``caught_up``'s waits for the follower to hand over a record."""
        self._caught_up_to = 0
        """Every record the follower is to bring numbered below this was handed over (the server
        said so to ``caught_up``; a record stored later is numbered higher)."""
        self._answered_to = 0
        """``_caught_up_to`` as the server's answers showed it (not raised by a question given up
        on): a later question about every followed subject starts there."""
        self._caught_up_groups: tuple[frozenset[str] | None, int] = (None, 0)
        """The same for the records of some groups only (``caught_up`` given channels): those
        groups, and the number every such record below was handed over."""
        self._told: deque[tuple[int, str, bool]] = deque()
        """Records of the host group and owner markers the stream told of as it stored them
        (``_take_told``): ``(seq, group, marker)``, in order, those the follower handed over
        dropped as ``caught_up`` looks."""
        self._told_since: int | None = None
        """Every such record numbered above this is in ``_told`` (or was handed over), as long as
        the connection it was learnt on lasts (``_told_on``); None: not known (``caught_up`` asks)."""
        self._told_on = -1
        """The client's reconnect count when ``_told_since`` was learnt."""
        self._told_stop: Callable[[], Awaitable[None]] | None = None
        self._told_cleared = False
        """Whether the server said the follower handed over every such record up to ``_told_since``."""
        self._streamed: set[str] = set()
        """The groups whose streamed text the follower takes in (the server sends every other
        record of every group, and only these groups' streamed text)."""
        self._partial: set[str] = set()
        """The groups whose chats this process's store holds without the streamed text others
        logged on them: loaded whole on demand (``hold``)."""
        self._generation = 0
        """The follower's subscription as it is now; a record handed to an earlier one is dropped
        (a new one is made from the last record taken)."""
        self._deliver_to: Callable[[LogRecord], None] | None = None
        """``follow``'s ``deliver``: where ``hold`` hands a partial group's chats whole."""
        self._switch = asyncio.Lock()
        """One change of the follower's subscription at a time."""
        self.failures: list[LogError] = []
        """Failures of ``created``/``removed`` records (they have no future to fail), newest last."""
        self._lost: set[str] = set()
        self._look = asyncio.Event()
        """Set when the lease watch shows a lease of another process, or this process loses a
        group: the lapsed-lease check (``_take_lapsed``) looks every half second only while
        there is such a lease or lost group to look at."""
        """The groups this process ran and lost (``watch_lost``) and no other process claimed
        since: taken back, should their lease lapse or an append claim them, as from a dead owner."""
        self._lost_watch: Callable[[str], None] | None = None
        self._taken_watch: Callable[[str], None] | None = None
        """``take_over_lapsed``'s ``taken``."""
        self._served_at: dict[str, float] = {}
        """Per group followed whole though another process runs it: when (loop time) a chat of
        it was last held or seen served here."""

    # -- opening, and waiting within the timeout -----------------------------------------------

    @property
    def core(self) -> JetStreamLog:
        """The JetStream log this one runs on (``LogUnavailable`` before ``open``)."""
        core = self._core
        if core is None:
            raise LogUnavailable("the cluster's log is not open: await its open() (or recover()) first")
        return core

    async def open(self) -> None:
        """Connect to NATS and learn the stream's last sequence (once; ``recover`` calls it)."""
        if self._core is not None:
            return
        connecting = asyncio.ensure_future(JetStreamLog.connect(self.url, holder=self._holder, timeout=self.timeout,
                                                                **self._options))
        try:
            core = await self._within(connecting)
        except LogUnavailable as error:
            connecting.add_done_callback(_close_late)
            raise LogUnavailable(f"cannot reach NATS at {self.url} within {self.timeout:g} s: is the server running, "
                                 "and is [cluster] url (or --cluster) its address?") from error
        try:
            self._seq = await self._within(core.last_seq())
        except BaseException:
            await core.close(release=False)
            raise
        core.on_lost = self._group_lost
        self._core = core
        self._owners_moved += 1

    async def _within(self, waited: Awaitable[T]) -> T:
        """``waited``, ended and ``LogUnavailable`` when NATS does not answer within ``timeout``.
        Not ``asyncio.wait_for``: that waits for what it cancelled to end, and the NATS client's
        connect, retrying forever, can miss a cancellation (``_end``)."""
        task = asyncio.ensure_future(waited)
        try:
            await asyncio.wait({task}, timeout=self.timeout)
        except asyncio.CancelledError:
            _end(task)
            raise
        if not task.done():
            _end(task)
            raise LogUnavailable(f"NATS did not answer within {self.timeout:g} s")
        return task.result()

    def _in_background(self, coroutine: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- the port -------------------------------------------------------------------------------

    @property
    def seq(self) -> int:
        return self._seq

    @property
    def snapshotting(self) -> bool:
        return False  # a snapshot is written whole, from states taken when it starts

    def bind(self, source: SnapshotSource) -> None:
        self._source = source

    @property
    def owners_changed(self) -> tuple[int, int]:
        """A value that changes whenever ``owner``'s answer for some channel may have (a group
        claimed, taken over, released or lost here; another process's marker read): what ``owner``
        answered is good while it stays the same (``Store``'s ordering gate caches on it)."""
        core = self._core
        return self._owners_moved, core.groups_changed if core is not None else 0

    def owner(self, channel: str) -> str | None:
        group = group_of(channel)
        if self.core.owns(group) and group not in self._claims:
            return None
        # Its lease may have lapsed since: an append then claims the group. While a claim catches
        # up, the previous holder is still named (until its marker is read), so an action is
        # reduced only once numbered, after what that holder logged.
        return self._holders.get(group)

    def append(self, channel: str, now: int, envelope: dict[str, Any]) -> Awaitable[str]:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        if not self._tick:
            at_tick_end(self._end_of_tick)
        self._tick.append(("action", channel, now, envelope, future))
        return future

    def append_told(self, channel: str, now: int, envelope: dict[str, Any], outcome: Outcome) -> bool:
        """``append`` of an envelope of a session this process runs, with the frame (or the
        refusal) handed to ``outcome`` (``jetstream_log.Outcome``: the store's
        ``host.state.awaiting.Pending``) where the acknowledgement is read, with no future and no
        loop turn in between: the store's lean way for a streamed append
        (``Store.dispatch_streamed``). Every other step is ``append``'s (the same tick, fencing,
        durability callbacks, snapshots). False, and nothing appended, unless this process owns
        the session's group and no claim of it is under way: the caller takes ``append``'s way
        (which claims, or reduces only once numbered, as ``owner`` says)."""
        core = self._core
        group = group_of(channel)
        if core is None or group not in core.owned or group in self._claims:
            return False
        if not self._tick:
            at_tick_end(self._end_of_tick)
        self._tick.append(("action", channel, now, envelope, outcome))
        return True

    def created(self, channel: str, kind: str, state: dict[str, Any]) -> None:
        self._queue(("created", channel, 0, {"kind": kind, "state": state}, None))

    def removed(self, channel: str) -> None:
        self._queue(("removed", channel, 0, None, None))

    def _queue(self, item: _Item) -> None:
        if not self._tick:
            at_tick_end(self._end_of_tick)
        self._tick.append(item)
        self._only_actions = False

    def flush(self) -> None:
        """Hand the tick to the core now (``_end_of_tick``'s work, whatever ``commit_with_next_step`` asked)."""
        self._next_step_joins = False
        self._end_of_tick()

    def commit_with_next_step(self) -> None:
        """What the callbacks this iteration queued append (a turn's task's next step, queued
        behind the appends of this one) joins this tick: the tick is handed to the core at the
        end of the next loop iteration instead of this one's, once, so that both are one batch
        and their frames leave together. Nothing when this tick appended nothing."""
        if self._tick:
            self._next_step_joins = True

    def _end_of_tick(self) -> None:
        """The end of the tick that began gathering ``_tick`` (``host.state.tick_end``: in the
        same loop iteration as its appends, before the loop polls; or, once, at the end of the
        next iteration, ``commit_with_next_step``): hand it to the core. When every group of the
        tick is owned already and no claim is under way (a tick's, or a takeover's still catching
        up: the common case has none), the records are queued and sent at once and the
        acknowledgements counted by callbacks (``_Tick``); otherwise a task claims first
        (``_send``). Either way ``_finish`` resolves the tick's futures once every record is
        acknowledged or failed."""
        if self._next_step_joins:
            self._next_step_joins = False
            if self._tick:
                at_tick_end(self._end_of_tick)  # (asked for while tick-end callbacks run: the next poll's)
                return
        if not self._tick:
            return
        items, self._tick = self._tick, []
        only_actions, self._only_actions = self._only_actions, True
        self._flushed += 1
        number = self._flushed
        self._open[number] = None
        core = self._core
        if core is not None and self._gate is None and not self._claims:
            if only_actions:  # (a streamed turn's tick: one pass per record, each told by the core)
                tick = _Tick(self, items, number)
                self._sends.add(tick)
                if core.send_told(items, tick):
                    return
                self._sends.discard(tick)
            owned = core.owned
            for item in items:  # every group of the tick owned (inline: this runs per streamed chunk)
                if group_of(item[1]) not in owned:
                    break
            else:
                tick = _Tick(self, items, number)
                self._sends.add(tick)
                core.queue_tick(items, tick)  # each record's result counted in the tick, in its slot
                if not tick.left and not tick.ended:  # every record refused at once (``_Tick.handed``, inline)
                    tick._end()
                return
        # A tick that must claim first: it holds back the ticks flushed after it from now on
        # (``_gate``), including one that would otherwise take the shortcut above.
        ahead = self._gate
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._gate = gate
        task = asyncio.get_running_loop().create_task(self._send(items, ahead, gate))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)
        task.add_done_callback(lambda done: self._finish(items, _results_of(items, done), number))
        task.add_done_callback(lambda _: self._open_gate(gate))

    def _open_gate(self, gate: asyncio.Future[None]) -> None:
        if not gate.done():
            gate.set_result(None)
        if self._gate is gate:
            self._gate = None

    async def _send(self, items: list[_Item], ahead: asyncio.Future[None] | None,
                    gate: asyncio.Future[None]) -> tuple[list[Any], list[tuple[int, str]]]:
        """Claim what is not owned yet, queue every record for this tick's batches, and wait for
        them all: each record's result (a stamped pair, a sequence or an error), and ``(sequence,
        group)`` of each record stored.

        Ticks reach the core in the order they were flushed, each whole: a tick that must claim
        a group first holds back the ticks flushed after it (``_gate``, set when it is flushed)
        until its records are queued, so that two ticks never claim one group at once (the
        second claim's marker would fence out the first's records) and a later tick's records
        never overtake an earlier tick's in a group. (``flush`` takes its shortcut only when no
        gate is up.)"""
        results: list[Any] = [None] * len(items)
        try:
            if ahead is not None:
                await ahead
            refused: dict[str, LogError] = {}
            for group in dict.fromkeys(group_of(item[1]) for item in items):
                if not self.core.owns(group) or group in self._claims:
                    try:
                        await self._claim(group)
                    except LogError as error:
                        refused[group] = error
            waits = self._hand_to_core(items, results, refused)
        finally:
            self._open_gate(gate)
        done = await asyncio.gather(*(future for _, future in waits), return_exceptions=True)
        for (index, _), result in zip(waits, done):
            results[index] = result[1] if isinstance(result, tuple) else result  # an action's frame, as a tick's
        return results, _stored(items, results)

    def _hand_to_core(self, items: list[_Item], results: list[Any],
                      refused: dict[str, LogError]) -> list[tuple[int, asyncio.Future[Any]]]:
        """Queue a tick's records in the core (synchronously: nothing else is queued in between);
        a record of a group whose claim was refused gets that refusal as its result. Each
        record's result goes to a future of its own, returned with the record's index."""
        core = self.core
        waits: list[tuple[int, asyncio.Future[Any]]] = []
        for index, (kind, channel, now, body, _) in enumerate(items):
            error = refused.get(group_of(channel)) if refused else None
            if error is not None:
                results[index] = error
                continue
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            waits.append((index, future))
            core.queue(future, kind, channel, now, body)  # type: ignore[arg-type]  # an _Item's kind is one of the three
        return waits

    def _finish(self, items: list[_Item], results: list[Any], number: int) -> None:
        """Resolve the futures of tick ``number``; then run the end-of-tick callbacks asked for
        meanwhile (``at_end_of_tick``), and the durability callbacks waiting for no tick older
        than any still open (a future its caller cancelled is left as it is)."""
        self._finishing = True  # (``at_end_of_tick`` from a future's or an outcome's taker: below)
        refused = False
        try:
            for (_kind, channel, _, body, future), result in zip(items, results):
                if isinstance(result, BaseException):
                    refused = True
                    if isinstance(result, NotOwner) and result.owner:
                        self._holders[group_of(channel)] = result.owner
                        self._owners_moved += 1
                    if future is None:
                        self.failures.append(result if isinstance(result, LogError) else LogError(str(result)))
                    elif not future.done():
                        future.set_exception(result)
                elif future is not None:
                    seq = body["serverSeq"]  # type: ignore[index]  # (an action's: its future)
                    if seq > self._seq:
                        self._seq = seq
                    try:
                        future.set_result(result)  # the frame
                    except asyncio.InvalidStateError:  # (a future its caller cancelled)
                        pass
        finally:
            self._finished(number, refused)

    def _finished(self, number: int, refused: bool) -> None:
        """Tick ``number``'s results were handed out (``_finish``, or told by the core itself:
        ``_Tick.told``): run the end-of-tick callbacks asked for meanwhile, then the durability
        callbacks waiting for no tick older than any still open."""
        self._finishing = False
        ending = self._ending
        if ending:
            self._ending = []
            if refused:  # a refusal was told meanwhile: what it queued waits as any other write
                newest = self._flushed + (1 if self._tick else 0)
                self._waiting.extend((newest, callback) for callback in ending)
            else:  # only frames numbered now were queued: durable, in order (``at_end_of_tick``)
                for callback in ending:  # (``_run``, inline: this runs per streamed chunk)
                    try:
                        callback()
                    except Exception:  # (inside the NATS client's read loop, maybe: nothing may escape)
                        logger.exception("a callback waiting for the end of a tick's handing out failed")
        del self._open[number]
        waiting = self._waiting
        if not waiting:
            return
        # Every tick up to the first one still open is finished (ticks may finish out of order:
        # another group's acknowledgement can come first).
        finished = next(iter(self._open), self._flushed + 1) - 1
        while waiting and waiting[0][0] <= finished:
            callback = waiting.popleft()[1]
            try:  # (this may run inside the NATS client's read loop: nothing may escape into it)
                callback()
            except Exception:
                logger.exception("a callback waiting for the log to be durable failed")

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once every tick handed over before it, and the one being gathered
        now, is acknowledged or failed: not the ticks handed over after it (with several
        sessions streaming, some tick is nearly always in flight)."""
        newest = self._flushed + (1 if self._tick else 0)
        if not self._tick and next(iter(self._open), newest + 1) > newest:
            callback()
        else:
            self._waiting.append((newest, callback))

    def at_end_of_tick(self, callback: Callable[[], None]) -> None:
        """``when_durable(callback)`` as a transport's end-of-tick write asks for it (the store's
        ``at_end_of_tick``). Asked for from inside the handing out of a tick's results (a frame
        sent as its action was numbered, ``append_told``): at the end of that handing out, in the
        same loop turn, waiting for no other tick. What the caller queued there is the frames
        numbered in it, durable and in ``serverSeq`` order (the store sends nothing else there:
        ``host.state.awaiting``), so neither a later tick (with several sessions streaming, some
        tick is nearly always in flight) nor another session's slower one holds them back. If the
        handing out told a refusal (the caller may have queued more than frames then), once the
        ticks before it and the one being gathered are durable, as ``when_durable``. Otherwise
        at the end of this loop turn, as ``when_durable``."""
        if self._finishing:
            self._ending.append(callback)
        else:
            asyncio.get_running_loop().call_soon(self.when_durable, callback)

    def replay(self, since: int, channels: Iterable[str]) -> Awaitable[list[dict[str, Any]] | None]:
        return asyncio.ensure_future(self._replay(since, list(channels)))

    async def _replay(self, since: int, channels: list[str]) -> list[dict[str, Any]] | None:
        info = await self.core.js.stream_info(self.core.stream)
        if info.state.first_seq > since + 1 and info.state.last_seq > since:
            return None  # older than the stream keeps
        return [record.body for record in await self.core.read(since, channels)
                if record.kind == "action" and record.body is not None]

    async def follow(self, deliver: Callable[[LogRecord], None]) -> None:
        """Call ``deliver`` with every record other processes append from now on (after ``seq``),
        in log order, as the stream delivers it, but the streamed text of groups this process does
        not serve: a group's records after a marker of this process's are its own (skipped before
        they are decoded; every writer marks first, so the records a dead owner logged before our
        takeover marker still come), and owner markers are taken in. ``seq`` follows them.

        What it takes in: every record of every group but the streamed-text appends
        (``host.cluster.subjects``), and those only of the groups in ``_streamed``, chosen by the
        server. A group whose streamed text is not taken is *partial* here once another process
        writes to it: its chats' states lack the text of their parts, which nothing but a
        subscriber, ``fetchTurns`` or the group's owner reads; ``hold`` loads it whole first. A
        group this process wrote last (its marker) is whole: should another process claim it, its
        streamed text is followed from that marker on. Stopped by ``close``."""

        def ours(group: str) -> bool:
            return self._marked.get(group) == self.core.holder

        def take(record: Any, generation: int) -> None:
            if generation != self._generation or record.seq <= self._followed:
                return  # an earlier subscription's, or taken in already (one made again overlaps)
            again = False
            if record.kind == "owner":
                holder = (record.body or {}).get("holder")
                group = record.channel
                before = self._marked.get(group)
                self._marked[group] = holder
                self._claimed(group, holder)
                if holder != self.core.holder and group not in self._streamed:
                    if before == self.core.holder:
                        # Whole here up to this marker (this process wrote it last): its streamed
                        # text is followed from the marker on, by a subscription made again.
                        self._streamed.add(group)
                        again = True
                    else:
                        self._partial.add(group)
            elif not ours(group_of(record.channel)):
                seq = record.seq if record.kind == "action" else None
                try:
                    self._deliver(deliver, LogRecord(record.kind, record.channel, seq, record.now, record.body), record.seq)
                except Exception:  # one record the store could not fold in must not stop the follower
                    logger.exception("taking in record %d of %s failed", record.seq, record.channel)
            self._followed = record.seq
            if self._passing:  # claims waiting for this point: woken after what it handed over
                passed = [waiter for seq, waiter in self._passing if seq <= record.seq]
                self._passing = [(seq, waiter) for seq, waiter in self._passing if seq > record.seq]
                for waiter in passed:
                    if not waiter.done():
                        waiter.set_result(None)
            if self._catching:  # (``caught_up``) an owner marker may make what it waits for this process's own
                self._woken(record.seq, record.kind == "owner")
            if again:
                self._generation += 1  # nothing after the marker is taken from this subscription
                self._in_background(self._follow_again())

        self._following = True
        self._followed = self._seq
        self._follow_take = take
        self._follow_skip = ours
        self._deliver_to = deliver
        # Everything recovered is whole as of now; what others write from now on is followed
        # without its streamed text (loaded again when needed: ``hold``).
        self._partial.update(group for group, holder in self._marked.items() if holder != self.core.holder)
        await self._within(self._subscribe_follower())
        self._unfollow = self._stop_following
        await self._within(self._watch_told())

    def _follow_subjects(self) -> list[str]:
        subjects = self.core.subjects
        return [subjects.coarse, *(subjects.streamed_filter(group) for group in sorted(self._streamed))]

    async def _subscribe_follower(self) -> None:
        """Follow the log from the last record taken, on the subjects of now."""
        take, generation = self._follow_take, self._generation
        assert take is not None
        self._follow_stop = await self.core.follow(
            self._followed, lambda record: take(record, generation), skip=self._follow_skip,
            subjects=self._follow_subjects())

    async def _follow_again(self) -> None:
        """The follower's subscription made again from the last record taken (its subjects
        changed, or NATS came back)."""
        async with self._switch:
            if self._follow_take is None or self._closing:
                return
            self._generation += 1
            with contextlib.suppress(Exception):
                await self._stop_following()
            try:
                await self._subscribe_follower()
            except Exception:
                logger.exception("following the log again failed")

    def caught_up(self, seq: int, channels: Iterable[str] | None = None) -> Awaitable[None] | None:
        """None when the follower has handed over every record it is to bring numbered below
        ``seq`` (the number of a frame of this process's about to be sent); else an awaitable done
        once it has. The follower brings other processes' records later than this process reads
        its own acknowledgements (the server sends them by other ways), so a frame of this
        process sent at once could come before a lower-numbered record of another's to a
        connection that follows both (``host.state.awaiting``). The server is asked for the
        next record on the follower's subjects past what it handed over (a question per
        subject, all of a round in one write: ``JetStreamLog.next_on``; this process's own
        records, which it skips, passed over); done as well when
        that cannot be known (NATS unreachable, not following: nothing better to wait for).

        ``channels``: only records of these channels' groups matter (the channels another
        process runs that the connections the frames go to follow: ``Store._gated_channels``),
        so the server is asked about those groups' subjects and every group's owner marker
        only (two questions for the root, where the follower's subjects would pass over every
        record of every other process's sessions and this process's own); once a marker is
        found below ``seq`` (a group changing hands), about every subject the follower takes.

        **Told in order, no question.** For the host group's channels (the root: every client
        follows it), the server is not asked once the stream tells this process of each of the
        group's records and each owner marker as it stores it (``_watch_told``): each such record
        comes on this process's connection before the acknowledgement of any record stored after
        it, so when a frame's acknowledgement is read, every one numbered below it that is not in
        ``_told`` was handed over already, and the frame waits only for the follower to hand over
        those told (``_follow_past``). It asks as above where that is not known: records numbered
        up to where the watch began until an answer covered them, a marker told below ``seq`` and
        not handed over, a connection made again since the watch began (until it is made again
        too), a record told and not handed over within ``_TOLD_WAIT``, a stream that does not
        republish (made before), a server in a cluster."""
        if not self._following or self._followed >= seq - 1 or seq <= self._caught_up_to or self._closing:
            return None
        groups = None if channels is None else frozenset(group_of(channel) for channel in channels)
        if groups is not None and groups == self._caught_up_groups[0] and seq <= self._caught_up_groups[1]:
            return None
        if self._told_since is not None and groups and groups <= _TOLD_GROUPS:
            told = self._told_below(seq, groups)
            if told == 0:
                return None
            if told > 0:
                return self._in_background(self._follow_past(told, seq, groups))
        return self._in_background(self._catch_up(seq, groups or None))

    # -- the gate told in order: records of the host group and owner markers told as stored ----------

    async def _watch_told(self) -> None:
        """Learn of every record of the host group and every owner marker as the stream stores it
        (``JetStreamLog.watch_told``), from a number on, so that ``caught_up`` for the root needs
        no question to the server (``_told_below``); nothing when that cannot be relied on."""
        self._told_since = None
        stop, self._told_stop = self._told_stop, None
        if stop is not None:
            with contextlib.suppress(Exception):
                await stop()
        core = self.core
        subjects = core.subjects
        on = core.client.stats["reconnects"]
        self._told.clear()  # (before: what is told from the subscription on counts)
        self._told_cleared = False
        watched = await core.watch_told([subjects.told_of(HOST_GROUP), subjects.told_markers], self._take_told)
        if watched is None or self._closing:
            return
        since, self._told_stop = watched
        self._told_on = on
        if core.client.stats["reconnects"] == on:
            self._told_since = since

    def _take_told(self, seq: int, subject: str) -> None:
        """The stream told of record ``seq`` on ``subject`` as it stored it (the client's read loop:
        before the acknowledgement of any record stored later)."""
        told = self._told
        followed = self._followed
        if seq <= followed or (told and seq <= told[-1][0]):
            return  # handed over already, or told twice (a marker of the host group comes on both subscriptions)
        group_token, _, channel_token = subject[len(self.core.subjects.prefix) + 1:].partition(".")
        group = untoken(group_token) or ""
        marker = channel_token == MARKER_TOKEN
        while told and told[0][0] <= followed:
            told.popleft()
        if (not marker and self._told_cleared and self._marked.get(group) == self.core.holder
                and not any(entry[2] for entry in told)):
            return  # this process's own record (no marker before it left to hand over): the follower skips it
        told.append((seq, group, marker))
        if len(told) > _TOLD_MOST:
            told.clear()
            self._told_since = None  # (not followed for long: the server is asked again)

    def _told_below(self, seq: int, groups: frozenset[str]) -> int:
        """For the records of ``groups`` (the host group's) and the owner markers below ``seq``:
        0 when the follower handed over every one it is to bring, the number of the last it must
        hand over still when it has only to bring those it was told of, -1 when the server must
        be asked (records below what the watch covers not known to be handed over, a marker
        below ``seq`` not handed over: a group changing hands, or the connection the watch was
        on gone)."""
        since = self._told_since
        if since is None or self.core.client.stats["reconnects"] != self._told_on:
            self._told_since = None
            return -1
        if not self._told_cleared:
            cleared = max(self._caught_up_to, self._caught_up_groups[1] if self._caught_up_groups[0] == groups else 0)
            if cleared <= since:
                return -1
            self._told_cleared = True
        told = self._told
        followed = self._followed
        while told and told[0][0] <= followed:
            told.popleft()
        holder = self.core.holder
        wait = 0
        for number, group, marker in told:
            if number >= seq:
                break
            if marker:
                return -1
            if self._marked.get(group) != holder:  # (this process's own: the follower skips it)
                wait = number
        return wait

    async def _follow_past(self, until: int, seq: int, groups: frozenset[str]) -> None:
        """Wait for the follower to hand over record ``until`` (told as stored), and whatever else
        ``_told_below`` then says; the server is asked when it does not come soon."""
        try:
            while until > 0 and not self._closing:
                if self._followed < until:
                    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                    self._catching.append((until, waiter))
                    await asyncio.wait_for(waiter, _TOLD_WAIT)
                until = self._told_below(seq, groups)
        except TimeoutError:
            until = -1
        if until < 0:
            await self._catch_up(seq, groups)

    def _groups_subjects(self, groups: frozenset[str]) -> list[str]:
        """The subjects of ``groups``' records the follower takes (their streamed text only for
        the groups whose streamed text it follows), then every group's owner marker (last)."""
        subjects = self.core.subjects
        ordered = sorted(groups)
        return [*(f"{subjects.prefix}.{token(group)}.*" for group in ordered),
                *(subjects.streamed_filter(group) for group in ordered if group in self._streamed),
                f"{subjects.prefix}.*.{MARKER_TOKEN}"]

    async def _catch_up(self, seq: int, groups: frozenset[str] | None = None) -> None:
        narrowed = self._groups_subjects(groups) if groups is not None else None
        try:
            while self._followed < seq - 1 and not self._closing:
                # From the first record not known to be handed over: past what the follower handed
                # over, and past what an earlier answer showed had nothing more to bring (on every
                # followed subject, or on these groups' and the markers'). The follower hands over
                # other processes' records only, so while this process streams its own it lags by
                # thousands, and the server looks at every message from ``start`` on (its index
                # or, nearer than a few subjects per message, each message's subject) for each
                # get, at every batch of this process's frames (``benchmarks/README.md``, "What a
                # record carries, and the root followed").
                start = max(self._followed + 1, self._answered_to)
                if narrowed is not None and groups == self._caught_up_groups[0]:
                    start = max(start, self._caught_up_groups[1])
                asked = narrowed if narrowed is not None else self._follow_subjects()
                found = await self._next_followed(asked, start, seq)
                coming = min((number for number in found if number), default=0)
                if not coming:
                    if narrowed is not None and groups is not None:
                        if groups == self._caught_up_groups[0]:
                            seq = max(seq, self._caught_up_groups[1])
                        self._caught_up_groups = (groups, seq)
                    else:
                        self._caught_up_to = max(self._caught_up_to, seq)
                        self._answered_to = max(self._answered_to, seq)
                    return
                if narrowed is not None and found[-1] == coming:
                    narrowed = None  # a group changes hands below ``seq``: every followed subject from now on
                if self._followed >= coming:
                    continue  # handed over while the server was asked
                waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self._catching.append((coming, waiter))
                await asyncio.wait_for(waiter, self.timeout)
        except Exception as error:  # (NATS gone, a timeout): the frames are not held for ever
            logger.debug("could not learn whether the follower brought everything before #%d: %s", seq, error)
            self._caught_up_to = max(self._caught_up_to, seq)

    def _woken(self, seq: int, everyone: bool) -> None:
        """The follower handed over record ``seq``: wake ``caught_up``'s waits for it or an
        earlier one (``everyone``: each, to ask again: an owner marker was taken in, after which
        a group's records may be this process's own, which the follower skips)."""
        woken = [waiter for until, waiter in self._catching if everyone or until <= seq]
        self._catching = [(until, waiter) for until, waiter in self._catching if not (everyone or until <= seq)]
        for waiter in woken:
            if not waiter.done():
                waiter.set_result(None)

    async def _next_followed(self, subjects: list[str], start: int, below: int) -> list[int]:
        """For each of ``subjects``, the number of the first record on it from ``start`` on,
        below ``below``, that the follower will hand over (not one of this process's own groups,
        which it skips); 0 for none. One round of questions for all of them at once
        (``JetStreamLog.next_on``: one write, answers read where they arrive); a subject whose
        answer is a record of this process's own is asked again past it in the next round."""
        core = self.core
        prefix = len(core.subjects.prefix) + 1
        found = [0] * len(subjects)
        starts = dict.fromkeys(range(len(subjects)), start)
        while starts:
            asked = list(starts)
            answers = await core.next_on([(subjects[index], starts[index]) for index in asked])
            for index, (number, subject) in zip(asked, answers, strict=True):
                del starts[index]
                if not number or number >= below:
                    continue
                group_token, _, channel_token = subject[prefix:].partition(".")
                if channel_token == MARKER_TOKEN or self._marked.get(untoken(group_token) or "") != core.holder:
                    found[index] = number
                elif number + 1 < below:
                    starts[index] = number + 1  # this process's own record: skipped by the follower
        return found

    def hold(self, channels: Iterable[str]) -> Awaitable[None] | None:
        """Make sure this process's store holds ``channels`` whole before it serves them (a
        subscriber, ``fetchTurns``): None when it does, else an awaitable done once the chats of
        their partial groups were handed to the store whole (read from the group's snapshot and
        records) and their streamed text is followed from then on."""
        wanted = {group_of(channel) for channel in channels if channel_kind(channel) == "chat"}
        now = asyncio.get_running_loop().time()
        for group in wanted:
            self._served_at[group] = now  # (let go no sooner than ``release_after`` from now)
        groups = sorted(group for group in wanted if group in self._partial)
        if not groups:
            return None
        return asyncio.ensure_future(self._load(groups))

    async def _load(self, groups: list[str]) -> None:
        """Hand the store ``groups``' chats whole as of the last record taken, then follow their
        streamed text from there (one subscription made again for all)."""
        async with self._switch:
            groups = [group for group in groups if group in self._partial]
            deliver = self._deliver_to
            if not groups or deliver is None:
                return
            self._generation += 1  # the subscription of now takes nothing more
            upto = self._followed
            with contextlib.suppress(Exception):
                await self._stop_following()
            try:
                for group in groups:
                    seq, saved = await self.core.read_snapshot(group)
                    chats = {uri: AppendingState("chat", body["state"]) for uri, body in saved.items()
                             if body.get("kind") == "chat" and isinstance(body.get("state"), dict)}
                    for record in await self.core.read_group(group, seq, upto):
                        if channel_kind(record.channel) != "chat":
                            continue
                        if record.kind == "created" and record.body is not None:
                            chats[record.channel] = AppendingState("chat", record.body["state"])
                        elif record.kind == "removed":
                            chats.pop(record.channel, None)
                        elif record.kind == "action" and record.body is not None and record.channel in chats:
                            chats[record.channel].apply(record.body["action"], record.now or 0)
                    for uri, chat in chats.items():
                        self._deliver(deliver, LogRecord("created", uri, None, None, {"kind": "chat", "state": chat.state}), 0)
                    self._partial.discard(group)
                    self._streamed.add(group)
            finally:
                if not self._closing:
                    await self._subscribe_follower()

    def let_go_unserved(self, served: Callable[[], Iterable[str]]) -> None:
        """From now on, a group loaded whole for this process's clients (``hold``) that another
        process runs goes back to being followed partial once none of its chats has been served
        here for ``release_after`` seconds (``served()``: the channels this process's clients
        are subscribed to now). Its chats keep the text they had until ``hold`` loads them whole
        again. After ``follow``; stopped by ``close``."""

        async def check() -> None:
            while True:
                await asyncio.sleep(self.release_after / 2)
                self._let_go(served)

        self._in_background(check())

    def _let_go(self, served: Callable[[], Iterable[str]]) -> None:
        """Let go of the groups followed whole though another process runs them and no chat of
        them was served here for ``release_after`` seconds (decided in one step, so that a
        subscription made right after its ``hold`` is seen)."""
        core = self._core
        if core is None or self._follow_take is None or not core.client.is_connected:
            return  # (cut off: the follower is made again once NATS is back)
        candidates = [group for group in self._streamed if not core.owns(group) and group not in self._claims]
        # (a group held and not loaded yet, or this process's own, starts its grace when it is a candidate)
        self._served_at = {group: at for group, at in self._served_at.items() if group in candidates}
        if not candidates:
            return
        now = asyncio.get_running_loop().time()
        serving = {group_of(channel) for channel in served() if channel_kind(channel) == "chat"}
        gone: list[str] = []
        for group in candidates:
            if group in serving:
                self._served_at[group] = now
            elif now - self._served_at.setdefault(group, now) >= self.release_after:
                gone.append(group)
        if not gone:
            return
        for group in gone:
            self._streamed.discard(group)
            self._partial.add(group)
            self._served_at.pop(group, None)
        logger.debug("no client here follows %s any more: its streamed text is not taken in", ", ".join(gone))
        self._in_background(self._follow_again())

    async def _stop_following(self) -> None:
        stop, self._follow_stop = self._follow_stop, None
        if stop is not None:
            await stop()

    async def _resubscribe(self) -> None:
        """Once NATS is back: follow the log again from the last record handed
        over, and watch the leases again (a consumer of the server before a restart may be gone)."""
        if self._follow_take is not None:
            await self._follow_again()
            await self._watch_told()
        if self._watch_stop is not None:
            with contextlib.suppress(Exception):
                await self._watch_stop()
            seen: dict[str, Seen] = {}
            try:
                self._watch_stop = await self.core.leases.watch(seen, self._shown)
            except Exception:
                logger.exception("watching the leases again after a reconnect failed")
            self._seen = seen

    # -- the connection to NATS ------------------------------------------------------------------

    def watch_connection(self, changed: Callable[[bool], None]) -> None:
        """Call ``changed(False)`` when this process loses NATS (cut off: it writes nothing until
        it is back), ``changed(True)`` once it is connected again (each in a loop turn of its own,
        not inside the NATS client's callback)."""
        self._connection_watch = changed

    async def _nats_disconnected(self) -> None:
        self._connection_changed(False)

    async def _nats_reconnected(self) -> None:
        if not self._closing:
            self._in_background(self._resubscribe())
        self._connection_changed(True)

    def _connection_changed(self, connected: bool) -> None:
        watch = self._connection_watch
        if watch is not None and not self._closing:
            asyncio.get_running_loop().call_soon(watch, connected)

    # -- groups this process lost -----------------------------------------------------------------

    def watch_lost(self, lost: Callable[[str], None]) -> None:
        """Call ``lost(group)`` when this process stops running ``group``: its lease was taken, or
        lapses unrenewed (cut off from NATS, a loop held busy), or a batch of it was fenced out.
        Nothing more this process appends to it is stored unless it claims the group again; what
        it runs there should stop (``host.service``)."""
        self._lost_watch = lost

    def _group_lost(self, group: str) -> None:
        if self._closing:
            return
        self._lost.add(group)
        self._look.set()
        logger.warning("this process lost %s (its lease lapsed or was taken): it writes nothing more there", group)
        watch = self._lost_watch
        if watch is not None:
            try:
                watch(group)
            except Exception:
                logger.exception("stopping what runs in %s, lost, failed", group)

    # -- claims, and taking over the groups of a dead owner -----------------------------------------

    async def _claim(self, group: str) -> int:
        """Claim ``group`` (one claim per group at a time: a second caller waits for the first);
        done once the follower, if it runs, has handed the store every record up to the
        marker. Raises ``NotOwner`` / ``LogUnavailable`` / ``LogError`` as ``JetStreamLog.claim``."""
        claiming = self._claims.get(group)
        if claiming is None:
            claiming = asyncio.ensure_future(self._claim_and_catch_up(group))
            self._claims[group] = claiming
            self._owners_moved += 1
            claiming.add_done_callback(lambda _: self._claim_ended(group))
        return await asyncio.shield(claiming)

    async def _claim_and_catch_up(self, group: str) -> int:
        marker = await self.core.claim(group)
        if self._following and self._followed < marker:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._passing.append((marker, waiter))
            try:
                await asyncio.wait_for(waiter, self.timeout)
            except TimeoutError as error:  # the follower is stuck: not ours to write yet
                await self.core.release(group)
                raise LogUnavailable(f"claimed {group} but could not read what its previous owner logged "
                                     f"within {self.timeout:g} s") from error
        if group in self._partial:  # its chats lack the previous owner's streamed text: loaded first
            try:
                await self._load([group])
            except Exception as error:
                await self.core.release(group)
                raise LogUnavailable(f"claimed {group} but could not read what its previous owner logged: {error}") from error
        if group in self._lost:
            # Claimed back after this process lost it, no one else having run it since: what
            # it ran there was stopped then and is ended now, as a dead owner's is.
            self._lost.discard(group)
            taken = self._taken_watch
            if taken is not None:
                asyncio.get_running_loop().call_soon(self._taken, group, taken)
        return marker

    async def take_over_lapsed(self, taken: Callable[[str], None]) -> None:
        """Claim every group whose holder let its lease lapse (a process killed or cut off), and
        call ``taken(group)`` once this process owns it and holds everything its previous holder
        logged on it. After ``follow``; stopped by ``close``."""
        self._taken_watch = taken
        self._watch_stop = await self._within(self.core.leases.watch(self._seen, self._shown))
        task = asyncio.get_running_loop().create_task(self._take_lapsed(taken))

        async def stop() -> None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            watch_stop, self._watch_stop = self._watch_stop, None
            if watch_stop is not None:
                await watch_stop()

        self._unwatch = stop

    def _shown(self, lease: Seen) -> None:
        """The lease watch put ``lease`` in ``_seen``: one of another process wakes ``_take_lapsed``."""
        if lease.holder != self.core.holder:
            self._look.set()

    async def _take_lapsed(self, taken: Callable[[str], None]) -> None:
        """Every half second, while the lease watch shows a lease of another process or this
        process lost a group: claim the groups whose lease lapsed (see ``take_over_lapsed``).
        While neither is so (a process alone in its cluster, or holding every lease), nothing can
        lapse that it could take: it waits without a timer until one is (``_look``), then looks
        every half second as before. (Woken at the lapses themselves instead, a takeover was
        missed in the fault tests: not kept, ``benchmarks/README.md``.)"""
        leases = self.core.leases
        while True:
            me = self.core.holder
            if not self._lost and all(lease.holder == me for lease in self._seen.values()):
                self._look.clear()
                await self._look.wait()
            await asyncio.sleep(leases.ttl / 12)  # noticed within half a second of the lapse
            if not self.core.client.is_connected:
                continue  # cut off: our own leases lapse too; nothing to take
            seen, now = self._seen, leases.now()
            # A dead owner's groups, and those this process lost whose lease (still in its name)
            # lapsed with no one else taking them: then no other process would.
            ours = [group for group in self._lost if group in seen and seen[group].holder == self.core.holder
                    and seen[group].until <= now]
            for group in [*lapsed(seen, now, self.core.holder), *ours]:
                if self.core.owns(group) or group in self._claims:
                    continue
                try:
                    await self._claim(group)  # (one of ours: its ``taken`` is called by the claim)
                except LogError as error:  # another process was quicker (the watch shows it soon), or NATS went
                    logger.debug("not taking %s over: %s", group, error)
                    continue
                if group not in ours:
                    logger.info("took over %s from %s, whose lease lapsed", group, seen.get(group, Seen("?", 0)).holder)
                    self._taken(group, taken)

    def _claim_ended(self, group: str) -> None:
        self._claims.pop(group, None)
        self._owners_moved += 1

    def _taken(self, group: str, taken: Callable[[str], None]) -> None:
        self._holders.pop(group, None)
        self._owners_moved += 1
        try:
            taken(group)
        except Exception:
            logger.exception("taking %s over failed", group)

    # -- forwarding a dispatch to the session's owner (core NATS request/reply, not the stream) ------

    def _forward_subject(self, holder: str) -> str:
        return f"ahp.forward.{token(holder)}"

    async def serve_forwarded(self, handle: Callable[[str, dict[str, Any], dict[str, Any] | None], Coroutine[Any, Any, str | None]]) -> None:
        """Answer the dispatches other processes forward here: ``handle(channel, action, origin)``
        returns None once the action is logged, or why it was refused."""

        async def take(message: Any) -> None:
            try:
                asked = json.loads(message.data)
                answer: str | None = await handle(asked["channel"], asked["action"], asked["origin"])
            except Exception as error:  # a malformed request or a failed dispatch: said to the asker
                answer = f"the owner could not take it: {error}"
            await message.respond(json.dumps({"refused": answer}).encode())

        async def subscribe() -> None:
            await self.core.client.subscribe(self._forward_subject(self.core.holder), cb=take)
            await flushed(self.core.client)  # the server has the subscription before this returns

        await self._within(subscribe())

    def shared(self, channel: str) -> bool:
        """Whether every process changes ``channel`` (the root: ``subjects.is_shared``), each change
        forwarded to the process that writes it (``Store._forward_shared``)."""
        return is_shared(channel)

    def forward(self, owner: str, channel: str, action: dict[str, Any], origin: dict[str, Any] | None) -> Awaitable[str | None]:
        """Hand a client's dispatch to ``owner``, the process running its session: None once it is
        logged there (the client's echo comes through the stream), or why it was refused."""
        async def ask() -> str | None:
            try:
                reply = await self.core.client.request(
                    self._forward_subject(owner), json.dumps({"channel": channel, "action": action, "origin": origin}).encode(),
                    timeout=self.timeout)
            except Exception as error:  # no responder (the owner is gone), a timeout
                return f"{owner}, which runs this session, did not answer: {error or type(error).__name__}"
            refused = json.loads(reply.data).get("refused")
            return str(refused) if refused is not None else None

        return asyncio.ensure_future(ask())

    # -- forwarding a request about a session to its owner (core NATS request/reply) -----------------

    def _request_subject(self, holder: str) -> str:
        return f"ahp.request.{token(holder)}"

    async def serve_requests(self, handle: Callable[[str, dict[str, Any], str], Coroutine[Any, Any, dict[str, Any]]]) -> None:
        """Answer the requests other processes forward here: ``handle(method, params, client_id)``
        returns the answer to send back: ``{"result": ...}`` or
        ``{"error": {"code": ..., "message": ...}}``."""

        async def take(message: Any) -> None:
            try:
                asked = json.loads(message.data)
                answer = await handle(asked["method"], asked["params"], asked["clientId"])
            except Exception as error:  # a malformed request: said to the asker
                answer = {"error": {"code": None, "message": f"the owner could not take it: {error}"}}
            await message.respond(json.dumps(answer).encode())

        async def subscribe() -> None:
            await self.core.client.subscribe(self._request_subject(self.core.holder), cb=take)
            await flushed(self.core.client)  # the server has the subscription before this returns

        await self._within(subscribe())

    def forward_request(self, owner: str, method: str, params: dict[str, Any], client_id: str) -> Awaitable[dict[str, Any]]:
        """Hand a client's request to ``owner``, the process running what it is about: its answer
        (``serve_requests``), or ``{"error": {"code": None, ...}}`` when ``owner`` did not answer."""
        async def ask() -> dict[str, Any]:
            try:
                reply = await self.core.client.request(
                    self._request_subject(owner), json.dumps({"method": method, "params": params, "clientId": client_id}).encode(),
                    timeout=self.timeout)
            except Exception as error:  # no responder (the owner is gone), a timeout
                return {"error": {"code": None, "message": f"{owner}, which runs this session, did not answer: "
                                                          f"{error or type(error).__name__}"}}
            answer: dict[str, Any] = json.loads(reply.data)
            return answer

        return asyncio.ensure_future(ask())

    # -- stored content another process holds (core NATS request/reply) -----------------------------

    CONTENT_SUBJECT = "ahp.content"
    CONTENT_WAIT = 2.0
    """Seconds to wait for a process that holds a content reference before it counts as not found."""

    async def serve_content(self, lookup: Callable[[str], tuple[bytes, str] | None]) -> None:
        """Answer other processes' questions for stored content (``find_content``) that
        ``lookup(uri)`` finds here; stay silent otherwise, so that the one process holding it is
        the one that answers."""

        async def take(message: Any) -> None:
            try:
                found = lookup(message.data.decode())
                if found is not None:
                    data, content_type = found
                    await message.respond(json.dumps({"type": content_type, "data": base64.b64encode(data).decode()}).encode())
            except Exception as error:  # larger than the server's payload limit, a malformed question
                logger.warning("could not answer a question for stored content: %s", error)

        async def subscribe() -> None:
            await self.core.client.subscribe(self.CONTENT_SUBJECT, cb=take)
            await flushed(self.core.client)  # the server has the subscription before this returns

        await self._within(subscribe())

    def find_content(self, uri: str) -> Awaitable[tuple[bytes, str] | None]:
        """The bytes and content type behind ``uri`` from the process that stored it, or None
        when no process answers within ``CONTENT_WAIT`` seconds."""
        async def ask() -> tuple[bytes, str] | None:
            try:
                reply = await self.core.client.request(self.CONTENT_SUBJECT, uri.encode(), timeout=self.CONTENT_WAIT)
            except Exception:  # no responders, a timeout: nobody has it
                return None
            answer = json.loads(reply.data)
            return base64.b64decode(answer["data"]), str(answer["type"])

        return asyncio.ensure_future(ask())

    # -- questions every process answers (core NATS request/reply) ----------------------------------
    # Which process holds a client (``present``: a client that left while the owner was dead), and
    # whether a client of any process watches a session (``watched``: its MCP servers' idle stop).
    # A process answers only "yes" and stays silent otherwise, so the asker's wait ends at the first
    # yes, and at the wait's end when nobody has it.

    PRESENCE_SUBJECT = "ahp.presence"
    PRESENCE_WAIT = 2.0
    """Seconds to wait for a process that holds a client before it counts as held by none."""
    WATCHERS_SUBJECT = "ahp.watchers"
    WATCHERS_WAIT = 2.0
    """Seconds to wait for a process whose clients watch a session before it counts as unwatched."""

    async def serve_presence(self, holds: Callable[[str], bool]) -> None:
        """Answer ``present(client_id)`` when ``holds(client_id)`` says it is connected here."""
        await self._answer(self.PRESENCE_SUBJECT, holds, "whether a client is connected here")

    async def serve_watchers(self, watches: Callable[[str], bool]) -> None:
        """Answer ``watched(session)`` when ``watches(session)`` says a client here watches it."""
        await self._answer(self.WATCHERS_SUBJECT, watches, "whether a client watches a session here")

    def present(self, client_id: str) -> Awaitable[bool]:
        """Whether a process of the cluster (this one included, when it serves ``serve_presence``)
        has ``client_id`` connected: False once none answered within ``PRESENCE_WAIT`` seconds;
        True too when the question could not be asked (NATS unreachable: not known to be gone)."""
        return self._ask(self.PRESENCE_SUBJECT, client_id, self.PRESENCE_WAIT)

    def watched(self, session: str) -> Awaitable[bool]:
        """Whether a client of some process of the cluster (this one included, when it serves
        ``serve_watchers``) watches ``session``: False once none answered within
        ``WATCHERS_WAIT`` seconds; True too when the question could not be asked (NATS
        unreachable: not known to be unwatched)."""
        return self._ask(self.WATCHERS_SUBJECT, session, self.WATCHERS_WAIT)

    async def _answer(self, subject: str, says_yes: Callable[[str], bool], what: str) -> None:
        """Answer questions on ``subject`` with a yes when ``says_yes(question)``, else not at all."""

        async def take(message: Any) -> None:
            try:
                if says_yes(message.data.decode()):
                    await message.respond(b"1")
            except Exception as error:  # a malformed question, NATS gone meanwhile
                logger.warning("could not answer %s: %s", what, error)

        async def subscribe() -> None:
            await self.core.client.subscribe(subject, cb=take)
            await flushed(self.core.client)  # the server has the subscription before this returns

        await self._within(subscribe())

    def _ask(self, subject: str, question: str, wait: float) -> Awaitable[bool]:
        """Whether any process said yes to ``question`` within ``wait`` seconds (True when it could
        not be asked)."""
        async def ask() -> bool:
            try:
                await self.core.client.request(subject, question.encode(), timeout=wait)
            except (NatsTimeout, NoRespondersError):
                return False
            except Exception:
                return True
            return True

        return asyncio.ensure_future(ask())

    def _claimed(self, group: str, holder: str | None) -> None:
        """An owner marker: ``holder`` claimed ``group`` (``owner`` names it unless it is us)."""
        if holder and holder != self.core.holder:
            self._holders[group] = holder
            self._lost.discard(group)  # another process runs it now, and ended what we left
        else:
            self._holders.pop(group, None)
        self._owners_moved += 1

    def _deliver(self, deliver: Callable[[LogRecord], None], record: LogRecord, seq: int) -> None:
        self._seq = max(self._seq, seq)
        deliver(record)

    async def recover(self) -> Recovery:
        await self.open()
        return await self._within(self._recover())

    async def _recover(self) -> Recovery:
        snapshots = await self.core.read_snapshots()
        channels: dict[str, dict[str, Any]] = {}
        for _, saved in snapshots.values():
            channels.update(saved)
        # From the start of the stream: a group that never wrote a snapshot has records anywhere
        # (the stream's retention bounds how many there are).
        records = []
        for record in await self.core.read(0):
            covered = snapshots.get(group_of(record.channel))
            if record.kind == "owner":
                holder = (record.body or {}).get("holder")
                self._marked[record.channel] = holder
                if holder and holder != self.core.holder:
                    self._holders[group_of(record.channel)] = holder
                else:
                    self._holders.pop(group_of(record.channel), None)
                self._owners_moved += 1
                continue
            if covered is not None and record.seq <= covered[0]:
                continue
            seq = record.seq if record.kind == "action" else None
            records.append(LogRecord(record.kind, record.channel, seq, record.now, record.body))
        self._seq = max(self._seq, await self.core.last_seq())
        return Recovery(min((seq for seq, _ in snapshots.values()), default=0), channels, bool(snapshots), records)

    async def snapshot_now(self) -> None:
        if self._source is None or self._core is None:
            return
        self.flush()
        changes, removed = self._source.take_changes(True)
        try:
            await self._within(self._write_snapshots(changes))
        except BaseException:
            self._source.restore_changes(changes, removed)
            raise

    def snapshot_soon(self) -> None:
        source = self._source
        if source is None or self._core is None:
            return
        self.flush()
        changes, removed = source.take_changes(True)

        def done(task: asyncio.Task[None]) -> None:
            if task.cancelled() or task.exception() is not None:
                source.restore_changes(changes, removed)

        self._in_background(self._within(self._write_snapshots(changes))).add_done_callback(done)

    async def _write_snapshots(self, changes: dict[str, tuple[str, dict[str, Any], list[list[int]]]]) -> None:
        """Write each owned group's channels as of the sequence of the last record its states
        hold: every record flushed before the states were taken (``sends``), and nothing
        flushed after (a batch may hold both, so the
        sequence comes from the records themselves, not from the group's last)."""
        lasts = {group: self.core.known_last(group) for group in {group_of(uri) for uri in changes} if self.core.owns(group)}
        earlier = [send.finished() if isinstance(send, _Tick) else send for send in self._sends]
        for outcome in await asyncio.gather(*earlier, return_exceptions=True):
            if isinstance(outcome, BaseException):
                continue
            for seq, group in outcome[1]:
                if group in lasts:
                    lasts[group] = max(lasts[group], seq)
        by_group: dict[str, dict[str, dict[str, Any]]] = {}
        for uri, (kind, state, older_rows) in changes.items():
            if older_rows:
                raise LogError(f"{uri} has turns paged out of its state into the SQLite journal's rows, which a "
                               "cluster's log does not keep: run a cluster with [journal] recent_turns = 0")
            by_group.setdefault(group_of(uri), {})[uri] = {"kind": kind, "state": state}
        for group, channels in by_group.items():
            if group in lasts:
                await self.core.put_snapshot(group, lasts[group], channels)

    async def close(self) -> None:
        self._closing = True
        core = self._core
        if core is None:
            return
        try:
            if self._unwatch is not None:
                await self._within(self._unwatch())
            if self._unfollow is not None:
                await self._within(self._unfollow())
            if self._told_stop is not None:
                await self._within(self._told_stop())
            await self._within(core.close())
        finally:
            for task in list(self._background):
                task.cancel()
            await asyncio.gather(*self._background, return_exceptions=True)
            if not core.client.is_closed:  # what did not end within the timeout: disconnected anyway
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(core.close(release=False), self.timeout)


class _Tick:
    """One tick's records queued in the core, each result counted here by the core itself, in the
    acknowledgement's callback, with no call per record (``jetstream_log.Counted``: no future, no
    task, no loop turn); ``finished()`` gives what ``_send`` gives, to a snapshot waiting for it."""

    __slots__ = ("log", "items", "number", "results", "left", "ended", "waiter", "by_core")

    def __init__(self, log: ClusterLog, items: list[_Item], number: int) -> None:
        self.log = log
        self.items = items
        self.number = number
        self.results: list[Any] = [None] * len(items)
        """Each record's result: an action's frame, a ``created``/``removed`` record's sequence,
        or the exception it failed with (not filled in when the core told each record itself)."""
        self.by_core = False
        """Whether the core told each record's outcome itself (``told``)."""
        self.left = len(items)
        self.ended = False
        self.waiter: asyncio.Future[tuple[list[Any], list[tuple[int, str]]]] | None = None

    def _end(self) -> None:
        if self.ended:
            return
        self.ended = True
        self.log._sends.discard(self)
        if self.waiter is not None:
            self.waiter.set_result(self._outcome())
        self.log._finish(self.items, self.results, self.number)

    counted = _end
    """Every record's result is in (``jetstream_log.Counted``)."""

    def telling(self) -> None:
        """The core tells each record's outcome itself now (``jetstream_log.Told``): what their
        takers ask for at the end of the tick waits for ``told``."""
        self.log._finishing = True

    def told(self, last: int) -> None:
        """Every record was stored, ``last`` the highest sequence, and each outcome told its frame
        by the core (``jetstream_log.Told``): ``_finish`` without its loop over the records."""
        self.ended = True
        log = self.log
        log._sends.discard(self)
        if last > log._seq:
            log._seq = last
        self.by_core = True
        if self.waiter is not None:
            self.waiter.set_result(self._outcome())
        log._finished(self.number, False)

    def _outcome(self) -> tuple[list[Any], list[tuple[int, str]]]:
        """What ``_send`` gives: each record's result, and ``(sequence, group)`` of those stored."""
        if self.by_core:  # told by the core: every record stored, its envelope numbered
            numbers: list[Any] = [item[3]["serverSeq"] for item in self.items]  # type: ignore[index]
            return numbers, _stored(self.items, numbers)
        return self.results, _stored(self.items, self.results)

    def finished(self) -> asyncio.Future[tuple[list[Any], list[tuple[int, str]]]]:
        if self.waiter is None:
            self.waiter = asyncio.get_running_loop().create_future()
            if self.ended:
                self.waiter.set_result(self._outcome())
        return self.waiter


def _end(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and again every 0.1 s until it ends: a cancellation that lands while an
    ``asyncio.wait_for`` inside it completes is lost (Python 3.11), and a connect of the NATS
    client that misses one goes on retrying for ever."""
    if task.done():
        if not task.cancelled():
            task.exception()  # retrieved: it was given up on
        return
    task.cancel()
    asyncio.get_running_loop().call_later(0.1, _end, task)


def _close_late(connecting: asyncio.Future[JetStreamLog]) -> None:
    """A connect given up on that connected after all: closed, not left open."""
    if not connecting.cancelled() and connecting.exception() is None:
        asyncio.ensure_future(connecting.result().close(release=False))


def _stored(items: list[_Item], results: list[Any]) -> list[tuple[int, str]]:
    """``(sequence, group)`` of each record of a tick that was stored."""
    stored: list[tuple[int, str]] = []
    for item, result in zip(items, results):
        if isinstance(result, int):
            stored.append((result, group_of(item[1])))
        elif result is not None and not isinstance(result, BaseException):
            body = item[3]
            assert body is not None
            stored.append((body["serverSeq"], group_of(item[1])))
    return stored


def _results_of(items: list[_Item], handed: asyncio.Future[tuple[list[Any], list[tuple[int, str]]]]) -> list[Any]:
    """A tick's results from its task; every record failed when the task itself failed."""
    try:
        return handed.result()[0]
    except BaseException as error:  # the whole tick failed (its claim's task)
        failure = error if isinstance(error, LogError) else LogUnavailable(str(error))
        return [failure] * len(items)


def _conforms(log: ClusterLog) -> OrderedLog:
    """mypy checks here that :class:`ClusterLog` has every member of the port."""
    return log
