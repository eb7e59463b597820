"""The client mirror on its own: optimistic apply, echoes, rejections, rebases, ordering (folded
with the 0.2.0 reducers, whose fixtures these are; the model's fold: tests/client/test_model_client.py)."""

from __future__ import annotations

import pytest

from client.mirror import Mirror
from client.versions import LEGACY, MODEL

from ._states import OTHER_SESSION, SESSION, envelope, queue, queued_ids, session_state, title

ME = "client-me"
THEM = "client-them"


def mirror_with_session(seq: int = 10) -> Mirror:
    mirror = Mirror(ME, model=LEGACY)
    mirror.install_snapshot(SESSION, session_state(), seq)
    return mirror


def test_snapshot_installs_confirmed_state_and_advances_last_server_seq():
    mirror = mirror_with_session(seq=10)

    assert mirror.state(SESSION) == session_state()
    assert mirror.confirmed_state(SESSION) == session_state()
    assert mirror.last_server_seq == 10
    assert mirror.channels == [SESSION]


def test_local_action_is_visible_at_once_but_not_confirmed():
    mirror = mirror_with_session()

    mirror.apply_local(SESSION, 1, title("Mine"), now=2000)

    assert mirror.state(SESSION)["summary"]["title"] == "Mine"
    assert mirror.state(SESSION)["summary"]["modifiedAt"] == 2000
    assert mirror.confirmed_state(SESSION)["summary"]["title"] == "New Session"
    assert mirror.pending(SESSION) == [(1, title("Mine"))]
    assert mirror.outcome(1) is None


def test_own_echo_pops_pending_and_becomes_confirmed():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, title("Mine"), now=2000)

    outcome = mirror.apply_envelope(envelope(SESSION, title("Mine"), 11, origin=(ME, 1)), now=3000)

    assert outcome is not None and outcome.accepted and outcome.server_seq == 11
    assert mirror.outcome(1) == outcome
    assert mirror.pending(SESSION) == []
    assert mirror.confirmed_state(SESSION)["summary"]["title"] == "Mine"
    assert mirror.state(SESSION) == mirror.confirmed_state(SESSION)
    assert mirror.last_server_seq == 11


def test_rejection_drops_the_action_and_restores_the_confirmed_view():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, title("Mine"), now=2000)

    outcome = mirror.apply_envelope(
        envelope(SESSION, title("Mine"), 10, origin=(ME, 1), reason="titles are read-only here"), now=3000
    )

    assert outcome is not None and outcome.status == "rejected"
    assert outcome.reason == "titles are read-only here"
    assert mirror.rejections == [outcome]
    assert mirror.pending(SESSION) == []
    assert mirror.state(SESSION) == session_state()
    assert mirror.confirmed_state(SESSION) == session_state()


def test_rejection_of_a_later_action_keeps_earlier_pending_ones():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, queue("a", "first"), now=2000)
    mirror.apply_local(SESSION, 2, queue("b", "second"), now=2000)

    mirror.apply_envelope(envelope(SESSION, queue("a", "first"), 11, origin=(ME, 1)), now=2100)
    mirror.apply_envelope(envelope(SESSION, queue("b", "second"), 11, origin=(ME, 2), reason="queue full"), now=2100)

    assert queued_ids(mirror.state(SESSION)) == ["a"]
    assert mirror.outcome(1).accepted and mirror.outcome(2).status == "rejected"


def test_a_rejection_is_never_applied_even_when_it_is_not_ours():
    mirror = mirror_with_session()

    mirror.apply_envelope(envelope(SESSION, title("Theirs"), 11, origin=(THEM, 7), reason="no"), now=3000)

    assert mirror.state(SESSION) == session_state()
    assert mirror.rejections == []


def test_foreign_action_rebases_pending_actions_on_top_of_it():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, queue("mine", "from me"), now=2000)

    mirror.apply_envelope(envelope(SESSION, queue("theirs", "from them"), 11, origin=(THEM, 4)), now=2500)

    assert queued_ids(mirror.confirmed_state(SESSION)) == ["theirs"]
    assert queued_ids(mirror.state(SESSION)) == ["theirs", "mine"]
    assert mirror.pending(SESSION) == [(1, queue("mine", "from me"))]

    mirror.apply_envelope(envelope(SESSION, queue("mine", "from me"), 12, origin=(ME, 1)), now=2600)

    assert queued_ids(mirror.confirmed_state(SESSION)) == ["theirs", "mine"]
    assert mirror.state(SESSION) == mirror.confirmed_state(SESSION)


def test_server_wins_when_a_foreign_action_conflicts_with_a_pending_one():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, title("Mine"), now=2000)

    mirror.apply_envelope(envelope(SESSION, title("Theirs"), 11), now=2500)
    # Ours lands after theirs on the host, so ours still shows on top ...
    assert mirror.state(SESSION)["summary"]["title"] == "Mine"
    # ... until the host rejects it: then the server's value is what remains.
    mirror.apply_envelope(envelope(SESSION, title("Mine"), 11, origin=(ME, 1), reason="locked"), now=2600)
    assert mirror.state(SESSION)["summary"]["title"] == "Theirs"


def test_rebased_pending_actions_keep_the_time_they_were_made():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, title("Mine"), now=2000)

    mirror.apply_envelope(envelope(SESSION, queue("x", "y"), 11), now=5000)

    assert mirror.state(SESSION)["summary"]["modifiedAt"] == 2000


def test_envelopes_already_covered_by_the_snapshot_are_not_applied_again():
    mirror = mirror_with_session(seq=10)

    mirror.apply_envelope(envelope(SESSION, queue("old", "before snapshot"), 9), now=2000)
    mirror.apply_envelope(envelope(SESSION, queue("same", "at snapshot"), 10), now=2000)

    assert mirror.state(SESSION) == session_state()


def test_duplicate_or_out_of_order_envelopes_are_ignored():
    mirror = mirror_with_session(seq=10)
    mirror.apply_envelope(envelope(SESSION, queue("a", "1"), 12), now=2000)

    mirror.apply_envelope(envelope(SESSION, queue("a", "1"), 12), now=2000)
    mirror.apply_envelope(envelope(SESSION, queue("b", "late"), 11), now=2000)

    assert queued_ids(mirror.state(SESSION)) == ["a"]
    assert mirror.channel_seq(SESSION) == 12


def test_own_echo_already_in_a_snapshot_still_resolves_the_pending_action():
    mirror = mirror_with_session(seq=10)
    mirror.apply_local(SESSION, 1, queue("a", "1"), now=2000)
    # A fresh snapshot already containing our action arrives before the echo.
    refreshed = {**session_state(), "queuedMessages": [{"id": "a", "userMessage": {"text": "1"}}]}
    mirror.install_snapshot(SESSION, refreshed, 11)

    mirror.apply_envelope(envelope(SESSION, queue("a", "1"), 11, origin=(ME, 1)), now=2100)

    assert mirror.outcome(1).accepted
    assert queued_ids(mirror.state(SESSION)) == ["a"]


def test_envelopes_for_unmirrored_channels_only_advance_the_sequence():
    mirror = mirror_with_session(seq=10)

    assert mirror.apply_envelope(envelope(OTHER_SESSION, title("x"), 15), now=2000) is None

    assert mirror.last_server_seq == 15
    assert OTHER_SESSION not in mirror


def test_dropping_a_channel_resolves_its_pending_actions_as_lost():
    mirror = mirror_with_session()
    mirror.apply_local(SESSION, 1, title("Mine"), now=2000)

    lost = mirror.drop(SESSION, "unsubscribed")

    assert [o.client_seq for o in lost] == [1]
    assert mirror.outcome(1).status == "lost" and mirror.outcome(1).reason == "unsubscribed"
    assert mirror.state(SESSION) is None


def test_lose_pending_rolls_back_every_channel_to_confirmed():
    mirror = mirror_with_session()
    mirror.install_snapshot(OTHER_SESSION, session_state(OTHER_SESSION), 10)
    mirror.apply_local(SESSION, 1, title("A"), now=2000)
    mirror.apply_local(OTHER_SESSION, 2, title("B"), now=2000)

    lost = mirror.lose_pending("connection lost")

    assert [o.client_seq for o in lost] == [1, 2]
    assert mirror.state(SESSION) == session_state()
    assert mirror.state(OTHER_SESSION) == session_state(OTHER_SESSION)


def test_local_actions_need_a_mirrored_channel_and_increasing_client_seq():
    mirror = mirror_with_session()
    with pytest.raises(KeyError):
        mirror.apply_local(OTHER_SESSION, 1, title("x"), now=1)
    mirror.apply_local(SESSION, 2, title("x"), now=1)
    with pytest.raises(ValueError):
        mirror.apply_local(SESSION, 2, title("y"), now=1)


def test_malformed_envelopes_raise_value_error():
    mirror = mirror_with_session()
    with pytest.raises(ValueError):
        mirror.apply_envelope({"channel": SESSION, "action": title("x")}, now=1)
    with pytest.raises(ValueError):
        mirror.apply_envelope({"channel": SESSION, "action": "nope", "serverSeq": 3}, now=1)


def test_snapshots_are_only_accepted_for_state_bearing_channels():
    mirror = Mirror(ME, model=LEGACY)
    with pytest.raises(ValueError):
        mirror.install_snapshot("ahp-otlp://logs", {}, 1)


# -- streamed text held as runs ------------------------------------------------------------------

def _differential_session_cases() -> list[dict]:
    from tests.ahp.dialects.v0_2.state._support import load_differential_cases

    return [case for case in load_differential_cases() if case["kind"] == "session"]


def test_streams_of_text_appends_read_at_any_point_give_the_pure_reducers_state() -> None:
    """Foreign envelopes, our own optimistic actions and their echoes, interleaved with reads: the
    mirror's confirmed state and view are the JSON the reducers give action by action."""
    import json
    import random

    from ahp.dialects.v0_2.state import reduce
    from tests.ahp.dialects.v0_2.state._support import CLOCK, stutter

    rng = random.Random(7)
    for index, case in enumerate(_differential_session_cases()):
        actions = stutter(case["actions"], rng)
        mirror = Mirror(ME, model=LEGACY)
        mirror.install_snapshot(SESSION, case["initial"], 0)
        confirmed = case["initial"]
        client_seq = 0
        for seq, action in enumerate(actions, start=1):
            if rng.random() < 0.1:  # ours: shown at once, confirmed by its echo
                client_seq += 1
                mirror.apply_local(SESSION, client_seq, action, CLOCK)
                assert json.dumps(mirror.state(SESSION)) == json.dumps(reduce("session", confirmed, action, CLOCK))
                origin = (ME, client_seq)
            else:
                origin = None
            mirror.apply_envelope(envelope(SESSION, action, seq, origin=origin), CLOCK)
            confirmed = reduce("session", confirmed, action, CLOCK)
            if rng.random() < 0.3:
                read = mirror.state(SESSION) if rng.random() < 0.5 else mirror.confirmed_state(SESSION)
                assert json.dumps(read) == json.dumps(confirmed), f"session case {index}, after action {seq}"
        assert json.dumps(mirror.state(SESSION)) == json.dumps(confirmed), f"session case {index}"


def test_a_long_streamed_answer_is_reduced_once_when_read_not_once_per_token() -> None:
    from ahp.dialects.v0_2.state import reduce

    calls = []

    def counting(kind, state, action, now):
        calls.append(action["type"])
        return reduce(kind, state, action, now)

    turn = "turn-1"
    mirror = Mirror(ME, reduce=counting, model=LEGACY)
    mirror.install_snapshot(SESSION, session_state(), 0)
    opening = [
        {"type": "session/turnStarted", "turnId": turn, "userMessage": {"text": "hi"}},
        {"type": "session/responsePart", "turnId": turn,
         "part": {"kind": "markdown", "id": "p1", "content": ""}},
    ]
    tokens = [{"type": "session/delta", "turnId": turn, "partId": "p1", "content": f"w{i} "} for i in range(10_000)]
    for seq, action in enumerate(opening + tokens, start=1):
        mirror.apply_envelope(envelope(SESSION, action, seq), now=5)

    text = mirror.state(SESSION)["activeTurn"]["responseParts"][0]["content"]
    assert text == "".join(t["content"] for t in tokens)
    # turnStarted, responsePart, the first delta (it opens the run), then the run joined once.
    assert calls == ["session/turnStarted", "session/responsePart", "session/delta", "session/delta"]


def test_several_actions_sharing_one_server_seq_are_all_applied_once():
    # A host projecting one action of its own model into several of this version's sends them so.
    mirror = mirror_with_session(seq=10)
    mirror.apply_envelope(envelope(SESSION, queue("a", "1"), 11), now=2000)
    mirror.apply_envelope(envelope(SESSION, queue("b", "2"), 11), now=2000)
    mirror.apply_envelope(envelope(SESSION, queue("b", "2"), 11), now=2000)  # a duplicate
    assert queued_ids(mirror.state(SESSION)) == ["a", "b"]
    fresh = mirror_with_session(seq=11)  # a snapshot at 11 already holds everything at 11
    fresh.apply_envelope(envelope(SESSION, queue("a", "1"), 11), now=2000)
    assert queued_ids(fresh.state(SESSION)) == []


def test_the_models_chat_stream_is_reduced_once_when_read_by_default() -> None:
    """A mirror folds with the model's reducers unless told otherwise; a chat's streamed text is
    held as a run there too."""
    from ahp.state import reduce

    calls = []

    def counting(kind, state, action, now):
        calls.append(action["type"])
        return reduce(kind, state, action, now)

    chat, turn = "ahp-chat://side/abc", "turn-1"
    mirror = Mirror(ME, reduce=counting)
    mirror.install_snapshot(chat, {"resource": chat, "title": "", "turns": [], "modifiedAt": "2026-01-01T00:00:00.000Z"}, 0)
    opening = [
        {"type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-01-01T00:00:01.000Z",
         "message": {"text": "hi", "origin": {"kind": "user"}}},
        {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "p1", "content": ""}},
    ]
    tokens = [{"type": "chat/delta", "turnId": turn, "partId": "p1", "content": f"w{i} "} for i in range(10_000)]
    for seq, action in enumerate(opening + tokens, start=1):
        mirror.apply_envelope(envelope(chat, action, seq), now=5)

    text = mirror.state(chat)["activeTurn"]["responseParts"][0]["content"]
    assert text == "".join(t["content"] for t in tokens)
    assert calls == ["chat/turnStarted", "chat/responsePart", "chat/delta", "chat/delta"]


def test_a_mirror_changes_its_fold_only_while_empty() -> None:
    mirror = Mirror(ME)
    mirror.use(LEGACY)
    mirror.install_snapshot(SESSION, session_state(), 1)
    with pytest.raises(ValueError, match="clear it first"):
        mirror.use(MODEL)
    mirror.clear()
    mirror.use(MODEL)
    mirror.install_snapshot("ahp-chat://side/abc", {"resource": "ahp-chat://side/abc", "turns": []}, 2)
    assert mirror.channels == ["ahp-chat://side/abc"]
