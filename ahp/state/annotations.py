"""Pure reducer for a session's annotations channel (``AnnotationsState``, AHP 0.9.0).

The channel is ``<session URI>/annotations`` (``channels.annotations_uri``). An annotation is
``{id, origin, resource, range?, resolved, entries, _meta?}``; since 0.9.0 its provenance is
``origin`` ``{session, chat?, turnId?}`` instead of a bare ``turnId``.

Invariants:

* ``annotations/set`` upserts a whole annotation by ``id`` (new ones are appended).
* ``annotations/updated`` writes only the fields the action carries (``origin``, ``resource``,
  ``range``, ``resolved``); ``id``, ``entries`` and ``_meta`` are never touched, and an absent
  field leaves the annotation's value alone.
* ``annotations/removed`` removes one annotation; ``annotations/entrySet`` upserts an entry by id
  within one annotation; ``annotations/entryRemoved`` removes one entry.
* An unknown annotation or entry id is a no-op; so is every unknown or malformed action.
  Inputs are never mutated, no ``None`` is written, ``now`` is not read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state._dispatch import dispatch
from ahp.state._js import as_list, payload
from ahp.state._lists import index_by, remove_at, upsert_by

__all__ = ["ANNOTATIONS_ACTION_TYPES", "reduce_annotations"]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]

UPDATABLE = ("origin", "resource", "range", "resolved")
"""The annotation fields ``annotations/updated`` may write."""


def _set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    annotation = payload(action, "annotation")
    if not isinstance(annotation, dict):
        return state
    return {**state, "annotations": upsert_by(as_list(state.get("annotations")), "id", annotation)}


def _with_annotation(state: dict[str, Any], annotation_id: object, update: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    annotations = as_list(state.get("annotations"))
    index = index_by(annotations, "id", annotation_id)
    if index < 0:
        return state
    current = annotations[index]
    updated = update(current)
    if updated is current:
        return state
    new_annotations = list(annotations)
    new_annotations[index] = updated
    return {**state, "annotations": new_annotations}


def _updated(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    changes = {field: payload(action, field) for field in UPDATABLE if payload(action, field) is not None}
    return _with_annotation(
        state, action.get("annotationId"), lambda annotation: {**annotation, **changes} if changes else annotation
    )


def _removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    annotations = as_list(state.get("annotations"))
    index = index_by(annotations, "id", action.get("annotationId"))
    if index < 0:
        return state
    return {**state, "annotations": remove_at(annotations, index)}


def _entry_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entry = payload(action, "entry")
    if not isinstance(entry, dict):
        return state
    return _with_annotation(
        state,
        action.get("annotationId"),
        lambda annotation: {**annotation, "entries": upsert_by(as_list(annotation.get("entries")), "id", entry)},
    )


def _entry_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    def remove(annotation: dict[str, Any]) -> dict[str, Any]:
        entries = as_list(annotation.get("entries"))
        index = index_by(entries, "id", action.get("entryId"))
        return annotation if index < 0 else {**annotation, "entries": remove_at(entries, index)}

    return _with_annotation(state, action.get("annotationId"), remove)


_HANDLERS: dict[str, Handler] = {
    "annotations/set": _set,
    "annotations/updated": _updated,
    "annotations/removed": _removed,
    "annotations/entrySet": _entry_set,
    "annotations/entryRemoved": _entry_removed,
}

ANNOTATIONS_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the annotations reducer understands."""


def reduce_annotations(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The annotations state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action, now)
