"""Helpers for the 0.2.0 dialect's tests: 0.2.0 session states brought into the lift's domain,
internal sessions folded through the internal reducers, the two commutation checks, and the lift
and projection of every other channel kind (``CHANNEL_PROJECTIONS``, sessions named by ``provider_of``).

``down`` below is ``states.session_down`` with ``None``-valued keys dropped (the comparison of
the official harness, ``tests/ahp/_wire.py``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ahp import state as internal
from ahp.dialects.v0_2 import state as v02
from ahp.dialects.v0_2.actions_down import Down, chat_action_down, session_action_down
from ahp.dialects.v0_2.states import (
    InternalSession,
    changeset_down,
    changeset_lift,
    resource_watch_down,
    resource_watch_lift,
    root_down,
    root_lift,
    session_down,
    terminal_down,
    terminal_lift,
)
from tests.ahp._wire import first_difference, strip_none, wire_equal

CLOCK = 9999
"""The frozen clock of the official harness (epoch ms), for both models."""

REPLICA_CLOCK_TYPES = frozenset(
    {
        "session/truncated",
        "session/titleChanged",
        "session/modelChanged",
        "session/agentChanged",
        "session/configChanged",
        "session/inputRequested",
        "session/inputAnswerChanged",
        "session/inputCompleted",
    }
)
"""0.2.0 actions after which a 0.2.0 replica stamps ``summary.modifiedAt`` with its own clock,
where 0.9.0 (which moves ``modifiedAt`` only at a turn's start and end, from the turn's own times)
leaves it. PROTOCOL.md §7: ``modifiedAt`` is "each replica's own clock" in 0.2.0."""

STAMPED_BY_REPLICA = REPLICA_CLOCK_TYPES | {
    "session/turnStarted",
    "session/turnComplete",
    "session/turnCancelled",
    "session/error",
}
"""Every 0.2.0 action after which a replica stamps ``modifiedAt`` with its own clock. At a turn's
start and end 0.9.0 moves it too, but to the times the turn actions carry, which a replica's clock
need not agree with (a host translating 0.2.0 actions up uses its clock for both: see
``actions_up``)."""


PROVIDERS = {"s": "p", "s1": "copilot", "session-1": "copilot", "test-session": "copilot"}
"""The provider of each 0.2.0 session id the corpora use (a 0.2.0 name does not say it)."""


def provider_of(ident: str) -> str | None:
    return PROVIDERS.get(ident)


CHANNEL_PROJECTIONS = {
    "root": (lambda s: root_lift(s, provider_of=provider_of), root_down),
    "terminal": (lambda s: terminal_lift(s, provider_of=provider_of), terminal_down),
    "changeset": (changeset_lift, changeset_down),
    "resourceWatch": (resource_watch_lift, resource_watch_down),
}
"""For each channel kind but the session's: (its 0.2.0 state lifted into the internal model, an
internal state projected down to 0.2.0)."""


def down(session: InternalSession) -> dict:
    return strip_none(session_down(session))


def in_domain(state: dict) -> tuple[dict, list[str]]:
    """``state`` (a 0.2.0 ``SessionState``) as the lift's domain has it, and what had to change.

    The random and official corpora hold states the 0.2.0 reducers never produce from a real
    session: an empty ``inputRequests`` list (the reducers leave it absent), input requests with
    no active turn (0.9.0 keeps them in the turn), and the legacy ``copilot:/...`` resources of the
    official fixtures (reducers never read ``resource``)."""
    state = strip_none(state)
    changes = []
    requests = state.get("inputRequests")
    if requests == []:
        changes.append("an empty inputRequests list")
        state = {k: v for k, v in state.items() if k != "inputRequests"}
    elif requests is not None and not isinstance(state.get("activeTurn"), dict):
        changes.append("input requests outside a turn")
        state = {k: v for k, v in state.items() if k != "inputRequests"}
    summary = state.get("summary", {})
    resource = summary.get("resource")
    if isinstance(resource, str) and not resource.startswith("ahp-session:/"):
        changes.append("a legacy resource URI")
        state = {**state, "summary": {**summary, "resource": "ahp-session:/" + resource.split(":/", 1)[-1]}}
    return state, changes


def apply_internal(session: InternalSession, channel: str, action: dict, now: int = CLOCK) -> InternalSession:
    """``session`` after the internal reducer applied ``action`` to ``channel`` (the session or one
    of its chats)."""
    if channel == session.uri:
        return dataclasses.replace(session, state=internal.reduce("session", session.state, action, now))
    if channel in session.chats:
        chats = {**session.chats, channel: internal.reduce("chat", session.chats[channel], action, now)}
        return dataclasses.replace(session, chats=chats)
    raise KeyError(f"{channel} is not a channel of {session.uri}")


def action_down(channel: str, action: dict, before: InternalSession, after: InternalSession) -> Down:
    if channel == before.uri:
        return session_action_down(action, before, after)
    return chat_action_down(channel, action, before, after)


def fold_v02(state: dict, actions: Any, now: int = CLOCK) -> dict:
    for action in actions:
        state = v02.reduce("session", state, action, now)
    return strip_none(state)


def without_paths(value: dict, paths: tuple[str, ...]) -> dict:
    """``value`` without the keys at the dotted ``paths`` (``"summary.modifiedAt"``)."""
    for path in paths:
        head, _, rest = path.partition(".")
        if head not in value:
            continue
        if rest and isinstance(value[head], dict):
            value = {**value, head: without_paths(value[head], (rest,))}
        elif not rest:
            value = {k: v for k, v in value.items() if k != head}
    return value


@dataclasses.dataclass(frozen=True)
class DownCheck:
    """One internal action checked against the down law."""

    down: Down
    mirror: dict
    """What a 0.2.0 replica holds: ``down(before)`` with the projected actions applied."""
    fresh: dict
    """``down(after)``: what a new 0.2.0 snapshot shows."""

    @property
    def stamped_by_replica(self) -> bool:
        return any(action.get("type") in STAMPED_BY_REPLICA for action in self.down.actions)

    @property
    def agrees(self) -> bool:
        """Replica and snapshot agree, ``modifiedAt`` excepted where the replica stamped its clock."""
        if self.stamped_by_replica:
            ignored = ("summary.modifiedAt",)
            return wire_equal(without_paths(self.mirror, ignored), without_paths(self.fresh, ignored))
        return wire_equal(self.mirror, self.fresh)

    def explain(self) -> str:
        return first_difference(self.mirror, self.fresh)


def check_down(channel: str, action: dict, before: InternalSession, now: int = CLOCK) -> tuple[InternalSession, DownCheck]:
    """Apply ``action`` internally and project it: the session after it, and the check."""
    after = apply_internal(before, channel, action, now)
    projected = action_down(channel, action, before, after)
    mirror = fold_v02(down(before), projected.actions, now)
    return after, DownCheck(projected, mirror, down(after))
