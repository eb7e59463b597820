"""Pure AHP 0.2.0 reducers for every stateful channel kind: root, session, terminal, changeset,
resourceWatch.

States and actions are plain JSON-shaped dicts and lists exactly as on the wire (camelCase keys).

Contract and invariants (every reducer, every action):

* ``reduce(kind, state, action, now)`` returns the next state and never mutates its inputs.
  Untouched sub-objects are shared with the previous state, only the changed path is copied, so
  applying one ``session/delta`` per streamed token is cheap.
* "Absent" is a missing key. A ``None`` input value reads as absent, and reducers never write
  ``None`` into state: where the reference TypeScript sets a field to ``undefined``, the key is
  deleted.
* Unknown action types, actions meant for another channel kind and malformed actions are no-ops
  that return ``state`` itself. Folding any sequence of actions never raises.
* Reducers never read a clock, log, do I/O or make ids: ``now`` (epoch milliseconds) comes from
  the caller and is only used by the session reducer for ``summary.modifiedAt``.

Behaviour matches the official 0.2.0 TypeScript reducers, checked against the 160 conformance
vectors and 3,300 differential cases under ``tests/ahp/dialects/v0_2/state/``.
"""

from __future__ import annotations

from typing import Any

from ahp.dialects.v0_2.state.changeset import CHANGESET_ACTION_TYPES, reduce_changeset
from ahp.dialects.v0_2.state.channels import CHANNEL_KINDS, ROOT_CHANNEL, ChannelKind, channel_kind
from ahp.dialects.v0_2.state.resource_watch import RESOURCE_WATCH_ACTION_TYPES, reduce_resource_watch
from ahp.dialects.v0_2.state.root import ROOT_ACTION_TYPES, reduce_root
from ahp.dialects.v0_2.state.session import SESSION_ACTION_TYPES, reduce_session
from ahp.dialects.v0_2.state.status import ACTIVITY_MASK, SessionStatus
from ahp.dialects.v0_2.state.terminal import TERMINAL_ACTION_TYPES, reduce_terminal

__all__ = [
    "ACTION_TYPES",
    "ACTIVITY_MASK",
    "CHANNEL_KINDS",
    "ChannelKind",
    "ROOT_CHANNEL",
    "SessionStatus",
    "channel_kind",
    "reduce",
    "reduce_changeset",
    "reduce_resource_watch",
    "reduce_root",
    "reduce_session",
    "reduce_terminal",
]

ACTION_TYPES: dict[str, frozenset[str]] = {
    "root": ROOT_ACTION_TYPES,
    "session": SESSION_ACTION_TYPES,
    "terminal": TERMINAL_ACTION_TYPES,
    "changeset": CHANGESET_ACTION_TYPES,
    "resourceWatch": RESOURCE_WATCH_ACTION_TYPES,
}
"""Channel kind → the action types its reducer defines (the schema's names)."""


def reduce(kind: str, state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The state of a ``kind`` channel after ``action``; ``state`` itself for an unknown kind."""
    if kind == "session":
        return reduce_session(state, action, now)
    if kind == "root":
        return reduce_root(state, action)
    if kind == "terminal":
        return reduce_terminal(state, action)
    if kind == "changeset":
        return reduce_changeset(state, action)
    if kind == "resourceWatch":
        return reduce_resource_watch(state, action)
    return state
