"""Pure reducer for the changeset channel (``ChangesetState``, AHP 0.9.0).

Invariants:

* ``statusChanged`` sets ``status``; ``error`` is kept only when the new status is ``error``
  (a recovered changeset never carries a stale error). ``recomputing`` [1.0.0 schema] is a status
  like any other.
* ``fileSet`` upserts by ``file.id`` (new files are appended, order is stable); ``fileRemoved``
  removes a present id and is a no-op otherwise.
* ``filesReviewChanged`` sets ``reviewed`` on every listed file that exists and is a no-op when
  none does.
* ``contentChanged`` replaces ``files``, and ``operations`` when it carries them. Since 0.9.0 it
  has no ``error``: failures travel on ``statusChanged``.
* ``operationsChanged`` replaces ``operations`` (absent or null removes the key);
  ``operationStatusChanged`` sets one operation's ``status``, with ``error`` only when that status is
  ``error``, and is a no-op for an unknown operation.
* ``cleared`` empties ``files``.
* Unknown or malformed actions return ``state`` itself; inputs are never mutated; no ``None`` is
  written; ``now`` is not read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state._dispatch import dispatch
from ahp.state._js import as_list, assign, payload
from ahp.state._lists import index_by, remove_at, upsert_by

__all__ = ["CHANGESET_ACTION_TYPES", "reduce_changeset"]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]


def _status_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    status = payload(action, "status")
    return assign(state, status=status, error=payload(action, "error") if status == "error" else None)


def _file_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    file = payload(action, "file")
    if not isinstance(file, dict):
        return state
    return {**state, "files": upsert_by(as_list(state.get("files")), "id", file)}


def _file_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    files = as_list(state.get("files"))
    index = index_by(files, "id", action.get("fileId"))
    if index < 0:
        return state
    return {**state, "files": remove_at(files, index)}


def _files_review_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    targets = action.get("files")
    if not isinstance(targets, list):
        return state
    wanted = {target for target in targets if isinstance(target, str)}
    reviewed = payload(action, "reviewed")
    changed = False
    files = []
    for file in as_list(state.get("files")):
        if isinstance(file, dict) and file.get("id") in wanted:
            file = assign(file, reviewed=reviewed)
            changed = True
        files.append(file)
    return {**state, "files": files} if changed else state


def _content_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    files = payload(action, "files")
    if not isinstance(files, list):
        return state
    operations = payload(action, "operations")
    nxt = {**state, "files": files}
    if operations is not None:
        nxt["operations"] = operations
    return nxt


def _operations_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, operations=payload(action, "operations"))


def _operation_status_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    operations = as_list(state.get("operations"))
    index = index_by(operations, "id", action.get("operationId"))
    if index < 0:
        return state
    status = payload(action, "status")
    updated = list(operations)
    updated[index] = assign(
        operations[index], status=status, error=payload(action, "error") if status == "error" else None
    )
    return {**state, "operations": updated}


def _cleared(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return {**state, "files": []}


_HANDLERS: dict[str, Handler] = {
    "changeset/statusChanged": _status_changed,
    "changeset/fileSet": _file_set,
    "changeset/fileRemoved": _file_removed,
    "changeset/filesReviewChanged": _files_review_changed,
    "changeset/contentChanged": _content_changed,
    "changeset/operationsChanged": _operations_changed,
    "changeset/operationStatusChanged": _operation_status_changed,
    "changeset/cleared": _cleared,
}

CHANGESET_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the changeset reducer understands."""


def reduce_changeset(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The changeset state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action, now)
