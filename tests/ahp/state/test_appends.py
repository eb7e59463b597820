"""The law behind O(1) text appends of the internal model (``ahp.state.appends``): a run of
appends with one key, after the first found its target, reduces like one append of the joined
contents; the holder that keeps runs (``AppendingState``) is always the reducers' state."""

from __future__ import annotations

import json
import random

from ahp.state import reduce
from ahp.state.appends import AppendingState, TextRun, expand, extended, joined, run_key

from ._support import CLOCK, fold, vectors_0_7, vectors_0_9

PIECES = ["a", "", " b", "é", "\n", "{\"x\":", "1}", "\u2028", "long " * 20]


def _chat_cases() -> list[dict]:
    return [case for case in (*vectors_0_7(), *vectors_0_9()) if case["reducer"] == "chat"]


def stutter(actions: list, rng: random.Random) -> list:
    """``actions`` with every joinable append followed by 0-5 more like it (other text)."""
    out = []
    for action in actions:
        out.append(action)
        if isinstance(action, dict) and run_key(action) is not None:
            out.extend({**action, "content": rng.choice(PIECES)} for _ in range(rng.randint(0, 5)))
    return out


def _streams(rng: random.Random) -> list[tuple[dict, list]]:
    """A chat with one active turn and streams mixing every append with actions that end runs."""
    initial = {"turns": [], "activeTurn": {"id": "t", "startedAt": "2026-01-01T00:00:00.000Z",
                                           "message": {"text": "hi", "origin": {"kind": "user"}}, "responseParts": []}}
    setup = [
        {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m1", "content": ""}},
        {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "reasoning", "id": "r1", "content": ""}},
        {"type": "chat/toolCallStart", "turnId": "t", "toolCallId": "c1", "toolName": "read", "displayName": "Read"},
    ]
    pool = [
        {"type": "chat/delta", "turnId": "t", "partId": "m1", "content": "x"},
        {"type": "chat/delta", "turnId": "t", "partId": "m2", "content": "x"},
        {"type": "chat/delta", "turnId": "t", "partId": "r1", "content": "x"},  # wrong kind: no-op
        {"type": "chat/delta", "turnId": "other", "partId": "m1", "content": "x"},
        {"type": "chat/delta", "turnId": "t", "partId": "m1", "content": 7},
        {"type": "chat/reasoning", "turnId": "t", "partId": "r1", "content": "y"},
        {"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c1", "content": "{"},
        {"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c1", "content": "}", "invocationMessage": "Reading"},
        {"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c1", "content": "}", "_meta": {"k": 1}},
        {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m2", "content": "p"}},
        {"type": "chat/toolCallReady", "turnId": "t", "toolCallId": "c1", "invocationMessage": "Read", "toolInput": "{}"},
        {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": 1, "outputTokens": 2}},
        {"type": "chat/turnComplete", "turnId": "t", "duration": 5},
    ]
    streams = []
    for _ in range(300):
        actions = setup + [dict(rng.choice(pool)) for _ in range(rng.randint(1, 25))]
        streams.append((initial, stutter(actions, rng)))
    return streams


def _fold_in_runs(state: dict, actions: list) -> dict:
    holder = AppendingState("chat", state)
    for action in actions:
        holder.apply(action, CLOCK)
    return holder.state


def test_a_run_reduced_once_builds_the_same_json_as_its_appends_one_by_one() -> None:
    rng = random.Random(11)
    cases = [(case["initial"], stutter(case["actions"], rng)) for case in _chat_cases()] + _streams(rng)
    runs = 0
    for index, (initial, actions) in enumerate(cases):
        runs += sum(1 for a, b in zip(actions, actions[1:]) if run_key(a) is not None and run_key(a) == run_key(b))
        # Same keys in the same order, not only equal: snapshots and subscribe send this text.
        assert json.dumps(_fold_in_runs(initial, actions)) == json.dumps(fold("chat", initial, actions)), index
    assert runs > 1000


def test_reading_mid_run_gives_the_state_so_far_and_the_run_goes_on() -> None:
    rng = random.Random(5)
    for initial, actions in _streams(rng)[:100]:
        holder = AppendingState("chat", initial)
        for count, action in enumerate(actions, 1):
            holder.apply(action, CLOCK)
            if rng.random() < 0.3:
                assert holder.state == fold("chat", initial, actions[:count])
        assert holder.state == fold("chat", initial, actions)


def test_a_mark_taken_at_any_point_restores_the_state_of_that_point_whatever_was_applied_and_read_since() -> None:
    rng = random.Random(8)
    for initial, actions in _streams(rng)[:100]:
        holder = AppendingState("chat", initial)
        marks = []
        for count, action in enumerate(actions):
            marks.append((count, holder.mark()))
            holder.apply(action, CLOCK)
            if rng.random() < 0.2:
                assert holder.state is not None  # a read reduces the run, which then takes a new list of pieces
        count, mark = rng.choice(marks)
        holder.restore(mark)
        assert json.dumps(holder.state) == json.dumps(fold("chat", initial, actions[:count]))
        for action in actions[count:]:  # and it goes on from there as if nothing else was applied
            holder.apply(action, CLOCK)
        assert json.dumps(holder.state) == json.dumps(fold("chat", initial, actions))


def test_only_string_appends_that_change_nothing_else_join_runs() -> None:
    delta = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"}
    call_delta = {"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c", "content": "{"}
    assert run_key(delta) == ("chat/delta", "t", "p")
    assert run_key({**delta, "type": "chat/reasoning"}) == ("chat/reasoning", "t", "p")
    assert run_key(call_delta) == ("chat/toolCallDelta", "t", "c")
    assert run_key({**call_delta, "invocationMessage": "Reading"}) is None
    assert run_key({**call_delta, "_meta": {"a": 1}}) is None
    assert run_key({**delta, "content": 3}) is None
    assert run_key({**delta, "type": "session/delta"}) is None  # 0.2.0's runs are the dialect's
    assert joined(delta, ["a", "b"]) == {**delta, "content": "ab"}


def test_only_chat_channels_hold_runs() -> None:
    state = {"summary": {"title": "t"}}
    holder = AppendingState("session", state)
    delta = {"type": "chat/delta", "turnId": "t", "partId": "p", "content": "x"}
    assert holder.apply(delta, CLOCK) is False
    assert holder.state is state
    assert reduce("session", state, delta, CLOCK) is state


def _delta(content: str) -> dict:
    return {"type": "chat/delta", "turnId": "t", "partId": "p", "content": content}


def test_a_runs_envelope_stands_for_each_of_its_appends_with_its_own_server_seq() -> None:
    run = TextRun(run_key(_delta("a")), _delta("a"), 7)
    assert expand(run.envelope("c")) == [{"channel": "c", "action": _delta("a"), "serverSeq": 7}]
    for seq, content in ((8, "bc"), (10, ""), (11, "é\n")):
        run.add(content, seq)
    envelope = run.envelope("c")
    assert envelope["action"] == _delta("abcé\n") and envelope["serverSeq"] == 11
    assert [(e["serverSeq"], e["action"]["content"]) for e in expand(envelope)] == [(7, "a"), (8, "bc"), (10, ""), (11, "é\n")]
    assert run.count == 4


def test_a_run_used_up_goes_on_with_the_pieces_after_and_extended_joins_them_again() -> None:
    run = TextRun(run_key(_delta("a")), _delta("a"), 1)
    run.add("b", 2)
    head = run.envelope("c")  # what a holder wrote
    run.used_up()
    run.add("cd", 3)
    run.add("e", 5)
    assert run.action() == _delta("cde") and run.count == 4
    whole = extended(head, [([list(mark) for mark in run.marks()], "".join(run.pieces))])
    assert whole["action"] == _delta("abcde") and whole["serverSeq"] == 5
    assert [(e["serverSeq"], e["action"]["content"]) for e in expand(whole)] == [(1, "a"), (2, "b"), (3, "cd"), (5, "e")]
