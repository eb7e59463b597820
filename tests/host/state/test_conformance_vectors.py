"""The 160 official AHP 0.2.0 reducer vectors, one test each, named by the vector's description.

Vectors come from the vendored spec (``host/protocol/spec/test-cases/reducers/``), falling back to
the shared reference copy; if neither exists the suite fails rather than silently passing.
"""

from __future__ import annotations

import pytest

from ._support import first_difference, fold, load_vectors, strip_none, vector_dir, wire_equal

VECTORS = load_vectors()


def test_official_vectors_are_present():
    assert vector_dir() is not None, "no reducer vectors under host/protocol/spec or /work/shared"
    assert len(VECTORS) == 160


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["description"] for vector in VECTORS])
def test_vector(vector):
    got = strip_none(fold(vector["reducer"], vector["initial"], vector["actions"]))
    expected = strip_none(vector["expected"])
    assert wire_equal(got, expected), first_difference(got, expected)
