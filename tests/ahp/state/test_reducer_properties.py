"""Properties every internal reducer keeps, on arbitrary action sequences (hypothesis).

Random inputs start from a real state (the lifted 0.7.0 vectors and our 0.9.0 vectors, whose ids
line up with their actions) and splice in real actions from other vectors and synthetic actions of
every known type carrying arbitrary JSON in any field, so both the state machines' corners and
malformed wire input are exercised. The properties:

* folding never raises and never mutates the state or the actions;
* a state that holds no ``None`` never gains one (reducers write "absent" by deleting keys);
* an unknown action type, or an action of another channel kind, hands back the very same state;
* the 0.7.0 dialect's ``reduce`` (up → internal reduce → down) never raises or mutates either.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp import state as internal
from ahp.dialects import v0_7
from tests.ahp._wire import contains_none, strip_none

from ._support import vectors_0_7, vectors_0_9

CASES = [
    (vector["reducer"], v0_7.state_up(vector["reducer"], strip_none(vector["initial"])), actions)
    for vector in vectors_0_7()
    for actions in [[v0_7.action_up(vector["reducer"], action) for action in vector["actions"]]]
    if all(action is not None for action in actions)
] + [(vector["reducer"], strip_none(vector["initial"]), vector["actions"]) for vector in vectors_0_9()]

CORPUS_ACTIONS = {
    kind: [action for case_kind, _, actions in CASES if case_kind == kind for action in actions]
    for kind in internal.CHANNEL_KINDS
}
FIELD_NAMES = sorted({key for actions in CORPUS_ACTIONS.values() for action in actions for key in action} - {"type"})

PROPERTY_SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
json_scalars |= st.sampled_from(
    ["", "turn-1", "t2", "tc-1", "md-1", "r1", "q1", "steering", "queued", "error", "ahp-chat:/c1", "file:///a"]
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELD_NAMES), inner, max_size=4),
    max_leaves=8,
)


@st.composite
def channel_inputs(draw):
    """A channel kind, a clean state of that kind and a sequence of (possibly malformed) actions."""
    kind, state, actions = draw(st.sampled_from(CASES))
    borrowed = st.sampled_from(CORPUS_ACTIONS[kind])
    synthetic = st.builds(
        lambda action_type, fields: {"type": action_type, **fields},
        st.sampled_from(sorted(internal.ACTION_TYPES[kind])),
        st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=5),
    )
    actions = list(actions)
    for _ in range(draw(st.integers(0, 6))):
        actions.insert(draw(st.integers(0, len(actions))), draw(borrowed | synthetic))
    return kind, state, actions


@PROPERTY_SETTINGS
@given(channel_inputs(), st.integers(0, 2**41))
def test_folding_never_raises_never_mutates_and_never_writes_none(inputs, now):
    kind, state, actions = inputs
    state_before, actions_before = copy.deepcopy(state), copy.deepcopy(actions)
    current = state
    for action in actions:
        current = internal.reduce(kind, current, action, now)
        assert isinstance(current, dict)
        assert not contains_none(current)
    assert state == state_before and actions == actions_before


@PROPERTY_SETTINGS
@given(channel_inputs(), st.sampled_from(internal.CHANNEL_KINDS), json_values)
def test_unknown_or_foreign_actions_hand_back_the_same_state(inputs, other_kind, junk):
    kind, state, _ = inputs
    assert internal.reduce(kind, state, {"type": f"{kind}/noSuchAction", "junk": junk}, 0) is state
    assert internal.reduce(kind, state, {"junk": junk}, 0) is state
    assert internal.reduce(kind, state, junk, 0) is state
    if other_kind != kind:
        for action_type in sorted(internal.ACTION_TYPES[other_kind]):
            if action_type not in internal.ACTION_TYPES[kind]:
                assert internal.reduce(kind, state, {"type": action_type}, 0) is state


@PROPERTY_SETTINGS
@given(channel_inputs(), json_values)
def test_reducers_take_any_value_as_state_without_raising(inputs, junk_state):
    kind, _, actions = inputs
    for action in actions[:3]:
        result = internal.reduce(kind, junk_state, action, 0)
        if isinstance(junk_state, dict):
            assert isinstance(result, dict)
        else:
            assert result is junk_state


@PROPERTY_SETTINGS
@given(channel_inputs())
def test_the_0_7_0_dialect_folds_any_sequence_without_raising_or_mutating(inputs):
    kind, state, actions = inputs
    if kind not in v0_7.KINDS:
        assert v0_7.state_down(kind, state) is None
        return
    old = v0_7.state_down(kind, state)
    old_before, actions_before = copy.deepcopy(old), copy.deepcopy(actions)
    for action in actions:
        down = v0_7.action_down(kind, action)
        if down is not None:
            old = v0_7.reduce(kind, old, down, 9999)
            assert isinstance(old, dict)
    assert actions == actions_before
    assert v0_7.state_down(kind, state) == old_before


# ── The 0.8.0/0.9.0 actions, as their schema descriptions state them ──────────────────────────────

URIS = st.sampled_from([f"file:///{name}" for name in "abcdefg"])
SESSION = {"provider": "p", "title": "S", "status": 1, "lifecycle": "ready", "activeClients": [], "chats": []}


@PROPERTY_SETTINGS
@given(st.lists(URIS, unique=True, min_size=1, max_size=6), st.data())
def test_working_directory_replaced_swaps_one_entry_and_keeps_the_rest_in_order(directories, data):
    target = data.draw(st.sampled_from(directories))
    replacement = data.draw(URIS)
    state = {**SESSION, "workingDirectories": directories}
    action = {"type": "session/workingDirectoryReplaced", "directory": target, "replacement": replacement}
    result = internal.reduce("session", state, action, 0)["workingDirectories"]
    others = [directory for directory in directories if directory not in (target, replacement)]
    assert replacement in result and len(set(result)) == len(result)
    assert (target in result) == (target == replacement)
    assert [directory for directory in result if directory != replacement] == others
    position = result.index(replacement)
    if replacement in directories and directories.index(replacement) < directories.index(target):
        assert position == directories.index(replacement)  # an earlier replacement keeps its place
    else:
        assert position == directories.index(target)  # otherwise it takes the target's place


@PROPERTY_SETTINGS
@given(st.lists(URIS, unique=True, min_size=1, max_size=6), st.data())
def test_chats_reordered_applies_exactly_the_complete_orders(uris, data):
    chats = [{"resource": uri, "title": uri, "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z"} for uri in uris]
    state = {**SESSION, "chats": chats}
    order = data.draw(st.lists(URIS, max_size=7))
    result = internal.reduce("session", state, {"type": "session/chatsReordered", "chats": order}, 0)
    if sorted(order) == sorted(uris):
        assert [chat["resource"] for chat in result["chats"]] == order
        assert all(chat in chats for chat in result["chats"])  # every summary kept as it was
    else:
        assert result is state


@PROPERTY_SETTINGS
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["w1", "w2", "w3"])), max_size=12))
def test_background_work_lists_the_ids_set_and_not_removed_since_in_first_set_order(operations):
    state = {
        "resource": "ahp-chat:/c",
        "title": "C",
        "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": [],
    }
    live: list[str] = []  # ids in the order the list must hold them
    for step, (is_set, work_id) in enumerate(operations):
        if is_set:
            work = {"kind": "shell", "id": work_id, "label": str(step), "startedAt": "x", "command": "c"}
            state = internal.reduce("chat", state, {"type": "chat/backgroundWorkSet", "work": work}, 0)
            if work_id not in live:
                live.append(work_id)  # an upsert of a live id keeps its place
        else:
            state = internal.reduce("chat", state, {"type": "chat/backgroundWorkRemoved", "id": work_id}, 0)
            if work_id in live:
                live.remove(work_id)
    entries = state.get("backgroundWork", [])
    assert [entry["id"] for entry in entries] == live
    assert "backgroundWork" not in state or entries  # never an empty list
