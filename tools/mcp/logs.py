"""What an MCP server said about itself: its ``notifications/message`` log messages and its
stderr lines, kept per server and bounded.

Contract:
* ``ServerLog(limit)`` keeps the most recent ``limit`` entries (oldest dropped first); each
  entry's text is cut to ``TEXT_LIMIT`` characters (a server cannot grow the host's memory by
  logging). It outlives restarts of its server, so what a crashed run said is still there.
* ``add_message(params)`` takes an MCP ``LoggingMessageNotificationParams`` (``data`` may be any
  JSON: a string is kept as is, anything else as compact JSON); ``add_stderr(line)`` a line the
  process wrote on stderr (level ``stderr``). Blank stderr lines are skipped.
* ``entries()`` returns them oldest first; ``LogEntry.line()`` is the one-line form shown to a
  person: ``[level] logger: text``.
"""

from __future__ import annotations

import json
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["LogEntry", "ServerLog", "LOG_LIMIT", "TEXT_LIMIT"]

LOG_LIMIT = 200
"""Entries kept per server."""
TEXT_LIMIT = 1000
"""Characters kept of one entry's text."""


@dataclass(frozen=True)
class LogEntry:
    """One thing a server logged."""

    level: str
    """An MCP log level (``debug`` ... ``emergency``), or ``stderr`` for a line of its stderr."""
    text: str
    logger: str | None = None
    """The ``logger`` the server named, if any."""

    def line(self) -> str:
        """``[level] logger: text``, for a person."""
        return f"[{self.level}] " + (f"{self.logger}: " if self.logger else "") + self.text

    def wire(self) -> dict[str, Any]:
        """A JSON object (``level``, ``text``, ``logger?``)."""
        return {"level": self.level, "text": self.text, **({"logger": self.logger} if self.logger else {})}


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


class ServerLog:
    """A bounded, restart-surviving log of one server."""

    def __init__(self, limit: int = LOG_LIMIT) -> None:
        self._entries: deque[LogEntry] = deque(maxlen=limit)

    def add_message(self, params: Any) -> LogEntry:
        data = getattr(params, "data", None)
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
        entry = LogEntry(level=str(getattr(params, "level", "info") or "info"), text=_cut(text),
                         logger=getattr(params, "logger", None) or None)
        self._entries.append(entry)
        return entry

    def add_stderr(self, line: str) -> LogEntry | None:
        if not line.strip():
            return None
        entry = LogEntry(level="stderr", text=_cut(line.rstrip()))
        self._entries.append(entry)
        return entry

    def entries(self) -> list[LogEntry]:
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)
