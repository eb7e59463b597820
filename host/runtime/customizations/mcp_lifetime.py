"""When a session's MCP servers run: the lifetime rules as one transition table (no I/O, no clock).

``step(phase, event)`` returns the next phase and the effects the caller carries out, in order;
``idle_limit`` and ``idle_due`` say when an idle session's servers stop. The supervisor
(``CustomizationService``) owns the processes, the timers and the locks; this module only decides.

Phases:
- ``DORMANT``: the servers are not wanted; none runs (the "MCP servers" container still lists them).
- ``WANTED``: they should run, but none was launched (the session declares none yet).
- ``RUNNING``: they were launched (a ``SessionMcp`` exists); each one's own state is its own.
- ``CLOSED``: the session ended (disposed, or the host stopping).

Events: ``OPENED`` (a new session, ``[mcp] start = "turn"``), ``OPENED_EAGER`` (a new session,
``[mcp] start = "session"``), ``RESTORED`` (a session recovered at host start), ``RESUMED`` /
``RESUMED_EAGER`` (a client resumed a restored session), ``TURN_STARTED``, ``LAUNCHED`` (a
reconcile found servers to run), ``TURN_ENDED``, ``UNWATCHED`` (its last client left),
``IDLE_ELAPSED`` (the idle clock ran out with no turn active), ``START_REQUESTED`` /
``STOP_REQUESTED`` (a client's ``session/mcpServer*Requested``), ``CLOSED``.

Effects: ``RECONCILE`` (apply the declared servers: publish them, and launch or update them when
wanted), ``STOP`` (stop the servers and withdraw their published state), ``MARK_IDLE`` (the idle
clock starts now), ``MARK_IDLE_IF_UNSET`` (it starts now unless a turn already started it),
``ARM_IDLE`` (schedule the stop at the idle limit), ``CANCEL_IDLE`` (drop a scheduled stop).

Invariants (``tests/host/runtime/customizations/test_mcp_lifetime.py`` checks them for every pair):
- Servers start only when wanted: only a turn, an eager open or resume, or a client's start
  request leave ``DORMANT``; a restored session wants nothing until it is resumed or used.
- ``STOP`` happens only when leaving ``RUNNING``, and every way out of ``RUNNING`` but ``LAUNCHED``
  (which stays) stops them: no process outlives the phase that launched it.
- Only ``RUNNING`` counts idleness (``ARM_IDLE``, ``MARK_IDLE*``): a session with nothing running
  has nothing to stop.
- A turn starting always cancels the idle countdown, and a turn always wants the servers.
- ``CLOSED`` is terminal: every event leaves it with no effect.
- A pair not in the table changes nothing and does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

__all__ = ["Phase", "Event", "Effect", "Transition", "TABLE", "step", "idle_limit", "idle_due", "IDLE_SLACK"]


class Phase(Enum):
    DORMANT = "dormant"
    WANTED = "wanted"
    RUNNING = "running"
    CLOSED = "closed"


class Event(Enum):
    OPENED = "opened"
    OPENED_EAGER = "opened eager"
    RESTORED = "restored"
    RESUMED = "resumed"
    RESUMED_EAGER = "resumed eager"
    TURN_STARTED = "turn started"
    LAUNCHED = "launched"
    TURN_ENDED = "turn ended"
    UNWATCHED = "unwatched"
    IDLE_ELAPSED = "idle elapsed"
    START_REQUESTED = "start requested"
    STOP_REQUESTED = "stop requested"
    CLOSED = "closed"


class Effect(Enum):
    RECONCILE = "reconcile"
    STOP = "stop"
    MARK_IDLE = "mark idle"
    MARK_IDLE_IF_UNSET = "mark idle if unset"
    ARM_IDLE = "arm idle"
    CANCEL_IDLE = "cancel idle"


@dataclass(frozen=True)
class Transition:
    phase: Phase
    effects: tuple[Effect, ...] = ()


D, W, R, C = Phase.DORMANT, Phase.WANTED, Phase.RUNNING, Phase.CLOSED
E = Effect

TABLE: dict[tuple[Phase, Event], Transition] = {
    # Opening publishes the declared servers (the container lists them) and launches them only when eager.
    (D, Event.OPENED): Transition(D, (E.RECONCILE,)),
    (D, Event.OPENED_EAGER): Transition(W, (E.RECONCILE,)),
    (D, Event.RESTORED): Transition(D, (E.RECONCILE,)),
    # (A turn or a start request may come before the opening's own reconcile: it still applies.)
    (W, Event.OPENED): Transition(W, (E.RECONCILE,)),
    (W, Event.OPENED_EAGER): Transition(W, (E.RECONCILE,)),
    (W, Event.RESTORED): Transition(W, (E.RECONCILE,)),
    (R, Event.OPENED): Transition(R, (E.RECONCILE,)),
    (R, Event.OPENED_EAGER): Transition(R, (E.RECONCILE,)),
    (R, Event.RESTORED): Transition(R, (E.RECONCILE,)),
    (D, Event.RESUMED_EAGER): Transition(W, (E.RECONCILE,)),
    # A turn wants the servers; one already wanting them only stops the idle countdown.
    (D, Event.TURN_STARTED): Transition(W, (E.CANCEL_IDLE, E.RECONCILE)),
    (W, Event.TURN_STARTED): Transition(W, (E.CANCEL_IDLE,)),
    (R, Event.TURN_STARTED): Transition(R, (E.CANCEL_IDLE,)),
    (W, Event.LAUNCHED): Transition(R),
    (R, Event.LAUNCHED): Transition(R),
    # Idleness counts only while something runs.
    (R, Event.TURN_ENDED): Transition(R, (E.MARK_IDLE, E.ARM_IDLE)),
    (R, Event.UNWATCHED): Transition(R, (E.MARK_IDLE_IF_UNSET, E.ARM_IDLE)),
    (R, Event.IDLE_ELAPSED): Transition(D, (E.STOP,)),
    # A client's start and stop requests.
    (D, Event.START_REQUESTED): Transition(W, (E.RECONCILE,)),
    (W, Event.START_REQUESTED): Transition(W, (E.RECONCILE,)),
    (R, Event.START_REQUESTED): Transition(R, (E.RECONCILE,)),
    (R, Event.STOP_REQUESTED): Transition(D, (E.STOP,)),
    # The end.
    (D, Event.CLOSED): Transition(C, (E.CANCEL_IDLE,)),
    (W, Event.CLOSED): Transition(C, (E.CANCEL_IDLE,)),
    (R, Event.CLOSED): Transition(C, (E.CANCEL_IDLE, E.STOP)),
}
"""Every (phase, event) pair that changes something; the others keep the phase and do nothing."""

del D, W, R, C, E


def step(phase: Phase, event: Event) -> Transition:
    """The transition for ``event`` in ``phase`` (no change and no effect when the table has none)."""
    return TABLE.get((phase, event)) or Transition(phase)


IDLE_SLACK = 0.05
"""Seconds by which a timer may fire early and still count as the idle limit reached."""


def idle_limit(idle_stop: float, unwatched_stop: float, *, watched: bool) -> float | None:
    """Seconds without a turn after which the servers stop: ``[mcp] idle_stop``, or the shorter
    ``unwatched_stop`` when no client is connected to the session; 0 means never; None: never."""
    limits = [idle_stop] if watched else [idle_stop, unwatched_stop]
    limits = [limit for limit in limits if limit]
    return min(limits) if limits else None


def idle_due(idle_since: float | None, limit: float | None, now: float) -> float | None:
    """Seconds until the idle stop is due (0.0: now); None: no stop is due at all."""
    if limit is None or idle_since is None:
        return None
    return max(0.0, idle_since + limit - now)
