"""List helpers shared by the reducers: keyed lookup, upsert and removal on JSON-shaped lists.

Invariants: every helper is pure, never mutates its arguments, returns new lists only when something
changes, and never raises on any JSON-shaped input (entries that are not dicts simply never match).
"""

from __future__ import annotations

from typing import Any

__all__ = ["index_by", "remove_at", "upsert_by", "without_value"]


def index_by(items: list[Any], key: str, value: Any) -> int:
    """The index of the first dict in ``items`` whose ``key`` equals ``value``; -1 when none does.

    ``value`` ``None`` matches an entry that lacks the key (JS: ``undefined === undefined``).
    """
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get(key) == value and _same_kind(item.get(key), value):
            return index
    return -1


def _same_kind(left: Any, right: Any) -> bool:
    # JS `===` never equates `true` with `1`, while Python's `==` does.
    return isinstance(left, bool) == isinstance(right, bool)


def upsert_by(items: list[Any], key: str, entry: dict[str, Any]) -> list[Any]:
    """``items`` with ``entry`` replacing the first entry of the same ``key`` value, else appended."""
    index = index_by(items, key, entry.get(key))
    if index < 0:
        return [*items, entry]
    updated = list(items)
    updated[index] = entry
    return updated


def remove_at(items: list[Any], index: int) -> list[Any]:
    """``items`` without the entry at ``index``."""
    return items[:index] + items[index + 1 :]


def without_value(items: list[Any], value: Any) -> tuple[list[Any], bool]:
    """``items`` without the first occurrence of ``value`` (a plain value such as a URI), and whether
    one was removed."""
    for index, item in enumerate(items):
        if item == value and _same_kind(item, value):
            return remove_at(items, index), True
    return items, False
