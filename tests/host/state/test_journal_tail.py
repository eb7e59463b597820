"""The journal's tail: streamed text committed as records appended to ``<journal>-tail`` survives
the process being killed (SIGKILL), a torn last record is left out, and settling is idempotent."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from host.state.journal import RUN_LIMIT, Journal
from tests.host.state.test_journal import A, chat_state, open_store, start_turn

_STREAM_THEN_DIE = textwrap.dedent("""
    import asyncio, os, signal, sys
    from pathlib import Path
    from tests.host.state.test_journal import A, chat_state, open_store, start_turn

    async def main() -> None:
        store = open_store(Path(sys.argv[1]))
        store.create(A, "chat", chat_state(A))
        start_turn(store, A, "t")
        for index in range(300):  # a model's pace: each delta's frame waits for its own commit
            store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{index}>"})
            durable = asyncio.get_running_loop().create_future()
            store.when_durable(lambda: durable.set_result(None))
            await durable
            print(index, flush=True)  # what a client has been sent
        os.kill(os.getpid(), signal.SIGKILL)

    asyncio.run(main())
""")


def _records(tail: Path) -> int:
    """Records the tail holds (after its generation's header line)."""
    return max(0, tail.read_bytes().count(b"\n") - 1)


def _stream_and_kill(path: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _STREAM_THEN_DIE, str(path)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], timeout=120)
    assert done.returncode == -9, done.stderr
    return done.stdout.split()


def test_deltas_committed_to_the_tail_survive_sigkill(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    sent = _stream_and_kill(path)
    assert len(sent) == 300
    assert _records(Path(f"{path}-tail")) > 0  # the last deltas were in the tail only
    again = open_store(path)
    text = again.state(A)["activeTurn"]["responseParts"][0]["content"]
    assert text == "".join(f"<{index}>" for index in range(300))
    assert len(again.replay(again.seq - 300, [A]) or []) == 300  # each delta back with its own serverSeq
    assert _records(Path(f"{path}-tail")) == 0  # settled into SQLite on opening


def test_a_torn_last_record_of_the_tail_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    _stream_and_kill(path)
    tail = Path(f"{path}-tail")
    records = tail.read_bytes().split(b"\n")[:-1]  # the header, then the records
    assert len(records) >= 3
    tail.write_bytes(b"\n".join(records[:-1]) + b"\n" + records[-1][: len(records[-1]) // 2])  # cut mid-write
    again = open_store(path)
    text = again.state(A)["activeTurn"]["responseParts"][0]["content"]
    assert text == "".join(f"<{index}>" for index in range(299))  # the last delta's record was torn


def test_a_damaged_record_ends_what_the_tail_gives(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    _stream_and_kill(path)
    tail = Path(f"{path}-tail")
    records = tail.read_bytes().split(b"\n")[:-1]  # the header, then the records
    flipped = records[-2].replace(b"<", b"(", 1)  # same length, wrong checksum
    tail.write_bytes(b"\n".join([*records[:-2], flipped, records[-1]]) + b"\n")
    again = open_store(path)
    text = again.state(A)["activeTurn"]["responseParts"][0]["content"]
    assert text == "".join(f"<{index}>" for index in range(298))


def test_a_tail_settled_by_another_journal_is_not_written_twice(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    _stream_and_kill(path)
    tail = Path(f"{path}-tail")
    kept = tail.read_bytes()
    Journal(path).close()  # settles the tail
    tail.write_bytes(kept)  # as if killed between the settle and emptying the tail
    again = open_store(path)
    assert again.state(A)["activeTurn"]["responseParts"][0]["content"] == "".join(f"<{index}>" for index in range(300))


def test_a_running_store_settles_its_tail_with_its_next_transaction(tmp_path: Path) -> None:
    import asyncio

    async def stream() -> None:
        store = open_store(tmp_path / "journal.sqlite3")
        store.create(A, "chat", chat_state(A))
        start_turn(store, A, "t")
        for index in range(20):
            store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{index}>"})
            durable = asyncio.get_running_loop().create_future()
            store.when_durable(lambda durable=durable: durable.set_result(None))
            await durable
        tail = Path(f"{tmp_path / 'journal.sqlite3'}-tail")
        assert _records(tail) > 0
        store.dispatch(A, {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": 1, "outputTokens": 1}})
        store.flush()
        assert _records(tail) == 0
        again = open_store(tmp_path / "journal.sqlite3")
        assert again.state(A) == store.state(A)
        await store.close()

    asyncio.run(stream())


def test_a_tail_ahead_of_sqlite_is_dropped_whole_never_leaving_a_hole(tmp_path: Path) -> None:
    # A power loss that took the commit which settled the previous tail leaves SQLite a generation
    # behind the tail: the tail's texts would follow missing ones, so none of them is taken.
    path = tmp_path / "journal.sqlite3"
    _stream_and_kill(path)
    tail = Path(f"{path}-tail")
    header, rest = tail.read_bytes().split(b"\n", 1)
    tail.write_bytes(b"G%d\n" % (int(header[1:]) + 1) + rest)
    again = open_store(path)
    text = again.state(A)["activeTurn"]["responseParts"][0]["content"]
    whole = "".join(f"<{index}>" for index in range(300))
    assert whole.startswith(text) and len(text) < len(whole)



_KILL = "    os.kill(os.getpid(), signal.SIGKILL)"
assert _KILL in _STREAM_THEN_DIE
_STREAM_SETTLE_THEN_DIE = _STREAM_THEN_DIE.replace(
    "async def main() -> None:",
    "import host.state.embedded_log\nhost.state.embedded_log.TAIL_SETTLE_BYTES = 2_000\n\nasync def main() -> None:",
).replace(_KILL, textwrap.indent(textwrap.dedent("""
    while store.log.settle_task is not None and not store.log.settle_task.done():
        await store.log.settle_task  # the worker's last pass
    import sqlite3
    rows = sqlite3.connect(sys.argv[1]).execute('SELECT COUNT(*) FROM run_texts').fetchone()[0]
    print('in-sqlite', rows, flush=True)
    host.state.embedded_log.TAIL_SETTLE_BYTES = 1 << 30  # no more workers: the last deltas stay in the tail
    for index in range(300, 320):
        store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{index}>"})
        durable = asyncio.get_running_loop().create_future()
        store.when_durable(lambda: durable.set_result(None))
        await durable
    journal = store.log.journal
    journal.settle_rows(journal.rows_to_settle()[1])  # a worker wrote them; killed before the tail is settled
    print('tail', journal.unsettled, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)"""), "    "))


def test_a_worker_writes_the_tail_into_sqlite_and_a_kill_after_it_loses_and_repeats_nothing(tmp_path: Path) -> None:
    # A model's pace: every delta a commit of its own to the tail. Once the tail is large enough,
    # a worker thread writes its rows into SQLite and the loop then settles the tail. Killed
    # after a worker's write but before that settle (the rows both in SQLite and in the tail),
    # the journal recovers every delta once.
    path = tmp_path / "journal.sqlite3"
    done = subprocess.run([sys.executable, "-c", _STREAM_SETTLE_THEN_DIE, str(path)], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[3], timeout=120)
    assert done.returncode == -9, done.stderr
    *sent, label, in_sqlite, tail_label, in_tail = done.stdout.split()
    assert (label, tail_label) == ("in-sqlite", "tail") and len(sent) == 300
    assert int(in_sqlite) >= 200  # the workers wrote them while the deltas streamed
    assert int(in_tail) >= 20 and _records(Path(f"{path}-tail")) >= 20  # the last ones are in both
    again = open_store(path)
    text = again.state(A)["activeTurn"]["responseParts"][0]["content"]
    assert text == "".join(f"<{index}>" for index in range(320))
    replayed = again.replay(again.seq - 320, [A]) or []
    assert [envelope["action"]["content"] for envelope in replayed] == [f"<{index}>" for index in range(320)]


def _streamed_one_commit_a_delta(path: Path, last: int) -> Journal:
    """A journal at ``path`` whose run got deltas 1 to ``last`` at a model's pace: the first a
    SQLite row (the run's head), each of the others a tail record of its own commit."""
    journal = Journal(path)
    delta = {"type": "chat/delta", "turnId": "t", "partId": "m"}
    for seq in range(1, last + 1):
        journal.append_action(A, seq, 0, "{}", {**delta, "content": f"<{seq}>"})
        journal.flush()
    return journal


def test_rows_a_worker_settled_are_not_written_again_and_a_settle_meanwhile_wins(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "journal.sqlite3"
    journal = _streamed_one_commit_a_delta(path, 11)
    delta = {"type": "chat/delta", "turnId": "t", "partId": "m"}
    assert journal.unsettled == 10
    reader = sqlite3.connect(path)
    generation, rows = journal.rows_to_settle()
    journal.settle_rows(rows[:4 * 4])  # as a worker thread does (four values a row)
    journal.rows_settled(generation, 4 * 4)
    assert [seq for (seq,) in reader.execute("SELECT seq FROM run_texts ORDER BY seq")] == [2, 3, 4, 5]
    assert journal.unsettled == 6 and _records(Path(f"{path}-tail")) == 10  # the tail keeps them until its settle
    generation, rows = journal.rows_to_settle()
    journal.flush(settle=True)  # a settle before the worker's answer: it writes the rest itself
    assert journal.unsettled == 0 and _records(Path(f"{path}-tail")) == 0
    for seq in (12, 13):  # the new tail's
        journal.append_action(A, seq, 0, "{}", {**delta, "content": f"<{seq}>"})
        journal.flush()
    journal.settle_rows(rows)  # the worker's rows are in already: ignored
    journal.rows_settled(generation, len(rows))  # of the old tail: the new tail's rows stay to settle
    assert [seq for (seq,) in reader.execute("SELECT seq FROM run_texts ORDER BY seq")] == list(range(2, 12))
    assert journal.unsettled == 2
    journal.close()
    assert [seq for (seq,) in reader.execute("SELECT seq FROM run_texts ORDER BY seq")] == list(range(2, 14))


def test_deltas_in_the_tail_leave_the_collector_no_container_per_delta(tmp_path: Path) -> None:
    # Until the tail settles, the journal keeps each streamed delta's row; with hundreds of
    # sessions streaming, a container (or three) per delta was most of what each young collection
    # walked, in pauses of the whole event loop. A thousand deltas kept leave it nothing new.
    path = tmp_path / "journal.sqlite3"
    journal = _streamed_one_commit_a_delta(path, 11)
    deltas = [{"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{seq}>"} for seq in range(12, 1_012)]
    gc.collect()
    gc.disable()  # (the count of containers allocated still grows; no collection resets it)
    try:
        before = gc.get_count()[0]
        for seq, delta in enumerate(deltas, start=12):
            journal.append_action(A, seq, 0, "{}", delta)
            journal.flush()
        kept = gc.get_count()[0] - before
    finally:
        gc.enable()
    assert journal.unsettled >= 400 and kept < 100  # (a run of RUN_LIMIT pieces ends in a SQLite commit); one a delta: 1,000
    journal.flush(settle=True)
    journal.close()
    import sqlite3
    written = sqlite3.connect(path).execute("SELECT seq, marks, content FROM run_texts ORDER BY seq").fetchall()
    heads = {1, RUN_LIMIT + 1}  # a run's first piece is its head row, in ``entries``
    assert written == [(seq, f"[[{seq},{len(f'<{seq}>')}]]", f"<{seq}>") for seq in range(1, 1_012) if seq not in heads]


def test_a_worker_writes_a_tail_of_many_rows_whole_whatever_their_number(tmp_path: Path) -> None:
    # A worker writes many rows a statement: every row arrives, with its text, whether it falls
    # in a whole statement or in the last, shorter one.
    import sqlite3

    path = tmp_path / "journal.sqlite3"
    journal = _streamed_one_commit_a_delta(path, 151)
    generation, rows = journal.rows_to_settle()
    assert journal.unsettled == 150
    journal.settle_rows(rows)
    journal.rows_settled(generation, len(rows))
    assert journal.unsettled == 0
    reader = sqlite3.connect(path)
    written = reader.execute("SELECT seq, marks, content FROM run_texts ORDER BY seq").fetchall()
    assert written == [(seq, json.dumps([[seq, len(f"<{seq}>")]], separators=(",", ":")), f"<{seq}>")
                       for seq in range(2, 152)]
    journal.close()


def test_a_commit_of_other_entries_behind_a_large_tail_waits_for_a_worker_to_write_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A turn's end behind many streamed deltas: rather than writing the whole tail into SQLite on
    # the event loop, the log has a worker write it and commits the turn's end after it; its frame
    # waits, and everything is durable and recovered.
    import asyncio
    import sqlite3

    monkeypatch.setattr("host.state.embedded_log.SETTLE_INLINE_BYTES", 1_000)
    path = tmp_path / "journal.sqlite3"

    async def stream() -> None:
        store = open_store(path)
        store.create(A, "chat", chat_state(A))
        start_turn(store, A, "t")
        for index in range(60):
            store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{index}>"})
            durable = asyncio.get_running_loop().create_future()
            store.when_durable(lambda durable=durable: durable.set_result(None))
            await durable
        assert store.log.settle_task is None  # type: ignore[attr-defined]  # nothing but the tail so far
        store.dispatch(A, {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": 1, "outputTokens": 1}})
        durable = asyncio.get_running_loop().create_future()
        store.when_durable(lambda: durable.set_result(None))
        await asyncio.wait_for(durable, 10)
        assert store.log.settle_task is not None and store.log.settle_task.done()  # type: ignore[attr-defined]
        assert _records(Path(f"{path}-tail")) == 0  # settled with the turn's end
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM run_texts").fetchone()[0] >= 59
        assert open_store(path).state(A) == store.state(A)
        await store.close()

    asyncio.run(stream())


def _descriptors_on(path: Path) -> list[str]:
    """What this process holds open of the journal's files (the database, its WAL and shared
    memory, its tail): each SQLite connection holds the first three."""
    held = []
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith(str(path)):
                held.append(target)
    return held


def test_a_host_streaming_for_long_opens_one_settle_connection_and_closes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A resource bound: however many times the worker writes the tail into SQLite while a
    # long stream goes on, the journal opens one connection for it (not one a settle), and
    # closing the store leaves nothing of the journal open; everything streamed is recovered.
    import asyncio
    import sqlite3

    monkeypatch.setattr("host.state.embedded_log.TAIL_SETTLE_BYTES", 1_000)
    path = tmp_path / "journal.sqlite3"
    opened: list[str] = []
    connect = sqlite3.connect

    def counting(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        opened.append(str(database))
        return connect(database, *args, **kwargs)

    settles = 0
    settle_rows = Journal.settle_rows

    def counted(journal: Journal, rows: list[Any]) -> None:
        nonlocal settles
        settles += 1
        settle_rows(journal, rows)

    async def stream() -> dict[str, Any]:
        store = open_store(path)
        store.create(A, "chat", chat_state(A))
        start_turn(store, A, "t")
        monkeypatch.setattr(sqlite3, "connect", counting)
        monkeypatch.setattr(Journal, "settle_rows", counted)
        for index in range(400):
            store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{index}>"})
            durable = asyncio.get_running_loop().create_future()
            store.when_durable(lambda durable=durable: durable.set_result(None))
            await durable
            if index % 50 == 49:
                while store.log.settle_task is not None and not store.log.settle_task.done():  # type: ignore[attr-defined]
                    await store.log.settle_task  # type: ignore[attr-defined]
        state = store.state(A)
        await store.close()
        monkeypatch.undo()
        return state

    state = asyncio.run(stream())
    assert settles >= 8  # the worker wrote the tail many times
    assert len([name for name in opened if str(path) in name]) == 1  # one connection for all of them (was one each)
    assert _descriptors_on(path) == []  # closed with the journal
    again = open_store(path)
    assert again.state(A) == state
    assert state["activeTurn"]["responseParts"][0]["content"] == "".join(f"<{index}>" for index in range(400))


def test_closing_during_a_settle_waits_for_it_and_leaves_nothing_open_or_lost(tmp_path: Path) -> None:
    # The journal closed while a worker writes its tail into SQLite (here held up by another
    # writer's transaction): the close waits for that write, settles the rest, and leaves no
    # connection or descriptor behind; a settle asked for afterwards (a worker that started
    # late) writes nothing, opens nothing and fails nothing. Every delta is in SQLite.
    import sqlite3
    import threading
    import time

    path = tmp_path / "journal.sqlite3"
    journal = _streamed_one_commit_a_delta(path, 200)
    generation, rows = journal.rows_to_settle()
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the worker's transaction waits for this one
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            journal.settle_rows(rows)
        except BaseException as error:  # (asserted below)
            failures.append(error)

    settling = threading.Thread(target=worker)
    settling.start()
    time.sleep(0.2)
    closing = threading.Thread(target=journal.close)
    closing.start()
    time.sleep(0.2)
    blocker.execute("COMMIT")
    blocker.close()
    settling.join(10)
    closing.join(10)
    assert not settling.is_alive() and not closing.is_alive()
    assert failures == []
    assert _descriptors_on(path) == []
    journal.settle_rows(rows)
    assert _descriptors_on(path) == []
    written = sqlite3.connect(path).execute("SELECT seq, content FROM run_texts ORDER BY seq").fetchall()
    assert written == [(seq, f"<{seq}>") for seq in range(2, 201)]
    assert _records(Path(f"{path}-tail")) == 0


def test_a_failed_settle_loses_nothing_and_the_next_one_writes(tmp_path: Path) -> None:
    # A worker's settle that fails (here SQLite refuses a value) writes none of its rows and
    # keeps nothing broken: the tail still holds them, the next settle writes, and the rows all
    # arrive once.
    import sqlite3

    from host.errors import JournalError

    path = tmp_path / "journal.sqlite3"
    journal = _streamed_one_commit_a_delta(path, 101)
    generation, rows = journal.rows_to_settle()
    journal.settle_rows(rows[:4 * 10])
    journal.rows_settled(generation, 4 * 10)
    generation, rows = journal.rows_to_settle()
    with pytest.raises(JournalError):
        journal.settle_rows([*rows[:4 * 70], object(), 1, None, "x"])  # a value SQLite cannot bind
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT COUNT(*) FROM run_texts").fetchone()[0] == 10  # rolled back whole
    assert journal.unsettled == 90
    journal.settle_rows(rows)
    journal.rows_settled(generation, len(rows))
    assert journal.unsettled == 0
    assert [seq for (seq,) in reader.execute("SELECT seq FROM run_texts ORDER BY seq")] == list(range(2, 102))
    reader.close()
    journal.close()
    assert _descriptors_on(path) == []
