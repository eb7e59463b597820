"""Session status bitset and its recomputation (AHP 0.2.0, PROTOCOL.md §7).

``summary.status`` packs one *activity* into bits 0-4 (Idle, Error, InProgress, InputNeeded) and
OR-ed *flags* into bits 5+ (IsRead, IsArchived). Test it with masks, never with ``==``.

Invariants:

* Recomputation keeps the flag bits and replaces only the activity bits.
* Activity is derived, never stored independently: Error if the turn just ended with
  ``session/error``; else InputNeeded while any input request is open (even with no active turn) or
  an active-turn tool call awaits (result) confirmation; else InProgress while a turn is active;
  else Idle.
* Values written into state are plain ``int`` (JSON-shaped), never ``SessionStatus`` members.
"""

from __future__ import annotations

import enum
from typing import Any

from ahp.dialects.v0_2.state._js import as_dict, as_list, truthy

__all__ = [
    "ACTIVITY_MASK",
    "SessionStatus",
    "recompute_status",
    "refresh_status",
    "with_flag",
]


class SessionStatus(enum.IntFlag, boundary=enum.KEEP):
    """``SessionSummary.status`` bits as declared by the 0.2.0 types."""

    Idle = 1
    Error = 2
    InProgress = 8
    InputNeeded = 24  # InProgress | 16: a session waiting for input is still in progress
    IsRead = 32
    IsArchived = 64


ACTIVITY_MASK = (1 << 5) - 1
"""Bits 0-4: the mutually exclusive activity part of the status."""

_AWAITING_CONFIRMATION = frozenset({"pending-confirmation", "pending-result-confirmation"})


def _status_int(value: Any) -> int:
    """The stored status as an int; an absent or malformed one reads as 0 (JS ``undefined & x``)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def _awaits_tool_confirmation(state: dict[str, Any]) -> bool:
    active_turn = state.get("activeTurn")
    if not truthy(active_turn):
        return False
    for part in as_list(as_dict(active_turn).get("responseParts")):
        if isinstance(part, dict) and part.get("kind") == "toolCall":
            if as_dict(part.get("toolCall")).get("status") in _AWAITING_CONFIRMATION:
                return True
    return False


def recompute_status(state: dict[str, Any], *, ended_in_error: bool = False) -> int:
    """The status ``state`` should carry: its flags plus the activity derived from its contents."""
    if ended_in_error:
        activity = int(SessionStatus.Error)
    elif len(as_list(state.get("inputRequests"))) > 0 or _awaits_tool_confirmation(state):
        activity = int(SessionStatus.InputNeeded)
    elif truthy(state.get("activeTurn")):
        activity = int(SessionStatus.InProgress)
    else:
        activity = int(SessionStatus.Idle)
    flags = _status_int(as_dict(state.get("summary")).get("status")) & ~ACTIVITY_MASK
    return flags | activity


def with_flag(status: Any, flag: SessionStatus, on: bool) -> int:
    """``status`` with ``flag`` set or cleared, other bits untouched."""
    current = _status_int(status)
    return current | int(flag) if on else current & ~int(flag)


def refresh_status(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with ``summary.status`` recomputed; the same object when nothing changes."""
    summary = as_dict(state.get("summary"))
    status = recompute_status(state)
    if status == summary.get("status") and type(summary.get("status")) is int:
        return state
    return {**state, "summary": {**summary, "status": status}}
