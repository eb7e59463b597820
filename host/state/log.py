"""The ordered log: the port through which the store makes every change ordered and durable.

The store (``host.state.store``) is written against :class:`OrderedLog` and nothing else of how
its changes are kept. ``host.state.embedded_log`` is the default implementation (the SQLite journal
of ``host.state.journal``, one process, no service); a networked log (NATS JetStream, several
processes sharing one order) is another. Nothing in turns, tools or dialects knows which is in use.

**What a log is.** One host-wide order of action envelopes. Each appended envelope gets the next
*sequence number* of that order, and that number *is* its AHP ``serverSeq``: the numbers come from
the log, never from the store. They only grow, across restarts and across processes, and a reader
from a sequence sees the envelopes in that order. Creating and removing a channel are logged too,
in order with the actions, but take no sequence number (AHP gives them none).

The contract, method by method (``Embedded`` says what the default does; a networked log may do
what ``Networked`` says and stay within the contract):

* ``seq``: the highest sequence number appended so far (recovered at start: 0 for an empty log).
* ``owner(channel)``: who may append to ``channel`` (a session's channels, its chats and their
  sub-agent chats, are owned together): ``None`` means this process. Embedded: always ``None``.
  Networked: the process holding the session's lease; a process that is not the owner forwards
  the session's dispatches to it and never appends (not written yet: today's store never asks;
  an append to it is refused, and the store undoes the action and tells its client).
* ``append(channel, now, envelope)``: number one accepted action of the current event-loop tick
  and record it. ``envelope`` is ``{"channel", "action", "serverSeq", "origin"}`` (``origin`` only
  for a client's dispatch) as the store built it, ``serverSeq`` holding a placeholder so that the
  keys' order, and with it the bytes, are fixed: the log sets it to its number and serialises the
  envelope exactly once with ``ahp.jsonrpc.action_frame``. It keeps the JSON and returns the
  frame, which is what fan-out sends: an envelope is serialised once for the log and every
  subscriber together. ``now`` is the clock reading the reducer used (a replay must reduce the
  same). Embedded: returns at once; the entry waits in memory for the next commit. Networked: may
  return an *awaitable* of the frame instead, resolved once the log has given the number (one
  round trip per tick: the log batches what a tick appends), and may fail it with
  :class:`NotOwner` (the session's lease was lost: a fenced append, e.g. JetStream's expected
  last subject sequence refused) or :class:`LogUnavailable`. Nothing is sent or observed of an
  envelope before its number is known. Such a log says so with a class attribute
  ``answers_later = True`` (absent: false): the store then reduces each action at once and sends
  and observes it when its awaitable resolves, in ``serverSeq`` order, and undoes one the log
  refuses and tells its client (``host.state.awaiting``).
* ``created(channel, kind, state)`` / ``removed(channel)``: log a channel appearing (with its
  whole state: also how ``Store.replace`` swaps a state at start-up) or going away.
* ``flush()`` / ``when_durable(callback)``: durability. ``flush`` commits everything appended so
  far, now; ``when_durable`` calls ``callback`` once everything appended before the call is
  durable (at once when it already is). **A frame never leaves before its envelope is durable**:
  transports send a tick's frames from such a callback. Embedded: group commits of SQLite (WAL,
  ``synchronous=NORMAL``). Networked: the acknowledgement of the tick's batch.
* ``replay(since, channels)``: the envelopes on ``channels`` with ``serverSeq > since`` in
  sequence order, or ``None`` when the log cannot give all of them (they are older than the replay
  window it keeps: the client then gets snapshots). Embedded: from a bounded window in memory (a
  count and a number of characters of JSON), the same window after a restart, at once. Networked:
  may return an awaitable (a read from that sequence on the log; AHP's ``reconnect`` awaits it).
* Snapshots. ``await recover()`` reads the newest snapshot and everything logged after it (a
  :class:`Recovery`; None for a log that keeps nothing), at start; the store folds them into its
  states with the same reducers. ``await snapshot_now()`` writes one at once (start-up, shutdown,
  tests), ``snapshot_soon()`` in the background (a chat has a page of turns to move out of its
  state); otherwise the log decides when (after a number of entries or characters), and reads what
  to write from its :class:`SnapshotSource` (the store: which channels changed, their states, and
  the rows of a chat's turns older than its state). Embedded: incremental snapshots in the
  journal's tables, written in small steps in the background. ``snapshotting`` is true while a
  snapshot's plans are out (a chat's older turns may not move meanwhile: ``host.state.older_turns``).
* ``follow(deliver)``, optional (absent: one process writes the log): hand ``deliver`` every record
  other processes append from ``seq`` on, as a :class:`LogRecord`, in log order, on the store's
  loop; the store folds them in and sends them to its subscribers (``Store.take_in``), without its
  observers (what an action causes is the owner's business).
* ``hold(channels)``, optional (with ``follow``): None when the store holds ``channels`` whole,
  else an awaitable done once the log has handed ``deliver`` their states whole (as ``created``
  records, in log order with the rest). A networked log may leave out of what it delivers the
  streamed text of sessions other processes run (their chats are then held without the text of
  their parts, enough for a session list); the store asks before it serves a channel
  (``Store.hold``).
* ``append_told(channel, now, envelope, outcome)``, optional (a log that answers later): ``append``
  of an envelope of a session this process runs, the frame (or the refusal) handed to ``outcome``
  (``set_result``/``set_exception``, as a future takes them) where the log learns it, with no
  future and no loop turn in between; False, and nothing appended, when the session is not this
  process's now (the store then takes ``append``'s way). The store's lean way for a streamed
  append (``Store.dispatch_streamed``) uses it; every guarantee of ``append`` holds.
* ``at_end_of_tick(callback)``, optional: ``when_durable(callback)`` for a transport's end-of-tick
  write, called where the log can run it soonest (the embedded log: after its end-of-tick commit;
  a networked log: asked for while it hands out an acknowledged tick's outcomes, at the end of
  that handing out, in the same loop turn, with no wait for any other tick: the taker of an
  ``append_told`` outcome sends nothing there but the frames it was handed, which are durable
  and come in ``serverSeq`` order, unless the handing out told a refusal; asked for elsewhere,
  as ``when_durable``). Absent: the transport waits with ``when_durable``.
* ``commit_with_next_step()``, optional: what the callbacks queued so far in this event-loop
  tick append (a turn's task's next step) joins what this tick appended, one commit (the embedded
  log's) or one batch (a networked log's, which hands a tick over at its end,
  ``host.state.tick_end``), so that their frames leave together. Absent: nothing.
* ``bind(source)``: the store hands itself to the log once, before ``recover``.
* ``await close()``: a last snapshot (embedded), then let go of the log. Appending after it is a bug.

``recover``, ``snapshot_now`` and ``close`` are coroutines, so that a networked log waits for the
network on the store's own event loop (no thread of its own). Embedded: they do their work and
return without ever waiting, so a caller with no event loop (a script, a test, a benchmark) runs
them with ``host.state.embedded_log.at_once``.

Errors: every failure of a log is a :class:`LogError` (a ``host.errors.JournalError``, so the
host reports it as it always reported a journal that cannot be written)::

    JournalError
     └── LogError            the ordered log cannot take or give what was asked
          ├── NotOwner       another process owns the session (an append was fenced)
          └── LogUnavailable the log cannot be reached; this process must stop writing
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from host.errors import JournalError

__all__ = ["LogError", "LogRecord", "LogUnavailable", "NotOwner", "OrderedLog", "Recovery", "SnapshotSource"]


class LogError(JournalError):
    """The ordered log cannot take or give what was asked."""


class NotOwner(LogError):
    """An append was refused because another process owns the session (its lease was lost or
    never held): the caller stops writing to it; what it appended since it lost the lease never
    became durable, so no client saw it."""

    def __init__(self, channel: str, owner: str | None) -> None:
        super().__init__(f"{channel} is run by {owner or 'another process'}: this process may not write to it")
        self.channel = channel
        self.owner = owner


class LogUnavailable(LogError):
    """The log cannot be reached: this process stops writing rather than diverge, and tells its
    clients."""


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One thing logged after a snapshot, as ``recover`` reads it back, in log order."""

    kind: Literal["action", "created", "removed"]
    channel: str
    seq: int | None
    """The sequence number (``serverSeq``) of an action (its last, for a coalesced text run); None
    for ``created`` and ``removed``."""
    now: int | None
    """The clock reading the reducer used, for an action."""
    body: dict[str, Any] | None
    """An action's envelope (a coalesced run's joined envelope: reducing it gives the same state
    as each of its pieces), a created channel's ``{"kind", "state"}``, None for ``removed``."""


@dataclass(frozen=True, slots=True)
class Recovery:
    """What ``recover`` gives: the newest snapshot and what was logged after it."""

    seq: int
    """The sequence number the snapshot is as of (0 without one); the log's ``seq`` is the highest
    in the log once ``records`` are read."""
    channels: dict[str, dict[str, Any]]
    """The snapshot's channels: ``{"kind", "state"}``, or for a chat held turn by turn
    ``{"kind", "parts"}``, its rows as ``host.state.turn_pages.split_turns`` reads them. Empty
    without a snapshot."""
    from_snapshot: bool
    """Whether there was a snapshot (else every channel recovered counts as changed)."""
    records: Iterable[LogRecord]
    """Everything logged after the snapshot, in log order. The caller reads them to the end: the
    log recovers its ``seq`` and replay window as they are read."""


class SnapshotSource(Protocol):
    """What a log reads to write a snapshot: the store, which knows which channels changed since
    the last one. States are immutable values, so a log may serialise them in a worker thread."""

    def take_changes(self, full: bool) -> tuple[dict[str, tuple[str, dict[str, Any], list[list[int]]]], set[str]]:
        """The channels changed since the last call (every channel when ``full``) as ``uri → (kind,
        state, the log rows of each of its turns older than its state, oldest first)``, and the
        channels removed since; from now on they count as written (``restore_changes`` if not)."""
        ...

    def restore_changes(self, channels: Iterable[str], removed: Iterable[str]) -> None:
        """A snapshot of these failed: they count as changed again."""
        ...

    def snapshot_written(self, chats: Iterable[str]) -> None:
        """A snapshot wrote these chats turn by turn: their older turns may leave their states now
        (``host.state.older_turns``)."""
        ...


class OrderedLog(Protocol):
    """The port (see the module docstring for the contract of each member)."""

    @property
    def seq(self) -> int: ...

    @property
    def snapshotting(self) -> bool: ...

    def bind(self, source: SnapshotSource) -> None: ...

    def owner(self, channel: str) -> str | None: ...

    def append(self, channel: str, now: int, envelope: dict[str, Any]) -> str | Awaitable[str]: ...

    def created(self, channel: str, kind: str, state: dict[str, Any]) -> None: ...

    def removed(self, channel: str) -> None: ...

    def snapshot_soon(self) -> None: ...

    def flush(self) -> None: ...

    def when_durable(self, callback: Callable[[], None]) -> None: ...

    def replay(self, since: int, channels: Iterable[str]) -> (
            list[dict[str, Any]] | None | Awaitable[list[dict[str, Any]] | None]): ...

    async def recover(self) -> Recovery | None: ...

    async def snapshot_now(self) -> None: ...

    async def close(self) -> None: ...
