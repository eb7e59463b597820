"""SQLite databases in WAL mode whose checkpoints stay off the event loop.

The host's databases are written on the event loop (the journal's commits, a turn's transcript,
a tool's output), where SQLite's automatic checkpoint would run inside a write, with its
``fsync``: 12-33 ms on this machine's disk, every session on the host stopped meanwhile
(``benchmarks/README.md``, "Event-loop stalls" and "What sets the p99 when one core is loaded").
This module holds what every such database does instead:

* ``manual_checkpoints(db, keep_bytes)``: ``synchronous=NORMAL`` (a commit survives the process
  killed at any point; no ``fsync`` of its own), automatic checkpoints off, and the WAL truncated
  to ``keep_bytes`` when it starts again;
* ``checkpoint(path, keep_bytes)``: a passive checkpoint (it neither waits for nor blocks the
  writer) on a connection of the calling thread's own; after a complete copy, one small commit
  starts the WAL again from its beginning (``start_again``), so that SQLite's sync of the new
  header and the truncation happen on that thread, not in the loop's next write. The database
  needs a ``meta(key TEXT PRIMARY KEY, value TEXT)`` table for that commit;
* ``Checkpointer``: for a store that counts what it writes (``wrote``), a worker thread that runs
  ``checkpoint`` once about ``every`` characters were written since the last, and the writer's
  own passive checkpoint once ``limit`` were written with no complete copy (writes outrunning the
  worker, or a reader holding it back), so the WAL stays bounded.

The journal (``host/state/journal.py``) runs its checkpoints from the embedded log's worker task
and uses the first two; the transcripts and the content store use a ``Checkpointer``.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
from collections.abc import Callable

__all__ = ["Checkpointer", "checkpoint", "copy_wal", "manual_checkpoints", "start_again"]

logger = logging.getLogger(__name__)

PAGE_CHARS = 4096
"""What ``Checkpointer.wrote`` adds to each write's characters: a row's keys and its table's and
index's pages, a page or so."""


def manual_checkpoints(db: sqlite3.Connection, keep_bytes: int) -> None:
    """Set a connection up for checkpoints by this module (see the module docstring)."""
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA wal_autocheckpoint=0")
    db.execute(f"PRAGMA journal_size_limit={keep_bytes}")


def copy_wal(db: sqlite3.Connection) -> bool:
    """A passive checkpoint on ``db``: True when it copied every frame committed when it began."""
    busy, log, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return bool(busy == 0 and log == copied)


def start_again(db: sqlite3.Connection, keep_bytes: int) -> None:
    """After a complete checkpoint, on the checkpoint's connection: a small commit, which starts
    the WAL again from its beginning. SQLite syncs the WAL's new header then (what
    ``synchronous=NORMAL`` does when a WAL is reused) and truncates the file to ``keep_bytes``:
    4-19 ms on this machine's disk, which the event loop's next write waited for when it was the
    first. If a write of the loop's comes first, it starts the WAL itself, as before."""
    manual_checkpoints(db, keep_bytes)
    db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('wal', 'started again')")


def checkpoint(path: str, keep_bytes: int) -> bool:
    """Copy the WAL of the database at ``path`` into it, on a connection of this thread's own,
    and start the WAL again after a complete copy. True when the copy was complete. A failure
    is housekeeping: it is logged and left to the next checkpoint (False)."""
    try:
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
            complete = copy_wal(db)
            if complete:
                start_again(db, keep_bytes)
            return complete
    except sqlite3.Error as error:
        logger.debug("checkpoint of %s: %s", path, error)
        return False


class Checkpointer:
    """The checkpoints of one database, in a worker thread of their own (module docstring).

    ``wrote`` is called by the writer, under its own lock, after each write with the characters
    it wrote; ``close`` before the writer's connection closes (it waits for a running
    checkpoint)."""

    def __init__(self, db: sqlite3.Connection, path: str, *, name: str, keep_bytes: int, every: int,
                 limit: int, run: Callable[[], bool] | None = None) -> None:
        """``db``: the writer's connection (``manual_checkpoints`` is applied to it); ``path``: the
        database's file; ``name``: the worker thread's; ``run``: the worker's checkpoint
        (``checkpoint(path, keep_bytes)`` unless given)."""
        manual_checkpoints(db, keep_bytes)
        self._db = db
        self._run = run if run is not None else lambda: checkpoint(path, keep_bytes)
        self._name, self._every, self._limit = name, every, limit
        self._written = 0
        """Characters counted since the last checkpoint began."""
        self._behind = 0
        """Characters written since the last complete checkpoint (about)."""
        self.running = False
        """Whether the worker was asked for a checkpoint and has not finished it."""
        self.thread: threading.Thread | None = None
        """The worker, started with the first checkpoint (``Thread.start`` waits for the new thread
        to run: milliseconds on a busy machine, once), then woken for each."""
        self._wake = threading.Event()
        self._closing = False

    def wrote(self, chars: int) -> None:
        """Count a write; past ``every``, wake the worker unless it is at one already."""
        self._written += chars + PAGE_CHARS
        if self._written < self._every:
            return
        if self._behind >= self._limit:
            # Writes outran the worker's checkpoints (or a reader held them back): this thread
            # copies what it can, as SQLite's own checkpoint did, so that the WAL stays bounded.
            with contextlib.suppress(sqlite3.Error):
                if copy_wal(self._db):
                    self._behind = 0
        if self.running:
            return  # the next write past the threshold tries again
        self._behind += self._written
        self._written = 0
        self.running = True
        self._wake.set()
        if self.thread is None:
            self.thread = threading.Thread(target=self._work, name=self._name, daemon=True)
            self.thread.start()

    def _work(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            try:
                if self._run():
                    self._behind = 0
            finally:
                self.running = False

    def close(self) -> None:
        """End the worker, after the checkpoint it may be running."""
        if self.thread is not None:
            self._closing = True
            self._wake.set()
            self.thread.join()
