"""Persisted "always allow" rules: what users chose with the *Always allow* confirmation option.

Contract: ``ToolSettings(path)`` keeps rule strings (``shell(git status:*)``, ``write_file``) in a
small SQLite database in the host's data directory (``tool_settings.sqlite3``), or in memory when
``path`` is None. ``always_allow()`` returns them in the order they were added; ``add(rules)`` is
idempotent and durable when it returns, so a host restarted right after still honours the choice.
Rules are stored as text and parsed by the policy at use; a row that no longer parses is skipped
(and logged) rather than breaking every later tool call.
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
        self._db.commit()

    def always_allow(self) -> tuple[Rule, ...]:
        rules: list[Rule] = []
        for (text,) in self._db.execute("SELECT rule FROM always_allow ORDER BY added_at, rowid"):
            try:
                rules.append(parse_rule(text, "allow"))
            except PolicyRuleError:
                logger.warning("ignoring an unreadable saved tool rule %r", text)
        return tuple(rules)

    def add(self, rules: Iterable[str]) -> None:
        now = int(time.time() * 1000)
        with self._db:
            self._db.executemany(
                "INSERT OR IGNORE INTO always_allow (rule, added_at) VALUES (?, ?)", [(rule, now) for rule in rules]
            )

    def close(self) -> None:
        self._db.close()
