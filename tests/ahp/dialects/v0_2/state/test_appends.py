"""The law behind O(1) text appends (``ahp.dialects.v0_2.state.appends``): a run of appends with one key, after
the first found its target, reduces like one append of the joined contents."""

from __future__ import annotations

import json
import random

from ahp.dialects.v0_2.state import reduce
from ahp.dialects.v0_2.state.appends import joined, run_key

from ._support import CLOCK, fold, load_differential_cases, stutter

SESSION_CASES = [case for case in load_differential_cases() if case["kind"] == "session"]


def fold_in_runs(state: dict, actions: list) -> dict:
    """Reduce as a holder of runs does: the first append of a run alone, the rest joined."""
    key, template, pending = None, {}, []
    for action in actions:
        action_key = run_key(action)
        if action_key is not None and action_key == key:
            pending.append(action["content"])
            continue
        if pending:
            state = reduce("session", state, joined(template, pending), CLOCK)
            pending = []
        after = reduce("session", state, action, CLOCK)
        key = action_key if after is not state else None
        template, state = action, after
    if pending:
        state = reduce("session", state, joined(template, pending), CLOCK)
    return state


def test_a_run_reduced_once_builds_the_same_json_as_its_appends_one_by_one() -> None:
    rng = random.Random(7)
    runs = 0
    for index, case in enumerate(SESSION_CASES):
        actions = stutter(case["actions"], rng)
        runs += sum(1 for a, b in zip(actions, actions[1:]) if run_key(a) is not None and run_key(a) == run_key(b))
        one_by_one = fold("session", case["initial"], actions)
        # Same keys in the same order, not only equal: snapshots and subscribe send this text.
        assert json.dumps(fold_in_runs(case["initial"], actions)) == json.dumps(one_by_one), f"session case {index}"
    assert runs > 1000  # the stutter made runs to join


def test_only_string_appends_without_a_new_invocation_message_join_runs() -> None:
    delta = {"type": "session/delta", "turnId": "t", "partId": "p", "content": "x"}
    call_delta = {"type": "session/toolCallDelta", "turnId": "t", "toolCallId": "c", "content": "{"}
    assert run_key(delta) == ("session/delta", "t", "p")
    assert run_key({**delta, "type": "session/reasoning"}) == ("session/reasoning", "t", "p")
    assert run_key(call_delta) == ("session/toolCallDelta", "t", "c")
    assert run_key({**call_delta, "invocationMessage": "Reading"}) is None
    assert run_key({**delta, "content": 3}) is None
    assert run_key({"type": "session/responsePart", "turnId": "t", "part": {}}) is None
