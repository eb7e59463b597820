"""The journal's text runs and batches: what is recovered after a crash equals what was sent.

Each test "crashes" by opening a second store on the same file without closing the first: only
what the journal committed is there.
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from host.state.embedded_log import at_once
from host.state.journal import RUN_LIMIT, Journal
from host.state.store import Store

A = "ahp-chat://default/a"
B = "ahp-chat://default/b"
"""Chat channels: the journal's text runs are the internal model's (``ahp.state.appends``)."""


class Sink:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def send(self, text: str) -> None:
        self.texts.append(text)


def chat_state(uri: str) -> dict[str, Any]:
    return {"resource": uri, "title": "t", "status": 1, "modifiedAt": "1970-01-01T00:00:00.001Z", "turns": []}


def open_store(path: Path, **kwargs: Any) -> Store:
    store = Store({"agents": []}, clock=lambda: 7, journal=Journal(path), **kwargs)
    at_once(store.recover())
    return store


def start_turn(store: Store, channel: str, turn: str) -> None:
    store.dispatch(channel, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "1970-01-01T00:00:00.002Z", "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(channel, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": ""}})
    store.dispatch(channel, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "reasoning", "id": "r", "content": ""}})


def rows(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM entries WHERE kind = 'action'").fetchone()[0]


def random_stream(store: Store, rng: random.Random, count: int, flush_rate: float = 0.05) -> list[dict[str, Any]]:
    """Two chats streaming text and reasoning with other actions between, flushed at random points."""
    sent: list[dict[str, Any]] = []
    for index in range(count):
        channel = rng.choice((A, B))
        roll = rng.random()
        if roll < 0.6:
            action = {"type": "chat/delta", "turnId": "t", "partId": "m", "content": rng.choice(("a", "bé", "🙂", "", "line\n"))}
        elif roll < 0.85:
            action = {"type": "chat/reasoning", "turnId": "t", "partId": "r", "content": f"<{index}>"}
        elif roll < 0.95:
            action = {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": index, "outputTokens": 1}}
        else:
            action = {"type": "chat/activityChanged", "activity": f"title {index}"}
        origin = {"clientId": "c", "clientSeq": index} if roll > 0.97 else None
        sent.append(store.dispatch(channel, action, origin))
        if rng.random() < flush_rate:
            store.flush()
    return sent


async def test_a_coalesced_journal_recovers_the_same_state_seq_and_replay_window(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, replay_capacity=100_000)
    for channel in (A, B):
        store.create(channel, "chat", chat_state(channel))
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
        reference.create(channel, "chat", chat_state(channel))
        start_turn(reference, channel, "t")
    random_stream(reference, random.Random(12), 3_000)
    assert {channel: again.state(channel) for channel in (A, B)} == {channel: reference.state(channel) for channel in (A, B)}
    # Reconnecting clients are replayed the very envelopes that were sent, one per serverSeq.
    first = sent[0]["serverSeq"]
    assert again.replay(first - 1, [A, B]) == sent


async def test_a_10000_delta_turn_journals_in_fewer_than_200_rows_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    before = rows(path)
    for index in range(10_000):
        store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"{index} "})
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
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    for index in range(RUN_LIMIT * 3 + 5):
        store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": str(index % 10)})
    store.dispatch(A, {"type": "chat/activityChanged", "activity": "between"})
    store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "!"})
    assert rows(path) == 3 + 4 + 1 + 1
    again = open_store(path)
    assert again.state(A) == store.state(A)
    assert again.replay(store.seq - 3, [A]) == store.replay(store.seq - 3, [A])


def test_a_snapshot_taken_inside_a_run_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, snapshot_every=5)
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    sink = Sink()
    store.subscribe(A, sink)
    for index in range(500):
        store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "x"})
        if index % 97 == 0:
            at_once(store.snapshot_now())
        if index % 33 == 0:
            store.dispatch(A, {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": index, "outputTokens": 1}})
    again = open_store(path)
    assert again.state(A) == store.state(A)
    assert again.seq == store.seq


def test_the_wal_is_checkpointed_at_snapshots_and_kept_small(tmp_path: Path) -> None:
    from host.state.journal import WAL_CHECKPOINT_BYTES

    path = tmp_path / "journal.sqlite3"
    wal = Path(str(path) + "-wal")
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")

    def write_a_megabyte(round: int) -> None:
        for index in range(500):
            store.dispatch(A, {"type": "chat/activityChanged", "activity": f"{round}-{index}-" + "x" * 2000})

    for round in range(1, 12):
        write_a_megabyte(round)
        at_once(store.snapshot_now())
        assert wal.stat().st_size <= WAL_CHECKPOINT_BYTES + 1_000_000
    assert open_store(path).state(A) == store.state(A)


def test_incremental_snapshots_with_channels_created_changed_and_removed_recover_exactly(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    channels = [f"ahp-session:/s{index}" for index in range(6)]
    for channel in channels:
        store.create(channel, "chat", chat_state(channel))
    at_once(store.snapshot_now())
    store.dispatch(channels[0], {"type": "chat/activityChanged", "activity": "changed after the first snapshot"})
    store.remove(channels[1])
    at_once(store.snapshot_now())
    store.create(channels[1], "chat", chat_state(channels[1]))  # the same URI again, new state
    store.dispatch(channels[1], {"type": "chat/activityChanged", "activity": "reborn"})
    store.remove(channels[2])
    at_once(store.snapshot_now())
    store.dispatch(channels[3], {"type": "chat/activityChanged", "activity": "after the last snapshot"})
    again = open_store(path)
    for channel in channels:
        assert again.state(channel) == store.state(channel)
    assert channels[2] not in again
    assert again.seq == store.seq
    with sqlite3.connect(path) as db:
        assert {row[0] for row in db.execute("SELECT channel FROM channel_states")} == set(channels) - {channels[2]} | {"ahp-root://"}


def test_a_journal_in_the_previous_format_is_read_and_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    for channel in (A, B):
        store.create(channel, "chat", chat_state(channel))
    store.dispatch(A, {"type": "chat/activityChanged", "activity": "old"})
    expected = {channel: store.state(channel) for channel in (A, B)}
    store.flush()
    with sqlite3.connect(path) as db:  # rewrite it as format 1 wrote it: the whole store in one body
        whole = {uri: {"kind": store.kind(uri), "state": store.state(uri)} for uri in ("ahp-root://", A, B)}
        db.execute("DELETE FROM entries")
        db.execute("DELETE FROM channel_states")
        db.execute("INSERT INTO snapshots(upto, seq, body) VALUES (0, ?, ?)", (store.seq, json.dumps(whole)))
        db.execute("UPDATE meta SET value = '1' WHERE key = 'format'")
    old = open_store(path)
    assert {channel: old.state(channel) for channel in (A, B)} == expected
    old.dispatch(B, {"type": "chat/activityChanged", "activity": "new"})
    at_once(old.snapshot_now())  # the first snapshot here writes every channel, not only B
    upgraded = open_store(path)
    assert upgraded.state(A) == expected[A]
    assert upgraded.state(B)["activity"] == "new"


def _entries_sql(path: Path) -> str:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return str(db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entries'").fetchone()[0])


def test_an_older_journal_s_kind_constraint_is_rewritten_in_place_and_still_holds(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    store.dispatch(A, {"type": "chat/activityChanged", "activity": "before"})
    store.flush()
    expected = store.state(A)
    old_form = "CHECK (kind IN ('action', 'created', 'removed'))"
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:  # as a journal of an earlier build
        version = db.execute("PRAGMA schema_version").fetchone()[0]
        db.execute("PRAGMA writable_schema=ON")
        db.execute("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE name = 'entries'",
                   ("CHECK (kind = 'action' OR kind = 'created' OR kind = 'removed')", old_form))
        db.execute(f"PRAGMA schema_version={version + 1}")
        db.execute("PRAGMA writable_schema=OFF")
    assert old_form in _entries_sql(path)
    reopened = open_store(path)
    assert old_form not in _entries_sql(path) and "kind = 'removed'" in _entries_sql(path)
    assert reopened.state(A) == expected  # what it held is read as before
    reopened.dispatch(A, {"type": "chat/activityChanged", "activity": "after"})
    reopened.flush()
    assert open_store(path).state(A)["activity"] == "after"
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        with pytest.raises(sqlite3.IntegrityError):  # the constraint still refuses another kind
            db.execute("INSERT INTO entries(kind, channel) VALUES ('other', ?)", (A,))


async def test_snapshots_written_in_the_background_recover_what_was_sent(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "journal.sqlite3"
    store = open_store(path, snapshot_every=50)
    channels = [f"ahp-session:/bg{index}" for index in range(20)]
    for channel in channels:
        store.create(channel, "chat", chat_state(channel))
        start_turn(store, channel, "t")
    rng = random.Random(5)
    for index in range(3_000):
        channel = rng.choice(channels)
        if rng.random() < 0.3:
            store.dispatch(channel, {"type": "chat/activityChanged", "activity": f"t{index}"})
        else:
            store.dispatch(channel, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"{index},"})
        if index % 25 == 0:
            store.flush()
            await asyncio.sleep(0)  # lets background snapshots run while the stream goes on
    store.flush()
    while store._snapshot_task is not None and not store._snapshot_task.done():
        await asyncio.sleep(0.01)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 1
    again = open_store(path)
    assert {c: again.state(c) for c in channels} == {c: store.state(c) for c in channels}


async def test_frames_wait_for_the_commit_of_their_actions_and_commits_are_grouped(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    store.flush()

    copies = iter(range(100))

    def committed_deltas() -> int:  # what another process would find after a crash: the files as they are, recovered
        crashed = tmp_path / f"crash-{next(copies)}"
        crashed.mkdir()
        for suffix in ("", "-wal", "-tail"):
            if Path(f"{path}{suffix}").exists():
                shutil.copyfile(f"{path}{suffix}", crashed / f"journal.sqlite3{suffix}")
        recovered = open_store(crashed / "journal.sqlite3")
        text = recovered.state(A)["activeTurn"]["responseParts"][0]["content"]  # type: ignore[index]
        at_once(recovered.close())
        return len(text)

    seen: list[tuple[int, int]] = []
    for index in range(1, 6):
        store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "x"})
        store.when_durable(lambda index=index: seen.append((index, committed_deltas())))
    while len(seen) < 5:
        await asyncio.sleep(0.001)
    # Each callback ran only once its own delta (and every earlier one) was committed...
    assert all(durable >= index for index, durable in seen)
    # ...and the deltas dispatched within the minimum commit interval shared one commit.
    assert seen[-1][1] == 5 and len({durable for _, durable in seen}) < 5


def test_a_snapshot_prunes_entries_older_than_it_and_the_replay_window(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, replay_capacity=300)
    store.create(A, "chat", chat_state(A))
    for index in range(1_000):  # more than one prune batch
        store.dispatch(A, {"type": "chat/activityChanged", "activity": f"t{index}"})
    at_once(store.snapshot_now())
    assert 300 <= rows(path) <= 301
    again = open_store(path, replay_capacity=300)
    assert again.state(A) == store.state(A)
    assert len(again.replay(store.seq - 300, [A])) == 300


def manifest(path: Path, channel: str) -> list[int]:
    with sqlite3.connect(path) as db:
        return json.loads(db.execute("SELECT manifest FROM channel_states WHERE channel = ?", (channel,)).fetchone()[0])


def finish_turn(store: Store, channel: str, turn: str, text: str) -> None:
    store.dispatch(channel, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "1970-01-01T00:00:00.002Z", "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(channel, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": text}})
    store.dispatch(channel, {"type": "chat/turnComplete", "turnId": turn, "duration": 5})


def test_a_snapshot_rewrites_only_the_turns_that_changed_and_deletes_unused_parts(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    for index in range(3):
        finish_turn(store, A, f"t{index}", "é" * 1_500_000 if index == 1 else f"turn {index}")
    at_once(store.snapshot_now())
    first = manifest(path, A)
    finish_turn(store, A, "t3", "a fourth turn")
    store.dispatch(A, {"type": "chat/activityChanged", "activity": "the head changed too"})
    at_once(store.snapshot_now())
    second = manifest(path, A)
    # The three earlier turns (the long one in two parts) are the same rows; the head, the new turn
    # and the closing are new rows.
    assert second[1:5] == first[1:5]
    assert set(second) - set(first) and second[0] != first[0]
    with sqlite3.connect(path) as db:
        stored = {part for (part,) in db.execute("SELECT id FROM channel_state_parts")}
    assert stored == set(second) | set(manifest(path, "ahp-root://"))  # unused parts are gone
    again = open_store(path)
    assert again.state(A) == store.state(A)
    store.dispatch(A, {"type": "chat/truncated", "turnId": "t0"})  # turns change in place of old ones
    finish_turn(store, A, "t9", "after the truncation")
    at_once(store.snapshot_now())
    assert open_store(path).state(A) == store.state(A)
