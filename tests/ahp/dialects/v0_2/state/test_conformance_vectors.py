"""The 160 official AHP 0.2.0 reducer vectors, one test each, named by the vector's description.

Vectors come from the vendored spec (``ahp/dialects/v0_2/wire/spec/test-cases/reducers/``), falling back to
the shared reference copy; if neither exists the suite fails rather than silently passing.
"""

from __future__ import annotations

import pytest

from ahp.dialects.v0_2.state import ACTION_TYPES

from ._support import first_difference, fold, load_vectors, strip_none, vector_dir, wire_equal

VECTORS = load_vectors()


def test_official_vectors_are_present():
    assert vector_dir() is not None, "no reducer vectors under ahp/dialects/v0_2/wire/spec or /work/shared"
    assert len(VECTORS) == 160


def test_reducers_define_exactly_the_61_action_types_of_the_catalogue():
    counts = {kind: len(types) for kind, types in ACTION_TYPES.items()}
    assert counts == {"root": 4, "session": 40, "terminal": 11, "changeset": 5, "resourceWatch": 1}
    for kind, types in ACTION_TYPES.items():
        prefix = kind + "/"
        assert all(action_type.startswith(prefix) for action_type in types), kind


def test_every_action_type_in_the_vectors_is_known_except_the_deliberately_unknown_ones():
    unknown = {
        action["type"]
        for vector in VECTORS
        for action in vector["actions"]
        if action["type"] not in ACTION_TYPES[vector["reducer"]]
    }
    assert unknown == {
        "root/nonExistentAction",
        "session/nonExistentAction",
        "terminal/nonExistentAction",
        "changeset/nonExistentAction",
        "resourceWatch/unknownAction",
    }
    seen = {action["type"] for vector in VECTORS for action in vector["actions"]}
    assert set().union(*ACTION_TYPES.values()) <= seen


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["description"] for vector in VECTORS])
def test_vector(vector):
    got = strip_none(fold(vector["reducer"], vector["initial"], vector["actions"]))
    expected = strip_none(vector["expected"])
    assert wire_equal(got, expected), first_difference(got, expected)
