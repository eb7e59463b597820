"""The MCP lifetime table: its invariants over every (phase, event) pair, and the stories a user
lives through (a first turn, an idle stop, a restart), without a process."""

from __future__ import annotations

import itertools

import pytest

from host.runtime.customizations.mcp_lifetime import (
    TABLE,
    Effect,
    Event,
    Phase,
    Transition,
    idle_due,
    idle_limit,
    step,
)

PAIRS = list(itertools.product(Phase, Event))
LEAVES_DORMANT = {Event.TURN_STARTED, Event.OPENED_EAGER, Event.RESUMED_EAGER, Event.START_REQUESTED}


def run(events: list[Event], phase: Phase = Phase.DORMANT) -> tuple[Phase, list[Effect]]:
    effects: list[Effect] = []
    for event in events:
        transition = step(phase, event)
        phase = transition.phase
        effects.extend(transition.effects)
    return phase, effects


@pytest.mark.parametrize(("phase", "event"), PAIRS)
def test_servers_start_only_when_wanted(phase: Phase, event: Event) -> None:
    after = step(phase, event).phase
    if phase is Phase.DORMANT and after is not Phase.DORMANT and after is not Phase.CLOSED:
        assert event in LEAVES_DORMANT
    if after is Phase.RUNNING:
        assert phase in (Phase.WANTED, Phase.RUNNING)  # only a launch makes servers run


@pytest.mark.parametrize(("phase", "event"), PAIRS)
def test_stop_exactly_when_leaving_running(phase: Phase, event: Event) -> None:
    transition = step(phase, event)
    stops = Effect.STOP in transition.effects
    assert stops == (phase is Phase.RUNNING and transition.phase is not Phase.RUNNING)


@pytest.mark.parametrize(("phase", "event"), PAIRS)
def test_only_running_counts_idleness(phase: Phase, event: Event) -> None:
    effects = step(phase, event).effects
    if {Effect.ARM_IDLE, Effect.MARK_IDLE, Effect.MARK_IDLE_IF_UNSET} & set(effects):
        assert phase is Phase.RUNNING


@pytest.mark.parametrize("phase", [Phase.DORMANT, Phase.WANTED, Phase.RUNNING])
def test_a_turn_cancels_the_countdown_and_wants_the_servers(phase: Phase) -> None:
    transition = step(phase, Event.TURN_STARTED)
    assert Effect.CANCEL_IDLE in transition.effects
    assert transition.phase in (Phase.WANTED, Phase.RUNNING)


@pytest.mark.parametrize("event", list(Event))
def test_closed_is_terminal(event: Event) -> None:
    assert step(Phase.CLOSED, event) == Transition(Phase.CLOSED)


def test_every_live_phase_can_close() -> None:
    for phase in (Phase.DORMANT, Phase.WANTED, Phase.RUNNING):
        assert step(phase, Event.CLOSED).phase is Phase.CLOSED


def test_pairs_outside_the_table_change_nothing() -> None:
    missing = [(phase, event) for phase, event in PAIRS if (phase, event) not in TABLE]
    assert missing  # (the table lists only what changes something)
    for phase, event in missing:
        assert step(phase, event) == Transition(phase)


def test_a_first_turn_then_an_idle_stop_then_the_next_turn() -> None:
    phase, effects = run([Event.OPENED])
    assert (phase, effects) == (Phase.DORMANT, [Effect.RECONCILE])  # listed, not launched
    phase, effects = run([Event.TURN_STARTED, Event.LAUNCHED, Event.TURN_ENDED], phase)
    assert phase is Phase.RUNNING
    assert effects == [Effect.CANCEL_IDLE, Effect.RECONCILE, Effect.MARK_IDLE, Effect.ARM_IDLE]
    phase, effects = run([Event.IDLE_ELAPSED], phase)
    assert (phase, effects) == (Phase.DORMANT, [Effect.STOP])
    phase, effects = run([Event.TURN_STARTED], phase)
    assert (phase, effects) == (Phase.WANTED, [Effect.CANCEL_IDLE, Effect.RECONCILE])


def test_a_restored_session_launches_nothing_until_resumed_or_used() -> None:
    phase, effects = run([Event.RESTORED, Event.TURN_ENDED, Event.UNWATCHED, Event.IDLE_ELAPSED, Event.STOP_REQUESTED])
    assert (phase, effects) == (Phase.DORMANT, [Effect.RECONCILE])
    assert run([Event.RESTORED, Event.RESUMED])[0] is Phase.DORMANT
    assert run([Event.RESTORED, Event.RESUMED_EAGER])[0] is Phase.WANTED


def test_an_eager_session_wants_its_servers_at_open() -> None:
    assert run([Event.OPENED_EAGER]) == (Phase.WANTED, [Effect.RECONCILE])


def test_a_client_stop_then_start() -> None:
    phase, effects = run([Event.STOP_REQUESTED, Event.START_REQUESTED], Phase.RUNNING)
    assert (phase, effects) == (Phase.WANTED, [Effect.STOP, Effect.RECONCILE])
    # Nothing launched yet: a stop request has nothing to stop, and the wish stays.
    assert run([Event.STOP_REQUESTED], Phase.WANTED) == (Phase.WANTED, [])


def test_the_last_client_leaving_starts_the_clock_unless_a_turn_did() -> None:
    assert run([Event.UNWATCHED], Phase.RUNNING) == (Phase.RUNNING, [Effect.MARK_IDLE_IF_UNSET, Effect.ARM_IDLE])


def test_closing_a_running_session_stops_its_servers() -> None:
    assert run([Event.CLOSED], Phase.RUNNING) == (Phase.CLOSED, [Effect.CANCEL_IDLE, Effect.STOP])
    assert run([Event.CLOSED], Phase.WANTED) == (Phase.CLOSED, [Effect.CANCEL_IDLE])


def test_idle_limit() -> None:
    assert idle_limit(900.0, 60.0, watched=True) == 900.0
    assert idle_limit(900.0, 60.0, watched=False) == 60.0
    assert idle_limit(0.0, 60.0, watched=True) is None  # 0: never
    assert idle_limit(0.0, 60.0, watched=False) == 60.0
    assert idle_limit(0.0, 0.0, watched=False) is None
    assert idle_limit(30.0, 0.0, watched=False) == 30.0


def test_idle_due() -> None:
    assert idle_due(100.0, 60.0, now=130.0) == 30.0
    assert idle_due(100.0, 60.0, now=200.0) == 0.0  # overdue: now
    assert idle_due(None, 60.0, now=130.0) is None
    assert idle_due(100.0, None, now=130.0) is None
