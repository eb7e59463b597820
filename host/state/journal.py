"""The durable log: an append-only SQLite journal (WAL) with periodic snapshots.

Three kinds of entry, in one table ordered by ``id`` (not by serverSeq: creating or removing a
channel takes no serverSeq):

* ``action``   — an accepted envelope (its JSON text, exactly as sent) and the clock reading the
                 reducer used, so that replaying it after a restart gives the same state;
* ``created``  — a channel appeared, with its initial state;
* ``removed``  — a channel went away.

**Text runs.** Consecutive text appends to the same part of the same channel (``chat/delta``,
``chat/reasoning``: ``ahp.state.appends.TEXT_APPENDS``, with that module's ``run_key``, the one
definition of a run the store holds state by too; the caller passes the action of an envelope that
may join a run) share one ``action`` row: its body is one envelope whose ``content`` is the run's text joined and whose
``serverSeq`` is the run's last, plus ``"coalesced": [[serverSeq, length], ...]`` from which the
individual envelopes are cut again (``expand``). Reducing the joined envelope gives the same state as
reducing each piece (appending is associative and these reducers ignore the clock), so a reader that
ignores ``coalesced`` still recovers the right state. Any other entry for the channel, a snapshot,
or ``RUN_LIMIT`` pieces end a run; while a run is open its row is rewritten at each flush (bounded by
the limit), so a 10,000-delta turn takes some 10,000 / ``RUN_LIMIT`` rows.

**Batches.** Appends are kept in memory and ``flush`` writes them in one transaction
(``synchronous=NORMAL`` in WAL mode: once ``flush`` returns, the entries survive the process being
killed; only a power loss can take the last few). The store flushes shortly after an append (a
timer, or at once past a size threshold) and the transport flushes before any frame leaves the
process, so nothing a client has seen can be missing after a crash.

**Snapshots** are incremental: ``channel_states`` gives, per channel, its kind and a manifest (the
ids of the ``channel_state_parts`` rows whose texts, joined in order, are its state JSON), and
``snapshots`` the entry id and serverSeq they are as of. A snapshot writes parts only for what
changed since the previous one (the store reuses the parts of a session's unchanged turns), each in
its own small transaction (``write_part``; the event loop runs in between), then ``write_snapshot``
switches the manifests in one small transaction. To recover, load the channel states and re-apply the entries after that id. Entries
older than both the snapshot and the replay window are then pruned in small transactions and the
WAL checkpointed, from a worker thread on its own connection (``prune``; never by a commit on the
event loop: automatic checkpoints are off). The journal never interprets states; of actions it
knows only the run shape above. The store reads a chat's older turns back from its snapshot rows
(``read_parts``; ``latest_snapshot`` hands it a chat's rows as they are, see ``host.state.turn_pages``).
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from ahp.jsonrpc import encode
from ahp.state.appends import TEXT_APPENDS, run_key
from host.errors import JournalError

__all__ = ["Journal", "JournalEntry", "MODEL", "Snapshot", "expand", "RUN_LIMIT"]

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
CREATE TABLE IF NOT EXISTS channel_states (
    channel TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    manifest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS channel_state_parts (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS channel_state_parts_channel ON channel_state_parts(channel);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

_FORMAT_VERSION = "2"
"""2: snapshots keep each channel's state in its own ``channel_states`` row (only changed channels
are rewritten); 1 (still read, upgraded by the first snapshot): the whole store in ``snapshots.body``."""
_READABLE = ("1", _FORMAT_VERSION)

MODEL = "0.9.0"
"""The state model this build journals (``meta.model``): the internal model of ``ahp.state``. A
journal without a model was written by an older build, whose store held AHP 0.2.0 states and
actions; ``host.state.journal_upgrade`` converts it once."""

_INSERT = "INSERT INTO entries(kind, channel, seq, now, body) VALUES (?, ?, ?, ?, ?)"

RUN_LIMIT = 64
"""Most text appends one row holds (bounds what rewriting an open run's row costs)."""

_PRUNE_BATCH = 200
"""Rows deleted per transaction when pruning."""

_READ_BATCH = 500
"""Part ids looked up per query when reading parts."""

PART_CHARS = 1_000_000
"""Most characters of state JSON a ``channel_state_parts`` row holds (one transaction each)."""


class _Run:
    """An open text run: consecutive appends to one part of one channel, kept as one row."""

    __slots__ = ("key", "channel", "now", "action", "texts", "marks", "row_id", "dirty")

    def __init__(self, key: tuple[Any, ...], channel: str, now: int, action: dict[str, Any], seq: int) -> None:
        self.key = key
        self.channel = channel
        self.now = now
        self.action = {name: value for name, value in action.items() if name != "content"}
        self.texts: list[str] = [action["content"]]
        self.marks: list[tuple[int, int]] = [(seq, len(action["content"]))]
        """``(serverSeq, length)`` of each append, in order."""
        self.row_id: int | None = None
        self.dirty = True
        """Appends not in the row yet (the row is not written, or is queued for a rewrite)."""

    def add(self, seq: int, text: str) -> None:
        self.texts.append(text)
        self.marks.append((seq, len(text)))

    @property
    def seq(self) -> int:
        return self.marks[-1][0]

    def body(self) -> str:
        if len(self.marks) == 1:
            return encode({"channel": self.channel, "action": {**self.action, "content": self.texts[0]}, "serverSeq": self.seq})
        return encode({
            "channel": self.channel,
            "action": {**self.action, "content": "".join(self.texts)},
            "serverSeq": self.seq,
            "coalesced": self.marks,
        })

    def insert(self, db: sqlite3.Connection) -> None:
        cursor = db.execute(_INSERT, ("action", self.channel, self.seq, self.now, self.body()))
        self.row_id = cursor.lastrowid
        self.dirty = False

    def rewrite(self, db: sqlite3.Connection) -> None:
        db.execute("UPDATE entries SET seq = ?, body = ? WHERE id = ?", (self.seq, self.body(), self.row_id))
        self.dirty = False


def expand(envelope: dict[str, Any]) -> list[dict[str, Any]]:
    """The envelopes a journaled one stands for: itself, or each text append of a coalesced run."""
    pieces = envelope.get("coalesced")
    if pieces is None:
        return [envelope]
    action = envelope["action"]
    text = action["content"]
    out: list[dict[str, Any]] = []
    offset = 0
    for seq, length in pieces:
        out.append({"channel": envelope["channel"], "action": {**action, "content": text[offset:offset + length]}, "serverSeq": seq})
        offset += length
    return out


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
            # Checkpoints run after each snapshot, off the event loop (``checkpoint``), not inside a
            # commit on the loop. The WAL file is then reused from its start; it is not truncated
            # (no journal_size_limit), as truncating a large file inside a commit stalls the loop.
            self._db.execute("PRAGMA wal_autocheckpoint=0")
            row = self._db.execute("SELECT value FROM meta WHERE key='format'").fetchone()
            if row is None:
                self._db.execute("INSERT INTO meta(key, value) VALUES ('format', ?)", (_FORMAT_VERSION,))
                self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?)", (MODEL,))
            model = self._db.execute("SELECT value FROM meta WHERE key='model'").fetchone()
            self.model: str | None = model[0] if model is not None else None
            """The state model of what the journal holds; None: an older build's (AHP 0.2.0)."""
            self.needs_full_snapshot = row is not None and row[0] == "1"
            """A format-1 journal: its first snapshot here must write every channel."""
            if row is not None and row[0] not in _READABLE:
                raise JournalError(
                    f"{path} was written by an incompatible agent-host (journal format {row[0]}, "
                    f"this host reads {_FORMAT_VERSION}); point --data-dir at a new directory."
                )
        except sqlite3.Error as error:
            raise JournalError(f"cannot open the journal at {path}: {error}") from error
        self.entries_since_snapshot = 0
        self._pending: list[Any] = []
        """Rows not written yet, in order: plain tuples, or the ``_Run`` a row was started for."""
        self._runs: dict[str, _Run] = {}
        """Each channel's open text run."""
        self._to_rewrite: list[_Run] = []
        """Runs whose written row lacks pieces appended since the last flush."""

    # -- writing -------------------------------------------------------------------------------

    def append_action(
        self, channel: str, seq: int, now: int, envelope_json: str, action: dict[str, Any] | None = None,
    ) -> None:
        """Journal an envelope. With its ``action`` (the caller passes it only for an envelope that is
        the action alone: no ``origin``), a text append (``TEXT_APPENDS`` with a ``run_key``) joins
        the channel's open run when the key matches."""
        key = run_key(action) if action is not None and action.get("type") in TEXT_APPENDS else None
        if key is None or action is None:
            self._end_run(channel)
            self._append_row(("action", channel, seq, now, envelope_json))
            return
        run = self._runs.get(channel)
        if run is not None and run.key == key and len(run.marks) < RUN_LIMIT:
            run.add(seq, action["content"])
            if not run.dirty:  # its row is written: rewrite it at the next flush
                run.dirty = True
                self._to_rewrite.append(run)
            return
        self._end_run(channel)
        run = _Run(key, channel, now, action, seq)
        self._runs[channel] = run
        self._append_row(run)

    def append_created(self, channel: str, state: dict[str, Any], kind: str) -> None:
        self._end_run(channel)
        self._append_row(("created", channel, None, None, encode({"kind": kind, "state": state})))

    def append_removed(self, channel: str) -> None:
        self._end_run(channel)
        self._append_row(("removed", channel, None, None, None))

    def _append_row(self, row: Any) -> None:
        self._pending.append(row)
        self.entries_since_snapshot += 1  # rows, which is what recovery pays for

    def _end_run(self, channel: str) -> None:
        """Later entries of ``channel`` follow its open run: close it (its row is completed at the next flush)."""
        self._runs.pop(channel, None)

    @property
    def pending(self) -> int:
        """Entries appended since the last ``flush``."""
        return len(self._pending) + len(self._to_rewrite)

    @property
    def dirty(self) -> bool:
        """Entries were appended since the last ``flush``."""
        return bool(self._pending or self._to_rewrite)

    def flush(self) -> None:
        """Write every entry appended so far in one transaction and commit it."""
        if not self.dirty:
            return
        try:
            self._db.execute("BEGIN")
            for run in self._to_rewrite:
                run.rewrite(self._db)
            plain: list[tuple[Any, ...]] = []
            for item in self._pending:
                if isinstance(item, _Run):
                    if plain:
                        self._db.executemany(_INSERT, plain)
                        plain = []
                    item.insert(self._db)
                else:
                    plain.append(item)
            if plain:
                self._db.executemany(_INSERT, plain)
            self._db.execute("COMMIT")
        except sqlite3.Error as error:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error
        self._pending.clear()
        self._to_rewrite.clear()

    def end_runs(self) -> None:
        """Close every open run (before a snapshot: rows it covers must not change afterwards)."""
        for channel in list(self._runs):
            self._end_run(channel)

    def begin_snapshot(self) -> int:
        """Close every open run and commit; the id of the newest entry, which a snapshot taken now
        is "as of" (rows a snapshot covers must not change afterwards)."""
        self.end_runs()
        self.flush()
        self.entries_since_snapshot = 0
        return self._db.execute("SELECT COALESCE(MAX(id), 0) FROM entries").fetchone()[0]

    def write_part(self, channel: str, text: str) -> int:
        """Store a piece of a channel's state JSON in its own small transaction; its id, for a
        manifest. Parts are invisible until a ``write_snapshot`` manifest lists them."""
        try:
            return self._db.execute("INSERT INTO channel_state_parts(channel, body) VALUES (?, ?)", (channel, text)).lastrowid
        except sqlite3.Error as error:
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error

    def write_snapshot(self, upto: int, seq: int, manifests: dict[str, tuple[str, list[int]]], removed: Iterable[str]) -> None:
        """Record the store as of entry ``upto`` in one small transaction: each channel of
        ``manifests`` (channel → ``(kind, part ids)``) now reads as its parts joined in order,
        ``removed`` channels are gone. Unused parts and the entries this makes unnecessary are
        deleted afterwards by ``prune``."""
        with self._transaction():
            self._db.executemany(
                "INSERT OR REPLACE INTO channel_states(channel, kind, manifest) VALUES (?, ?, ?)",
                [(channel, kind, encode(ids)) for channel, (kind, ids) in manifests.items()],
            )
            self._db.executemany("DELETE FROM channel_states WHERE channel = ?", [(channel,) for channel in removed])
            self._db.execute("INSERT OR REPLACE INTO snapshots(upto, seq, body) VALUES (?, ?, '')", (upto, seq))
            self._db.execute("DELETE FROM snapshots WHERE upto < ?", (upto,))
            self._db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (_FORMAT_VERSION,))
        self.needs_full_snapshot = False

    def rewrite(self, channels: dict[str, tuple[str, dict[str, Any]]], seq: int, model: str = MODEL) -> None:
        """Replace everything the journal holds by one snapshot of ``channels`` (uri → (kind,
        state)) as of ``seq``, in the state model ``model``, in one transaction (an upgrade of
        an older build's journal: its entries are in the old model, so none is kept)."""
        self.end_runs()
        self.flush()
        try:
            with self._transaction():
                for table in ("entries", "snapshots", "channel_states", "channel_state_parts"):
                    self._db.execute(f"DELETE FROM {table}")
                for channel, (kind, state) in channels.items():
                    part = self._db.execute("INSERT INTO channel_state_parts(channel, body) VALUES (?, ?)",
                                            (channel, encode(state))).lastrowid
                    self._db.execute("INSERT INTO channel_states(channel, kind, manifest) VALUES (?, ?, ?)",
                                     (channel, kind, encode([part])))
                self._db.execute("INSERT INTO snapshots(upto, seq, body) VALUES (0, ?, '')", (seq,))
                self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('format', ?)", (_FORMAT_VERSION,))
                self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('model', ?)", (model,))
        except sqlite3.Error as error:
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error
        self.model = model
        self.needs_full_snapshot = False
        self.entries_since_snapshot = 0

    def prune(self, upto: int, keep_actions: int) -> Iterator[None]:
        """Delete the entries older than both the snapshot at ``upto`` and the newest ``keep_actions``
        actions (which reconnect replay keeps across restarts), and the state parts no manifest
        lists. A generator: one small transaction per step, yielding in between."""
        try:
            floor = self._db.execute(
                "SELECT COALESCE(MIN(id), 0) FROM (SELECT id FROM entries WHERE kind='action' ORDER BY id DESC LIMIT ?)",
                (keep_actions,),
            ).fetchone()[0]
            while self._db.execute(
                "DELETE FROM entries WHERE id IN (SELECT id FROM entries WHERE id <= ? ORDER BY id LIMIT ?)",
                (min(upto, floor - 1), _PRUNE_BATCH),
            ).rowcount == _PRUNE_BATCH:
                yield
            live: set[int] = set()
            for (manifest,) in self._db.execute("SELECT manifest FROM channel_states"):
                live.update(json.loads(manifest))
            unused = [part for (part,) in self._db.execute("SELECT id FROM channel_state_parts") if part not in live]
            for start in range(0, len(unused), _PRUNE_BATCH):
                yield
                self._db.executemany("DELETE FROM channel_state_parts WHERE id = ?", [(part,) for part in unused[start:start + _PRUNE_BATCH]])
        except sqlite3.Error as error:
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error

    def checkpoint(self) -> None:
        """Copy the WAL into the database file. From any thread: it uses its own connection, and a
        passive checkpoint neither waits for nor blocks the writer; the WAL is then reused."""
        try:
            with contextlib.closing(sqlite3.connect(self.path, isolation_level=None)) as db:
                db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass  # housekeeping: the next snapshot checkpoints again

    # -- reading -------------------------------------------------------------------------------

    def latest_snapshot(self, raw_kinds: frozenset[str] = frozenset()) -> Snapshot | None:
        """The newest snapshot: per channel ``{"kind", "state"}``, or, for a channel whose kind is in
        ``raw_kinds`` (and whose state is kept in parts), ``{"kind", "parts"}`` with its manifest's
        ``(part id, text)`` pairs in order, for a caller that wants to know which rows hold what
        (the store finds each turn's rows in a chat's, to page old turns back in later)."""
        row = self._db.execute("SELECT upto, seq, body FROM snapshots ORDER BY upto DESC LIMIT 1").fetchone()
        if row is None:
            return None
        if row[2]:  # format 1: the whole store in one body
            return Snapshot(upto=row[0], seq=row[1], channels=json.loads(row[2]))
        channels: dict[str, dict[str, Any]] = {}
        for channel, kind, manifest in self._db.execute("SELECT channel, kind, manifest FROM channel_states").fetchall():
            ids = json.loads(manifest)
            texts = self.read_parts(channel, ids)
            if kind in raw_kinds:
                channels[channel] = {"kind": kind, "parts": list(zip(ids, texts))}
            else:
                channels[channel] = {"kind": kind, "state": json.loads("".join(texts))}
        return Snapshot(upto=row[0], seq=row[1], channels=channels)

    def read_parts(self, channel: str, ids: list[int]) -> list[str]:
        """The texts of ``channel``'s state parts ``ids``, in that order (a page of a chat's older
        turns, whose rows the last snapshot wrote)."""
        bodies: dict[int, str] = {}
        try:
            for start in range(0, len(ids), _READ_BATCH):
                wanted = ids[start:start + _READ_BATCH]
                marks = ",".join("?" * len(wanted))
                bodies.update(self._db.execute(
                    f"SELECT id, body FROM channel_state_parts WHERE channel = ? AND id IN ({marks})", (channel, *wanted)))
            return [bodies[part] for part in ids]
        except KeyError:
            raise JournalError(f"{self.path}: the snapshot of {channel} lacks some of its parts; the journal is "
                               "damaged: point --data-dir at a new directory.") from None
        except sqlite3.Error as error:
            raise JournalError(f"cannot read the journal at {self.path}: {error}") from error

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
