"""Pure reducer for the root channel (``RootState``, AHP 0.9.0; unchanged since 0.2.0).

Invariants:

* ``agentsChanged``, ``activeSessionsChanged`` and ``terminalsChanged`` replace their field
  (an absent value deletes it).
* ``configChanged`` is a no-op while the root has no ``config``; otherwise it shallow-merges
  ``config`` into ``config.values``, or replaces them when ``replace`` is truthy (``replace``
  without ``config`` empties the values). VS Code sends many of these at once, one key each. A
  key sent as ``null`` is set to ``null`` (the official reducers spread the values as they come),
  the one place a ``None`` is written.
* Unknown or malformed actions return ``state`` itself; inputs are never mutated; no other
  ``None`` is written; ``now`` is not read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state._dispatch import dispatch
from ahp.state._js import as_dict, assign, clean, payload, truthy

__all__ = ["ROOT_ACTION_TYPES", "reduce_root"]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]


def _replace(field: str) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        return assign(state, **{field: payload(action, field)})

    return handler


def _config_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    config = state.get("config")
    if not truthy(config):
        return state
    config = as_dict(config)
    # Spread as sent: a key set to null holds null, as in every official reducer.
    update = {key: value if value is None else clean(value) for key, value in as_dict(action.get("config")).items()}
    values = dict(update) if truthy(action.get("replace")) else {**as_dict(config.get("values")), **update}
    return {**state, "config": {**config, "values": values}}


_HANDLERS: dict[str, Handler] = {
    "root/agentsChanged": _replace("agents"),
    "root/activeSessionsChanged": _replace("activeSessions"),
    "root/terminalsChanged": _replace("terminals"),
    "root/configChanged": _config_changed,
}

ROOT_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the root reducer understands."""


def reduce_root(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The root state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action, now)
