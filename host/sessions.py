"""Pure helpers for session channels: new and forked states, summaries and their diffs.

Nothing here touches the store or the clock; callers pass ``now`` (epoch ms) and ids.
"""

from __future__ import annotations

import re

import copy
from typing import Any

__all__ = [
    "SESSION_SCHEME",
    "is_session_uri",
    "new_session_state",
    "forked_turns",
    "summary_changes",
    "DEFAULT_TITLE",
]

SESSION_SCHEME = "ahp-session:/"
DEFAULT_TITLE = "New Session"
_IMMUTABLE_SUMMARY_KEYS = ("resource", "provider", "createdAt")


_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def is_session_uri(uri: Any) -> bool:
    """``ahp-session:/`` and a safe id: a UUID, or up to 128 letters, digits, ``.``, ``_`` and ``-``
    starting with a letter or digit. Nothing that could be a path (``../``), a control or bidi
    character, NUL, markup or a megabyte of text reaches state, logs or clients' screens."""
    return isinstance(uri, str) and uri.startswith(SESSION_SCHEME) and _SAFE_ID.fullmatch(uri[len(SESSION_SCHEME):]) is not None


def new_session_state(
    uri: str,
    *,
    provider: str,
    now: int,
    model: dict[str, Any] | None = None,
    agent: dict[str, Any] | None = None,
    working_directory: str | None = None,
    title: str = DEFAULT_TITLE,
    turns: list[dict[str, Any]] | None = None,
    customizations: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "resource": uri,
        "provider": provider,
        "title": title,
        "status": 1,
        "createdAt": now,
        "modifiedAt": now,
    }
    if model is not None:
        summary["model"] = model
    if agent is not None:
        summary["agent"] = agent
    if working_directory is not None:
        summary["workingDirectory"] = working_directory
    state: dict[str, Any] = {"summary": summary, "lifecycle": "creating", "turns": list(turns or [])}
    if customizations is not None:
        state["customizations"] = customizations
    return state


def forked_turns(source: dict[str, Any], turn_id: str) -> list[dict[str, Any]] | None:
    """The source's completed turns up to and including ``turn_id``; None if it has no such turn."""
    turns = source.get("turns") or []
    for index, turn in enumerate(turns):
        if turn.get("id") == turn_id:
            return copy.deepcopy(turns[: index + 1])
    return None


def summary_changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    """The mutable summary fields that differ (removed fields are reported as None)."""
    if before is None or after is None or before is after:
        return {}
    changes: dict[str, Any] = {}
    for key in set(before) | set(after):
        if key in _IMMUTABLE_SUMMARY_KEYS:
            continue
        if before.get(key) != after.get(key):
            changes[key] = after.get(key)
    return changes
