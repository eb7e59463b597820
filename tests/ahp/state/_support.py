"""Shared helpers for the internal model's tests: the vendored 0.7.0 corpus, our 0.9.0 vectors,
the schemas as validators, and folding.

Everything is read from the repository (``ahp/dialects/v0_7/spec-0.7.0``, ``ahp/protocol/spec-1.0.0``,
``tests/ahp/state/vectors-0.9``), never from ``/work/shared``.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from ahp import state as internal
from ahp.dialects import v0_7
from tests.ahp._wire import strip_none

REPO_ROOT = Path(__file__).resolve().parents[3]
SPEC_0_7 = REPO_ROOT / "ahp" / "dialects" / "v0_7" / "spec-0.7.0"
SPEC_1_0 = REPO_ROOT / "ahp" / "protocol" / "spec-1.0.0"
VECTORS_0_7 = SPEC_0_7 / "test-cases" / "reducers"
ROUND_TRIPS_0_7 = SPEC_0_7 / "test-cases" / "round-trips"
VECTORS_0_9 = Path(__file__).resolve().parent / "vectors-0.9"

CLOCK = 9999
"""The frozen clock of the official harness (epoch milliseconds)."""

CLOCK_ISO = "1970-01-01T00:00:09.999Z"

DELIBERATELY_UNKNOWN = frozenset(
    {
        "root/nonExistentAction",
        "session/nonExistentAction",
        "terminal/nonExistentAction",
        "changeset/nonExistentAction",
        "resourceWatch/unknownAction",
        "annotations/unknownActionType",
    }
)
"""Action types the 0.7.0 vectors use on purpose to show that unknown actions are no-ops."""


def _load(directory: Path) -> list[dict]:
    return [
        {**json.loads(path.read_text(encoding="utf-8")), "_file": path.name}
        for path in sorted(directory.glob("*.json"))
    ]


@cache
def vectors_0_7() -> tuple[dict, ...]:
    """The 247 official 0.7.0 reducer vectors, sorted by file name (``_file`` added)."""
    return tuple(_load(VECTORS_0_7))


@cache
def round_trips_0_7() -> tuple[dict, ...]:
    """The 39 official 0.7.0 round-trip fixtures (``_file`` added)."""
    return tuple(_load(ROUND_TRIPS_0_7))


@cache
def vectors_0_9() -> tuple[dict, ...]:
    """Our hand-made 0.9.0 vectors (see ``vectors-0.9/README.md``)."""
    return tuple(_load(VECTORS_0_9))


def fold(kind: str, state: Any, actions: list, now: int = CLOCK) -> Any:
    """``actions`` applied in order by the internal reducer for ``kind``."""
    for action in actions:
        state = internal.reduce(kind, state, action, now)
    return state


def fold_0_7(kind: str, state: Any, actions: list, now: int = CLOCK) -> Any:
    """``actions`` applied in order as a 0.7.0 client computes them, through the 0.7.0 dialect."""
    for action in actions:
        state = v0_7.reduce(kind, state, action, now)
    return state


@cache
def schema_0_7() -> dict:
    """The merged, repaired 0.7.0 schema (``ahp-0.7.0.schema.json``)."""
    return json.loads((SPEC_0_7 / "ahp-0.7.0.schema.json").read_text(encoding="utf-8"))


@cache
def schema_1_0() -> dict:
    """The three 1.0.0 files merged into one schema, repaired in memory as their SOURCE.txt says:
    the malformed ``{"$ref": "#/$defs/"}`` union branch dropped and ``SessionStatus`` a bitset."""
    defs: dict = {}
    for name in ("state", "notifications", "actions"):
        loaded = json.loads((SPEC_1_0 / "schema" / f"{name}.schema.json").read_text(encoding="utf-8"))
        defs.update(loaded["$defs"])
    defs = copy.deepcopy(defs)
    defs["StateAction"]["oneOf"] = [branch for branch in defs["StateAction"]["oneOf"] if branch["$ref"] != "#/$defs/"]
    defs["SessionStatus"] = {
        "type": "integer",
        "minimum": 0,
        "description": defs["SessionStatus"].get("description", ""),
    }
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$defs": defs}


def validator(schema: dict, definition: str) -> Draft202012Validator:
    """A validator for ``#/$defs/<definition>`` of ``schema``."""
    return Draft202012Validator({**schema, "$ref": f"#/$defs/{definition}"})


STATE_DEFINITIONS = {
    "root": "RootState",
    "session": "SessionState",
    "chat": "ChatState",
    "terminal": "TerminalState",
    "changeset": "ChangesetState",
    "resourceWatch": "ResourceWatchState",
    "annotations": "AnnotationsState",
    "automation": "AutomationState",
    "automationRun": "AutomationRunState",
}
"""Channel kind → the schema definition of its state."""


def schema_errors(schema: dict, definition: str, value: Any) -> list[str]:
    """Validation errors of ``value`` (null-valued keys dropped) against ``definition``."""
    checker = _validator_cached(id(schema), definition, schema)
    return [
        f"{'/'.join(map(str, error.absolute_path))}: {error.message[:300]}"
        for error in checker.iter_errors(strip_none(value))
    ]


_VALIDATORS: dict[tuple[int, str], Draft202012Validator] = {}


def _validator_cached(key: int, definition: str, schema: dict) -> Draft202012Validator:
    found = _VALIDATORS.get((key, definition))
    if found is None:
        found = _VALIDATORS[(key, definition)] = validator(schema, definition)
    return found
