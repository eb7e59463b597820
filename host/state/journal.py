"""The durable log: an append-only SQLite journal (WAL) with periodic snapshots.

Three kinds of entry, in one table ordered by ``id`` (not by serverSeq: creating or removing a
channel takes no serverSeq):

* ``action``   — an accepted envelope (its JSON text, exactly as sent) and the clock reading the
                 reducer used, so that replaying it after a restart gives the same state;
* ``created``  — a channel appeared, with its initial state;
* ``removed``  — a channel went away.

**Text runs.** Consecutive streamed appends to the same text of the same channel (``chat/delta``,
``chat/reasoning`` to a part, ``chat/toolCallDelta`` to a call's input:
``ahp.state.appends.RUN_ACTION_TYPES``, with that module's ``run_key``, the one definition of a run
the store holds state by too; the caller passes the action of an envelope that may join a run) form
a run of at most ``RUN_LIMIT`` pieces. Its first commit writes one ``action``
row (the head): the run's coalesced envelope (``ahp.state.appends.TextRun.envelope``: ``content``
the pieces so far joined, ``serverSeq`` their last, plus ``"coalesced": [[serverSeq, length], ...]``). Each later commit appends the
pieces committed since as one ``run_texts`` row (``entry`` = the head's id, their marks and their
text joined): nothing written is ever rewritten, so a commit costs the new text's page of WAL, not
the whole run again. Readers (``entries_after``, ``recent_actions``) join a head and its
``run_texts`` into one coalesced envelope, from which the individual envelopes are cut again
(``expand``): every envelope's serverSeq is recovered. Reducing the joined envelope gives the same
state as reducing each piece (appending is associative and these reducers ignore the clock), so a
reader that ignores ``coalesced`` still recovers the right state. Any other entry for the channel,
a snapshot, or ``RUN_LIMIT`` pieces end a run.

**Batches.** Appends are kept in memory and ``flush`` writes them in one transaction
(``synchronous=NORMAL`` in WAL mode: once ``flush`` returns, the entries survive the process being
killed; only a power loss can take the last few).

**The tail.** A commit that holds only run texts (a streamed chunk at a model's pace: one piece of
an open run per commit) is not a SQLite transaction, which writes at least a 4 KiB page of WAL and
later copies it into the database, but one record appended to the file ``<journal>-tail`` (an
``os.write`` of the texts' ``run_texts`` rows as JSON, behind a CRC-32; about 50 bytes a piece):
in the page cache once written, so it survives the process being killed, as a WAL commit does.
The next SQLite transaction (any other entry, a run's next head, ``settle``: snapshots, readers,
closing; or a tail past ``TAIL_BYTES``) writes the tail's rows into ``run_texts`` with its own
and moves ``meta.tail`` (the tail's generation) on, then empties the tail and starts it with the
new generation's header. Before that, once the tail holds ``TAIL_SETTLE_BYTES``, the log has a
worker thread write its rows into SQLite on a connection of its own, open for the journal's
life and closed with it (``rows_to_settle``, ``settle_rows``, ``rows_settled``), and then settles the tail on the loop, which writes only the
rows that came meanwhile: a full tail's rows written by the event
loop held it some 7 ms. The tail keeps the worker's rows until its settle (recovery skips them), so
SQLite holds a prefix of the texts at every moment and the generation moves only with the tail's
truncation, as before. Opening the journal settles what a killed process left there (valid
records up to the first torn one; rows already in ``run_texts`` are skipped) if its generation is
the one SQLite holds: a power loss that takes the settling commit leaves SQLite at the older
generation and the tail at the newer, whose texts would follow a hole, so they are dropped with
the commits the loss took (as before, a power loss takes the last commits, never ones between). The SQLite tables keep their format: a reader of the file alone
finds every entry, and run texts up to the last settle. The store flushes at the end of the event-loop tick that
appended (at most one commit a millisecond, or at once past a size threshold) and the transport flushes before any frame leaves the
process, so nothing a client has seen can be missing after a crash.

**Snapshots** are incremental: ``channel_states`` gives, per channel, its kind and a manifest (the
ids of the ``channel_state_parts`` rows whose texts, joined in order, are its state JSON), and
``snapshots`` the entry id and serverSeq they are as of. A snapshot writes parts only for what
changed since the previous one (the store reuses the parts of a session's unchanged turns), each in
its own small transaction (``write_part``; the event loop runs in between), then ``write_snapshot``
switches the manifests in one small transaction. The journal plans them too: ``plan`` compares a
channel's turns with the very turn objects its last snapshot wrote (``turn_rows``; states are
immutable, so an unchanged turn is the same object), ``encode_plans`` serialises only what
changed (pure, for a worker thread) and ``write_planned`` writes it in steps. To recover, load the channel states and re-apply
the entries after that id. Entries older than both the snapshot and the replay window (a count and
a number of characters) are then pruned, with the state parts no manifest lists, in steps of at
most ``PRUNE_STEP_CHARS`` characters of rows (a larger row alone), measured from the sizes this
process wrote or read, never by reading rows (``prune``, a generator the caller steps between
event-loop turns).

**Size on disk.** What the journal holds is its states plus what came since the last snapshot plus
the replay window: the store snapshots after ``snapshot_every`` entries or a number of characters,
whichever comes first, so a terminal printing gigabytes costs the scrollback its state keeps and
those two bounded windows. The WAL is kept near ``WAL_CHECKPOINT_BYTES`` (``checkpoint`` from a
worker thread on its own connection; ``checkpoint_here`` on the writer's without an event loop;
never by a commit on the event loop: automatic checkpoints are off) and never past ``WAL_LIMIT_BYTES``;
once copied whole, the checkpoint's worker commits once, which starts it again (syncing its new
header) and truncates it to ``journal_size_limit`` off the event loop. Freed
pages are reused, so the database file levels off at its largest content. Of states the journal
knows only that a chat's may have a ``turns`` list (written turn by turn); of actions only the run
shape above. The store reads a chat's older
turns back from its snapshot rows (``read_parts``; ``latest_snapshot`` hands it a chat's rows as
they are, see ``host.state.turn_pages``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ahp.jsonrpc import encode, object_with_list
from ahp.state.appends import RUN_ACTION_TYPES, UNKEYED, TextRun, expand, extended, run_key
from host.errors import JournalError
from host.state import wal
from host.state.private_files import private_directory, private_file

logger = logging.getLogger(__name__)

__all__ = ["Journal", "JournalEntry", "MODEL", "PART_CHARS", "PRUNE_STEP_CHARS", "RUN_LIMIT", "Snapshot",
           "SnapshotPieces", "SnapshotPlan", "SETTLE_INLINE_BYTES", "TAIL_SETTLE_BYTES", "WAL_CHECKPOINT_BYTES", "WAL_KEEP_BYTES", "WAL_LIMIT_BYTES", "encode_plans", "expand"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind = 'action' OR kind = 'created' OR kind = 'removed'),
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
CREATE TABLE IF NOT EXISTS run_texts (
    entry INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    marks TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (entry, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"""

_IN_CHECK = "CHECK (kind IN ('action', 'created', 'removed'))"
_OR_CHECK = "CHECK (kind = 'action' OR kind = 'created' OR kind = 'removed')"
"""The ``entries.kind`` constraint as journals before this build wrote it, and as it is now: the
same values, but SQLite checks an ``IN`` list of three by building a temporary index for every
row inserted (about 31,000 instructions a row, twice the rest of the row's insert; the ``OR``
form costs next to nothing). ``_check_without_in`` rewrites an older journal's."""

_FORMAT_VERSION = "3"
"""3: a text run's appends after its first commit are rows of ``run_texts`` (a build that reads
only 2 would miss them, so it refuses the file); 2 (still read, marked 3 when opened): snapshots
keep each channel's state in its own ``channel_states`` row (only changed channels are rewritten);
1 (still read, upgraded by the first snapshot): the whole store in ``snapshots.body``."""
_READABLE = ("1", "2", _FORMAT_VERSION)

MODEL = "0.9.0"
"""The state model this build journals (``meta.model``): the internal model of ``ahp.state``. A
journal without a model was written by an older build, whose store held AHP 0.2.0 states and
actions; ``host.state.journal_upgrade`` converts it once."""

_INSERT = "INSERT INTO entries(kind, channel, seq, now, body) VALUES (?, ?, ?, ?, ?)"
_INSERT_TEXT = "INSERT OR IGNORE INTO run_texts(entry, seq, marks, content) VALUES (?, ?, ?, ?)"
"""Idempotent: a tail recovered twice (a crash between a settle and the tail's truncation, or a
second journal opened on a running one's file) writes nothing twice."""

_SETTLE_ROWS_A_STATEMENT = 64
"""Rows of one ``INSERT`` in a worker's settle (``settle_rows``): 256 parameters."""


def _insert_texts(rows: int) -> str:
    """``_INSERT_TEXT`` for ``rows`` rows at once."""
    return _INSERT_TEXT + ", (?, ?, ?, ?)" * (rows - 1)


_TAIL_ROW = 4
"""Values a ``run_texts`` row takes in the tail's flat list (``Journal._tail_values``): its entry,
its seq, its marks' JSON text, or None for a single piece whose marks are ``[[seq, len(content)]]``
(nearly every row at a model's pace: written out only when the row goes to SQLite, mostly by the
settling worker), and its content. A row held as a tuple with its marks a list of tuples (three
containers a streamed chunk, alive until the tail settles) was the largest part of what each young
collection walked while hundreds of sessions streamed (``benchmarks/README.md``, "The collector
while streaming, third round")."""


def _tail_row_values(values: list[Any]) -> list[Any]:
    """The tail's flat rows (``_TAIL_ROW``) as ``_INSERT_TEXT``'s parameters, in the same order: a
    new list, each single piece's marks written out."""
    out = values.copy()
    dumps = orjson.dumps  # (writes ints faster than ``str`` does, or SQLite's ``||``, and the same text)
    out[2::_TAIL_ROW] = [dumps(((seq, len(content)),)).decode() if marks is None else marks
                         for seq, marks, content in zip(values[1::_TAIL_ROW], values[2::_TAIL_ROW], values[3::_TAIL_ROW])]
    return out


def _flat_rows(texts: list[tuple[Any, ...]]) -> Iterator[Any]:
    """``run_texts`` rows ``(entry, seq, marks, content)``, marks a list, as the tail's flat values."""
    dumps = orjson.dumps
    for entry, seq, marks, content in texts:
        yield entry
        yield seq
        yield dumps(marks).decode()
        yield content


def _settle_statements(db: sqlite3.Connection, flat: list[Any]) -> None:
    """Insert the flat ``run_texts`` parameters ``flat`` (``_tail_row_values``) on ``db`` (a worker's
    settle, or the event loop's own commit that writes the tail: ``Journal.flush``), many rows
    a statement: SQLite's work releases the GIL once a statement, and a release the event loop's
    thread waits on hands the GIL over (a row a statement cost a streamed chunk some 4,000
    instructions of such handing; an ``executemany`` of the one-row ``INSERT`` also cost a settle
    of 511 rows 6.7 million instructions against 4.2: ``benchmarks/journal_settle.py``).
    Statements of ``_SETTLE_ROWS_A_STATEMENT`` rows, then one of the rest: at most 64 texts, which
    the settle connection's statement cache (128) keeps prepared, so each is prepared once in the
    journal's life (some 1.7 million instructions for one of 64 rows). The rest cut in statements
    of 32, 16, ... rows (seven texts in all) cost a settle some 100,000 instructions more, every
    time, to save those few preparations."""
    count = len(flat) // _TAIL_ROW
    whole = count - count % _SETTLE_ROWS_A_STATEMENT
    width = _TAIL_ROW * _SETTLE_ROWS_A_STATEMENT
    if whole:
        db.executemany(_insert_texts(_SETTLE_ROWS_A_STATEMENT),
                       (flat[start:start + width] for start in range(0, _TAIL_ROW * whole, width)))
    if whole < count:
        db.execute(_insert_texts(count - whole), flat[_TAIL_ROW * whole:])


def _size_of(is_action: bool, size: int) -> int:
    """An entry's characters and whether it is an action, as one int (``Journal._sizes``)."""
    return size << 1 | is_action

TAIL_BYTES = 1 << 20
"""Most bytes the tail file holds before its commit goes to SQLite, settling it. The log settles it
sooner, at ``TAIL_SETTLE_BYTES``, once a worker thread has written its rows (``settle_rows``): this
is the bound for a worker that falls behind."""

TAIL_SETTLE_BYTES = 128 << 10
"""A tail this large has its rows written into SQLite by a worker thread (``settle_rows``), after
which the log settles it and starts it again, on the event loop, writing only the rows that came
meanwhile. Written by the event loop, a tail this large held it 7 ms at 100 sessions. Smaller
batches are no answer: ``run_texts`` is ordered by run, so a batch rewrites a page per session
streaming, and batches of 128 rows wrote some 1,000 bytes of WAL a row at 100 sessions against
75 for this size (``benchmarks/README.md``, "Event-loop stalls")."""

SETTLE_INLINE_BYTES = 16 << 10
"""A SQLite commit due while the tail holds more than this (entries other than run texts: a turn
starting or ending) waits for a worker to write the tail's rows first (the log holds it), so that
the event loop's transaction writes few of them: about 300 rows, under a millisecond."""

TAIL_COMMIT_CHARS = 4_096
"""A commit whose texts hold more characters than this goes to SQLite (with the tail), not to the
tail: large texts are written once."""

RUN_LIMIT = 512
"""Most text appends one run holds (a run is its head row plus one ``run_texts`` row per later
commit; recovery joins them into one envelope)."""

_READ_BATCH = 500
"""Part ids looked up per query when reading parts."""

PART_CHARS = 1_000_000
"""Most characters of state JSON a ``channel_state_parts`` row holds (one transaction each)."""

PRUNE_STEP_CHARS = 1_000_000
"""Most characters of rows one prune step deletes. Deleting a row costs about its size (SQLite
walks a long row's overflow pages to free them: a million characters is some 250 pages, 1 to 3 ms
of CPU), so a step never holds the event loop longer than that; a larger row is deleted alone."""

_PRUNE_ROWS = 200
"""Most rows one prune step deletes, however small."""

_SCAN_ROWS = 500
"""Manifests read per prune step (ten times as many part ids) when looking for unused parts."""

_UNKNOWN_ROW_CHARS = 65_536
"""What pruning takes an entry of unknown size to weigh (one this process neither wrote nor read:
left over from an interrupted prune of an earlier run)."""

WAL_KEEP_BYTES = 1 << 20
"""``PRAGMA journal_size_limit``: when a checkpoint has copied the whole WAL, the next commit (the
checkpoint's own, ``checkpoint``) starts it again from its beginning and truncates the file to
this size."""

WAL_CHECKPOINT_BYTES = 4 << 20
"""A WAL larger than this is checkpointed (``Store`` starts it after a commit, in a worker thread),
so the file stays near this size."""

WAL_LIMIT_BYTES = 16 << 20
"""The cap: past it, the writer checkpoints on its own thread before going on (only when the
worker cannot keep up), so the WAL never holds more than this and one transaction."""


class _Run(TextRun):
    """An open text run (``ahp.state.appends.TextRun``) and where the journal wrote it. Its first
    commit writes a head row in ``entries`` (the pieces so far, as the run's coalesced envelope);
    each later commit adds one ``run_texts`` row with the pieces appended since, so a commit writes
    only the new text."""

    __slots__ = ("channel", "now", "row_id", "queued")

    def __init__(self, key: tuple[Any, ...], channel: str, now: int, action: dict[str, Any], seq: int) -> None:
        super().__init__(key, action, seq)
        self.channel = channel
        self.now = now
        self.row_id: int | None = None
        """The head row, once written."""
        self.queued = True
        """Waiting for the next flush (its head, or a ``run_texts`` row)."""

    def insert(self, db: sqlite3.Connection) -> int:
        """Write the head row; the characters written."""
        body = encode(self.envelope(self.channel))
        self.row_id = db.execute(_INSERT, ("action", self.channel, self.seqs[-1], self.now, body)).lastrowid
        return len(body)

    def more(self) -> tuple[Any, ...]:
        """The pieces appended since the last commit, as one ``run_texts`` row (its marks a list)."""
        return (self.row_id, self.seqs[-1], self.marks(), "".join(self.pieces))

    def written(self) -> None:
        self.used_up()
        self.queued = False


def _joined(body: str, continuations: list[tuple[str, str]]) -> tuple[str, int]:
    """A run's head row and its ``run_texts`` rows as one coalesced envelope, and its last serverSeq."""
    envelope = extended(json.loads(body), [(json.loads(marks), text) for marks, text in continuations])
    return encode(envelope), envelope["serverSeq"]


@dataclass(frozen=True)
class SnapshotPlan:
    """What a snapshot writes for one channel (``Journal.plan``)."""

    kind: str
    state: dict[str, Any]
    turns: list[Any] | None
    """The state's turns, when it has a turn list (written turn by turn)."""
    kept: int
    """How many leading turns are unchanged since the previous snapshot."""
    kept_ids: list[list[int]]
    """The part ids of those turns."""
    older: list[list[int]] = field(default_factory=list)
    """The part ids of the chat's older turns, not in its state (they come first in the JSON)."""


_UNWRITTEN = object()
"""Stands for a turn whose rows are not its own (a snapshot written whole): never the same object."""

SnapshotPieces = tuple[str, SnapshotPlan, list[str], list[list[str]], list[str]]
"""``(kind, plan, head texts, texts of each new turn, tail texts)``: joined in order, the state's JSON."""


def encode_plans(plans: dict[str, SnapshotPlan]) -> dict[str, SnapshotPieces]:
    """Serialise what each plan needs, cut in parts of at most ``PART_CHARS`` characters. Pure, so
    it may run in a worker thread: many short encoder calls (one per turn) let the event loop take
    the GIL back."""
    out: dict[str, SnapshotPieces] = {}
    for uri, plan in plans.items():
        if plan.turns is None:
            out[uri] = (plan.kind, plan, _cut(encode(plan.state)), [], [])
            continue
        opening, closing = object_with_list({key: value for key, value in plan.state.items() if key != "turns"}, "turns")
        before = len(plan.older)  # the older turns' rows come first: every turn here follows one
        new_turns = [_cut(("," if before + index else "") + encode(plan.turns[index]))
                     for index in range(plan.kept, len(plan.turns))]
        out[uri] = (plan.kind, plan, _cut(opening), new_turns, [closing])
    return out


def _cut(text: str) -> list[str]:
    return [text[start:start + PART_CHARS] for start in range(0, len(text), PART_CHARS)] or [""]


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
    """One SQLite file. All methods are synchronous and fast; call them from the event loop, except
    ``checkpoint`` and ``settle_rows`` (any thread)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._wal_path = Path(f"{path}-wal")
        try:
            private_directory(path.parent)
            self._db = sqlite3.connect(private_file(path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            # Checkpoints are started by the WAL's size after a commit (``Store``), in a worker
            # thread, not inside a commit on the loop; once one copied everything, the next commit
            # starts the WAL again from its beginning and truncates it to ``WAL_KEEP_BYTES``.
            wal.manual_checkpoints(self._db, WAL_KEEP_BYTES)
            self._db.executescript(_SCHEMA)
            _check_without_in(self._db)
            # Some builds of SQLite (Debian's) zero every deleted page, which makes pruning a
            # megabyte write a megabyte of WAL: zero only within pages written anyway.
            self._db.execute("PRAGMA secure_delete=FAST")
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
            if row is not None and row[0] == "2":  # from now on it may hold run_texts rows
                self._db.execute("UPDATE meta SET value = ? WHERE key = 'format'", (_FORMAT_VERSION,))
            self._tail_path = Path(f"{path}-tail")
            generation = self._db.execute("SELECT value FROM meta WHERE key = 'tail'").fetchone()
            self._generation = int(generation[0]) if generation is not None else 0
            """The tail's generation, which each settle moves on (``meta.tail``)."""
            self._tail = os.open(self._tail_path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
        except sqlite3.Error as error:
            raise JournalError(f"cannot open the journal at {path}: {error}") from error
        except OSError as error:
            raise JournalError(f"cannot open the journal's tail at {path}-tail: {error}") from error
        self._tail_values: list[Any] = []
        """``run_texts`` rows the tail holds and SQLite does not yet, oldest first, flat: four values
        a row (``_TAIL_ROW``), never a container per row, so the cyclic collector has nothing of
        them to walk (``_tail_row_values``)."""
        self._tail_holds = False
        """The tail holds records since it was last started (some may be in SQLite already)."""
        self.tail_bytes = 0
        """Bytes written to the tail since it was last emptied, its header included (read-only outside)."""
        try:
            self._recover_tail()
        except (sqlite3.Error, OSError) as error:
            raise JournalError(f"cannot settle the journal's tail at {self._tail_path}: {error}") from error
        self.entries_since_snapshot = 0
        self.chars_since_snapshot = 0
        """Characters journaled since the last snapshot (what the next recovery would re-read)."""
        self.transaction_rows: list[Any] = []
        """Rows not written yet, in order: plain tuples, or the ``_Run`` a head row is due for; the
        next ``flush`` commits a SQLite transaction when there are any (read-only outside)."""
        self._runs: dict[str, _Run] = {}
        """Each channel's open text run."""
        self._to_append: list[_Run] = []
        """Runs whose head row is written and that have appends not written yet."""
        self.pending = 0
        """Entries appended since the last ``flush`` (rows in ``transaction_rows`` and runs in
        ``_to_append``; read-only outside): an attribute, not a property, as it is read for every
        streamed token."""
        self._sizes: dict[int, int] = {}
        """Entry id → its characters with its ``run_texts`` times two, plus one for an action
        (``_size_of``), for the entries this process wrote or read: pruning measures its steps and
        the replay window with it, without reading rows. One int, not a pair: a streamed chunk
        replaces its run's, and a new tuple each time was one more container for the collector."""
        self._sizes_sorted = True
        self._part_sizes: dict[int, int] = {}
        """State part id → characters, for the parts this process wrote or read."""
        self._checkpointing = threading.Lock()
        """Held by a checkpoint: one at a time, so that ``checkpoint_here`` waits for a worker's."""
        self._settle_lock = threading.Lock()
        """Held by a settle (``settle_rows``) and by ``close``: one user of the settle connection at a time."""
        self._settle_db: sqlite3.Connection | None = None
        """The settle connection (``_settle_connection``), once a settle opened it."""
        self._closed = False
        self._turn_rows: dict[str, tuple[list[Any], list[list[int]]]] = {}
        """Per channel with turns: the turn objects the last snapshot wrote and their part ids."""

    # -- writing -------------------------------------------------------------------------------

    def append_action(
        self, channel: str, seq: int, now: int, envelope_json: str, action: dict[str, Any] | None = None,
        key: tuple[Any, ...] | None = UNKEYED,
    ) -> None:
        """Journal an envelope. With its ``action`` (the caller passes it only for an envelope that is
        the action alone: no ``origin``), a streamed append (``RUN_ACTION_TYPES`` with a ``run_key``)
        joins the channel's open run when the key matches. ``key``, when given, is
        ``run_key(action)`` worked out already (the store's channel did, ``AppendingState.key``)."""
        if action is None:
            key = None
        elif key is UNKEYED:
            key = run_key(action) if action.get("type") in RUN_ACTION_TYPES else None
        if key is None or action is None:
            self._end_run(channel)
            self._append_row(("action", channel, seq, now, envelope_json))
            self.chars_since_snapshot += len(envelope_json)
            return
        content = action["content"]
        self.chars_since_snapshot += len(content)
        run = self._runs.get(channel)
        if run is not None and run.key == key and run.count < RUN_LIMIT:
            run.pieces.append(content)  # ``run.add(content, seq)``, inlined: once per streamed token
            run.seqs.append(seq)
            run.count += 1
            if not run.queued:  # its head row is written: the new text goes in a run_texts row
                run.queued = True
                self._to_append.append(run)
                self.pending += 1
            return
        self._end_run(channel)
        run = _Run(key, channel, now, action, seq)
        self._runs[channel] = run
        self._append_row(run)

    def append_created(self, channel: str, state: dict[str, Any], kind: str) -> None:
        self._end_run(channel)
        body = encode({"kind": kind, "state": state})
        self.chars_since_snapshot += len(body)
        self._append_row(("created", channel, None, None, body))

    def append_removed(self, channel: str) -> None:
        self._end_run(channel)
        self._append_row(("removed", channel, None, None, None))

    def _append_row(self, row: Any) -> None:
        self.transaction_rows.append(row)
        self.pending += 1
        self.entries_since_snapshot += 1  # rows, which is what recovery pays for

    def _end_run(self, channel: str) -> None:
        """Later entries of ``channel`` follow its open run: close it (what it holds is written at the next flush)."""
        self._runs.pop(channel, None)

    @property
    def dirty(self) -> bool:
        """Entries were appended since the last ``flush`` (``pending``)."""
        return self.pending > 0

    def flush(self, settle: bool = False) -> bool:
        """Make every entry appended so far durable. A commit of run texts alone (the pieces a text
        run streamed since its last commit) is one record appended to the tail file; any other
        (or ``settle``, or a full tail) one SQLite transaction, which settles the tail in it.
        Whether a SQLite transaction was committed (only that grows the WAL)."""
        if not self.pending and not (settle and self._tail_holds):
            return False
        to_append = self._to_append
        if len(to_append) == 1 and len(pieces := to_append[0].pieces) == 1:
            # Nearly every commit at a model's pace: one run's one new piece, its ``more()`` made here.
            run = to_append[0]
            content = pieces[0]
            seq = run.seqs[0]
            size = len(content)
            row_id = run.row_id
            if not settle and not self.transaction_rows and size <= TAIL_COMMIT_CHARS:
                # The tail's record of it, as below, with ``_appended`` inlined (once per commit).
                line = orjson.dumps(((row_id, seq, ((seq, size),), content),))
                record = b"%08x%b\n" % (zlib.crc32(line), line)
                tail_bytes = self.tail_bytes + len(record)
                if tail_bytes <= TAIL_BYTES:
                    try:
                        os.write(self._tail, record)
                    except OSError as error:
                        raise JournalError(f"cannot write to the journal's tail at {self._tail_path}: {error}") from error
                    self.tail_bytes = tail_bytes
                    self._tail_holds = True
                    self._tail_values += (row_id, seq, None, content)  # marks None: one piece (``_TAIL_ROW``)
                    pieces.clear()  # ``used_up()``, the run's lists kept: no new containers a chunk
                    run.seqs.clear()
                    run.queued = False
                    known = self._sizes.get(row_id)  # type: ignore[arg-type]  # a queued run's head is written
                    if known is not None:
                        self._sizes[row_id] = known + 2 * (16 + size)  # type: ignore[index]  # ``_size_of``
                    to_append.clear()
                    self.pending = 0
                    return False
            texts = [(row_id, seq, [(seq, size)], content)]
        else:
            texts = [run.more() for run in to_append]
        if not settle and not self.transaction_rows and (len(texts) == 1 and len(texts[0][3]) <= TAIL_COMMIT_CHARS
                                                 or sum(len(text[3]) for text in texts) <= TAIL_COMMIT_CHARS):
            # The rows hold ints, strings and lists of ints: orjson's bytes are ``encode``'s text.
            line = orjson.dumps(texts)
            record = b"%08x%b\n" % (zlib.crc32(line), line)
            if self.tail_bytes + len(record) <= TAIL_BYTES:
                try:
                    os.write(self._tail, record)
                except OSError as error:
                    raise JournalError(f"cannot write to the journal's tail at {self._tail_path}: {error}") from error
                self.tail_bytes += len(record)
                self._tail_holds = True
                self._tail_values.extend(_flat_rows(texts))
                self._appended(texts)
                self.pending = 0
                return False
        sizes: list[tuple[int, bool, int]] = []
        settling = self._tail_holds
        try:
            # IMMEDIATE: the write lock first, waiting (busy timeout) for a worker's ``settle_rows``.
            self._db.execute("BEGIN IMMEDIATE")
            plain: list[tuple[Any, ...]] = []
            for item in self.transaction_rows:
                if isinstance(item, _Run):
                    self._insert_plain(plain, sizes)
                    size = item.insert(self._db)
                    sizes.append((item.row_id, True, size))  # type: ignore[arg-type]  # insert() just set row_id
                else:
                    plain.append(item)
            self._insert_plain(plain, sizes)
            # A run appended to had its head row written at an earlier commit, so its row_id is set.
            # Marks are lists of pairs of ints: orjson's bytes are ``encode``'s text (one a streamed piece).
            if self._tail_values or texts:  # (none: no statement to run)
                values = _tail_row_values(self._tail_values)
                values.extend(_flat_rows(texts))
                # Many rows a statement, as a worker's settle writes them: the tail's rows come here
                # at a turn's end (every chunk the turn streamed since the last settle), where the
                # one-row ``INSERT`` cost some 10,000 instructions a row on the event loop.
                _settle_statements(self._db, values)
            if settling:
                self._next_generation()
            self._db.execute("COMMIT")
        except sqlite3.Error as error:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error
        if settling:
            self._restart_tail()
        for item in self.transaction_rows:
            if isinstance(item, _Run):
                item.written()
        for row_id, is_action, size in sizes:
            self._sizes[row_id] = _size_of(is_action, size)
        self._appended(texts)
        self.transaction_rows.clear()
        self.pending = 0
        return True

    @property
    def unsettled(self) -> int:
        """Rows the tail holds that SQLite does not yet."""
        return len(self._tail_values) // _TAIL_ROW

    def rows_to_settle(self) -> tuple[int, list[Any]]:
        """The tail's generation and the rows it holds that SQLite does not, oldest first, flat
        (``_TAIL_ROW`` values a row): for ``settle_rows`` (in a worker thread), then
        ``rows_settled`` with the generation and how many of the values it wrote."""
        return self._generation, list(self._tail_values)

    def settle_rows(self, rows: list[Any]) -> None:
        """Write ``rows`` (from ``rows_to_settle``, or whole rows of its start) into SQLite, from any
        thread, in one transaction, on the journal's settle connection (``_settle_connection``: one
        for the journal's life, used by one settle at a time, closed with the journal). Nothing
        becomes durable here: the rows were, in the tail, which keeps them (and its generation)
        until its settle; killed meanwhile, the journal recovers the tail whole, the rows already
        in SQLite ignored (``_INSERT_TEXT``). They are the oldest the tail holds, so SQLite holds a
        prefix of the texts at every moment. A commit of the event loop's waits for this one
        (SQLite's busy timeout), then skips these rows. The rows' parameters are made one at a
        time as SQLite asks, and SQLite's work releases the GIL, so the event loop's thread runs
        between rows. After ``close`` it writes nothing and opens nothing: ``close`` settled the
        tail (or, failing, left it to be recovered), so the rows are where they belong already."""
        with self._settle_lock:
            if self._closed:
                return
            try:
                db = self._settle_connection()
                db.execute("BEGIN IMMEDIATE")
                try:
                    _settle_statements(db, _tail_row_values(rows))
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            except sqlite3.Error as error:
                self._close_settle_connection()  # the next settle opens a new one
                raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error

    def _settle_connection(self) -> sqlite3.Connection:
        """The settle connection (``settle_rows``; its lock held), opened on first use or after one
        failed. Kept open because opening one cost a settle some 530,000 instructions and, its
        statement cache empty, preparing the rows' ``INSERT`` again some 1.7 million
        (``benchmarks/journal_settle.py``)."""
        db = self._settle_db
        if db is None:
            # mode=rw: a journal deleted meanwhile is not created again. Any thread: one settle at a time.
            db = sqlite3.connect(f"file:{self.path}?mode=rw", uri=True, isolation_level=None, check_same_thread=False)
            try:
                db.execute("PRAGMA synchronous=NORMAL")  # as the writer's: durable across a kill at commit
                db.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints are the log's (``checkpoint``)
            except BaseException:
                db.close()
                raise
            self._settle_db = db
        return db

    def _close_settle_connection(self) -> None:
        """Close the settle connection, if open (its lock held); an open transaction is rolled back."""
        db, self._settle_db = self._settle_db, None
        if db is not None:
            with contextlib.suppress(sqlite3.Error):
                db.close()

    def rows_settled(self, generation: int, count: int) -> None:
        """``settle_rows`` wrote the ``count`` oldest values (whole rows) ``rows_to_settle`` gave at
        ``generation``: SQLite holds them (unless the tail was settled and started again
        meanwhile, which wrote them itself)."""
        if generation == self._generation:
            del self._tail_values[:count]

    def _appended(self, texts: list[tuple[Any, ...]]) -> None:
        """The runs' texts ``texts`` are durable: the runs go on empty, their heads' sizes grow."""
        for run in self._to_append:
            run.used_up()  # ``written()``, inlined: once per commit at a model's pace
            run.queued = False
        for row_id, _seq, marks, content in texts:
            known = self._sizes.get(row_id)
            if known is not None:
                self._sizes[row_id] = known + 2 * (16 * len(marks) + len(content))  # the marks' JSON, near enough
        self._to_append.clear()

    def _insert_plain(self, plain: list[tuple[Any, ...]], sizes: list[tuple[int, bool, int]]) -> None:
        """Insert ``plain`` rows (and empty it), noting their ids: one writer and AUTOINCREMENT
        give the rows of one ``executemany`` consecutive ids ending at the last one inserted."""
        if not plain:
            return
        self._db.executemany(_INSERT, plain)
        last = self._db.execute("SELECT last_insert_rowid()").fetchone()[0]
        first = last - len(plain) + 1
        for offset, (kind, _channel, _seq, _now, body) in enumerate(plain):
            sizes.append((first + offset, kind == "action", len(body or "")))
        plain.clear()

    def _next_generation(self) -> None:
        """In a settling transaction: the tail's next generation (what it holds is in SQLite now)."""
        self._db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('tail', ?)", (str(self._generation + 1),))

    def _restart_tail(self) -> None:
        """After a settling commit: empty the tail and start it at the new generation."""
        self._generation += 1
        header = b"G%d\n" % self._generation
        try:
            os.ftruncate(self._tail, 0)
            os.write(self._tail, header)
        except OSError as error:
            raise JournalError(f"cannot empty the journal's tail at {self._tail_path}: {error}") from error
        self._tail_values.clear()
        self._tail_holds = False
        self.tail_bytes = len(header)

    def _recover_tail(self) -> None:
        """Settle what a previous process left in the tail (its valid records up to the first torn
        or damaged one), if it is of the generation SQLite says is open: a tail of another
        generation was settled already, or follows a settle that a power loss took (its texts
        would leave a hole), and is dropped. Then start the next generation."""
        data = os.pread(self._tail, os.fstat(self._tail).st_size, 0)
        texts: list[tuple[Any, ...]] = []
        lines = data.split(b"\n")[:-1]  # the last piece has no newline: torn, or empty
        if lines and lines[0] == b"G%d" % self._generation:
            for line in lines[1:]:
                body = line[8:]
                try:
                    valid = int(line[:8], 16) == zlib.crc32(body)
                except ValueError:
                    valid = False
                if not valid:
                    break
                texts.extend((entry, seq, encode(marks), content) for entry, seq, marks, content in json.loads(body))
        with self._transaction():
            self._db.executemany(_INSERT_TEXT, texts)
            self._next_generation()
        self._tail_values = []
        self._restart_tail()

    def end_runs(self) -> None:
        """Close every open run (before a snapshot: rows it covers must not change afterwards)."""
        for channel in list(self._runs):
            self._end_run(channel)

    def begin_snapshot(self) -> int:
        """Close every open run and commit (the tail settled); the id of the newest entry, which a
        snapshot taken now is "as of" (rows a snapshot covers must not change afterwards). A full
        snapshot (an older format's file) writes every turn again: the rows known for turns are
        forgotten."""
        if self.needs_full_snapshot:
            self._turn_rows.clear()
        self.end_runs()
        self.flush(settle=True)
        self.entries_since_snapshot = 0
        self.chars_since_snapshot = 0
        return self._db.execute("SELECT COALESCE(MAX(id), 0) FROM entries").fetchone()[0]

    # -- planning a snapshot ---------------------------------------------------------------------

    def turn_rows(self, channel: str) -> tuple[list[Any], list[list[int]]]:
        """The turn objects of ``channel`` the last snapshot wrote (in its state's order) and the part
        ids of each: a turn still the very same object needs no new rows."""
        return self._turn_rows.get(channel, ([], []))

    def note_turn_rows(self, channel: str, turns: list[Any], groups: list[list[int] | None]) -> None:
        """``turns`` of ``channel`` are in the rows ``groups`` (a ``None`` group: in no rows of its own,
        as in a snapshot written whole); the store calls it when turns move between its state and
        the rows (older turns paged out or loaded back, a recovery)."""
        self._turn_rows[channel] = ([turn if ids is not None else _UNWRITTEN for turn, ids in zip(turns, groups)],
                                    [ids or [] for ids in groups])

    def plan(self, channel: str, kind: str, state: dict[str, Any], older: list[list[int]]) -> SnapshotPlan:
        """What to serialise of a channel: for a state with turns, only the turns that are not the
        very objects the previous snapshot wrote at the same positions (states are immutable).
        ``older``: the part ids of the chat's turns older than its state, which come first."""
        turns = state.get("turns")
        if not isinstance(turns, list):
            return SnapshotPlan(kind, state, None, 0, [])
        written_turns, written_ids = self.turn_rows(channel)
        kept = 0
        while kept < min(len(turns), len(written_turns)) and turns[kept] is written_turns[kept]:
            kept += 1
        return SnapshotPlan(kind, state, turns, kept, written_ids[:kept], older)

    def write_planned(self, upto: int, seq: int, pieces: dict[str, SnapshotPieces], removed: set[str]) -> Iterator[None]:
        """Write the parts of ``pieces`` (``encode_plans``), each in its own small transaction, then
        the snapshot as of entry ``upto`` and serverSeq ``seq`` (``write_snapshot``): the steps of
        a snapshot, between which the caller may let the event loop run."""
        manifests: dict[str, tuple[str, list[int]]] = {}
        written: dict[str, tuple[list[Any], list[list[int]]]] = {}
        for uri, (kind, plan, head, new_turns, tail) in pieces.items():
            ids: list[int] = []
            for text in head:
                ids.append(self.write_part(uri, text))
                yield
            turn_ids = list(plan.kept_ids)
            for turn_texts in new_turns:
                turn_ids.append([self.write_part(uri, text) for text in turn_texts])
                yield
            for group in (*plan.older, *turn_ids):
                ids.extend(group)
            for text in tail:
                ids.append(self.write_part(uri, text))
            manifests[uri] = (kind, ids)
            if plan.turns is not None:
                written[uri] = (list(plan.turns), turn_ids)
        self.write_snapshot(upto, seq, manifests, removed)
        for uri in removed:
            self._turn_rows.pop(uri, None)
        self._turn_rows.update(written)

    # -- writing a snapshot --------------------------------------------------------------------

    def write_part(self, channel: str, text: str) -> int:
        """Store a piece of a channel's state JSON in its own small transaction; its id, for a
        manifest. Parts are invisible until a ``write_snapshot`` manifest lists them."""
        try:
            part = self._db.execute("INSERT INTO channel_state_parts(channel, body) VALUES (?, ?)", (channel, text)).lastrowid
        except sqlite3.Error as error:
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error
        assert part is not None  # sqlite sets lastrowid for every INSERT
        self._part_sizes[part] = len(text)
        return part

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
        self.flush(settle=True)
        try:
            with self._transaction():
                for table in ("entries", "run_texts", "snapshots", "channel_states", "channel_state_parts"):
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
        self._sizes.clear()
        self._part_sizes.clear()
        self.model = model
        self.needs_full_snapshot = False
        self.entries_since_snapshot = 0
        self.chars_since_snapshot = 0

    def prune(self, upto: int, keep_actions: int, keep_chars: int | None = None) -> Iterator[None]:
        """Delete the entries older than both the snapshot at ``upto`` and the replay window (the
        newest actions, at most ``keep_actions`` of them and ``keep_chars`` characters, which
        reconnect replay keeps across restarts), and the state parts no manifest lists. A
        generator: one small transaction per step (at most ``PRUNE_STEP_CHARS`` characters of
        rows, measured without reading them), yielding in between."""
        try:
            cut = min(upto, self._window_start(keep_actions, keep_chars) - 1)
            while True:
                ids = [row_id for (row_id,) in self._db.execute(
                    "SELECT id FROM entries WHERE id <= ? ORDER BY id LIMIT ?", (cut, _PRUNE_ROWS))]
                if not ids:
                    break
                chars, last = 0, ids[0]
                for row_id in ids:
                    known = self._sizes.get(row_id)
                    size = known >> 1 if known is not None else _UNKNOWN_ROW_CHARS
                    if chars and chars + size > PRUNE_STEP_CHARS:
                        break
                    chars, last = chars + size, row_id
                with self._transaction():
                    self._db.execute("DELETE FROM entries WHERE id BETWEEN ? AND ?", (ids[0], last))
                    self._db.execute("DELETE FROM run_texts WHERE entry BETWEEN ? AND ?", (ids[0], last))
                for row_id in ids:
                    if row_id > last:
                        break
                    self._sizes.pop(row_id, None)
                yield
            yield from self._prune_parts()
        except sqlite3.Error as error:
            raise JournalError(f"cannot write to the journal at {self.path}: {error}") from error

    def _prune_parts(self) -> Iterator[None]:
        """Delete the state parts no manifest lists, reading manifests and part ids in chunks. Only
        parts older than the scan are candidates: a snapshot written between two steps (its parts
        are newer; the ones it reuses are listed by the manifests it replaces) loses nothing."""
        newest = self._db.execute("SELECT COALESCE(MAX(id), 0) FROM channel_state_parts").fetchone()[0]
        live: set[int] = set()
        after = 0
        while rows := self._db.execute("SELECT rowid, manifest FROM channel_states WHERE rowid > ? ORDER BY rowid LIMIT ?",
                                       (after, _SCAN_ROWS)).fetchall():
            for after, manifest in rows:  # noqa: B007  (the last rowid pages the next query)
                live.update(json.loads(manifest))
            yield
        unused: list[int] = []
        after = 0
        while ids := self._db.execute("SELECT id FROM channel_state_parts WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                                      (after, newest, _SCAN_ROWS * 10)).fetchall():
            unused.extend(part for (part,) in ids if part not in live)
            after = ids[-1][0]
            yield
        start = 0
        while start < len(unused):
            chars, end = 0, start
            while end < len(unused) and end - start < _PRUNE_ROWS:
                size = self._part_sizes.get(unused[end], PART_CHARS)
                if end > start and chars + size > PRUNE_STEP_CHARS:
                    break
                chars, end = chars + size, end + 1
            batch, start = unused[start:end], end
            with self._transaction():
                self._db.executemany("DELETE FROM channel_state_parts WHERE id = ?", [(part,) for part in batch])
            for part in batch:
                self._part_sizes.pop(part, None)
            yield

    def _window_start(self, keep_actions: int, keep_chars: int | None) -> int:
        """The id of the oldest action the replay window keeps (past every entry when it keeps none)."""
        if not self._sizes_sorted:
            self._sizes = dict(sorted(self._sizes.items()))
            self._sizes_sorted = True
        start = self._db.execute("SELECT COALESCE(MAX(id), 0) + 1 FROM entries").fetchone()[0]
        count = chars = 0
        for row_id in reversed(self._sizes):
            known = self._sizes[row_id]
            if not known & 1:  # not an action (``_size_of``)
                continue
            size = known >> 1
            count, chars = count + 1, chars + size
            if count > keep_actions or (keep_chars is not None and chars > keep_chars and count > 1):
                break
            start = row_id
        return start

    def wal_bytes(self) -> int:
        """The size of the WAL file (what the last checkpoint left to copy, plus commits since)."""
        try:
            return os.stat(self._wal_path).st_size
        except FileNotFoundError:
            return 0

    def checkpoint(self) -> bool:
        """Copy the WAL into the database file. From any thread: it uses its own connection, and a
        passive checkpoint neither waits for nor blocks the writer; after a complete copy it starts
        the WAL again (``host.state.wal.start_again``). True when it copied every frame committed
        when it started (later commits may have added more)."""
        with self._checkpointing:
            return wal.checkpoint(str(self.path), WAL_KEEP_BYTES)

    def checkpoint_here(self) -> bool:
        """``checkpoint`` on the journal's own connection, on the writer's thread: as nothing
        commits meanwhile it copies every frame (without an event loop, or when the WAL reached
        ``WAL_LIMIT_BYTES`` because writes outran the worker). It first waits for a worker's
        checkpoint to end: then the writer waits, which is what keeps the WAL under its cap."""
        try:
            with self._checkpointing:
                return wal.copy_wal(self._db)
        except sqlite3.Error:
            return False

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
            bodies = dict(self._db.execute("SELECT id, body FROM channel_state_parts WHERE channel = ?", (channel,)))
            for part, body in bodies.items():
                self._part_sizes[part] = len(body)
            try:
                texts = [bodies[part] for part in ids]
            except KeyError:
                raise JournalError(f"{self.path}: the snapshot of {channel} lacks some of its parts; the journal is "
                                   "damaged: point --data-dir at a new directory.") from None
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
        """The entries after ``entry_id`` in order, each run's rows joined into its one envelope."""
        self.flush(settle=True)
        continuations = self._continuations(entry_id)
        cursor = self._db.execute(
            "SELECT id, kind, channel, seq, now, body FROM entries WHERE id > ? ORDER BY id", (entry_id,)
        )
        for row in cursor.fetchall():
            yield self._entry(row, continuations)

    def recent_actions(self, limit: int) -> list[JournalEntry]:
        """The newest ``limit`` action entries, oldest first, each run joined into its one envelope."""
        self.flush(settle=True)
        rows = self._db.execute(
            "SELECT id, kind, channel, seq, now, body FROM entries WHERE kind='action' ORDER BY id DESC LIMIT ?",
            (limit,),
        ).fetchall()
        continuations = self._continuations(rows[-1][0] - 1) if rows else {}
        return [self._entry(row, continuations) for row in reversed(rows)]

    def _continuations(self, entry_id: int) -> dict[int, list[tuple[str, str]]]:
        """The ``run_texts`` rows of the runs after ``entry_id``: head id → ``(marks, text)`` in order."""
        out: dict[int, list[tuple[str, str]]] = {}
        for entry, marks, content in self._db.execute(
            "SELECT entry, marks, content FROM run_texts WHERE entry > ? ORDER BY entry, seq", (entry_id,)
        ):
            out.setdefault(entry, []).append((marks, content))
        return out

    def _entry(self, row: tuple[Any, ...], continuations: dict[int, list[tuple[str, str]]]) -> JournalEntry:
        entry = JournalEntry(*row)
        more = continuations.get(entry.id)
        if more:
            body, seq = _joined(entry.body or "{}", more)
            entry = JournalEntry(entry.id, entry.kind, entry.channel, seq, entry.now, body)
        self._remember(entry.id, entry.kind == "action", len(entry.body or ""))
        return entry

    def _remember(self, entry_id: int, is_action: bool, size: int) -> None:
        if self._sizes and entry_id < next(reversed(self._sizes)):
            self._sizes_sorted = False
        self._sizes[entry_id] = _size_of(is_action, size)

    def close(self) -> None:
        """Settle everything into SQLite and close: the settle connection first (after the settle
        writing on it, if one is, which loses nothing: its rows are in the tail, settled here too),
        then the journal's own, then the tail. Twice is harmless."""
        with self._settle_lock:
            self._closed = True
            self._close_settle_connection()
        try:
            self.flush(settle=True)
        except (sqlite3.Error, JournalError):
            pass
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        if self._tail >= 0:
            with contextlib.suppress(OSError):
                os.close(self._tail)
            self._tail = -1  # closing twice must not close a descriptor reused since

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _check_without_in(db: sqlite3.Connection) -> None:
    """Give an older journal's ``entries`` table the ``OR`` form of its ``kind`` constraint
    (``_OR_CHECK``, the same values), in place: SQLite's documented way for a change of a table's
    definition that leaves what is stored as it is (a new text in ``sqlite_schema`` and the schema
    version moved on, in one transaction; every row satisfies the new constraint, as it is the
    old one). A SQLite that refuses (a defensive build) keeps the old form, which costs only time."""
    row = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entries'").fetchone()
    if row is None or _IN_CHECK not in row[0]:
        return
    try:
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA schema_version").fetchone()[0]
            db.execute("PRAGMA writable_schema=ON")
            db.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = 'entries'",
                       (row[0].replace(_IN_CHECK, _OR_CHECK),))
            db.execute(f"PRAGMA schema_version={int(version) + 1}")
            db.execute("PRAGMA writable_schema=OFF")
            db.execute("COMMIT")
        except BaseException:
            db.execute("PRAGMA writable_schema=OFF")
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error as error:
        logger.warning("kept the journal's older kind constraint (%s): inserts cost more, nothing else changes", error)

