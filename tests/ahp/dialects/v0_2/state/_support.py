"""Shared helpers for the reducer tests: fixture locations, folding, and the wire comparison.

The comparison follows PROTOCOL.md §13: every ``None`` means "absent" (dropped recursively on
both sides), key order is ignored, ``1 == 1.0``, and booleans are never equal to numbers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ahp.dialects.v0_2.state import reduce
from ahp.dialects.v0_2.state.appends import run_key

REPO_ROOT = Path(__file__).resolve().parents[5]
VENDORED_VECTORS = REPO_ROOT / "ahp" / "protocol" / "spec" / "test-cases" / "reducers"
SHARED_VECTORS = Path("/work/shared/ahp/spec-0.2.0/test-cases/reducers")
DIFFERENTIAL_CASES = REPO_ROOT / "tests" / "data" / "ahp-differential" / "reducer-cases.jsonl"

CLOCK = 9999
"""The frozen clock of the official harness."""


def vector_dir() -> Path | None:
    """The vendored official vectors, falling back to the shared read-only copy."""
    for candidate in (VENDORED_VECTORS, SHARED_VECTORS):
        if candidate.is_dir() and any(candidate.glob("*.json")):
            return candidate
    return None


def load_vectors() -> list[dict]:
    """Every official vector, sorted by file name (some number prefixes repeat)."""
    directory = vector_dir()
    if directory is None:
        return []
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(directory.glob("*.json"))]


def load_differential_cases() -> list[dict]:
    """Every differential case, in file order (the index is the 0-based line number)."""
    with DIFFERENTIAL_CASES.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def fold(kind: str, state: Any, actions: list, now: int = CLOCK) -> Any:
    """Apply ``actions`` in order with the reducer for ``kind``."""
    for action in actions:
        state = reduce(kind, state, action, now)
    return state


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


STUTTER_PIECES = ("+", "ab", "", "\u00fc", "{\"k\": 1}", "\n")


def stutter(actions: list, rng: random.Random) -> list:
    """``actions`` with every joinable append (``ahp.dialects.v0_2.state.appends``) followed by 0-5 more appends
    like it carrying other pieces of text: streams full of runs, for comparing ways of reducing."""
    out = []
    for action in actions:
        out.append(action)
        if isinstance(action, dict) and run_key(action) is not None:
            out.extend({**action, "content": rng.choice(STUTTER_PIECES)} for _ in range(rng.randint(0, 5)))
    return out
