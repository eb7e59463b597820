"""Accepted actions waiting for their number, for a log whose ``append`` answers later.

A networked log (``host.cluster.ordered_log.ClusterLog``) numbers a tick's envelopes once its
batch is acknowledged: ``append`` returns an awaitable of the frame (``host.state.log``). The store
reduces an action at once (the next action of the tick is reduced on top of it) and hands the rest
of its way, fan-out and the observers, to :class:`Awaiting`, which finishes each action when its
number is known.

Invariants:

* **Nothing leaves before the log acknowledged it**: an action reaches no subscriber and no
  observer until its awaitable resolved (the acknowledgement is the log's durability, so a frame
  sent then is durable).
* **Frames leave in ``serverSeq`` order**: actions finish as a prefix of the order they were
  dispatched in (an action whose number came waits for every earlier one), and the actions of one
  prefix leave sorted by their numbers (a log may number two owner groups' batches of a tick in
  either order: a session with a batch in flight sends its next one after it, another session's
  at once), none of them before an action numbered lower that is still queued: not answered yet
  (the log stamps the number as it reads the acknowledgement and answers later: with the rest of
  the tick, or through a future, in the next loop turn), or answered behind one that is not.
* **Records taken in are ordered with this process's frames** (a connection may follow a session
  run here and one run by another process, whose records the follower brings: ``Store.take_in``).
  Both ways round: a record taken in waits (``must_hold``/``hold_taken``) while an action of this
  process added before it may be numbered lower and is not sent yet (its acknowledgement not read,
  or read and not handed out), and goes to those subscribed when it was taken in (a later
  subscriber's snapshot holds it); and a frame of this process waits, when a connection it
  goes to also follows a channel another process runs (``gated``), until the follower has taken
  in every record of others numbered below it (``caught_up``: the follower brings them later than this process reads
  the acknowledgements of its own later ones, nearly always under load). A connection thus reads
  strictly increasing ``serverSeq`` with none of its channels' skipped, and a ``reconnect`` with
  the last it read misses nothing.
* **A refused append is undone and told**: when the log refuses an action (``NotOwner``: another
  process runs the session; ``LogUnavailable``; any ``LogError``), its channel goes back to the
  state before it, the actions dispatched on that channel after it (reduced on top of it) are
  dropped with it, and whoever dispatched it is told the log's reason (the store's ``on_refused``: a client gets
  a rejection in its own version's shapes); the rejection observers hear of it as of any refusal. Nobody else ever saw it.

**An action the log tells at once.** A log may hand an action's outcome straight to its
:class:`Pending` (``Awaiting.told``: the pending is the log's ``Outcome``, no future), in the
callback where the acknowledgement is read: the action finishes there, with no loop turn for a
future's callbacks (the store's lean way for a streamed append: ``Store.dispatch_streamed``). Such
an action's ``before`` is a mark of its channel's state (``AppendingState.mark``, no run reduced)
and is restored the same way if the log refuses it. Inside such a callback only streamed frames
leave (each numbered and durable, nothing read of a state): an answered action of another kind
at the head of the queue (its observers read states that may hold actions not durable yet) is
finished in the next loop turn, after them, so that a transport's end-of-tick write asked for
there need wait for no other tick (``host.state.log``, ``at_end_of_tick``).

Cost of that ordering: nothing for the embedded log, and nothing for frames of channels no
connection of which follows another process's channel (``gated``: the store's set of channels
that do, computed when a subscription or an owner changes, not per frame; a connection that
follows only channels run here is never held); otherwise, per batch of this process's frames
whose number is past what the follower handed over (their own streamed text is not followed, so
nearly every batch), a question or two to the log's server before they leave (``ClusterLog.caught_up``, asked
about the groups of the channels run elsewhere that those connections follow, and the owner
markers), or, for the root's group, none: the log is told of its records and the markers as the
stream stores them, before the acknowledgement of any later record, and its answer is at once
(None) unless the follower has yet to hand over one of those it was told of. Frames still leave in one order: while a batch waits, the frames
after it wait too (a connection may follow a gated channel and one that is not). The waits
overlap: a batch numbered past what the waits under way were asked about is asked about at once
(up to ``CHECKS`` at a time), not once the wait before it ended, so a frame waits about one round
trip to the log's server instead of up to two; the waiting frames are taken off the queue once
(``_held``) and leave, in order, as the waits end (an answer for a higher number covers every
lower one).

**Written as soon as sent.** A frame sent from a drain in a loop turn of its own (an action not
streamed, answered through a future; a frame held for the order above) is numbered and durable:
a transport's write asked for as it is sent (``Store.at_end_of_tick``) runs once the frames
handed out with no observer in between are sent, before the first observer runs (``handing``,
``handed``), not after every tick handed over before it (with several sessions streaming, some
tick is nearly always in flight). What an observer or a refusal sends reads states that may hold
actions not durable yet: it waits as any other write (``when_durable``).

**A subscriber's snapshot between two numbers.** The store's state of a channel holds this
process's actions as soon as they are dispatched, but ``serverSeq`` only counts the numbered
ones: a snapshot taken while an action of its channel waits would hold it below a ``fromSeq``
lower than its number, and the subscriber would get it again as a frame. So a snapshot over such
a log waits for a moment when none of its channels' actions is queued here (``busy``/``quiet``,
``Store.settle``), per channel (a process with many sessions streaming has some action queued
nearly always); the queue's progress wakes the wait (``_drain``), no polling. A record taken in
and held (``hold_taken``) needs no wait: it goes to those subscribed when it was taken in, and a
later snapshot holds it under a ``fromSeq`` at or above its number (the log counted it as it
handed it over).

What it does not do: an action dropped because an earlier one on its channel was refused may
still have been stored by the log (a lease claimed again in between): it is logged as a warning
and this process's state of that channel lacks it until it is read from the log again (no re-read
is written yet).

Cost: nothing for the embedded log (the store never makes an :class:`Awaiting` for it).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from ahp.state.appends import Mark
from host.state.channels import Channel
from host.state.log import LogUnavailable

__all__ = ["CHECKS", "Awaiting", "Pending"]

logger = logging.getLogger(__name__)

CHECKS = 2
"""At most this many ``caught_up`` waits under way at once (``Awaiting._hold``): a frame numbered
past what the waits under way were asked for gets one of its own at once, up to this many; past
it, the next starts as one ends, for the highest frame held then. Each is a question or two to
the log's server."""


@dataclass(slots=True, eq=False)
class Pending:
    """One accepted action whose number the log has not given yet; for an action the log tells at
    once (``Awaiting.told``), also where it tells it (``host.cluster.jetstream_log.Outcome``)."""

    channel: str
    entry: Channel
    envelope: dict[str, Any]
    before: dict[str, Any] | Mark
    """The channel's state before the action: what it goes back to if the log refuses it (a mark
    of it, ``AppendingState.mark``, for a streamed append the lean way)."""
    after: dict[str, Any] | None
    """The state after it; None when the states were not read (the lean way)."""
    answer: Awaitable[str] | None
    """The log's future of the frame; None for an action the log tells at once (``told``)."""
    on_refused: Callable[[str], None] | None
    """Called with the log's reason when it refuses the action (tells the client that dispatched
    it, in its own version's shapes)."""
    now: int = 0
    """The clock reading to reduce it with, when it is reduced only once numbered."""
    reduced: bool = True
    """Reduced at dispatch (the usual case). False for an action on a channel another process was
    last seen running: it is reduced only once the log numbered it (the records of the other
    process, followed in, come first), and a refusal has nothing to undo."""
    streamed: bool = False
    """A streamed append dispatched the lean way (``Store.dispatch_streamed``): no states were
    read; it reaches its subscribers and the token observers only."""
    frame: str | None = None
    error: BaseException | None = None
    dropped: bool = False
    """Reduced on top of a refused action of its channel: never sent, never observed."""
    answered: bool = field(default=False)
    awaiting: Awaiting | None = None
    order: int = 0
    """How many actions were added before it, itself included (``add``/``told``): a record taken
    in waits only for actions added before it (``hold_taken``)."""
    taken: Any = None
    """For a record taken in from another process (``hold_taken``): what sending it needs, as the
    store gave it (who was subscribed when it was taken in, and the change translators read)."""
    """Where ``set_result``/``set_exception`` tell it (an action the log tells at once)."""

    # -- as the log's Outcome (``told``) --------------------------------------------------------

    def done(self) -> bool:
        return self.answered

    def set_result(self, frame: str, /) -> None:
        awaiting = self.awaiting
        if not self.answered and awaiting is not None:  # ``Awaiting.settled``, its error-free case
            self.answered = True
            self.frame = frame
            awaiting._drain(streamed_only=True)

    def set_exception(self, error: BaseException, /) -> None:
        if not self.answered and self.awaiting is not None:
            self.awaiting.settled(self, None, error)


class Awaiting:
    """The store's actions waiting for the log (see the module docstring). ``finish(pending)``
    sends and observes an action that was numbered; ``refuse(pending, reason)`` tells of one the
    log refused, after its channel's state was undone."""

    def __init__(self, finish: Callable[[Pending], None], refuse: Callable[[Pending, str], None],
                 caught_up: Callable[[int], Awaitable[None] | None] | None = None,
                 handed: Callable[[], None] | None = None,
                 gated: Callable[[], Container[str]] | None = None) -> None:
        self._queue: deque[Pending] = deque()
        self._handed = handed
        self.handing = False
        """Whether a drain outside the log's handing out of an acknowledgement runs now."""
        self._caught_up = caught_up
        """``caught_up(seq)``: None when every record of another process numbered below ``seq``
        that is to be sent here was taken in, else an awaitable done once it was (the store's,
        from its log: ``host.cluster.ordered_log.ClusterLog.caught_up``)."""
        self._gated = gated
        """``gated()``: the channels whose frames wait for ``caught_up`` (those a connection follows
        that also follows a channel another process runs: ``Store._gated_channels``); None: all."""
        self._held: deque[tuple[int, Pending]] = deque()
        """Answered actions taken off the queue that wait for the follower (``_hold``), in the
        order they leave (their numbers' order), each with the number the follower must have
        handed over everything below (``need``; 0: not gated, it waits only for those before it).
        Every one is numbered below every numbered action still in the queue."""
        self._cleared = 0
        """Every record of another process numbered below this was taken in (a ``caught_up`` that
        said so or whose wait ended): held frames whose ``need`` is at most this may leave."""
        self._asked = 0
        """The highest number a ``caught_up`` wait was started for (under way or over)."""
        self._wanted = 0
        """The highest ``need`` of a frame held so far."""
        self._checks = 0
        """How many ``caught_up`` waits are under way (at most ``CHECKS``)."""
        self._taken: deque[Pending] = deque()
        """Records taken in from other processes, held until no action of this process that may
        be numbered lower waits (``hold_taken``), in log order."""
        self._added = 0
        self._sent = 0
        """The highest number of an action of this process sent so far."""
        self.late = 0
        """How many records were taken in numbered lower than an action of this process sent
        before them (another process's record the follower brought after this process's
        acknowledgement of a later one: the case this does not order, see the module docstring)."""
        self._finish = finish
        self._refuse = refuse
        self._idle: list[asyncio.Future[None]] = []
        self._quiet: dict[str, list[asyncio.Future[None]]] = {}
        """Per channel, the waits of ``quiet``: resolved once none of its actions is queued."""

    def __len__(self) -> int:
        """How many actions of this process are not sent yet: waiting for their number, or
        numbered and held for the follower (``_hold``)."""
        return len(self._queue) + len(self._held)

    def newest_answer(self) -> Any:
        """The log's answer (a future) for the action added last with ``add`` (the store's
        ``dispatch`` of it returned just before: nothing was added in between); a done future
        when none is queued (only held ones: it was answered and is on its way)."""
        if not self._queue:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        return self._queue[-1].answer

    async def idle(self) -> None:
        """Return once no action waits for its number and no record taken in waits to be sent
        (at once when none does)."""
        while self._queue or self._taken or self._held:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._idle.append(waiter)
            await waiter

    def busy(self, channels: Iterable[str]) -> bool:
        """Whether an action of this process on one of ``channels`` waits for its number or to be
        sent (reduced into the store's state already, or to be reduced once numbered)."""
        wanted = channels if isinstance(channels, (set, frozenset)) else set(channels)
        return any(pending.channel in wanted for pending in self._queue) or \
            any(pending.channel in wanted for _, pending in self._held)

    async def quiet(self, channels: Iterable[str]) -> None:
        """Return once none of ``channels``' actions is queued (at once when none is). The caller
        checks again after it returns (``busy``): an action may be dispatched on one of them
        before it runs again; it bounds the wait itself."""
        wanted = set(channels)
        while busy := {pending.channel for pending in self._queue if pending.channel in wanted} | \
                {pending.channel for _, pending in self._held if pending.channel in wanted}:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            for channel in busy:  # woken when one of them goes quiet, then checked again
                self._quiet.setdefault(channel, []).append(waiter)
            try:
                await waiter
            finally:
                for channel in busy:
                    waiters = self._quiet.get(channel)
                    if waiters is not None and waiter in waiters:
                        waiters.remove(waiter)
                        if not waiters:
                            del self._quiet[channel]

    def _wake_quiet(self) -> None:
        """Resolve the waits of ``quiet`` whose channels no queued action is on now: one pass over
        the queue, only while some wait (nothing on the way of a frame otherwise)."""
        queued = {pending.channel for pending in self._queue} | {pending.channel for _, pending in self._held}
        for channel in [channel for channel in self._quiet if channel not in queued]:
            for waiter in self._quiet.pop(channel):
                if not waiter.done():
                    waiter.set_result(None)

    def add(self, pending: Pending) -> None:
        self._added += 1
        pending.order = self._added
        self._queue.append(pending)
        future: Any = pending.answer
        if not hasattr(future, "add_done_callback"):  # a bare coroutine: run it as a task
            future = asyncio.ensure_future(future)
            pending.answer = future
        future.add_done_callback(lambda done: self._answered(pending, done))

    def told(self, pending: Pending) -> Pending:
        """Queue ``pending`` (no ``answer``) and return it as the ``Outcome`` the log tells its
        answer to at once (``settled``)."""
        pending.awaiting = self
        self._added += 1
        pending.order = self._added
        self._queue.append(pending)
        return pending

    def must_hold(self, seq: int) -> bool:
        """Whether a record another process appended, numbered ``seq``, taken in now, must wait
        (``hold_taken``): an action of this process added before it may be numbered lower and is
        not sent yet (its acknowledgement not read, or read and not handed out), or an earlier
        record taken in waits. An action added after it is numbered higher (published after the
        record was stored)."""
        if seq < self._sent:
            self.late += 1
            logger.debug("#%d taken in after this process sent #%d", seq, self._sent)
        return bool(self._taken) or self._blocks(seq, self._added)

    def hold_taken(self, pending: Pending) -> None:
        """Queue a record taken in that ``must_hold`` (``pending``: answered, its frame set, its
        ``taken`` what the store needs to send it): sent once nothing of this process added
        before it may be numbered lower, in log order with the others."""
        pending.order = self._added
        self._taken.append(pending)

    def _blocks(self, seq: int, upto: int) -> bool:
        """Whether an action of this process added by ``upto`` and still queued may be numbered
        below ``seq``: numbered so, or not numbered yet while nothing says it comes after
        (acknowledgements are read in the order of their numbers: once one above ``seq`` was read,
        every action not numbered yet comes after it too)."""
        unknown = False
        above = self._sent > seq
        for _, pending in self._held:  # numbered, in order, below every numbered one queued
            if pending.order > upto or pending.dropped or pending.frame is None:
                continue
            if pending.envelope["serverSeq"] < seq:
                return True
            above = True
            break
        for pending in self._queue:
            if pending.order > upto:
                continue
            if pending.dropped or (pending.answered and pending.frame is None):
                continue  # never sent
            number = pending.envelope["serverSeq"]
            if number:
                if number < seq:
                    return True
                above = True
            else:
                unknown = True
        return unknown and not above

    def _answered(self, pending: Pending, future: Any) -> None:
        if future.cancelled():
            self.settled(pending, None, LogUnavailable("the log's answer was cancelled"))
        elif future.exception() is not None:
            self.settled(pending, None, future.exception())
        else:
            self.settled(pending, future.result(), None)

    def settled(self, pending: Pending, frame: str | None, error: BaseException | None) -> None:
        """The log answered ``pending``: its frame, or why it refused it."""
        pending.answered = True
        pending.frame = frame
        pending.error = error
        if error is not None:
            self._undo(pending)
        self._drain()

    def _undo(self, refused: Pending) -> None:
        """The log refused ``refused``: its channel goes back to the state before it, and what
        was reduced on top of it since is dropped."""
        if refused.dropped:
            return  # already undone with an earlier action of its channel
        if not refused.reduced:
            self._refuse(refused, str(refused.error))
            return
        entry = refused.entry
        before = refused.before
        if isinstance(before, dict):
            entry.state = before
        else:
            entry.restore(before)
        later = False
        for pending in self._queue:
            if pending is refused:
                later = True
            elif later and pending.entry is entry:
                pending.dropped = True
        self._refuse(refused, str(refused.error))

    def _drain(self, streamed_only: bool = False) -> None:
        """``_drain_now``; outside the log's handing out of an acknowledgement, with ``handing``
        true meanwhile and ``handed()`` called at its end (the store writes there what it sent
        with no observer in between: ``Store._numbered``)."""
        handed = self._handed
        if streamed_only or handed is None or self.handing:
            self._drain_now(streamed_only)
        else:
            self.handing = True
            try:
                self._drain_now(False)
            finally:
                self.handing = False
                handed()
        if self._quiet:
            self._wake_quiet()

    def _drain_now(self, streamed_only: bool = False) -> None:
        """Finish the answered actions at the head of the queue, sorted by their numbers.
        ``streamed_only``: inside the log's handing out of an acknowledgement (an action told at
        once), where only streamed frames are sent (see the module docstring): at the first
        answered action that is not one, it and the ones after it are left for a drain in the next
        loop turn. Frames that must wait for the follower are held (``_hold``) and leave, in
        order, as the waits end (``_release``)."""
        queue = self._queue
        if self._held and not self._release(streamed_only):
            return  # a held frame waits for the next loop turn (``streamed_only``) or a record taken in
        ready: list[Pending] = []
        while queue and queue[0].answered:
            ready.append(queue.popleft())
        if not ready:
            if self._taken:
                self._send_taken(0, streamed_only)
            self._wake_idle()  # (held frames or records taken in may have been the last unsent)
            return
        if len(ready) > 1:
            ready.sort(key=lambda p: p.envelope["serverSeq"] if p.frame is not None else 0)
        bound = _lowest_numbered(queue)
        if bound:
            for index, pending in enumerate(ready):
                if pending.frame is not None and pending.envelope["serverSeq"] > bound:
                    queue.extendleft(reversed(ready[index:]))  # finished once the ones numbered before them are
                    del ready[index:]
                    break
        if self._caught_up is not None and self._hold(ready):
            if self._taken:
                self._send_taken(0, streamed_only)
            return
        for index, pending in enumerate(ready):
            if not self._finish_one(pending, streamed_only):
                queue.extendleft(reversed(ready[index:]))
                break
        if self._taken:
            self._send_taken(0, streamed_only)
        self._wake_idle()

    def _finish_one(self, pending: Pending, streamed_only: bool) -> bool:
        """Finish ``pending`` (answered, its turn to leave): False when it must wait (for the next
        loop turn, ``streamed_only``; or for records taken in numbered before it)."""
        if streamed_only and (not pending.streamed or pending.frame is None or pending.dropped):
            asyncio.get_running_loop().call_soon(self._drain)
            return False
        if pending.dropped:
            if pending.frame is not None:
                logger.warning("%s #%s was stored by the log though an earlier action of its channel was refused: "
                               "this process's state of it lacks it", pending.channel, pending.envelope["serverSeq"])
            elif pending.error is not None:
                self._refuse(pending, str(pending.error))
            return True
        if pending.frame is not None:
            seq = pending.envelope["serverSeq"]
            if self._taken and self._taken[0].envelope["serverSeq"] < seq and not self._send_taken(seq, streamed_only):
                return False  # after the records taken in before it
            self._finish(pending)
            if seq > self._sent:
                self._sent = seq
        return True

    def _wake_idle(self) -> None:
        if not self._queue and not self._taken and not self._held and self._idle:
            idle, self._idle = self._idle, []
            for waiter in idle:
                if not waiter.done():
                    waiter.set_result(None)

    def _hold(self, ready: list[Pending]) -> bool:
        """Whether the ``ready`` frames (sorted, each numbered below every numbered one queued)
        must wait for records of other processes numbered below them that are not taken in yet
        (``caught_up``); when so they are held, behind those held already, and leave as the
        waits end (``_release``). A frame waits for the records below its own number when it
        goes to a gated channel (one a connection follows that also follows a channel another
        process runs), and for every frame before it in any case.

        Several waits may be under way at once (``CHECKS``): a frame that comes while one is
        under way, numbered past what it was asked for, gets a wait of its own at once instead of
        after the earlier one's end, so that a frame waits about one round trip to the server
        rather than the rest of the round under way and one more."""
        gated = self._gated() if self._gated is not None else None
        if not self._held and gated is not None and not gated:
            return False  # no connection here follows a channel another process runs
        cleared = self._cleared
        needs: list[int] = []
        highest = 0
        for pending in ready:
            seq = pending.envelope["serverSeq"] if pending.frame is not None and not pending.dropped else 0
            need = seq if seq > cleared and (gated is None or pending.channel in gated) else 0
            needs.append(need)
            if need > highest:
                highest = need
        if not self._held:
            if not highest:
                return False
            self._ask(highest)
            if highest <= self._cleared:  # the log said at once: nothing to wait for
                return False
        elif highest > self._wanted:
            self._ask(highest)
        self._held.extend(zip(needs, ready))
        if highest > self._wanted:
            self._wanted = highest
        return True

    def _ask(self, seq: int) -> None:
        """Start a ``caught_up`` wait for the records below ``seq`` (none when ``CHECKS`` are
        under way: the next one starts as one of them ends, for the highest frame held then)."""
        if seq <= self._asked or self._checks >= CHECKS:
            return
        assert self._caught_up is not None
        waiting = self._caught_up(seq)
        self._asked = seq
        if waiting is None:
            if seq > self._cleared:
                self._cleared = seq
            return
        self._checks += 1

        def done(_: Any) -> None:
            self._checks -= 1
            if seq > self._cleared:
                self._cleared = seq
            self._drain()

        cast(Any, waiting).add_done_callback(done)

    def _release(self, streamed_only: bool) -> bool:
        """Send the held frames whose wait is over, in order (a wait is started for the highest
        held when none covers it and fewer than ``CHECKS`` are under way); False when one must
        wait for the next loop turn (``streamed_only``, or records taken in before it)."""
        held = self._held
        while True:
            cleared = self._cleared
            while held and held[0][0] <= cleared:
                if not self._finish_one(held[0][1], streamed_only):
                    return False
                held.popleft()
            if not held:
                self._wanted = 0
                return True
            if self._wanted <= self._asked:
                return True  # a wait under way covers them
            self._ask(self._wanted)
            if self._cleared == cleared:
                return True

    def _send_taken(self, below: int, streamed_only: bool) -> bool:
        """Send the records taken in that may go: those numbered below ``below`` (the number of an
        action of this process about to be sent, every one numbered lower sent already), or, with
        ``below`` 0, those no queued action may precede (``_blocks``). False when one of them
        must wait for the next loop turn (``streamed_only``: inside the log's handing out of an
        acknowledgement, only a frame sent as it is leaves; see the module docstring)."""
        taken = self._taken
        while taken:
            head = taken[0]
            seq = head.envelope["serverSeq"]
            if below:
                if seq >= below:
                    break
            elif self._blocks(seq, head.order):
                break
            if streamed_only and not head.streamed:
                asyncio.get_running_loop().call_soon(self._drain)
                return False
            taken.popleft()
            self._finish(head)
        return True


def _lowest_numbered(queue: deque[Pending]) -> int:
    """The lowest number the log gave an action still in ``queue`` (0 for none): one not answered
    yet (the log stamps an envelope's ``serverSeq`` as it reads its acknowledgement, and answers
    it later: with the rest of its tick, or in the next loop turn through its future), or one
    answered behind an action that is not. Acknowledgements are read in the order of their
    numbers, so an action not numbered yet gets a higher number than every one numbered."""
    lowest = 0
    for pending in queue:
        seq = pending.envelope["serverSeq"]
        if seq and (not lowest or seq < lowest):
            lowest = seq
    return lowest
