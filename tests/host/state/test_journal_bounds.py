"""The journal's size on disk stays proportional to what it holds: a capped WAL, streamed text
appended (not rewritten) at each commit, large outputs kept as bounded as the state keeps them,
pruning in bounded steps, and replay after a restart exact.

Each test "crashes" by opening a second store on the same file without closing the first: only
what the journal committed is there. Sizes are read from the files and rows, never timed.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from host.runtime.terminals import actions as terminal_actions
from host.runtime.terminals.output import bounded
from host.state.embedded_log import at_once
from host.state.journal import PRUNE_STEP_CHARS
from host.state.store import Store
from tests.host.state.test_journal import chat_state, open_store

A = "ahp-chat://default/a"
B = "ahp-chat://default/b"
TERMINAL = "ahp-terminal://t1"
PAGE_FRAME = 4096 + 24
"""What one page costs in the WAL (the page and its frame header)."""


def start_turn(store: Store, channel: str, turn: str) -> None:
    store.dispatch(channel, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "1970-01-01T00:00:00.002Z", "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(channel, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": ""}})


def wal(path: Path) -> int:
    file = Path(f"{path}-wal")
    return file.stat().st_size if file.exists() else 0


def on_disk(path: Path) -> int:
    return path.stat().st_size + wal(path)


def stored_chars(path: Path) -> int:
    """Characters of entries (with their run texts) the journal holds."""
    with sqlite3.connect(path) as db:
        entries = db.execute("SELECT COALESCE(SUM(length(body)), 0) FROM entries").fetchone()[0]
        texts = db.execute("SELECT COALESCE(SUM(length(content)), 0) FROM run_texts").fetchone()[0]
    return entries + texts


@pytest.fixture
def small_wal(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """WAL thresholds small enough that a test writes many times their size in a second."""
    monkeypatch.setattr("host.state.journal.WAL_KEEP_BYTES", 64 * 1024)
    monkeypatch.setattr("host.state.store.WAL_CHECKPOINT_BYTES", 256 * 1024)
    monkeypatch.setattr("host.state.store.WAL_LIMIT_BYTES", 1024 * 1024)
    return 256 * 1024, 1024 * 1024


async def test_the_wal_stays_under_its_cap_across_many_commits(tmp_path: Path, small_wal: tuple[int, int]) -> None:
    checkpoint_at, cap = small_wal
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    largest = 0
    for index in range(2_000):  # some 12 kB of WAL each: 24 MB written in all
        store.dispatch(A, {"type": "chat/activityChanged", "activity": f"{index} " + "x" * 1_000})
        if index % 3:
            durable = asyncio.Event()
            store.when_durable(durable.set)  # as a transport does before a frame leaves
            await asyncio.wait_for(durable.wait(), 10)
        else:
            store.flush()  # as one does before closing a connection
        largest = max(largest, wal(path))
    assert largest <= cap + 64 * 1024  # the cap, plus at most one transaction past it
    if store._checkpoint_task is not None:
        await asyncio.wait_for(store._checkpoint_task, 10)  # the round under way ends
    store.dispatch(A, {"type": "chat/activityChanged", "activity": "last"})
    store.flush()  # the first commit after a complete checkpoint starts the WAL again, truncated
    assert wal(path) <= checkpoint_at
    again = open_store(path)
    assert again.state(A) == store.state(A) and again.seq == store.seq


def test_a_complete_checkpoint_starts_the_wal_again_itself_not_the_writers_next_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Starting the WAL again syncs its new header and truncates the file: done by the checkpoint's
    # worker, the event loop's next commit finds it done and waits for no disk.
    monkeypatch.setattr("host.state.journal.WAL_KEEP_BYTES", 64 * 1024)
    monkeypatch.setattr("host.state.store.WAL_CHECKPOINT_BYTES", 1 << 40)  # only the checkpoint below
    monkeypatch.setattr("host.state.store.WAL_LIMIT_BYTES", 1 << 40)
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, snapshot_every=1_000_000)
    store.create(A, "chat", chat_state(A))
    journal = store.log.journal  # type: ignore[attr-defined]  # the embedded log's
    journal.checkpoint_here()  # what the store's own commits left
    for index in range(300):  # some 1.2 MB of WAL
        store.dispatch(A, {"type": "chat/activityChanged", "activity": f"{index} " + "x" * 1_000})
        store.flush()
    assert wal(path) > 1024 * 1024
    assert journal.checkpoint()  # as from a worker thread: nothing commits meanwhile, so it completes
    assert wal(path) <= 64 * 1024  # started again and truncated to WAL_KEEP_BYTES already
    store.dispatch(A, {"type": "chat/activityChanged", "activity": "last"})
    store.flush()
    again = open_store(path)
    assert again.state(A) == store.state(A) and again.seq == store.seq


def test_without_an_event_loop_the_wal_is_checkpointed_on_the_writers_thread(tmp_path: Path, small_wal: tuple[int, int]) -> None:
    checkpoint_at, _cap = small_wal
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)  # no event loop: every dispatch commits at once
    store.create(A, "chat", chat_state(A))
    largest = 0
    for index in range(1_000):
        store.dispatch(A, {"type": "chat/activityChanged", "activity": f"{index} " + "x" * 1_000})
        largest = max(largest, wal(path))
    assert largest <= checkpoint_at + 64 * 1024
    assert open_store(path).state(A) == store.state(A)


def test_a_long_streamed_turn_adds_about_one_page_of_wal_per_committed_delta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("host.state.store.WAL_CHECKPOINT_BYTES", 1 << 40)  # measure every byte written
    monkeypatch.setattr("host.state.store.WAL_LIMIT_BYTES", 1 << 40)
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)  # no event loop: each delta is committed on its own, at a model's pace
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    before = wal(path)
    deltas = 2_000
    for index in range(deltas):
        store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"word{index} "})
    per_delta = (wal(path) - before) / deltas
    # Rewriting the run's row at each commit cost two pages or more (8.4 kB a delta); appending
    # the new text costs the one page it lands in, and now and then a run's head row or a split.
    assert per_delta < 1.3 * PAGE_FRAME
    again = open_store(path)
    assert again.state(A)["activeTurn"]["responseParts"][0]["content"] == "".join(f"word{i} " for i in range(deltas))
    assert again.replay(store.seq - deltas, [A]) == store.replay(store.seq - deltas, [A])


def test_a_streamed_tool_call_input_is_appended_too_and_replayed_exactly(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)  # no event loop: each delta is committed on its own
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    store.dispatch(A, {"type": "chat/toolCallStart", "turnId": "t", "toolCallId": "c1", "toolName": "write", "displayName": "Write"})
    sent = [store.dispatch(A, {"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c1", "content": f'"line {i}\\n' if i else '{"text": '})
            for i in range(300)]
    sent.append(store.dispatch(A, {"type": "chat/toolCallDelta", "turnId": "t", "toolCallId": "c1", "content": '"}', "invocationMessage": "Writing"}))
    with sqlite3.connect(path) as db:  # a head row per run of 64 deltas, the rest appended
        assert db.execute("SELECT COUNT(*) FROM entries WHERE body LIKE '%toolCallDelta%'").fetchone()[0] <= 6
    again = open_store(path)
    assert again.state(A) == store.state(A)
    assert again.replay(sent[0]["serverSeq"] - 1, [A]) == sent


def test_replay_after_a_restart_is_exact_when_runs_are_committed_piece_by_piece(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path, replay_capacity=100_000)
    for channel in (A, B):
        store.create(channel, "chat", chat_state(channel))
        start_turn(store, channel, "t")
    sent: list[dict[str, Any]] = []
    for index in range(700):  # two interleaved runs, committed after every delta or every few
        channel = (A, B)[index % 3 == 0]
        sent.append(store.dispatch(channel, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"<{index}é>"}))
        if index % 50 == 49:
            sent.append(store.dispatch(A, {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": index, "outputTokens": 1}}))
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM run_texts").fetchone()[0] > 500  # the pieces were appended
    again = open_store(path, replay_capacity=100_000)
    assert again.seq == store.seq
    assert {c: again.state(c) for c in (A, B)} == {c: store.state(c) for c in (A, B)}
    # Every envelope is back with its own serverSeq, exactly as it was sent.
    assert again.replay(sent[0]["serverSeq"] - 1, [A, B]) == sent
    # A snapshot between runs, then more runs: still exact, and the pruned runs took their texts.
    at_once(store.snapshot_now())
    more = [store.dispatch(A, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": str(i)}) for i in range(100)]
    third = open_store(path, replay_capacity=100_000)
    assert third.state(A) == store.state(A)
    assert third.replay(more[0]["serverSeq"] - 1, [A]) == more


def test_a_journal_of_the_previous_build_opens_and_recovers(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    store = open_store(path)
    store.create(A, "chat", chat_state(A))
    start_turn(store, A, "t")
    at_once(store.snapshot_now())
    journal = store._journal
    assert journal is not None
    for index in range(100):  # one commit for the whole run, as the previous build wrote it
        journal.append_action(A, 1_000 + index, 7, json.dumps({"channel": A, "action": {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "ab"}, "serverSeq": 1_000 + index}),
                              {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "ab"})
    journal.flush()
    with sqlite3.connect(path) as db:  # the previous build's file: format 2, no run_texts table
        assert db.execute("SELECT COUNT(*) FROM run_texts").fetchone()[0] == 0
        db.execute("DROP TABLE run_texts")
        db.execute("UPDATE meta SET value = '2' WHERE key = 'format'")
    old = open_store(path)
    assert old.state(A)["activeTurn"]["responseParts"][0]["content"] == "ab" * 100
    assert old.seq == 1_099
    assert len(old.replay(1_049, [A])) == 50
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()[0] == "3"


def test_terminal_output_is_journaled_as_bounded_as_the_state_keeps_it(tmp_path: Path, small_wal: tuple[int, int]) -> None:
    path = tmp_path / "journal.sqlite3"
    replay_chars, snapshot_chars, scrollback = 500_000, 1_000_000, 256_000
    store = open_store(path, replay_chars=replay_chars, snapshot_chars=snapshot_chars)
    store.create(TERMINAL, "terminal", {"title": "sh", "cwd": "file:///", "cols": 80, "rows": 24, "content": [],
                                        "lifecycle": {"status": "running"}})
    size, largest, sent = 0, 0, []
    for index in range(600):  # 30 MB of output in bursts, bounded as the terminal service does
        added = f"{index:05d}" + "y" * 49_995
        content = store.state(TERMINAL)["content"]
        restart = bounded(size, added, content[0]["value"] if content else "", scrollback)
        if restart is not None:
            sent.append(store.dispatch(TERMINAL, terminal_actions.cleared()))
            added, size = restart, 0
        sent.append(store.dispatch(TERMINAL, terminal_actions.data(added)))
        size += len(added)
        largest = max(largest, on_disk(path))
    # The journal holds the scrollback (in its snapshot), what came since the last snapshot and
    # the replay window: a few MB for 30 MB printed, however long the terminal runs.
    assert stored_chars(path) <= snapshot_chars + replay_chars + 2 * 50_000
    assert largest <= 6_000_000
    again = open_store(path, replay_chars=replay_chars, snapshot_chars=snapshot_chars)
    assert again.state(TERMINAL) == store.state(TERMINAL)
    assert again.seq == store.seq
    # The replay window is bounded by characters too, and the same after the restart.
    oldest = store._replay[0][0]
    window = store.replay(oldest - 1, [TERMINAL])
    assert window == [e for e in sent if e["serverSeq"] >= oldest]
    assert sum(len(json.dumps(e, ensure_ascii=False, separators=(",", ":"))) for e in window) <= replay_chars
    assert store.replay(oldest - 2, [TERMINAL]) is None  # older ones are a snapshot's business
    assert again.replay(oldest - 1, [TERMINAL]) == window


def test_pruning_deletes_in_steps_bounded_by_characters(tmp_path: Path) -> None:
    from host.state.journal import encode_plans

    path = tmp_path / "journal.sqlite3"
    first = open_store(path, replay_capacity=10, snapshot_chars=10**12)
    first.create(A, "chat", chat_state(A))
    for index in range(12):  # turns of 1.5 MB: two state parts each
        first.dispatch(A, {"type": "chat/turnStarted", "turnId": f"t{index}", "startedAt": "1970-01-01T00:00:00.002Z", "message": {"text": "go", "origin": {"kind": "user"}}})
        first.dispatch(A, {"type": "chat/responsePart", "turnId": f"t{index}", "part": {"kind": "markdown", "id": "m", "content": f"{index % 10}" * 1_500_000}})
        first.dispatch(A, {"type": "chat/turnComplete", "turnId": f"t{index}", "duration": 5})
    at_once(first.snapshot_now())
    # A restart, the conversation truncated (so all its old parts go), and many entries of 100 kB since.
    store = open_store(path, replay_capacity=10, snapshot_chars=10**12)
    store.dispatch(A, {"type": "chat/truncated"})
    for index in range(300):
        store.dispatch(A, {"type": "chat/activityChanged", "activity": f"{index}" + "z" * 100_000})
    sizes = row_sizes(path)
    upto, seq, plans, removed = store._begin_snapshot()
    steps = store._write_snapshot(store._journal, upto, seq, encode_plans(plans), removed)  # type: ignore[arg-type]  # open_store: it has a journal
    deleted: list[tuple[int, int]] = []  # (rows, characters) per step
    present = set(sizes)
    for _ in steps:
        now = set(row_sizes(path, lengths=False))
        gone = present - now
        if gone:
            deleted.append((len(gone), sum(sizes[row] for row in gone)))
        present = now
    assert sum(chars for _, chars in deleted) > 45_000_000  # 18 MB of old parts and 30 MB of entries are gone...
    # ...at most a megabyte per step, or one larger row alone (a 1.5 MB action of the replay window)
    assert all(chars <= PRUNE_STEP_CHARS or rows == 1 for rows, chars in deleted)
    assert len(deleted) > 45
    assert open_store(path).state(A) == store.state(A)


def row_sizes(path: Path, lengths: bool = True) -> dict[tuple[str, int], int]:
    """(table, id) → characters of the rows of entries and state parts."""
    size = "length(body)" if lengths else "0"
    with sqlite3.connect(path) as db:
        out = {("entries", row): chars for row, chars in db.execute(f"SELECT id, {size} FROM entries")}
        out.update({("parts", row): chars for row, chars in db.execute(f"SELECT id, {size} FROM channel_state_parts")})
    return out


async def test_a_real_terminal_printing_megabytes_leaves_a_bounded_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uuid

    from client import AhpClient
    from host.config import load_config
    from host.service import AgentHost
    from host.transport.server import start_host
    from tests.conftest import TOKEN

    monkeypatch.setenv("SHELL", "/bin/sh")  # no rc files: a predictable shell
    monkeypatch.setenv("ENV", "")
    replay_chars, snapshot_chars = 200_000, 400_000
    config = load_config(None, environ={}, overrides={
        "server": {"port": 0, "data_dir": str(tmp_path / "data"), "token": TOKEN,
                   "replay_buffer_chars": replay_chars, "snapshot_every_chars": snapshot_chars},
        "sessions": {"default_directory": str(tmp_path), "default_agent": "offline", "offline_delay": 0},
    })
    host = AgentHost(config)
    running = await start_host(host, token=TOKEN)
    try:
        client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
        await client.initialize(subscriptions=["ahp-root://"])
        terminal = f"ahp-terminal:/{uuid.uuid4()}"
        await client.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": client.client_id}})
        await client.subscribe(terminal)

        def shown() -> str:
            parts = (client.state(terminal) or {}).get("content") or []
            return "".join(p.get("output") if p.get("type") == "command" else p.get("value", "") for p in parts)

        # 3 MB of output at a build log's pace: each 16 ms burst fits the scrollback, so the terminal
        # service journals all of it (a faster flood is cut to the scrollback before it is journaled).
        # The mark is computed by the shell, so the echoed command never matches it.
        printer = "import sys, time\nfor i in range(1000):\n    sys.stdout.write(('%04d' % i) + 'x' * 2995 + chr(10)); sys.stdout.flush(); time.sleep(0.001)"
        client.dispatch(terminal, {"type": "terminal/input", "data": f"{sys.executable} -c \"{printer}\"; echo done-$((40 + 2))\n"})
        await client.wait_for(lambda m, e: "done-42" in shown()[-2_000:], timeout=60)
        if host.store._snapshot_task is not None:
            await asyncio.wait_for(host.store._snapshot_task, 30)  # the last snapshot and its pruning
        host.store.flush()
        # The journal holds the scrollback (256 k characters, in the terminal's snapshot) and at most
        # the two windows, not the 3 MB printed.
        assert stored_chars(tmp_path / "data" / "journal.sqlite3") <= 400_000 + 200_000 + 300_000
        assert len(shown()) <= 256_000  # what the client keeps is the scrollback too
        await client.close()
    finally:
        await running.stop()
