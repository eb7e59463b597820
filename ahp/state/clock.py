"""Timestamps of the internal model: ISO-8601 strings, computed from data, never from a clock.

Since AHP 0.5.0 state timestamps (``ChatState.modifiedAt``, ``Turn.startedAt``, ...) are ISO-8601
strings in the form JavaScript's ``Date.prototype.toISOString`` writes
(``"1970-01-01T00:00:09.999Z"``: UTC, millisecond precision). The 0.9.0 chat reducer derives
``modifiedAt`` from the turn's own data (its ``startedAt``, plus its ``duration`` when it ends)
[0.9.0 changelog: "Chat reducers now derive modifiedAt from turn action data instead of local wall
clocks"]; the caller's ``now`` (epoch milliseconds) is only a fallback when that data is missing.

Invariants: every function is pure and total; an input it cannot read yields ``None``, never an
exception. Nothing here reads the system clock.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

__all__ = ["add_milliseconds", "iso_timestamp", "parse_timestamp"]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def iso_timestamp(epoch_ms: Any) -> str | None:
    """``new Date(epoch_ms).toISOString()`` for years 0001-9999; ``None`` outside them or for a
    value that is not a finite number (milliseconds are truncated, as ``Date`` does)."""
    if isinstance(epoch_ms, bool) or not isinstance(epoch_ms, (int, float)):
        return None
    if epoch_ms != epoch_ms or epoch_ms in (float("inf"), float("-inf")):
        return None
    try:
        moment = _EPOCH + _dt.timedelta(milliseconds=int(epoch_ms))
    except OverflowError:
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_timestamp(text: Any) -> int | None:
    """Epoch milliseconds of an ISO-8601 timestamp; ``None`` when ``text`` is not one.

    A timestamp without a zone is read as UTC (the protocol only ever writes ``Z``).
    """
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = _dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=_dt.UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def add_milliseconds(text: Any, milliseconds: Any) -> str | None:
    """The ISO timestamp ``milliseconds`` after ``text``; ``None`` when either cannot be read."""
    start = parse_timestamp(text)
    if start is None or isinstance(milliseconds, bool) or not isinstance(milliseconds, (int, float)):
        return None
    return iso_timestamp(start + milliseconds)
