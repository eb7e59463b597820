"""The store keeps a chat's recent turns in its state and its older ones in the journal's snapshot
rows: when turns leave the state (only when nobody subscribes, only turns with rows), how they come
back (``chat/turnsLoaded``, seen by every subscriber), what reads every turn, and recovery.

A real SQLite journal in a temporary directory; the turns are plain ``chat/turnStarted`` +
``chat/turnComplete`` pairs with a streamed answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import host.state.journal
from ahp.protocol import builders
from ahp.state import reduce as reduce_internal
from host.state.embedded_log import at_once
from host.state.journal import Journal
from host.state.sessions import new_chat_state
from host.state.store import Store

CHAT = "ahp-chat:/c"
STARTED = "1970-01-01T00:00:00.000Z"


class Sink:
    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def send(self, text: str) -> None:
        self.frames.append(json.loads(text))

    def actions(self) -> list[dict[str, Any]]:
        return [frame["params"]["action"] for frame in self.frames if frame.get("method") == "action"]


def open_store(path: Path, recent: int = 3, **kwargs: Any) -> Store:
    store = Store({"agents": []}, clock=lambda: 5, journal=Journal(path / "journal.sqlite3"), recent_turns=recent, **kwargs)
    at_once(store.recover())
    return store


def add_turns(store: Store, first: int, count: int, answer: str = "answer") -> None:
    for index in range(first, first + count):
        turn_id = f"t{index}"
        store.dispatch(CHAT, builders.chat_turn_started(turn_id=turn_id, started_at=STARTED,
                                                        message={"text": f"m{index}", "origin": {"kind": "user"}}))
        store.dispatch(CHAT, builders.chat_response_part(turn_id=turn_id, part={"kind": "markdown", "id": "p", "content": ""}))
        store.dispatch(CHAT, builders.chat_delta(turn_id=turn_id, part_id="p", content=f"{answer} {index}"))
        store.dispatch(CHAT, builders.chat_turn_complete(turn_id=turn_id, duration=1))


def ids(turns: list[dict[str, Any]]) -> list[str]:
    return [turn["id"] for turn in turns]


def new_chat(path: Path, turns: int, recent: int = 3, **kwargs: Any) -> Store:
    store = open_store(path, recent, **kwargs)
    store.create(CHAT, "chat", new_chat_state(CHAT, now=0))
    add_turns(store, 0, turns)
    return store


def test_turns_with_snapshot_rows_leave_the_state_of_a_chat_nobody_watches(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 10)
    assert len(store.state(CHAT)["turns"]) == 10  # no rows yet: they stay
    at_once(store.snapshot_now())
    state = store.state(CHAT)
    assert ids(state["turns"]) == ["t7", "t8", "t9"] and state["turnsNextCursor"] == "turns-before:t7"
    assert store.older_turn_count(CHAT) == 7
    everything = store.turns(CHAT)
    assert ids(everything) == [f"t{i}" for i in range(10)]
    assert everything[2]["responseParts"][0]["content"] == "answer 2"
    assert ids(store.turns(CHAT, 5, 8)) == ["t5", "t6", "t7"]
    assert store.turn_ids(CHAT) == [f"t{i}" for i in range(10)]
    at_once(store.close())


def test_a_watched_chat_keeps_its_turns_until_its_last_subscriber_leaves(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 6)
    one, two = Sink(), Sink()
    assert len(store.subscribe(CHAT, one)["state"]["turns"]) == 6
    store.subscribe(CHAT, two)
    at_once(store.snapshot_now())
    assert len(store.state(CHAT)["turns"]) == 6  # subscribers hold all six: so does the state
    store.unsubscribe(CHAT, one)
    assert len(store.state(CHAT)["turns"]) == 6
    store.unsubscribe_all(two)
    assert ids(store.state(CHAT)["turns"]) == ["t3", "t4", "t5"]
    assert one.actions() == [] and two.actions() == []  # leaving the state is silent: nobody holds it
    at_once(store.close())


def test_loading_older_turns_reaches_every_subscriber_and_they_converge(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 8)
    at_once(store.snapshot_now())
    sinks = [Sink(), Sink()]
    mirrors = [store.subscribe(CHAT, sink)["state"] for sink in sinks]
    assert store.load_older(CHAT, store.older_turn_count(CHAT) - 3) is not None
    assert store.load_older(CHAT, store.older_turn_count(CHAT) - 3) is not None
    assert store.load_older(CHAT, 0) is None  # nothing older is left
    for index, sink in enumerate(sinks):
        for action in sink.actions():
            mirrors[index] = reduce_internal("chat", mirrors[index], action, 0)
        assert mirrors[index] == store.state(CHAT)
    loads = sinks[0].actions()
    assert [ids(action["turns"]) for action in loads] == [["t2", "t3", "t4"], ["t0", "t1"]]
    assert loads[0]["turnsNextCursor"] == "turns-before:t2" and "turnsNextCursor" not in loads[1]
    assert "turnsNextCursor" not in store.state(CHAT)
    # Loaded turns keep their rows: once the subscribers leave, they leave the state again.
    at_once(store.snapshot_now())
    for sink in sinks:
        store.unsubscribe(CHAT, sink)
    assert ids(store.state(CHAT)["turns"]) == ["t5", "t6", "t7"]
    assert ids(store.turns(CHAT)) == [f"t{i}" for i in range(8)]
    at_once(store.close())


def test_recovery_pages_out_again_and_later_turns_join_after_the_next_snapshot(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 7)
    at_once(store.snapshot_now())
    add_turns(store, 7, 2)  # after the snapshot: in the journal's entries only
    at_once(store.close())
    store = open_store(tmp_path)
    assert ids(store.state(CHAT)["turns"]) == ["t6", "t7", "t8"]
    assert store.state(CHAT)["turnsNextCursor"] == "turns-before:t6"
    assert ids(store.turns(CHAT)) == [f"t{i}" for i in range(9)]
    # A restart with paging off brings every turn back into the state, and no cursor.
    at_once(store.close())
    store = open_store(tmp_path, recent=0)
    assert ids(store.state(CHAT)["turns"]) == [f"t{i}" for i in range(9)]
    assert "turnsNextCursor" not in store.state(CHAT)
    at_once(store.close())


def test_turns_cut_across_several_rows_come_back_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host.state.journal, "PART_CHARS", 40)  # every turn spans several rows
    store = new_chat(tmp_path, 6)
    at_once(store.snapshot_now())
    assert ids(store.state(CHAT)["turns"]) == ["t3", "t4", "t5"]
    at_once(store.close())
    store = open_store(tmp_path)
    everything = store.turns(CHAT)
    assert [turn["responseParts"][0]["content"] for turn in everything] == [f"answer {i}" for i in range(6)]
    assert store.older_turn_count(CHAT) == 3
    at_once(store.close())


def test_a_truncation_at_an_older_turn_loads_the_turns_from_there_first(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 8)
    at_once(store.snapshot_now())
    sink = Sink()
    store.subscribe(CHAT, sink)
    store.dispatch(CHAT, {"type": "chat/truncated", "turnId": "t2"})
    loaded, truncated = sink.actions()
    assert loaded["type"] == "chat/turnsLoaded" and ids(loaded["turns"]) == ["t2", "t3", "t4"]
    assert truncated["type"] == "chat/truncated"
    assert ids(store.state(CHAT)["turns"]) == ["t2"] and ids(store.turns(CHAT)) == ["t0", "t1", "t2"]
    # Truncating every turn drops the older ones too.
    store.dispatch(CHAT, {"type": "chat/truncated"})
    assert store.turns(CHAT) == [] and store.older_turn_count(CHAT) == 0
    assert "turnsNextCursor" not in store.state(CHAT)
    at_once(store.close())
    store = open_store(tmp_path)
    assert store.turns(CHAT) == []
    at_once(store.close())


def test_resuming_the_only_turn_in_state_loads_the_one_before_it(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 5, recent=1)
    store.dispatch(CHAT, builders.chat_turn_started(turn_id="t5", started_at=STARTED, message={"text": "m5", "origin": {"kind": "user"}}))
    part = {"kind": "error", "error": {"errorType": "x", "message": "boom"}, "resumable": True}
    store.dispatch(CHAT, builders.chat_error(turn_id="t5", duration=1, part=part))
    at_once(store.snapshot_now())
    assert ids(store.state(CHAT)["turns"]) == ["t5"]
    sink = Sink()
    store.subscribe(CHAT, sink)
    store.dispatch(CHAT, builders.chat_turn_resume(turn_id="t5"))
    assert [action["type"] for action in sink.actions()] == ["chat/turnsLoaded", "chat/turnResume"]
    state = store.state(CHAT)
    assert ids(state["turns"]) == ["t4"] and state["activeTurn"]["id"] == "t5"
    at_once(store.close())


def test_a_reconnect_from_before_turns_left_the_state_gets_snapshots(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 6)
    sink = Sink()
    store.subscribe(CHAT, sink)
    seen = store.seq
    at_once(store.snapshot_now())
    assert store.replay(seen, [CHAT]) == []
    store.unsubscribe(CHAT, sink)  # the client goes away; the chat's old turns leave its state
    assert store.older_turn_count(CHAT) == 3
    assert store.replay(seen, [CHAT]) is None
    at_once(store.close())


def test_without_a_journal_every_turn_stays(tmp_path: Path) -> None:
    store = Store({"agents": []}, clock=lambda: 5, recent_turns=3)
    store.create(CHAT, "chat", new_chat_state(CHAT, now=0))
    add_turns(store, 0, 6)
    at_once(store.snapshot_now())
    assert len(store.state(CHAT)["turns"]) == 6 and store.older_turn_count(CHAT) == 0


def test_a_chat_written_whole_by_an_upgrade_is_paged_out_after_its_next_snapshot(tmp_path: Path) -> None:
    store = new_chat(tmp_path, 6, recent=0)
    whole = store.state(CHAT)
    at_once(store.close())
    journal = Journal(tmp_path / "journal.sqlite3")
    journal.rewrite({CHAT: ("chat", whole)}, seq=40)  # one row for the whole state, as an upgrade writes it
    journal.close()
    store = open_store(tmp_path)
    assert len(store.state(CHAT)["turns"]) == 6  # no turn has rows of its own yet
    at_once(store.snapshot_now())
    assert ids(store.state(CHAT)["turns"]) == ["t3", "t4", "t5"]
    assert store.turns(CHAT) == whole["turns"]
    at_once(store.close())


@pytest.mark.parametrize("seed", range(12))
def test_random_histories_keep_every_turn_and_every_subscriber_converges(tmp_path: Path, seed: int) -> None:
    """Turns, snapshots, clients coming and going, pages loaded, truncations and restarts in a
    random order: the chat's turns read as a reference list says, and each subscriber's mirror
    (its snapshot plus the actions it was sent) is the store's state."""
    import random

    rng = random.Random(seed)
    store = open_store(tmp_path, recent=rng.choice([1, 2, 3]))
    store.create(CHAT, "chat", new_chat_state(CHAT, now=0))
    expected: list[str] = []
    mirrors: dict[Sink, dict[str, Any]] = {}
    made = 0

    def catch_up() -> None:
        for sink, state in mirrors.items():
            for action in sink.actions():
                state = reduce_internal("chat", state, action, 5)
            sink.frames.clear()
            mirrors[sink] = state
            assert state == store.state(CHAT)

    for _ in range(60):
        step = rng.random()
        if step < 0.35:
            count = rng.randint(1, 3)
            add_turns(store, made, count)
            expected += [f"t{i}" for i in range(made, made + count)]
            made += count
        elif step < 0.5:
            at_once(store.snapshot_now())
        elif step < 0.6:
            sink = Sink()
            mirrors[sink] = store.subscribe(CHAT, sink)["state"]
        elif step < 0.7 and mirrors:
            sink = rng.choice(list(mirrors))
            del mirrors[sink]
            store.unsubscribe(CHAT, sink)
        elif step < 0.8:
            store.load_older(CHAT, store.older_turn_count(CHAT) - rng.randint(1, 3))
        elif step < 0.9 and expected:
            if rng.random() < 0.15:
                store.dispatch(CHAT, {"type": "chat/truncated"})
                expected = []
            else:
                keep = rng.randrange(len(expected))
                store.dispatch(CHAT, {"type": "chat/truncated", "turnId": expected[keep]})
                expected = expected[:keep + 1]
        elif not mirrors:
            at_once(store.close())
            store = open_store(tmp_path, recent=store.recent_turns)
        catch_up()
        assert ids(store.turns(CHAT)) == expected
        assert store.turn_ids(CHAT) == expected
        state = store.state(CHAT)
        assert ("turnsNextCursor" in state) == bool(store.older_turn_count(CHAT))
    at_once(store.close())
