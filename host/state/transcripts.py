"""Provider-native conversation memory: what was really sent to and received from the model.

The AHP turn state is what users see; it cannot hold what a provider needs back verbatim on the
next request (Anthropic thinking blocks with their signatures, OpenAI reasoning items, the exact
tool-call ids and argument text). ``TranscriptStore`` keeps, per ``(session, turn id)``, the
turn's neutral messages (``providers.MessageAdapter`` JSON, ``native`` payloads included) in a
SQLite file in the host's data directory, so memory survives a host restart.

Invariants:

* One row per (session, turn); saving a turn again replaces it (a turn is saved once it ends).
* Rows are looked up by turn id, so a truncated or re-forked session never sees a turn that is
  not in its AHP state any more; ``copy`` gives a fork the rows of the turns it copied.
* A row that cannot be read back (written by a newer host, say) is treated as missing: the
  caller rebuilds that turn from the AHP state instead of failing the turn.
* Saving does not wait for the disk (WAL with ``synchronous=NORMAL``: a commit survives the host
  being killed, only a power loss or OS crash can take the newest rows back). It runs on the event
  loop when a turn ends, where a commit waiting on ``fsync`` would stop every session on the host
  (``benchmarks/README.md``); a transcript lost that way is rebuilt from the turn state, like an
  unreadable one.
* The WAL is copied into the database by a worker thread on a connection of its own
  (``host.state.wal.Checkpointer``, a passive checkpoint: it neither waits for nor blocks the writer), once about
  ``CHECKPOINT_CHARS`` were written since the last one; SQLite's automatic checkpoint is off. It
  ran inside a save on the event loop, a checkpoint with its ``fsync`` every thousand pages of WAL
  (every 300 or so turns of a few KiB): 12-33 ms on this machine's disk, every session on the host
  stopped meanwhile (``benchmarks/README.md``, "What sets the p99 when one core is loaded"). After
  a complete copy the worker's own small commit starts the WAL again (syncing its new header, and
  truncating the file to ``WAL_KEEP_BYTES``), so that the loop's next save does not. ``close``
  waits for a running checkpoint. Writes that outrun the worker (``WAL_LIMIT_CHARS`` without a
  complete checkpoint) are checkpointed on the writer's thread, as SQLite's own checkpoint did.
* Compactions (``save_compaction``) are kept beside the transcripts, never instead of them: a
  compaction says "the turns up to and including turn T are summarised by this text". The turn
  loop sends the summary in place of those turns; the transcripts themselves stay whole, and a
  fork that copies turn T copies the compaction with it.
* What ``load`` read is kept in memory between turns (``Held``), so a turn reads and validates
  only the transcripts written since the session's last turn, not its whole history again. The
  messages are frozen models and every write to a session's rows replaces what is held of them:
  ``save`` holds the messages it wrote (what reading its row back would give: the models dumped
  to JSON and validated again are equal), ``copy`` into a session and ``forget`` drop what is held,
  so what is held is exactly what reading the rows again would give. A held session's compactions
  are held too once read (``save_compaction`` updates them). The sessions whose transcripts were
  read latest are kept, up to ``held_chars`` characters of their rows' JSON.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from pydantic import ValidationError

import providers
from host.state.private_files import private_directory, private_file
from host.state.wal import Checkpointer

if TYPE_CHECKING:
    from providers import Message

__all__ = ["TranscriptStore"]

logger = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS transcripts (
    session TEXT NOT NULL,
    turn_id TEXT NOT NULL,
    messages TEXT NOT NULL,
    PRIMARY KEY (session, turn_id)
);
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS compactions (
    session TEXT NOT NULL,
    through_turn TEXT NOT NULL,
    summary TEXT NOT NULL,
    PRIMARY KEY (session, through_turn)
);
"""


HELD_CHARS = 32_000_000
"""Characters of transcript JSON whose messages ``TranscriptStore`` keeps in memory by default."""

CHECKPOINT_CHARS = 1 << 20
"""Characters of rows written (with a page's worth for each row's other pages) since the last
checkpoint that start the next, in a worker thread: a few hundred pages of WAL."""

WAL_LIMIT_CHARS = 16 << 20
"""Characters written without a complete checkpoint after which the writer's thread checkpoints
too (writes outrunning the worker, or a long read holding its copy back)."""

WAL_KEEP_BYTES = 4 << 20
"""What the WAL file is truncated to when it starts again (``journal_size_limit``)."""

_IN_LIMIT = 500
"""Turn ids per ``IN (...)`` query (well under SQLite's limit on parameters)."""


class _Held:
    """One session's transcripts as read: turn id -> (messages, characters of the row's JSON);
    None for a turn without a readable row (rebuilt from its state by the caller)."""

    __slots__ = ("turns", "chars", "compactions")

    def __init__(self) -> None:
        self.turns: dict[str, tuple[list[Message] | None, int]] = {}
        self.chars = 0
        """The characters of every row held."""
        self.compactions: dict[str, str] | None = None
        """The session's compactions (through turn -> summary) once read; None: not read."""

    def put(self, turn_id: str, messages: list[Message] | None, chars: int) -> int:
        """Hold a turn's messages; the change in characters held."""
        dropped = self.drop(turn_id)
        self.turns[turn_id] = (messages, chars)
        self.chars += chars
        return chars - dropped

    def drop(self, turn_id: str) -> int:
        """Forget a turn; the characters freed."""
        held = self.turns.pop(turn_id, None)
        if held is None:
            return 0
        self.chars -= held[1]
        return held[1]


class TranscriptStore:
    """Turn transcripts in SQLite (``path``), or in memory when ``path`` is None."""

    def __init__(self, path: str | Path | None, *, held_chars: int = HELD_CHARS) -> None:
        target = ":memory:" if path is None else str(path)
        if path is not None:
            private_file(private_directory(Path(path).parent) / Path(path).name)
        self._db = sqlite3.connect(target, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._checkpoints = None if path is None else Checkpointer(
            self._db, target, name="transcripts-checkpoint", keep_bytes=WAL_KEEP_BYTES, every=CHECKPOINT_CHARS,
            limit=WAL_LIMIT_CHARS)
        """The WAL's checkpoints, in a worker thread (module docstring); none in memory."""
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()
        self._held: OrderedDict[str, _Held] = OrderedDict()
        """Per session, what ``load`` read (see the module docstring); the latest read last."""
        self._held_chars = held_chars
        self._chars = 0
        """Characters held over every session."""

    def save(self, session: str, turn_id: str, messages: Sequence[Message]) -> None:
        items = [providers.MessageAdapter.dump_python(m, mode="json") for m in messages]
        try:
            body = orjson.dumps(items).decode()
        except orjson.JSONEncodeError:  # an integer past 64 bits in a provider's native payload
            body = json.dumps(items)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO transcripts (session, turn_id, messages) VALUES (?, ?, ?)",
                (session, turn_id, body),
            )
            held = self._held.get(session)
            if held is not None:
                self._chars += held.put(turn_id, list(messages), len(body))  # as reading the row back gives
                self._let_go()
            if self._checkpoints is not None:
                self._checkpoints.wrote(len(body))

    def load(self, session: str, turn_ids: Iterable[str]) -> dict[str, list[Message]]:
        """The readable transcripts among ``turn_ids``, keyed by turn id (read-only: the lists
        are the ones held for the next turn)."""
        wanted = list(turn_ids)
        if not wanted:
            return {}
        with self._lock:
            held = self._held.get(session)
            if held is None:
                held = self._held[session] = _Held()
            else:
                self._held.move_to_end(session)
            missing = list(dict.fromkeys(turn_id for turn_id in wanted if turn_id not in held.turns))
            for start in range(0, len(missing), _IN_LIMIT):
                chunk = missing[start:start + _IN_LIMIT]
                rows = self._db.execute(
                    f"SELECT turn_id, messages FROM transcripts WHERE session = ? AND turn_id IN ({','.join('?' * len(chunk))})",
                    (session, *chunk),
                ).fetchall()
                for turn_id, body in rows:
                    try:
                        messages = [providers.MessageAdapter.validate_python(item) for item in json.loads(body)]
                    except (ValueError, ValidationError):
                        logger.warning("transcript of turn %s in %s is unreadable; rebuilding it from the turn state",
                                       turn_id, session)
                        self._chars += held.put(turn_id, None, len(body))
                        continue
                    self._chars += held.put(turn_id, messages, len(body))
                for turn_id in chunk:
                    if turn_id not in held.turns:
                        held.put(turn_id, None, 0)  # no row: until one is saved or copied here
            found = {turn_id: stored for turn_id in wanted if (stored := held.turns[turn_id][0]) is not None}
            self._let_go()
        return found

    def _let_go(self) -> None:
        """Forget the sessions read longest ago until what is held fits ``held_chars`` (the one
        read latest stays, however large)."""
        while self._chars > self._held_chars and len(self._held) > 1:
            _, held = self._held.popitem(last=False)
            self._chars -= held.chars

    def save_compaction(self, session: str, through_turn: str, summary: str) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO compactions (session, through_turn, summary) VALUES (?, ?, ?)",
                (session, through_turn, summary),
            )
            held = self._held.get(session)
            if held is not None and held.compactions is not None:
                held.compactions[through_turn] = summary
            if self._checkpoints is not None:
                self._checkpoints.wrote(len(summary))

    def compaction(self, session: str, turn_ids: Sequence[str]) -> tuple[int, str] | None:
        """The newest compaction among ``turn_ids`` (in order): ``(index of its last turn, summary)``."""
        with self._lock:
            held = self._held.get(session)
            rows = held.compactions if held is not None else None
            if rows is None:
                rows = dict(self._db.execute(
                    "SELECT through_turn, summary FROM compactions WHERE session = ?", (session,)
                ).fetchall())
                if held is not None:
                    held.compactions = rows
        if not rows:
            return None
        for index in range(len(turn_ids) - 1, -1, -1):
            if turn_ids[index] in rows:
                return index, rows[turn_ids[index]]
        return None

    def copy(self, source: str, target: str, turn_ids: Iterable[str]) -> None:
        """Give a forked session the transcripts of the turns it copied."""
        ids = list(turn_ids)
        with self._lock:
            self._forget_held(target)
            for turn_id in ids:
                self._db.execute(
                    "INSERT OR REPLACE INTO transcripts (session, turn_id, messages) "
                    "SELECT ?, turn_id, messages FROM transcripts WHERE session = ? AND turn_id = ?",
                    (target, source, turn_id),
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO compactions (session, through_turn, summary) "
                    "SELECT ?, through_turn, summary FROM compactions WHERE session = ? AND through_turn = ?",
                    (target, source, turn_id),
                )

    def forget(self, session: str) -> None:
        with self._lock:
            self._forget_held(session)
            self._db.execute("DELETE FROM transcripts WHERE session = ?", (session,))
            self._db.execute("DELETE FROM compactions WHERE session = ?", (session,))

    def _forget_held(self, session: str) -> None:
        held = self._held.pop(session, None)
        if held is not None:
            self._chars -= held.chars

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        with self._lock:
            self._db.close()
