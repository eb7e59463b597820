"""Persisted approvals: *Always allow* choices, each for one project or host-wide, and each
session's *Allow in this session* rules.

Contract: ``ToolSettings(path)`` keeps rule strings (``shell(git status:*)``, ``write_file``) in a
small SQLite database in the host's data directory (``tool_settings.sqlite3``), or in memory when
``path`` is None. Every write is durable when it returns, so a host restarted right after still
honours (or no longer honours) the choice. Rules are stored as text and parsed by the policy at use;
a row that no longer parses is skipped (and logged) rather than breaking every later tool call.

*Always allow* choices (``Remembered``) carry their scope: the absolute path of the project they
were given in, or none for a host-wide choice. ``remembered()`` lists them all in the order they
were added (what clients see and revoke, see ``host.runtime.tools.remembered``);
``project_allow(project)`` returns the rules of exactly that project, ``host_allow()`` the host-wide
ones; ``add(rules, project)`` is idempotent; ``revoke(rule, project)`` deletes one and says whether
it existed. At most ``MAX_REMEMBERED`` are kept (the list is shared with every client through the
root state): beyond that the oldest are forgotten, which only means their calls ask again.

Migration: the previous build kept *Always allow* rules in a table ``always_allow`` with no
directory. At open they move, once and in one transaction, to ``remembered_allow`` as host-wide
choices (the scope they really had), keeping the time they were added, and the old table goes.

Session approvals live in the same file, keyed by the session URI, because sessions survive a
host restart and so must what the user allowed in them: ``session_allow(session)`` returns them
in the order added, ``add_session(session, rules)`` is idempotent, ``forget_session(session)``
deletes them (the session was disposed), and ``forget_sessions_except(sessions)`` deletes those
of sessions that no longer exist.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from host.state.private_files import private_directory, private_file
from tools.errors import PolicyRuleError
from tools.policy import Rule, parse_rule

__all__ = ["MAX_REMEMBERED", "Remembered", "ToolSettings"]

logger = logging.getLogger(__name__)

MAX_REMEMBERED = 1000
"""Remembered "Always allow" choices kept at most."""

_HOST_WIDE = ""
"""The ``project`` column of a host-wide choice (a primary key column cannot hold NULL usefully)."""


@dataclass(frozen=True)
class Remembered:
    """One *Always allow* choice."""

    rule: str
    """The allow rule's text, ``tool`` or ``tool(pattern)``."""
    project: str | None
    """The absolute path of the project it applies to; None when it applies host-wide."""
    added_at: int
    """When it was chosen, in milliseconds since the epoch."""


class ToolSettings:
    def __init__(self, path: Path | None) -> None:
        if path is not None:
            private_file(private_directory(path.parent) / path.name)
        self._db = sqlite3.connect(":memory:" if path is None else str(path))
        with self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS remembered_allow (rule TEXT NOT NULL, project TEXT NOT NULL, "
                "added_at INTEGER NOT NULL, PRIMARY KEY (rule, project))"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS session_allow (session TEXT NOT NULL, rule TEXT NOT NULL, "
                "added_at INTEGER NOT NULL, PRIMARY KEY (session, rule))"
            )
            self._migrate_host_wide()

    def _migrate_host_wide(self) -> None:
        """Move the previous build's directory-less ``always_allow`` rows in as host-wide choices."""
        old = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'always_allow'").fetchone()
        if old is None:
            return
        moved = self._db.execute(
            "INSERT OR IGNORE INTO remembered_allow (rule, project, added_at) "
            "SELECT rule, ?, added_at FROM always_allow ORDER BY added_at, rowid", (_HOST_WIDE,)
        ).rowcount
        self._db.execute("DROP TABLE always_allow")
        if moved:
            logger.info("kept %d 'always allow' choice(s) of an earlier version as host-wide", moved)

    # -- "always allow" ------------------------------------------------------------------------

    def remembered(self) -> tuple[Remembered, ...]:
        rows = self._db.execute("SELECT rule, project, added_at FROM remembered_allow ORDER BY added_at, rowid")
        return tuple(Remembered(rule, project or None, added_at) for rule, project, added_at in rows)

    def project_allow(self, project: str) -> tuple[Rule, ...]:
        rows = self._db.execute(
            "SELECT rule FROM remembered_allow WHERE project = ? ORDER BY added_at, rowid", (project,)
        )
        return _parsed(rows)

    def host_allow(self) -> tuple[Rule, ...]:
        return self.project_allow(_HOST_WIDE)

    def add(self, rules: Iterable[str], project: str | None) -> None:
        now = int(time.time() * 1000)
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO remembered_allow (rule, project, added_at) VALUES (?, ?, ?)",
                [(rule, project or _HOST_WIDE, now) for rule in rules],
            )
            forgotten = self._db.execute(
                "DELETE FROM remembered_allow WHERE rowid NOT IN "
                "(SELECT rowid FROM remembered_allow ORDER BY added_at DESC, rowid DESC LIMIT ?)", (MAX_REMEMBERED,)
            ).rowcount
        if forgotten:
            logger.info("forgot the %d oldest 'always allow' choice(s): at most %d are kept", forgotten, MAX_REMEMBERED)

    def revoke(self, rule: str, project: str | None) -> bool:
        with self._db:
            cursor = self._db.execute(
                "DELETE FROM remembered_allow WHERE rule = ? AND project = ?", (rule, project or _HOST_WIDE)
            )
        return cursor.rowcount > 0

    # -- "allow in this session" ---------------------------------------------------------------

    def session_allow(self, session: str) -> tuple[Rule, ...]:
        rows = self._db.execute("SELECT rule FROM session_allow WHERE session = ? ORDER BY added_at, rowid", (session,))
        return _parsed(rows)

    def add_session(self, session: str, rules: Iterable[str]) -> None:
        now = int(time.time() * 1000)
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO session_allow (session, rule, added_at) VALUES (?, ?, ?)",
                [(session, rule, now) for rule in rules],
            )

    def forget_session(self, session: str) -> None:
        with self._db:
            self._db.execute("DELETE FROM session_allow WHERE session = ?", (session,))

    def forget_sessions_except(self, sessions: Iterable[str]) -> None:
        keep = set(sessions)
        stored = {row[0] for row in self._db.execute("SELECT DISTINCT session FROM session_allow")}
        with self._db:
            self._db.executemany("DELETE FROM session_allow WHERE session = ?", [(s,) for s in stored - keep])

    def close(self) -> None:
        self._db.close()


def _parsed(rows: Iterable[tuple[str]]) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for (text,) in rows:
        try:
            rules.append(parse_rule(text, "allow"))
        except PolicyRuleError:
            logger.warning("ignoring an unreadable saved tool rule %r", text)
    return tuple(rules)
