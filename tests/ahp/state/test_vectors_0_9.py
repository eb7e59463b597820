"""Our hand-made vectors for what 0.8.0 and 0.9.0 added or changed (``vectors-0.9/README.md``),
one test each, named by description, folded with the internal reducer (``ahp.state.reduce``,
clock 9999 ms) and compared with ``expected`` ("None means absent, key order ignored").

Every initial and expected state and every action also validates against the 1.0.0 schemas
(repaired in memory, ``_support.schema_1_0``), so the vectors use the real 0.9.0 shapes, and the
set of vectors covers every action type introduced after 0.7.0 that the internal model has.
"""

from __future__ import annotations

import pytest

from ahp import state as internal
from ahp.dialects.catalogue import ACTION_INTRODUCED_IN, known_to
from tests.ahp._wire import first_difference, strip_none, wire_equal

from ._support import STATE_DEFINITIONS, fold, schema_1_0, schema_errors, vectors_0_9

VECTORS = vectors_0_9()


def test_the_vectors_cover_every_action_type_added_after_0_7_0():
    used = {action["type"] for vector in VECTORS for action in vector["actions"]}
    modelled = set().union(*internal.ACTION_TYPES.values())
    added = {action_type for action_type in ACTION_INTRODUCED_IN if not known_to("0.7.0", action_type)}
    assert added & modelled <= used
    assert added - modelled == {"chat/canvasesChanged", "canvas/stateChanged"}  # 0.10.0, not in 0.9.0


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["description"] for vector in VECTORS])
def test_vector(vector):
    got = strip_none(fold(vector["reducer"], vector["initial"], vector["actions"]))
    expected = strip_none(vector["expected"])
    assert wire_equal(got, expected), first_difference(got, expected)


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["description"] for vector in VECTORS])
def test_vector_is_written_in_0_9_0_shapes(vector):
    definition = STATE_DEFINITIONS[vector["reducer"]]
    assert schema_errors(schema_1_0(), definition, vector["initial"]) == []
    assert schema_errors(schema_1_0(), definition, vector["expected"]) == []
    for action in vector["actions"]:
        assert action["type"] in internal.ACTION_TYPES[vector["reducer"]]
        assert schema_errors(schema_1_0(), "StateAction", action) == []
