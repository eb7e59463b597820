"""The durable log: an append-only SQLite journal (WAL) with periodic snapshots.

Three kinds of entry, in one table ordered by ``id`` (not by serverSeq: creating or removing a
channel takes no serverSeq):

* ``action``   — an accepted envelope (its JSON text, exactly as sent) and the clock reading the
                 reducer used, so that replaying it after a restart gives the same state;
* ``created``  — a channel appeared, with its initial state;
* ``removed``  — a channel went away.

A snapshot is the whole store (every channel's state and the serverSeq) as of one entry id. To
recover, load the newest snapshot and re-apply the entries after it. Entries older than both the
newest snapshot and the replay window are pruned when a snapshot is written.

Appends are grouped: the first append opens a transaction and ``flush`` commits it
(``synchronous=NORMAL`` in WAL mode: once ``flush`` returns, the entries survive the process
being killed; only a power loss can take the last few). The store flushes at the end of every
event-loop tick and the transport flushes before any frame leaves the process, so nothing a
client has seen can be missing after a crash. The journal never interprets states or actions.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from host.errors import JournalError

__all__ = ["Journal", "JournalEntry", "Snapshot"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('action', 'created', 'removed')),
    channel TEXT NOT NULL,
    seq INTEGER,
    now INTEGER,
    body TEXT
);
CREATE INDEX IF NOT EXISTS entries_seq ON entries(seq) WHERE seq IS NOT NULL;
CREATE TABLE IF NOT EXISTS snapshots (
    upto INTEGER PRIMARY KEY,
    seq INTEGER NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

_FORMAT_VERSION = "1"


@dataclass(frozen=True)
class JournalEntry:
    id: int
    kind: str
    channel: str
    seq: int | None
    now: int | None
    body: str | None


@dataclass(frozen=True)
class Snapshot:
    upto: int
    seq: int
    channels: dict[str, dict[str, Any]]


class Journal:
    """One SQLite file. All methods are synchronous and fast; call them from the event loop."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(_SCHEMA)
            row = self._db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta(key, value) VALUES ('format', ?)", (_FORMAT_VERSION,))
            elif row[0] != _FORMAT_VERSION:
                raise JournalError(
                    f"{path} was written by an incompatible agent-host (journal format {row[0]}, "
                    f"this host reads {_FORMAT_VERSION}); point --data-dir at a new directory."
                )
        except sqlite3.Error as error:
            raise JournalError(f"cannot open the journal at {path}: {error}") from error
        self.entries_since_snapshot = 0

    # -- writing -------------------------------------------------------------------------------

    def append_action(self, channel: str, seq: int, now: int, envelope_json: str) -> None:
        self._insert("action", channel, seq, now, envelope_json)

    def append_created(self, channel: str, state: dict[str, Any], kind: str) -> None:
        self._insert("created", channel, None, None, json.dumps({"kind": kind, "state": state}))

    def append_removed(self, channel: str) -> None:
        self._insert("removed", channel, None, None, None)

    def _insert(self, kind: str, channel: str, seq: int | None, now: int | None, body: str | None) -> None:
        try:
            if not self._db.in_transaction:
                self._db.execute("BEGIN")
            self._db.execute(
                "INSERT INTO entries(kind, channel, seq, now, body) VALUES (?, ?, ?, ?, ?)",
                (kind, channel, seq, now, body),
            )
        except sqlite3.Error as error:
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error
        self.entries_since_snapshot += 1

    @property
    def dirty(self) -> bool:
        """Entries were appended since the last ``flush``."""
        return self._db.in_transaction

    def flush(self) -> None:
        """Commit every entry appended so far."""
        if self._db.in_transaction:
            try:
                self._db.execute("COMMIT")
            except sqlite3.Error as error:
                raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error

    def write_snapshot(self, seq: int, channels: dict[str, dict[str, Any]], keep_actions: int) -> None:
        """Record the whole store as of the newest entry, then prune what is no longer needed."""
        self.flush()
        body = json.dumps(channels, separators=(",", ":"))
        with self._transaction():
            upto = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM entries").fetchone()[0]
            self._db.execute("INSERT OR REPLACE INTO snapshots(upto, seq, body) VALUES (?, ?, ?)", (upto, seq, body))
            self._db.execute("DELETE FROM snapshots WHERE upto < ?", (upto,))
            # Keep the last ``keep_actions`` actions for reconnect replay even across a restart.
            floor = self._db.execute(
                "SELECT COALESCE(MIN(id), 0) FROM (SELECT id FROM entries WHERE kind='action' "
                "ORDER BY id DESC LIMIT ?)",
                (keep_actions,),
            ).fetchone()[0]
            self._db.execute("DELETE FROM entries WHERE id <= ? AND id < ?", (upto, floor))
        self.entries_since_snapshot = 0

    # -- reading -------------------------------------------------------------------------------

    def latest_snapshot(self) -> Snapshot | None:
        row = self._db.execute("SELECT upto, seq, body FROM snapshots ORDER BY upto DESC LIMIT 1").fetchone()
        if row is None:
            return None
        return Snapshot(upto=row[0], seq=row[1], channels=json.loads(row[2]))

    def entries_after(self, entry_id: int) -> Iterator[JournalEntry]:
        cursor = self._db.execute(
            "SELECT id, kind, channel, seq, now, body FROM entries WHERE id > ? ORDER BY id", (entry_id,)
        )
        for row in cursor:
            yield JournalEntry(*row)

    def recent_actions(self, limit: int) -> list[JournalEntry]:
        rows = self._db.execute(
            "SELECT id, kind, channel, seq, now, body FROM entries WHERE kind='action' ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [JournalEntry(*row) for row in reversed(rows)]

    def close(self) -> None:
        try:
            self.flush()
            self._db.close()
        except sqlite3.Error:
            pass

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
