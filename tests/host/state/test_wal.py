"""A database's checkpoints off the writer's thread (``host.state.wal``): the WAL stays bounded
while every write is kept, whether the worker keeps up or not."""

import sqlite3
import time
from pathlib import Path

import pytest

import host.state.wal as wal
from host.state.wal import Checkpointer


def _database(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript("CREATE TABLE rows (id INTEGER PRIMARY KEY, body TEXT);"
                     "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);")
    return db


def _write(db: sqlite3.Connection, checkpoints: Checkpointer, rows: int, wal_path: Path) -> int:
    largest = 0
    for index in range(rows):
        body = f"{index:06d}" + "x" * 3_000
        db.execute("INSERT INTO rows(body) VALUES (?)", (body,))
        checkpoints.wrote(len(body))
        largest = max(largest, wal_path.stat().st_size)
        while checkpoints.running:  # writes come apart: the worker has the time to finish
            time.sleep(0.001)
    return largest


def test_the_worker_keeps_the_wal_small_and_every_row_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "d.sqlite3"
    db = _database(path)
    checkpoints = Checkpointer(db, str(path), name="test-checkpoint", keep_bytes=1 << 16, every=20_000,
                               limit=1 << 30)
    assert db.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)  # never inside a write
    largest = _write(db, checkpoints, 400, Path(f"{path}-wal"))
    assert checkpoints.thread is not None and checkpoints.thread.name == "test-checkpoint"
    checkpoints.close()
    assert not checkpoints.thread.is_alive()
    db.close()
    # Without checkpoints the WAL would hold all 1.2 MB of rows; one every 20,000 characters
    # keeps it to a few of them.
    assert largest < 200_000
    again = sqlite3.connect(path)
    assert again.execute("SELECT COUNT(*), MAX(substr(body, 1, 6)) FROM rows").fetchone() == (400, "000399")


def test_writes_that_outrun_the_worker_are_checkpointed_by_the_writer(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wal, "checkpoint", lambda path, keep_bytes: False)  # a worker that never copies
    path = tmp_path / "d.sqlite3"
    db = _database(path)
    checkpoints = Checkpointer(db, str(path), name="test-checkpoint", keep_bytes=1 << 16, every=20_000,
                               limit=200_000)
    largest = _write(db, checkpoints, 400, Path(f"{path}-wal"))
    checkpoints.close()
    db.close()
    assert largest < 2_000_000  # about 6.6 MB with no checkpoint at all
    assert sqlite3.connect(path).execute("SELECT COUNT(*) FROM rows").fetchone() == (400,)


def test_a_failed_checkpoint_is_left_to_the_next(tmp_path: Path) -> None:
    assert wal.checkpoint(str(tmp_path / "missing" / "d.sqlite3"), 1 << 16) is False
