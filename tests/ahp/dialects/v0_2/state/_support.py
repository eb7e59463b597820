"""Shared helpers for the reducer tests: fixture locations, folding, and the wire comparison.

The comparison follows PROTOCOL.md §13 and lives in ``tests/ahp/_wire.py`` (shared with the
internal model's tests): every ``None`` means "absent", key order is ignored, ``1 == 1.0``, and
booleans are never equal to numbers.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from ahp.dialects.v0_2.state import reduce
from ahp.dialects.v0_2.state.appends import run_key
from tests.ahp._wire import contains_none, first_difference, strip_none, wire_equal

__all__ = [
    "CLOCK",
    "DIFFERENTIAL_CASES",
    "REPO_ROOT",
    "contains_none",
    "first_difference",
    "fold",
    "load_differential_cases",
    "load_vectors",
    "strip_none",
    "stutter",
    "vector_dir",
    "wire_equal",
]

REPO_ROOT = Path(__file__).resolve().parents[5]
VENDORED_VECTORS = REPO_ROOT / "ahp" / "dialects" / "v0_2" / "wire" / "spec" / "test-cases" / "reducers"
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
