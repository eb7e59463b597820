"""The journal's text runs and batches: what is recovered after a crash equals what was sent.

Each test "crashes" by opening a second store on the same file without closing the first: only
what the journal committed is there.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

from host.journal import RUN_LIMIT, Journal
from host.store import Store

A = "ahp-session:/a"
B = "ahp-session:/b"


class Sink:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def send(self, text: str) -> None:
        self.texts.append(text)


def session_state(uri: str) -> dict[str, Any]:
    return {
        "summary": {"resource": uri, "provider": "p", "title": "t", "status": 1, "createdAt": 1, "modifiedAt": 1},
        "lifecycle": "ready",
        "turns": [],
    }


def open_store(path: Path, **kwargs: Any) -> Store:
    store = Store({"agents": []}, clock=lambda: 7, journal=Journal(path), **kwargs)
    store.recover()
    return store


def start_turn(store: Store, channel: str, turn: str) -> None:
    store.dispatch(channel, {"type": "session/turnStarted", "turnId": turn, "userMessage": {"text": "go"}})
    store.dispatch(channel, {"type": "session/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": ""}})
    store.dispatch(channel, {"type": "session/responsePart", "turnId": turn, "part": {"kind": "reasoning", "id": "r", "content": ""}})


def rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM entries WHERE kind = 'action'").fetchone()[0]


def random_stream(store: Store, rng: random.Random, count: int, flush_rate: float = 0.05) -> list[dict[str, Any]]:
    """Two sessions streaming text and reasoning with other actions between, flushed at random points."""
    sent: list[dict[str, Any]] = []
    for index in range(count):
        channel = rng.choice((A, B))
        roll = rng.random()
        if roll < 0.6:
            action = {"type": "session/delta", "turnId": "t", "partId": "m", "content": rng.choice(("a", "bé", "🙂", "", "line\n"))}
        elif roll < 0.85:
            action = {"type": "session/reasoning", "turnId": "t", "partId": "r", "content": f"<{index}>"}
        elif roll < 0.95:
            action = {"type": "session/usage", "turnId": "t", "usage": {"inputTokens": index, "outputTokens": 1}}
        else:
            action = {"type": "session/titleChanged", "title": f"title {index}"}
        origin = {"clientId": "c", "clientSeq": index} if roll > 0.97 else None
        sent.append(store.dispatch(channel, action, origin))
        if rng.random() < flush_rate:
            store.flush()
    return sent


async def test_a_coalesced_journal_recovers_the_same_state_seq_and_replay_window(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, replay_capacity=100_000)
    for channel in (A, B):
        store.create(channel, "session", session_state(channel))
        start_turn(store, channel, "t")
    sent = random_stream(store, random.Random(12), 3_000)
    store.flush()
    random_stream(store, random.Random(13), 50, flush_rate=0)  # never flushed: lost with the process, never sent
    expected = {channel: store.state(channel) for channel in (A, B)}

    again = open_store(path, replay_capacity=100_000)
    assert again.seq == sent[-1]["serverSeq"]
    assert {channel: again.state(channel) for channel in (A, B)} != expected  # the unflushed tail is gone...
    reference = open_store(tmp_path / "reference.sqlite3")  # ...and what is back is what was flushed:
    for channel in (A, B):
        reference.create(channel, "session", session_state(channel))
        start_turn(reference, channel, "t")
    random_stream(reference, random.Random(12), 3_000)
    assert {channel: again.state(channel) for channel in (A, B)} == {channel: reference.state(channel) for channel in (A, B)}
    # Reconnecting clients are replayed the very envelopes that were sent, one per serverSeq.
    first = sent[0]["serverSeq"]
    assert again.replay(first - 1, [A, B]) == sent


async def test_a_10000_delta_turn_journals_in_fewer_than_200_rows_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "session", session_state(A))
    start_turn(store, A, "t")
    before = rows(path)
    for index in range(10_000):
        store.dispatch(A, {"type": "session/delta", "turnId": "t", "partId": "m", "content": f"{index} "})
        if index % 7 == 0:
            store.flush()  # as a transport does before each frame leaves
    store.flush()
    assert rows(path) - before < 200
    again = open_store(path)
    assert again.state(A) == store.state(A)
    assert again.state(A)["activeTurn"]["responseParts"][0]["content"] == "".join(f"{i} " for i in range(10_000))


def test_every_append_committed_at_once_still_coalesces(tmp_path: Path) -> None:
    # Without an event loop the store commits each append immediately: the open run's row is rewritten.
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "session", session_state(A))
    start_turn(store, A, "t")
    for index in range(RUN_LIMIT * 3 + 5):
        store.dispatch(A, {"type": "session/delta", "turnId": "t", "partId": "m", "content": str(index % 10)})
    store.dispatch(A, {"type": "session/titleChanged", "title": "between"})
    store.dispatch(A, {"type": "session/delta", "turnId": "t", "partId": "m", "content": "!"})
    assert rows(path) == 3 + 4 + 1 + 1
    again = open_store(path)
    assert again.state(A) == store.state(A)
    assert again.replay(store.seq - 3, [A]) == store.replay(store.seq - 3, [A])


def test_a_snapshot_taken_inside_a_run_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, snapshot_every=5)
    store.create(A, "session", session_state(A))
    start_turn(store, A, "t")
    sink = Sink()
    store.subscribe(A, sink)
    for index in range(500):
        store.dispatch(A, {"type": "session/delta", "turnId": "t", "partId": "m", "content": "x"})
        if index % 97 == 0:
            store.snapshot_now()
        if index % 33 == 0:
            store.dispatch(A, {"type": "session/usage", "turnId": "t", "usage": {"inputTokens": index, "outputTokens": 1}})
    again = open_store(path)
    assert again.state(A) == store.state(A)
    assert again.seq == store.seq


def test_the_wal_is_checkpointed_when_a_snapshot_is_written(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "session", session_state(A))
    start_turn(store, A, "t")
    for index in range(300):
        store.dispatch(A, {"type": "session/titleChanged", "title": "x" * 2000 + str(index)})
    wal = Path(str(path) + "-wal")
    grown = wal.stat().st_size
    store.snapshot_now()
    assert wal.stat().st_size < grown
