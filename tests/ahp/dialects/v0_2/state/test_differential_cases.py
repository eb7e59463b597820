"""The 3,300 differential cases: random action sequences whose expected states come from the
official 0.2.0 TypeScript reducers (see ``tests/data/ahp-differential/README.md``).

Each case is its own test, named ``<line index>-<kind>`` so a failure points at the exact line.
"""

from __future__ import annotations

import json

import pytest

from ._support import first_difference, fold, load_differential_cases, strip_none, wire_equal

CASES = load_differential_cases()


def test_all_differential_cases_are_present():
    kinds = [case["kind"] for case in CASES]
    assert len(CASES) == 3300
    assert kinds.count("session") == 2100
    assert all(kinds.count(kind) == 300 for kind in ("root", "terminal", "changeset", "resourceWatch"))


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{i}-{case['kind']}" for i, case in enumerate(CASES)])
def test_differential_case(index):
    case = CASES[index]
    got = strip_none(fold(case["kind"], case["initial"], case["actions"]))
    expected = strip_none(case["expected"])
    assert wire_equal(got, expected), (
        f"differential case {index} ({case['kind']}): {first_difference(got, expected)}\n"
        f"actions: {json.dumps(case['actions'])[:2000]}"
    )
