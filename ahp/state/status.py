"""The status bitset of sessions and chats, and how a session's status follows its chats.

``status`` packs one *activity* into bits 0-4 (Idle, Error, InProgress, InputNeeded) and OR-ed
*flags* into bits 5+ (IsRead, IsArchived, and any bit a newer peer defines). Test it with masks,
never with ``==``: ``InputNeeded`` is ``InProgress | 16``.

Chat status is derived by the chat reducer from the chat's own turn (``chat_activity``). A
session's status cannot be derived by one reducer, because its activity comes from its chats
[VERSIONS.md §3, session channel]: the activity of the default chat (else of the most recently
modified chat), promoted to InputNeeded or Error when any chat has that activity, and to
InputNeeded while the session's ``inputNeeded`` list holds a user-blocking entry (every kind except
``toolClientExecution``, since 0.8.0). The session reducer applies the ``inputNeeded`` rule; the
chat-derived part is :func:`session_status_from_chats`, a pure function the host calls with the
chat summaries it holds (``SessionState.chats``, which the host keeps in step with each chat's
``ChatState`` through ``session/chatUpdated``), and :func:`refresh_session_status`, which applies it
to a session state from its own catalogue. The host uses it for the status its session list shows
(``SessionSummary.status``); it never writes it into a session channel's state, whose ``status``
stays what every subscriber's reducer computes (no action carries the chat-derived part).

Invariants: flag bits (including unknown high bits) are always carried through unchanged; values
written into state are plain ``int``; an absent or malformed status reads as 0.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

from ahp.state._js import as_dict, as_list
from ahp.state.clock import parse_timestamp

__all__ = [
    "ACTIVITY_MASK",
    "SessionStatus",
    "awaits_user",
    "input_needed_status",
    "refresh_session_status",
    "session_status_from_chats",
    "status_int",
    "with_activity",
    "with_flag",
]


class SessionStatus(enum.IntFlag, boundary=enum.KEEP):
    """``SessionStatus`` bits as declared by the 0.7.0 and 1.0.0 schemas."""

    Idle = 1
    Error = 2
    InProgress = 8
    InputNeeded = 24  # InProgress | 16: waiting for input is still in progress
    IsRead = 32
    IsArchived = 64


ACTIVITY_MASK = (1 << 5) - 1
"""Bits 0-4: the mutually exclusive activity part of a status."""

_INPUT_NEEDED_ONLY = int(SessionStatus.InputNeeded) & ~int(SessionStatus.InProgress)
"""Bit 4, the part of InputNeeded that InProgress lacks."""


def status_int(value: Any) -> int:
    """A stored status as an int; absent or malformed reads as 0 (JS ``undefined & x``)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def with_flag(status: Any, flag: SessionStatus, on: bool) -> int:
    """``status`` with ``flag`` set or cleared, every other bit untouched."""
    current = status_int(status)
    return current | int(flag) if on else current & ~int(flag)


def with_activity(status: Any, activity: int) -> int:
    """``status`` with its activity bits replaced by ``activity``, flags untouched."""
    return (status_int(status) & ~ACTIVITY_MASK) | (activity & ACTIVITY_MASK)


def awaits_user(request: Any) -> bool:
    """Whether a ``SessionState.inputNeeded`` entry blocks on the user.

    A ``toolClientExecution`` entry is work delegated to a client, not a prompt: since 0.8.0 it
    does not raise InputNeeded [0.8.0 changelog; 1.0.0 ``SessionState.inputNeeded``].
    """
    return as_dict(request).get("kind") != "toolClientExecution"


def _has(activity: int, bits: SessionStatus) -> bool:
    return activity & int(bits) == int(bits)


def session_status_from_chats(
    status: Any,
    chats: Iterable[Any],
    default_chat: str | None = None,
    input_needed: Iterable[Any] = (),
) -> int:
    """A session's status from its chats, keeping the session's own flags.

    ``chats`` are ``ChatSummary`` or ``ChatState`` dicts (both carry ``resource``, ``status`` and
    ``modifiedAt``). The activity is the default chat's, else the most recently modified chat's
    (the first one on a tie), promoted to InputNeeded when any chat or any user-blocking
    ``input_needed`` entry needs input, else to Error when any chat's activity is Error. With no
    usable chat the current activity stands (apart from the ``input_needed`` promotion).
    """
    summaries = [chat for chat in chats if isinstance(chat, dict) and "status" in chat]
    activity = status_int(status) & ACTIVITY_MASK
    primary = next(
        (chat for chat in summaries if default_chat is not None and chat.get("resource") == default_chat), None
    )
    if primary is None and summaries:
        primary = max(summaries, key=_modified_key)  # max keeps the first of equal keys
    if primary is not None:
        activity = status_int(primary.get("status")) & ACTIVITY_MASK
    activities = [status_int(chat.get("status")) & ACTIVITY_MASK for chat in summaries]
    if any(_has(each, SessionStatus.InputNeeded) for each in activities) or any(
        awaits_user(request) for request in input_needed
    ):
        activity = int(SessionStatus.InputNeeded)
    elif any(_has(each, SessionStatus.Error) for each in activities):
        activity = int(SessionStatus.Error)
    return with_activity(status, activity)


def _modified_key(chat: dict[str, Any]) -> int:
    stamp = parse_timestamp(chat.get("modifiedAt"))
    return stamp if stamp is not None else -(1 << 62)


def refresh_session_status(session: Any) -> Any:
    """``session`` with ``status`` recomputed by :func:`session_status_from_chats` from its own
    catalogue (``chats``, ``defaultChat``, ``inputNeeded``); the same object when nothing changes."""
    if not isinstance(session, dict):
        return session
    status = session_status_from_chats(
        session.get("status"),
        as_list(session.get("chats")),
        session.get("defaultChat") if isinstance(session.get("defaultChat"), str) else None,
        as_list(session.get("inputNeeded")),
    )
    if status == session.get("status") and type(session.get("status")) is int:
        return session
    return {**session, "status": status}


def input_needed_status(status: Any, requests: list[Any]) -> int:
    """The session reducer's ``inputNeeded`` rule: any user-blocking entry makes the activity
    InputNeeded; otherwise only bit 4 is cleared, so a blocked turn falls back to InProgress and an
    idle session stays idle."""
    if any(awaits_user(request) for request in requests):
        return with_activity(status, int(SessionStatus.InputNeeded))
    return status_int(status) & ~_INPUT_NEEDED_ONLY
