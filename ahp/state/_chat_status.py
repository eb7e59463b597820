"""A chat's ``status``: its activity derived from the chat's own turn, its flags kept.

Activity, in order: Error when the turn just ended with ``chat/error``; else InputNeeded while the
active turn holds an open input request (an ``inputRequest`` part without ``response``) or a tool
call in a blocking status (pending confirmation, pending result confirmation, auth required); else
InProgress while a turn is active; else Idle. Flags (IsRead, IsArchived, unknown bits) are kept.
"""

from __future__ import annotations

from typing import Any

from ahp.state._js import as_dict, as_list, truthy
from ahp.state.status import SessionStatus, with_activity
from ahp.state.tool_calls import BLOCKING_STATUSES

__all__ = ["chat_status", "refresh_chat_status"]


def _awaits_input(state: dict[str, Any]) -> bool:
    active = state.get("activeTurn")
    if not truthy(active):
        return False
    for part in as_list(as_dict(active).get("responseParts")):
        if not isinstance(part, dict):
            continue
        if part.get("kind") == "inputRequest" and "response" not in part:
            return True
        if part.get("kind") == "toolCall" and as_dict(part.get("toolCall")).get("status") in BLOCKING_STATUSES:
            return True
    return False


def chat_status(state: dict[str, Any], *, ended_in_error: bool = False) -> int:
    """The status ``state`` should carry: its flags plus the activity derived from its turn."""
    if ended_in_error:
        activity = SessionStatus.Error
    elif _awaits_input(state):
        activity = SessionStatus.InputNeeded
    elif truthy(state.get("activeTurn")):
        activity = SessionStatus.InProgress
    else:
        activity = SessionStatus.Idle
    return with_activity(state.get("status"), int(activity))


def refresh_chat_status(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with ``status`` recomputed; the same object when nothing changes."""
    status = chat_status(state)
    if status == state.get("status") and type(state.get("status")) is int:
        return state
    return {**state, "status": status}
