"""Content the host serves by reference (``ContentRef``): tool output, file-edit previews.

``ContentStore`` implements the ``tools.content.ContentStore`` interface on SQLite, so that a
content reference that appeared in session state can still be read with ``resourceRead`` after
a restart. Content is addressed by its SHA-256: the same bytes always get the same URI
(``agent-host-content:/sha256/<hex>``), and storing them twice costs nothing. Content that is a
version of a file is given with the file's name, which ends its URI
(``agent-host-content:/sha256/<hex>/<name>``): editors title a diff with the last segment of what
they open, so the user reads ``app.py``, not a hash. Any name after the digest reads the same bytes.

Durability is the journal's (``host/state/journal.py``), which records the references: WAL with
``synchronous=NORMAL``, so a put survives the host killed at any point and costs no fsync of its
own. Puts run on the event loop (a tool's output as its call ends), where SQLite's default
``FULL`` made every put wait for the disk (a median of 5.9 ms at 250 sessions, the worst 28 ms:
``benchmarks/README.md``, "What sets the p99 when one core is loaded"), and its automatic
checkpoints ran inside a put; they run in a worker thread instead (``host.state.wal``).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

from host.state.private_files import private_directory, private_file
from host.state.wal import Checkpointer

__all__ = ["ContentStore", "CONTENT_SCHEME"]

CONTENT_SCHEME = "agent-host-content:"
_PREFIX = CONTENT_SCHEME + "/sha256/"

CHECKPOINT_CHARS = 4 << 20
"""Bytes of content put since the last checkpoint that start the next, in a worker thread."""

WAL_LIMIT_CHARS = 32 << 20
"""Bytes put with no complete checkpoint after which the writer's thread checkpoints too."""

WAL_KEEP_BYTES = 4 << 20
"""What the WAL file is truncated to when it starts again (``journal_size_limit``)."""


class ContentStore:
    def __init__(self, path: Path | None) -> None:
        """``path=None`` keeps content in memory (hosts without a data directory)."""
        target = ":memory:" if path is None else str(path)
        if path is not None:
            private_file(private_directory(path.parent) / path.name)
        self._db = sqlite3.connect(target, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._checkpoints = None if path is None else Checkpointer(
            self._db, target, name="content-checkpoint", keep_bytes=WAL_KEEP_BYTES, every=CHECKPOINT_CHARS,
            limit=WAL_LIMIT_CHARS)
        """The WAL's checkpoints, in a worker thread; none in memory."""
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS blobs (digest TEXT PRIMARY KEY, content_type TEXT NOT NULL, data BLOB NOT NULL)"
        )
        self._db.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def put(self, data: bytes, content_type: str, name: str | None = None) -> str:
        digest = hashlib.sha256(data).hexdigest()
        self._db.execute(
            "INSERT OR IGNORE INTO blobs(digest, content_type, data) VALUES (?, ?, ?)", (digest, content_type, data)
        )
        if self._checkpoints is not None:
            self._checkpoints.wrote(len(data))
        return _PREFIX + digest + ("/" + quote(name, safe="") if name else "")

    def get(self, uri: str) -> bytes | None:
        found = self.lookup(uri)
        return found[0] if found else None

    def lookup(self, uri: str) -> tuple[bytes, str] | None:
        """The bytes and content type behind ``uri``, or None."""
        if not uri.startswith(_PREFIX):
            return None
        digest = uri[len(_PREFIX):].split("/", 1)[0]
        row = self._db.execute("SELECT data, content_type FROM blobs WHERE digest = ?", (digest,)).fetchone()
        return (bytes(row[0]), row[1]) if row else None

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        self._db.close()
