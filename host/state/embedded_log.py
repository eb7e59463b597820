"""The embedded ordered log: ``host.state.log.OrderedLog`` on the SQLite journal, in this process.

The default of one machine and no service: this process owns every session (``owner`` is always
None) and numbers every envelope itself, at once. It keeps the sequence, a replay window in memory,
and, given a ``host.state.journal.Journal``, makes everything durable there; without one (tools,
tests, an in-memory host) it only numbers and keeps the replay window. What it writes, and the
format on disk, are the journal's (this module only says *when*).

Invariants:

* ``seq`` only grows, across restarts too (it is recovered from the journal).
* An envelope is built and serialised exactly once (``append``: ``ahp.jsonrpc.action_frame``): the
  journal keeps that JSON and fan-out sends that frame.
* **Durable before a frame leaves.** Journal writes are committed in groups: at the end of the
  event-loop tick that appended them (``host.state.tick_end.at_tick_end``, asked for by the tick's
  first append, ahead of the transports' end-of-tick writes: once that iteration's callbacks have
  run, before the loop polls again, with no iteration of its own), or, when the last commit is younger than
  ``MIN_COMMIT_INTERVAL``, once it is that old (under load one commit serves several ticks); at
  once past ``FLUSH_ROWS`` rows. Transports wait for it before sending any frame
  (``when_durable``, or ``flush`` before a write), so a frame never leaves before its action is
  durable. (A timer per append, cancelled by the commit of the same tick, cost a timer handle and
  its pushing and popping on the event loop's heap per streamed token: ``benchmarks/chunk_end_to_end.py``.)
  A tick may ask that what the callbacks it queued append joins its commit
  (``commit_with_next_step``: a turn's start and its task's first step, one transaction).
* **The replay window** holds a contiguous run of the newest envelopes, at most ``replay_capacity``
  of them and ``replay_chars`` characters of their JSON (the newest always); a gap it cannot cover
  makes ``replay`` return None and the caller falls back to snapshots. The journal keeps the same
  window across restarts (``recover`` fills it again, and pruning keeps its rows).
* **The journal stays bounded on disk**: a snapshot is taken after ``snapshot_every`` entries or
  ``snapshot_chars`` characters journaled (the log says when; its ``SnapshotSource``, the store,
  which channels changed; the journal plans and writes what of them: ``Journal.plan``,
  ``encode_plans``, ``write_planned``), in the background in small steps, and after each commit the
  WAL's size decides a checkpoint (``_check_wal``: a worker thread past ``wal_checkpoint_bytes``,
  this thread past ``wal_limit_bytes``).
* **No long commit on the loop at a model's pace**: once the journal's tail (streamed texts,
  durable there) holds ``TAIL_SETTLE_BYTES``, a worker thread writes its rows into SQLite
  (``_settle_in_background``), and the tail is settled and started again here once that is done,
  writing only what came meanwhile; not all at once by the loop when the tail fills. A commit that
  needs a SQLite transaction meanwhile, or behind more than ``SETTLE_INLINE_BYTES`` of tail, waits
  for such a worker (``_hold_for_settle``: its frames wait, the loop runs on) and goes with that
  settle.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator
from itertools import islice
from typing import Any, TypeVar

from ahp.jsonrpc import action_frame
from ahp.state.appends import UNKEYED, expand
from host.state.journal import (
    SETTLE_INLINE_BYTES,
    TAIL_SETTLE_BYTES,
    WAL_CHECKPOINT_BYTES,
    WAL_LIMIT_BYTES,
    Journal,
    SnapshotPieces,
    SnapshotPlan,
    encode_plans,
)
from host.state.log import LogRecord, Recovery, SnapshotSource
from host.state.tick_end import at_tick_end

__all__ = ["EmbeddedLog", "FLUSH_ROWS", "MIN_COMMIT_INTERVAL", "REPLAY_CHARS", "SNAPSHOT_CHARS", "at_once"]

T = TypeVar("T")

logger = logging.getLogger(__name__)

FLUSH_ROWS = 1_000
"""Pending journal rows past which the log commits at once."""

MIN_COMMIT_INTERVAL = 0.001
"""Seconds between two of the log's own commits (the end of a tick that appended, ``when_durable``)."""

REPLAY_CHARS = 4_000_000
"""Most characters of envelopes the replay window (in memory and in the journal) holds, besides
its count, by default (``server.replay_buffer_chars``): a terminal printing megabytes must not make
reconnect replay, or the journal, hold them."""

SNAPSHOT_CHARS = 8_000_000
"""Characters journaled since the last snapshot past which the next one is taken, besides
``snapshot_every`` entries, by default (``server.snapshot_every_chars``): what the journal holds
beyond its states stays under this plus ``REPLAY_CHARS``, however large the actions."""


def at_once(awaitable: Awaitable[T]) -> T:
    """The result of ``awaitable`` (``recover``, ``snapshot_now`` or ``close`` of this log, or the
    store's over it), run to its end here, with no event loop: they never wait for anything. For
    a caller that has no loop (a script, a test, a benchmark), which this log treats as such (a
    snapshot due is written at once, not in the background). ``RuntimeError`` if it did wait."""
    steps: Generator[Any, None, T] = awaitable.__await__()
    try:
        steps.send(None)
    except StopIteration as finished:
        return finished.value
    steps.close()
    raise RuntimeError("at_once: this waited for something; await it on an event loop instead")


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("writing a snapshot failed; the journal keeps every entry until one succeeds",
                     exc_info=task.exception())


class _NoSource:
    """The source of a log nobody bound yet: nothing to write."""

    def take_changes(self, full: bool) -> tuple[dict[str, tuple[str, dict[str, Any], list[list[int]]]], set[str]]:
        return {}, set()

    def restore_changes(self, channels: Iterable[str], removed: Iterable[str]) -> None:
        return None

    def snapshot_written(self, chats: Iterable[str]) -> None:
        return None


class EmbeddedLog:
    """The ordered log of one process (see the module docstring)."""

    def __init__(
        self,
        journal: Journal | None = None,
        *,
        replay_capacity: int = 10_000,
        replay_chars: int = REPLAY_CHARS,
        snapshot_every: int = 5_000,
        snapshot_chars: int = SNAPSHOT_CHARS,
        wal_checkpoint_bytes: int = WAL_CHECKPOINT_BYTES,
        wal_limit_bytes: int = WAL_LIMIT_BYTES,
    ) -> None:
        self.journal = journal
        """The SQLite journal; None once closed, or for a log that keeps nothing on disk."""
        self.seq = 0
        """The highest sequence number appended (``serverSeq``)."""
        self._source: SnapshotSource = _NoSource()
        self._snapshot_every = snapshot_every
        self._snapshot_chars = snapshot_chars
        self._wal_checkpoint_bytes = wal_checkpoint_bytes
        self._wal_limit_bytes = wal_limit_bytes
        self._replay_channels: deque[str] = deque(maxlen=replay_capacity)
        self._replay_texts: deque[str] = deque(maxlen=replay_capacity)
        """The replay window, oldest first: each envelope's channel and JSON, in two deques side by
        side. It is contiguous and, unless empty, ends at ``seq``, so the serverSeqs follow. Strings, and no container per envelope: each envelope kept as dicts was walked by
        every young and middle collection it lived through, at a model's pace tens of thousands of
        them, in pauses of the whole event loop (``benchmarks/README.md``, "Capacity: where a tick
        goes"), and a tuple per envelope was walked by one (``benchmarks/README.md``, "The collector
        while streaming, third round"). ``replay`` parses what it returns."""
        self._replay_chars = replay_chars
        self._replay_size = 0
        """Characters the replay window holds."""
        self._flush_timer: asyncio.TimerHandle | None = None
        self._tick_armed = False
        """The end of this tick commits (``_end_of_tick`` is queued)."""
        self._next_step_joins = False
        """This tick's commit waits one loop iteration more (``commit_with_next_step``)."""
        self._last_commit = 0.0
        self._on_commit: list[Callable[[], None]] = []
        self.checkpoint_task: asyncio.Future[None] | None = None
        """The WAL checkpoint running in a worker thread, if any."""
        self._commits_held = False
        """A checkpoint's last pass runs in a worker: the log's own commits wait (``_flush_soon``)."""
        self.settle_task: asyncio.Task[None] | None = None
        """The journal's tail being written into SQLite by a worker thread, if it is."""
        self.snapshot_task: asyncio.Task[None] | None = None
        """The snapshot being written in the background, if any."""
        self.snapshotting = False
        """A snapshot's plans are out: a chat's turns may not move out of its state meanwhile."""
        self._write_all = False
        """The next snapshot writes every channel (one was cancelled by ``close``)."""

    def bind(self, source: SnapshotSource) -> None:
        self._source = source

    def owner(self, channel: str) -> str | None:
        """Always this process: one process, one journal."""
        return None

    # -- appending -----------------------------------------------------------------------------

    def append(self, channel: str, now: int, envelope: dict[str, Any], key: tuple[Any, ...] | None = UNKEYED) -> str:
        """Number an envelope and serialise it once, journal it (committed soon) and keep it in the
        replay window; its frame. ``key``: the action's run key when the caller worked it out
        already (``ahp.state.appends.AppendingState.key``), for the journal's runs."""
        seq = self.seq + 1
        self.seq = seq
        envelope["serverSeq"] = seq
        envelope_json, frame = action_frame(envelope)
        journal = self.journal
        if journal is not None:
            # Only an envelope that is the action alone (no origin) may join a text run.
            journal.append_action(channel, seq, now, envelope_json, None if "origin" in envelope else envelope["action"], key)
            if journal.pending >= FLUSH_ROWS:
                self._flush_soon()
            elif not self._tick_armed and self._flush_timer is None:
                # ``_commit_at_end_of_tick``, inlined: the tick's first append
                try:
                    at_tick_end(self._end_of_tick)
                except RuntimeError:  # no event loop (tools, tests): commit into SQLite at once
                    self.flush(settle=True)
                else:
                    self._tick_armed = True
        # ``_remember``, inlined: this runs for every streamed token.
        texts = self._replay_texts
        if texts.maxlen != 0:
            if len(texts) == texts.maxlen:
                self._replay_size -= len(texts[0])  # the deques drop their oldest as they append
            texts.append(envelope_json)
            self._replay_channels.append(channel)
            self._replay_size += len(envelope_json)
            while self._replay_size > self._replay_chars and len(texts) > 1:
                self._replay_size -= len(texts.popleft())
                self._replay_channels.popleft()
        if journal is not None and (journal.entries_since_snapshot >= self._snapshot_every
                                    or journal.chars_since_snapshot >= self._snapshot_chars):
            self._maybe_snapshot()
        return frame

    def created(self, channel: str, kind: str, state: dict[str, Any]) -> None:
        journal = self.journal
        if journal is not None:
            journal.append_created(channel, state, kind)
            self._schedule_flush()
            self._maybe_snapshot()

    def removed(self, channel: str) -> None:
        if self.journal is not None:
            self.journal.append_removed(channel)
            self._schedule_flush()

    # -- durability ----------------------------------------------------------------------------

    def flush(self, settle: bool = False) -> None:
        """Make every journaled entry durable (cheap when there is nothing to commit), then run the
        callbacks ``when_durable`` deferred. ``settle``: into SQLite itself, the journal's tail
        with it (``Journal.flush``). (``_end_of_tick`` does the same, inlined.)"""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        journal = self.journal
        if journal is not None and (journal.pending or settle):
            if journal.flush(settle):  # only a SQLite transaction grows the WAL (not the tail)
                self._check_wal(background=True)
            self._last_commit = time.monotonic()
        if self._on_commit:
            callbacks, self._on_commit = self._on_commit, []
            for callback in callbacks:
                callback()
        journal = self.journal  # (a callback may have closed the log)
        if journal is not None and journal.tail_bytes >= TAIL_SETTLE_BYTES and journal.unsettled:
            self._settle_soon(journal)

    def _settle_soon(self, journal: Journal) -> bool:
        """Start writing the tail's rows into SQLite in a worker thread, unless one is at it or a
        checkpoint's last pass runs; whether one is at it now."""
        if self._settling():
            return True
        if self._commits_held:
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False  # no event loop (tools, tests): the next SQLite commit settles the tail
        self.settle_task = loop.create_task(self._settle_in_background(journal))
        self.settle_task.add_done_callback(self._settle_failure)
        return True

    def _settling(self) -> bool:
        return self.settle_task is not None and not self.settle_task.done()

    def _hold_for_settle(self) -> bool:
        """Whether the log's own commit waits for a worker's settle (whose end commits it): a
        commit that needs a SQLite transaction while the worker writes the tail (it would wait
        for the worker's write lock, in SQLite's busy sleeps of 1, 2, 5 ms..., blocking the loop),
        or while more than ``SETTLE_INLINE_BYTES`` of tail wait to be settled (its transaction
        would write them all, on the loop: 7-9 ms at 100 sessions). Frames wait, the loop runs on."""
        journal = self.journal
        if journal is None or not journal.transaction_rows:
            return False
        if self._settling():
            return True
        return journal.unsettled > 0 and journal.tail_bytes >= SETTLE_INLINE_BYTES and self._settle_soon(journal)

    async def _settle_in_background(self, journal: Journal) -> None:
        """Have a worker thread write the journal's tail rows into SQLite (``Journal.settle_rows``),
        then, on this thread, settle the tail and start it again, with the commits that waited:
        that transaction writes only what came meanwhile (a tail's rows written here held the
        loop 7 ms at 100 sessions)."""
        generation, rows = journal.rows_to_settle()
        try:
            await asyncio.to_thread(journal.settle_rows, rows)
            if self.journal is journal:
                journal.rows_settled(generation, len(rows))
        finally:
            # Commits held for this (``_hold_for_settle``) go now; a failed worker's rows with them.
            if self.journal is journal and not self._commits_held:
                self.flush(settle=True)

    def _settle_failure(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None and self.journal is not None:
            logger.error("writing the journal's tail into SQLite failed; its next commit there writes it",
                         exc_info=task.exception())

    def when_durable(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once everything journaled so far is committed: at once if nothing is
        pending; else at the next commit, which is now if the last one is ``MIN_COMMIT_INTERVAL``
        old, or when it is (group commit: under load one commit serves the frames of several ticks,
        at the cost of at most that interval of latency)."""
        if self.journal is None or not self.journal.dirty:
            callback()
            return
        self._on_commit.append(callback)
        wait = self._last_commit + MIN_COMMIT_INTERVAL - time.monotonic()
        if wait <= 0:
            self._flush_soon()
        else:
            self._arm_flush(wait)

    def at_end_of_tick(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` at the end of this event-loop tick once everything journaled is
        committed: from the log's own end-of-tick callback (queued if this tick appended nothing),
        after its commit, or after the group commit's timer when the last commit is younger than
        ``MIN_COMMIT_INTERVAL``. The transports' writes wait so (``host.transport.ws_protocol``):
        one callback per tick serves the commit and every connection."""
        self._on_commit.append(callback)
        if not self._tick_armed:
            self._tick_armed = True
            at_tick_end(self._end_of_tick)

    def _schedule_flush(self) -> None:
        if self.journal is not None and self.journal.pending >= FLUSH_ROWS:
            self._flush_soon()
        elif not self._tick_armed and self._flush_timer is None:
            self._commit_at_end_of_tick()

    def _commit_at_end_of_tick(self) -> None:
        """Have what this tick appends committed at its end (``_end_of_tick``); with no event loop
        (tools, tests), commit into SQLite at once."""
        try:
            at_tick_end(self._end_of_tick)
        except RuntimeError:
            self.flush(settle=True)
            return
        self._tick_armed = True

    def commit_with_next_step(self) -> None:
        """What the callbacks this tick queued append (a turn's task's first step, queued after this
        tick's end-of-tick commit) joins this tick's commit: ``_end_of_tick`` waits one loop
        iteration more, once, so that both are one transaction and their frames leave together (a
        crash between them is not possible: neither is durable, and no frame of either left,
        before the one commit). Nothing when this tick appended nothing."""
        if self._tick_armed:
            self._next_step_joins = True

    def _end_of_tick(self) -> None:
        """Commit what was appended (a group commit: not sooner than ``MIN_COMMIT_INTERVAL`` after the
        last one, by a timer then), which runs the callbacks waiting for it; with nothing to commit,
        run them now."""
        if self._next_step_joins:  # ``commit_with_next_step``: after the callbacks queued behind this one
            self._next_step_joins = False
            at_tick_end(self._end_of_tick)
            return
        self._tick_armed = False
        journal = self.journal
        if journal is None or not journal.pending:
            if self._on_commit:
                callbacks, self._on_commit = self._on_commit, []
                for callback in callbacks:
                    callback()
            return
        now = time.monotonic()
        wait = self._last_commit + MIN_COMMIT_INTERVAL - now
        if wait > 0:
            self._arm_flush(wait)
        elif self._commits_held or (journal.transaction_rows and self._hold_for_settle()):
            # ``_flush_soon``, inlined (once per tick): a streamed chunk leaves no ``transaction_rows``
            self._flush_timer = None
        else:
            # ``flush()``, inlined (once per tick), with one clock read: the commit's time is this tick's end.
            if self._flush_timer is not None:
                self._flush_timer.cancel()
                self._flush_timer = None
            if journal.flush():  # only a SQLite transaction grows the WAL (not the tail)
                self._check_wal(background=True)
            self._last_commit = now
            if self._on_commit:
                callbacks, self._on_commit = self._on_commit, []
                for callback in callbacks:
                    callback()
            journal = self.journal  # (a callback may have closed the log)
            if journal is not None and journal.tail_bytes >= TAIL_SETTLE_BYTES and journal.unsettled:
                self._settle_soon(journal)

    def _arm_flush(self, delay: float) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush(settle=True)  # no event loop (tools, tests): commit into SQLite at once
            return
        due = loop.time() + delay
        if self._flush_timer is not None:
            if self._flush_timer.when() <= due:
                return
            self._flush_timer.cancel()
        self._flush_timer = loop.call_at(due, self._flush_soon)

    def _flush_soon(self) -> None:
        """The log's own commits (timer, size, ``when_durable``): ``flush``, unless a checkpoint's
        last pass runs (a few milliseconds), whose end commits what waited meanwhile."""
        if self._commits_held or self._hold_for_settle():
            self._flush_timer = None
            return
        self.flush()

    def _check_wal(self, background: bool) -> None:
        """Keep the WAL near ``wal_checkpoint_bytes``: past it, checkpoint (in a worker thread when
        ``background`` and an event loop runs, else here); past ``wal_limit_bytes``, here at once."""
        journal = self.journal
        if journal is None:
            return
        size = journal.wal_bytes()
        if size < self._wal_checkpoint_bytes:
            return
        if size >= self._wal_limit_bytes or not background:
            journal.checkpoint_here()  # after a worker's pass that is running, if any
            return
        task = self.checkpoint_task
        if task is not None and not task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            journal.checkpoint_here()
            return
        self.checkpoint_task = loop.create_task(self._checkpoint_in_background(journal))

    async def _checkpoint_in_background(self, journal: Journal) -> None:
        """Copy the WAL from a worker thread, so that its copying and fsyncs stay off the event loop.
        A pass copies the frames committed when it started: the first copies the bulk, the second
        what was committed meanwhile (fewer), and the third, while the log's own commits wait
        (frames wait for it, the loop runs on), what is left, so that it completes and the commit
        after it starts the WAL again. If a commit came in anyway (``flush`` from outside), the next
        commit past the threshold starts another round."""
        try:
            for _ in range(2):
                await asyncio.to_thread(journal.checkpoint)
                if self.journal is not journal:
                    return  # closed meanwhile (closing checkpoints)
            self._commits_held = True
            await asyncio.to_thread(journal.checkpoint)
        finally:
            self._commits_held = False
        if self.journal is journal and (self._on_commit or journal.dirty):
            self.flush()

    # -- the replay window ---------------------------------------------------------------------

    @property
    def replay_window(self) -> list[tuple[int, str, str]]:
        """The replay window as ``(serverSeq, channel, the envelope's JSON)``, oldest first: a copy,
        for readers outside the streaming path (tests, tools)."""
        first = self.seq - len(self._replay_texts) + 1
        return [(first + index, channel, text)
                for index, (channel, text) in enumerate(zip(self._replay_channels, self._replay_texts))]

    def replay(self, since: int, channels: Iterable[str]) -> list[dict[str, Any]] | None:
        """Envelopes on ``channels`` with serverSeq > since, or None when the window has a gap (each
        parsed again from the JSON its frame carried: a new dict, equal to the one dispatched)."""
        if since > self.seq:
            return None
        texts = self._replay_texts
        first = self.seq - len(texts) + 1
        if since < self.seq:
            if not texts or first > since + 1:
                return None
        wanted = channels if isinstance(channels, (set, frozenset)) else set(channels)
        skip = max(0, since + 1 - first)
        return [json.loads(text) for channel, text in islice(zip(self._replay_channels, texts), skip, None)
                if channel in wanted]

    def _remember(self, seq: int, channel: str, envelope_json: str) -> None:
        """Add an envelope's JSON to the replay window, dropping the oldest past its count or
        characters (the newest always stays). ``seq`` is ``self.seq``, and follows the window's
        newest (or the window is empty)."""
        texts = self._replay_texts
        if texts.maxlen == 0:
            return
        if len(texts) == texts.maxlen:
            self._replay_size -= len(texts[0])
        texts.append(envelope_json)
        self._replay_channels.append(channel)
        self._replay_size += len(envelope_json)
        while self._replay_size > self._replay_chars and len(texts) > 1:
            self._replay_size -= len(texts.popleft())
            self._replay_channels.popleft()

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

    # -- snapshots -----------------------------------------------------------------------------

    async def recover(self) -> Recovery | None:
        """The journal's newest snapshot (a chat's rows as they are, for its older turns) and the
        entries after it; once those are read to the end, ``seq`` and the replay window are as
        they were. None without a journal."""
        journal = self.journal
        if journal is None:
            return None
        snapshot = journal.latest_snapshot(raw_kinds=frozenset({"chat"}))
        self._replay_texts.clear()  # ``seq`` moves on below: a window must end at it (filled again at the end)
        self._replay_channels.clear()
        self._replay_size = 0
        upto = 0
        if snapshot is not None:
            upto = snapshot.upto
            self.seq = snapshot.seq
        return Recovery(seq=self.seq, channels=dict(snapshot.channels) if snapshot is not None else {},
                        from_snapshot=snapshot is not None, records=self._records_after(journal, upto))

    def _records_after(self, journal: Journal, upto: int) -> Iterator[LogRecord]:
        for item in journal.entries_after(upto):
            if item.kind == "action":
                self.seq = max(self.seq, item.seq or 0)
            body = json.loads(item.body or "{}") if item.kind != "removed" else None
            yield LogRecord(item.kind, item.channel, item.seq, item.now, body)  # type: ignore[arg-type]  # the journal's three kinds
        recent: list[tuple[int, str, dict[str, Any]]] = []
        for item in journal.recent_actions(self._replay_texts.maxlen or 0):
            for envelope in expand(json.loads(item.body or "{}")):
                recent.append((envelope["serverSeq"], item.channel, envelope))
        recent.sort(key=lambda entry: entry[0])  # runs of different channels interleave in seq
        self._replay_texts.clear()
        self._replay_channels.clear()
        self._replay_size = 0
        for seq, channel, envelope in self._contiguous(recent):
            self._remember(seq, channel, action_frame(envelope)[0])

    async def snapshot_now(self) -> None:
        """Write a snapshot at once, on this thread (start-up, shutdown, tests): never waits."""
        self._snapshot_here()

    def _snapshot_here(self) -> None:
        if self.journal is None:
            return
        upto, seq, plans, removed = self.begin_snapshot()
        try:
            for _ in self.write_snapshot(self.journal, upto, seq, encode_plans(plans), removed):
                self._check_wal(background=False)
        finally:
            self.snapshotting = False
        self.journal.checkpoint_here()

    def snapshot_soon(self) -> None:
        """Start a snapshot in the background now, unless one is running (it then covers this)."""
        if self.journal is None or (self.snapshot_task is not None and not self.snapshot_task.done()):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no event loop (tools, tests): the next snapshot does it
        self.snapshot_task = loop.create_task(self.snapshot_in_background())
        self.snapshot_task.add_done_callback(_log_failure)

    def _maybe_snapshot(self) -> None:
        journal = self.journal
        if journal is None or (journal.entries_since_snapshot < self._snapshot_every
                               and journal.chars_since_snapshot < self._snapshot_chars):
            return
        if self.snapshot_task is not None and not self.snapshot_task.done():
            return  # one at a time; this one's changes go in the next
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._snapshot_here()  # no event loop (tools, tests)
            return
        self.snapshot_task = loop.create_task(self.snapshot_in_background())
        self.snapshot_task.add_done_callback(_log_failure)

    async def snapshot_in_background(self) -> None:
        """A snapshot that never holds the event loop long: states are serialised in a worker
        thread (they are immutable, so it reads them safely while the loop goes on), and the
        journal writes them in small steps with the loop running in between."""
        journal = self.journal
        if journal is None:
            return
        upto, seq, plans, removed = self.begin_snapshot()
        try:
            pieces = await asyncio.to_thread(encode_plans, plans)
            for _ in self.write_snapshot(journal, upto, seq, pieces, removed):
                self._check_wal(background=True)
                task = self.checkpoint_task
                if task is not None and not task.done():
                    await asyncio.wait({task})  # its commits would keep a checkpoint from completing
                else:
                    await asyncio.sleep(0)
                if self.journal is not journal:
                    return  # closed meanwhile: close() wrote a full snapshot
            self._check_wal(background=True)
        except BaseException:
            self._source.restore_changes(plans, removed)  # not written: the next snapshot takes them
            self.snapshotting = False
            raise

    def begin_snapshot(self) -> tuple[int, int, dict[str, SnapshotPlan], set[str]]:
        """Which channels a snapshot writes (those the source says changed since the last, all of
        them for a full one); the journal plans what of each (``Journal.plan``)."""
        journal = self.journal
        assert journal is not None
        self.snapshotting = True
        changes, removed = self._source.take_changes(journal.needs_full_snapshot or self._write_all)
        self._write_all = False
        upto = journal.begin_snapshot()
        plans = {uri: journal.plan(uri, kind, state, older) for uri, (kind, state, older) in changes.items()}
        return upto, self.seq, plans, removed

    def write_snapshot(self, journal: Journal, upto: int, seq: int, pieces: dict[str, SnapshotPieces],
                       removed: set[str]) -> Iterator[None]:
        """The steps of writing a snapshot (``Journal.write_planned``) and pruning after it; the
        caller may let the event loop run between them."""
        yield from journal.write_planned(upto, seq, pieces, removed)
        self.snapshotting = False
        yield
        yield from journal.prune(upto, self._replay_texts.maxlen or 0, self._replay_chars)
        # Their turns now have rows to be read back from.
        self._source.snapshot_written([uri for uri, (_, plan, *_) in pieces.items() if plan.turns is not None])

    async def close(self) -> None:
        """A last snapshot (of every channel, if one was being written), then close the journal:
        never waits."""
        if self.journal is not None:
            if self.snapshot_task is not None and not self.snapshot_task.done():
                self.snapshot_task.cancel()
                self._write_all = True  # what it was writing is written here instead
            self._snapshot_here()
            self.journal.close()
            self.journal = None
