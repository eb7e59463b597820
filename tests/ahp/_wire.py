"""Comparing JSON values the way the official AHP reducer harness does (shared by every test that
checks reducer vectors, whatever the protocol version).

Every ``None`` means "absent" (dropped recursively on both sides), key order is ignored,
``1 == 1.0``, and booleans are never equal to numbers.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["contains_none", "first_difference", "strip_none", "wire_equal"]


def strip_none(value: Any) -> Any:
    """``value`` without ``None``-valued keys, at every depth."""
    if isinstance(value, dict):
        return {key: strip_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [strip_none(item) for item in value]
    return value


def wire_equal(left: Any, right: Any) -> bool:
    """Structural equality of two JSON values as the official harness compares them."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(wire_equal(left[key], right[key]) for key in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(wire_equal(a, b) for a, b in zip(left, right))
    return type(left) is type(right) and left == right


def first_difference(left: Any, right: Any, path: str = "$") -> str:
    """A human-readable pointer to where two JSON values first differ (for failure messages)."""
    if isinstance(left, dict) and isinstance(right, dict):
        for key in sorted(set(left) | set(right)):
            if key not in left:
                return f"{path}.{key}: missing, expected {json.dumps(right[key])[:200]}"
            if key not in right:
                return f"{path}.{key}: unexpected {json.dumps(left[key])[:200]}"
            if not wire_equal(left[key], right[key]):
                return first_difference(left[key], right[key], f"{path}.{key}")
    elif isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            return f"{path}: {len(left)} items, expected {len(right)}"
        for index, (a, b) in enumerate(zip(left, right)):
            if not wire_equal(a, b):
                return first_difference(a, b, f"{path}[{index}]")
    return f"{path}: got {json.dumps(left)[:200]}, expected {json.dumps(right)[:200]}"


def contains_none(value: Any) -> bool:
    """Whether ``None`` appears anywhere as a dict value (reducers must never write one)."""
    if isinstance(value, dict):
        return any(item is None or contains_none(item) for item in value.values())
    if isinstance(value, list):
        return any(contains_none(item) for item in value)
    return False
