"""The 247 official AHP 0.7.0 reducer vectors, one test each (named by the vector's description),
run through the internal 0.9.0 reducers via the 0.7.0 dialect.

Each vector's actions are folded the way a 0.7.0 client computes them: the 0.7.0 state is lifted
into the internal model (``v0_7.state_up``), each 0.7.0 action is lifted (``v0_7.action_up``) and
reduced by ``ahp.state.reduce``, and the result is projected back down (``v0_7.state_down``) with
the three 0.7.0-only behaviours of ``v0_7.reduce`` applied. The result must equal ``expected``
("None means absent, key order ignored", ``tests/ahp/_wire.py``). The vectors come from the
vendored copy under ``ahp/dialects/v0_7/spec-0.7.0``.

Alongside: the lifted states and every intermediate internal state are valid 0.9.0 states (the
repaired 1.0.0 schema), and the vectors that use deliberately unknown action types are no-ops
that hand back the very same state object.
"""

from __future__ import annotations

from collections import Counter

import pytest

from ahp import state as internal
from ahp.dialects import v0_7
from tests.ahp._wire import contains_none, first_difference, strip_none, wire_equal

from ._support import (
    DELIBERATELY_UNKNOWN,
    STATE_DEFINITIONS,
    fold_0_7,
    schema_1_0,
    schema_errors,
    vectors_0_7,
)

VECTORS = vectors_0_7()
IDS = [vector["description"] for vector in VECTORS]


def test_the_vendored_corpus_is_the_whole_0_7_0_release():
    assert len(VECTORS) == 247
    assert Counter(vector["reducer"] for vector in VECTORS) == {
        "chat": 123,
        "session": 70,
        "terminal": 19,
        "changeset": 16,
        "annotations": 10,
        "root": 7,
        "resourceWatch": 2,
    }


def test_every_action_type_in_the_vectors_is_modelled_except_the_deliberately_unknown_ones():
    used = {(vector["reducer"], action["type"]) for vector in VECTORS for action in vector["actions"]}
    unknown = {action_type for kind, action_type in used if action_type not in internal.ACTION_TYPES[kind]}
    assert unknown == DELIBERATELY_UNKNOWN
    # The corpus exercises every one of the 85 action types 0.7.0 has.
    assert len({action_type for _, action_type in used} - DELIBERATELY_UNKNOWN) == 85


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_vector(vector):
    got = fold_0_7(vector["reducer"], vector["initial"], vector["actions"])
    got, expected = strip_none(got), strip_none(vector["expected"])
    assert wire_equal(got, expected), first_difference(got, expected)


UNKNOWN = [vector for vector in VECTORS if any(action["type"] in DELIBERATELY_UNKNOWN for action in vector["actions"])]


@pytest.mark.parametrize("vector", UNKNOWN, ids=[vector["description"] for vector in UNKNOWN])
def test_a_deliberately_unknown_action_hands_back_the_same_state(vector):
    kind = vector["reducer"]
    lifted = v0_7.state_up(kind, vector["initial"])
    for action in vector["actions"]:
        assert v0_7.reduce(kind, vector["initial"], action, 9999) is vector["initial"]
        assert internal.reduce(kind, lifted, action, 9999) is lifted


@pytest.mark.parametrize("vector", VECTORS, ids=IDS)
def test_the_internal_states_along_the_vector_are_valid_0_9_0_states(vector):
    kind = vector["reducer"]
    definition = STATE_DEFINITIONS[kind]
    state = v0_7.state_up(kind, strip_none(vector["initial"]))
    # 103 deliberately carries a response part of a kind no schema knows ("unknownFuturePart").
    allowed = {"activeTurn/responseParts/0"} if vector["_file"].startswith("103-") else set()
    for action in vector["actions"]:
        lifted = v0_7.action_up(kind, action)
        if lifted is None:
            continue
        assert schema_errors(schema_1_0(), "StateAction", lifted) == []
        state = internal.reduce(kind, state, lifted, 9999)
        assert not contains_none(state)
    errors = [error for error in schema_errors(schema_1_0(), definition, state) if error.split(":")[0] not in allowed]
    assert errors == []
