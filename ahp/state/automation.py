"""Pure reducers for the automation channels [0.8.0; shapes from the 1.0.0 schemas].

Two channel kinds:

* ``automation``: the one catalogue ``ahp-automations://`` (``AutomationState``: ``entries``
  keyed by ``resource``). ``automation/set`` replaces an entry in place or appends it;
  ``automation/removed`` removes one (unknown: no-op). ``automation/createRequested`` and
  ``automation/updateRequested`` are side-effect requests to the host and leave optimistic state
  unchanged (the host answers with ``automation/set``).
* ``automationRun``: one ``ahp-automation-run:`` run (``AutomationRunState``).
  ``automationRun/lifecycleChanged`` replaces ``lifecycle``; ``sessionSet`` appends a session URI
  not yet linked; ``sessionRemoved`` removes one and clears ``primarySession`` when it was that
  session (unknown: no-op); ``primarySessionChanged`` sets or clears ``primarySession``;
  ``cancelRequested`` is a side-effect request that leaves state unchanged.

Invariants: unknown or malformed actions return ``state`` itself; inputs are never mutated; no
``None`` is written; ``now`` is not read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state._dispatch import dispatch
from ahp.state._js import as_list, assign, payload
from ahp.state._lists import index_by, remove_at, upsert_by, without_value

__all__ = [
    "AUTOMATION_ACTION_TYPES",
    "AUTOMATION_RUN_ACTION_TYPES",
    "reduce_automation",
    "reduce_automation_run",
]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]


def _unchanged(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return state


def _set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entry = payload(action, "automation")
    if not isinstance(entry, dict):
        return state
    return {**state, "entries": upsert_by(as_list(state.get("entries")), "resource", entry)}


def _removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entries = as_list(state.get("entries"))
    index = index_by(entries, "resource", action.get("resource"))
    if index < 0:
        return state
    return {**state, "entries": remove_at(entries, index)}


_AUTOMATION: dict[str, Handler] = {
    "automation/createRequested": _unchanged,
    "automation/updateRequested": _unchanged,
    "automation/set": _set,
    "automation/removed": _removed,
}


def _lifecycle_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    lifecycle = payload(action, "lifecycle")
    if not isinstance(lifecycle, dict):
        return state
    return {**state, "lifecycle": lifecycle}


def _session_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    session = action.get("session")
    sessions = as_list(state.get("sessions"))
    if not isinstance(session, str) or session in sessions:
        return state
    return {**state, "sessions": [*sessions, session]}


def _session_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    session = action.get("session")
    sessions, removed = without_value(as_list(state.get("sessions")), session)
    if not removed:
        return state
    nxt = {**state, "sessions": sessions}
    if state.get("primarySession") == session:
        nxt.pop("primarySession", None)
    return nxt


def _primary_session_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, primarySession=payload(action, "primarySession"))


_AUTOMATION_RUN: dict[str, Handler] = {
    "automationRun/lifecycleChanged": _lifecycle_changed,
    "automationRun/sessionSet": _session_set,
    "automationRun/sessionRemoved": _session_removed,
    "automationRun/primarySessionChanged": _primary_session_changed,
    "automationRun/cancelRequested": _unchanged,
}

AUTOMATION_ACTION_TYPES = frozenset(_AUTOMATION)
"""Every action type of the automation catalogue channel."""

AUTOMATION_RUN_ACTION_TYPES = frozenset(_AUTOMATION_RUN)
"""Every action type of an automation-run channel."""


def reduce_automation(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The automation catalogue after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_AUTOMATION, state, action, now)


def reduce_automation_run(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The automation run after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_AUTOMATION_RUN, state, action, now)
