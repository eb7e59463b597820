"""Pure reducer for the changeset channel (``ChangesetState``, AHP 0.2.0 PROTOCOL.md §11).

Invariants:

* ``statusChanged`` sets ``status``; ``error`` is kept only when the new status is ``error``
  (a recovered changeset never carries a stale error).
* ``fileSet`` upserts by ``file.id`` (new files are appended, order is stable); ``fileRemoved``
  removes a present id and is a no-op otherwise.
* ``operationsChanged`` replaces ``operations``; absent or null removes the key.
* ``cleared`` empties ``files``.
* Unknown or malformed actions return ``state`` itself; inputs are never mutated; no ``None`` is
  written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.dialects.v0_2.state._dispatch import dispatch
from ahp.dialects.v0_2.state._js import as_dict, as_list, assign, payload

__all__ = ["CHANGESET_ACTION_TYPES", "reduce_changeset"]

Handler = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]


def _index_of(files: list[Any], file_id: object) -> int:
    for index, file in enumerate(files):
        if as_dict(file).get("id") == file_id:
            return index
    return -1


def _status_changed(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    status = payload(action, "status")
    error = payload(action, "error") if status == "error" else None
    return assign(state, status=status, error=error)


def _file_set(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    file = payload(action, "file")
    if not isinstance(file, dict):
        return state
    files = as_list(state.get("files"))
    index = _index_of(files, file.get("id"))
    if index < 0:
        return {**state, "files": [*files, file]}
    updated = list(files)
    updated[index] = file
    return {**state, "files": updated}


def _file_removed(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    files = as_list(state.get("files"))
    index = _index_of(files, action.get("fileId"))
    if index < 0:
        return state
    return {**state, "files": files[:index] + files[index + 1 :]}


def _operations_changed(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return assign(state, operations=payload(action, "operations"))


def _cleared(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    return {**state, "files": []}


_HANDLERS: dict[str, Handler] = {
    "changeset/statusChanged": _status_changed,
    "changeset/fileSet": _file_set,
    "changeset/fileRemoved": _file_removed,
    "changeset/operationsChanged": _operations_changed,
    "changeset/cleared": _cleared,
}

CHANGESET_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the changeset reducer understands."""


def reduce_changeset(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    """The changeset state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action)
