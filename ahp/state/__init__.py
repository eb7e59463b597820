"""Pure reducers for the host's internal model: AHP 0.9.0 (which 1.0.0 serves unchanged).

One model inside, one dialect per connection at the edge: every older wire version is a
projection of this model (``ahp.dialects``). Channel kinds: ``root``, ``session`` (metadata and a
catalogue of chats), ``chat`` (turns, tool calls, input requests, pending messages), ``terminal``,
``changeset``, ``resourceWatch``, ``annotations``, ``automation`` (the automation catalogue) and
``automationRun``; each kind's actions carry it as their type prefix (``chat/turnStarted``).
States and actions are plain JSON-shaped dicts and lists, exactly as on the wire.

Contract and invariants (every reducer, every action):

* ``reduce(kind, state, action, now)`` returns the next state and never mutates its inputs.
  Untouched sub-objects are shared with the previous state; only the changed path is copied.
* "Absent" is a missing key. A ``None`` input value reads as absent, and reducers never write
  ``None`` into state: where the reference sets a field to ``undefined``, the key is deleted.
* Unknown action types, actions meant for another channel kind and malformed actions are no-ops
  that return ``state`` itself. Folding any sequence of actions never raises.
* Reducers never read a clock, log, do I/O or make ids. Timestamps are ISO-8601 strings
  (``clock``); the chat reducer derives ``modifiedAt`` from the turn's own ``startedAt`` and
  ``duration`` [0.9.0] and falls back to ``now`` (epoch milliseconds, from the caller) only when
  those cannot be read. No other reducer reads ``now``.
* Which reducer a channel needs is bound when the channel is created; ``channel_kind`` says what
  the URI alone can prove (sessions are client-named ``<provider>:/<uuid>``, see ``channels``).
* A session's status as its list shows it follows its chats; that part is the pure helper
  ``session_status_from_chats`` / ``refresh_session_status`` (``status``), called by the host for
  ``SessionSummary.status`` (the session channel's ``status`` is only what the reducer computes).

Behaviour: the 0.7.0 reducers as the 247 official 0.7.0 vectors pin them, plus every 0.8.0/0.9.0
change (VERSIONS.md §3-§4, the 1.0.0 schema descriptions), checked by ``tests/ahp/state/``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state.annotations import ANNOTATIONS_ACTION_TYPES, reduce_annotations
from ahp.state.automation import (
    AUTOMATION_ACTION_TYPES,
    AUTOMATION_RUN_ACTION_TYPES,
    reduce_automation,
    reduce_automation_run,
)
from ahp.state.changeset import CHANGESET_ACTION_TYPES, reduce_changeset
from ahp.state.channels import (
    AUTOMATIONS_CHANNEL,
    CHANNEL_KINDS,
    ROOT_CHANNEL,
    ChannelKind,
    annotations_uri,
    channel_kind,
    chat_uri,
    default_chat_uri,
    parse_chat_uri,
    parse_subagent_chat_uri,
    session_of_annotations,
    session_of_default_chat,
    subagent_chat_uri,
)
from ahp.state.chat import CHAT_ACTION_TYPES, reduce_chat
from ahp.state.resource_watch import RESOURCE_WATCH_ACTION_TYPES, reduce_resource_watch
from ahp.state.root import ROOT_ACTION_TYPES, reduce_root
from ahp.state.session import SESSION_ACTION_TYPES, reduce_session
from ahp.state.status import ACTIVITY_MASK, SessionStatus, refresh_session_status, session_status_from_chats
from ahp.state.terminal import TERMINAL_ACTION_TYPES, reduce_terminal

__all__ = [
    "ACTION_TYPES",
    "ACTIVITY_MASK",
    "AUTOMATIONS_CHANNEL",
    "CHANNEL_KINDS",
    "ChannelKind",
    "REDUCERS",
    "ROOT_CHANNEL",
    "SessionStatus",
    "annotations_uri",
    "channel_kind",
    "chat_uri",
    "default_chat_uri",
    "parse_chat_uri",
    "parse_subagent_chat_uri",
    "reduce",
    "reduce_annotations",
    "reduce_automation",
    "reduce_automation_run",
    "reduce_changeset",
    "reduce_chat",
    "reduce_resource_watch",
    "reduce_root",
    "reduce_session",
    "reduce_terminal",
    "refresh_session_status",
    "session_of_annotations",
    "session_of_default_chat",
    "subagent_chat_uri",
    "session_status_from_chats",
]

Reducer = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]

REDUCERS: dict[str, Reducer] = {
    "root": reduce_root,
    "session": reduce_session,
    "chat": reduce_chat,
    "terminal": reduce_terminal,
    "changeset": reduce_changeset,
    "resourceWatch": reduce_resource_watch,
    "annotations": reduce_annotations,
    "automation": reduce_automation,
    "automationRun": reduce_automation_run,
}
"""Channel kind → its reducer ``(state, action, now) -> state``; one entry per ``CHANNEL_KINDS``."""

ACTION_TYPES: dict[str, frozenset[str]] = {
    "root": ROOT_ACTION_TYPES,
    "session": SESSION_ACTION_TYPES,
    "chat": CHAT_ACTION_TYPES,
    "terminal": TERMINAL_ACTION_TYPES,
    "changeset": CHANGESET_ACTION_TYPES,
    "resourceWatch": RESOURCE_WATCH_ACTION_TYPES,
    "annotations": ANNOTATIONS_ACTION_TYPES,
    "automation": AUTOMATION_ACTION_TYPES,
    "automationRun": AUTOMATION_RUN_ACTION_TYPES,
}
"""Channel kind → the action types its reducer defines (the schema's names)."""


def reduce(kind: str, state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The state of a ``kind`` channel after ``action``; ``state`` itself for an unknown kind."""
    reducer = REDUCERS.get(kind) if isinstance(kind, str) else None
    return state if reducer is None else reducer(state, action, now)
