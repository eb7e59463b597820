"""Persisted approvals: *Always allow* rules, and each session's *Allow in this session* rules.

Contract: ``ToolSettings(path)`` keeps rule strings (``shell(git status:*)``, ``write_file``) in a
small SQLite database in the host's data directory (``tool_settings.sqlite3``), or in memory when
``path`` is None. ``always_allow()`` returns them in the order they were added; ``add(rules)`` is
idempotent and durable when it returns, so a host restarted right after still honours the choice.
Rules are stored as text and parsed by the policy at use; a row that no longer parses is skipped
(and logged) rather than breaking every later tool call.

Session approvals live in the same file, keyed by the session URI, because sessions survive a
host restart and so must what the user allowed in them: ``session_allow(session)`` returns them
in the order added, ``add_session(session, rules)`` is idempotent and durable when it returns,
``forget_session(session)`` deletes them (the session was disposed), and ``forget_sessions_except
(sessions)`` deletes those of sessions that no longer exist.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path

from tools.errors import PolicyRuleError
from tools.policy import Rule, parse_rule

__all__ = ["ToolSettings"]

logger = logging.getLogger(__name__)


class ToolSettings:
    def __init__(self, path: Path | None) -> None:
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if path is None else str(path))
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS always_allow (rule TEXT PRIMARY KEY, added_at INTEGER NOT NULL)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS session_allow (session TEXT NOT NULL, rule TEXT NOT NULL, "
            "added_at INTEGER NOT NULL, PRIMARY KEY (session, rule))"
        )
        self._db.commit()

    def always_allow(self) -> tuple[Rule, ...]:
        return _parsed(self._db.execute("SELECT rule FROM always_allow ORDER BY added_at, rowid"))

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

    def add(self, rules: Iterable[str]) -> None:
        now = int(time.time() * 1000)
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO always_allow (rule, added_at) VALUES (?, ?)", [(rule, now) for rule in rules]
            )

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
