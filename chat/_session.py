"""Reading a session's state and building the actions the chat client dispatches. Pure.

Shared by the interactive loop and the one-shot mode so both answer the host the same way:
what counts as "the turn", which tool calls wait for the user, which input requests are open,
and the exact ``session/*`` action payloads (PROTOCOL.md §7-§8).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from ahp.dialects.v0_2 import builders

__all__ = [
    "turn_snapshot",
    "waiting_tool_calls",
    "tool_call",
    "open_input_requests",
    "turn_started",
    "confirmation",
    "result_confirmation",
    "pending_message",
    "first_option",
    "REMEMBERED_USE",
    "PERMISSION_MODE",
    "PERMISSION_MODES",
    "MODE_DESCRIPTIONS",
    "permission_mode",
    "next_mode",
    "mode_status",
    "remembered_approval",
    "remembered_tool_calls",
    "shown_directory",
]


def turn_snapshot(state: Mapping[str, Any] | None, turn_id: str) -> tuple[dict[str, Any] | None, bool]:
    """``(turn, finished)``: the active turn while it runs, the stored turn once it ended.

    ``(None, True)`` when the turn is neither (rejected, truncated away, or the session is gone).
    """
    if not state:
        return None, True
    active = state.get("activeTurn")
    if isinstance(active, dict) and active.get("id") == turn_id:
        return active, False
    for turn in reversed(state.get("turns") or ()):
        if isinstance(turn, dict) and turn.get("id") == turn_id:
            return turn, True
    return None, True


def waiting_tool_calls(turn: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Tool calls of the turn that wait for the user, in response order."""
    calls = []
    for part in (turn or {}).get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if isinstance(call, dict) and call.get("status") in ("pending-confirmation", "pending-result-confirmation"):
            calls.append(call)
    return calls


REMEMBERED_USE = "useRememberedApprovals"
"""The session config property that says which remembered "Always allow" choices apply."""

PERMISSION_MODE = "permissionMode"
"""The session config property that holds the session's permission mode."""
PERMISSION_MODES = ("default", "accept-edits", "plan", "full-auto")
MODE_DESCRIPTIONS = {
    "default": "ask before edits and commands",
    "accept-edits": "edits in the session's folders run without asking; commands ask",
    "plan": "read-only tools only; the agent proposes a plan for you to approve",
    "full-auto": "everything runs without asking (commands in the OS sandbox)",
}
_CYCLE = ("default", "accept-edits", "plan")
"""What Shift+Tab steps through; full-auto only by ``/mode full-auto`` or ``--permission-mode``."""


def permission_mode(state: Mapping[str, Any] | None) -> str | None:
    """The session's permission mode, or None when the session has none (a host without tools,
    or a session from before permission modes)."""
    config = (state or {}).get("config") or {}
    if PERMISSION_MODE not in ((config.get("schema") or {}).get("properties") or {}):
        return None
    value = (config.get("values") or {}).get(PERMISSION_MODE)
    return value if value in PERMISSION_MODES else "default"


def next_mode(mode: str | None) -> str:
    """The mode Shift+Tab switches to from ``mode`` (from full-auto: back to default)."""
    return _CYCLE[(_CYCLE.index(mode) + 1) % len(_CYCLE)] if mode in _CYCLE else "default"


def mode_status(mode: str | None) -> str:
    """The status line's words for a mode ("" for the default, which needs no reminder)."""
    return {
        "accept-edits": "⏵⏵ accept edits on",
        "plan": "⏸ plan mode on",
        "full-auto": "⚠ full auto on: nothing asks",
    }.get(mode or "default", "")


def shown_directory(location: str) -> str:
    """A directory (an absolute path or a ``file://`` URI) as people read it, the home directory as
    ``~``; other URIs as they are."""
    path = location
    if not location.startswith("/"):
        parsed = urlparse(location)
        if parsed.scheme != "file":
            return location
        path = unquote(parsed.path)
    home = os.path.expanduser("~").rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return path


def remembered_approval(call: Mapping[str, Any]) -> dict[str, Any] | None:
    """The remembered "Always allow" choice that let ``call`` run without asking, if one did."""
    meta = call.get("_meta")
    approval = meta.get("rememberedApproval") if isinstance(meta, dict) else None
    return approval if isinstance(approval, dict) and isinstance(approval.get("rule"), str) else None


def remembered_tool_calls(turn: Mapping[str, Any] | None) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Tool calls of the turn a remembered choice allowed, each with that choice."""
    found = []
    for part in (turn or {}).get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        approval = remembered_approval(call) if isinstance(call, dict) else None
        if isinstance(call, dict) and approval is not None:
            found.append((call, approval))
    return found


def tool_call(turn: Mapping[str, Any] | None, tool_call_id: str) -> dict[str, Any] | None:
    for part in (turn or {}).get("responseParts") or ():
        call = part.get("toolCall") if isinstance(part, dict) and part.get("kind") == "toolCall" else None
        if isinstance(call, dict) and call.get("toolCallId") == tool_call_id:
            return call
    return None


def open_input_requests(state: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [r for r in (state or {}).get("inputRequests") or () if isinstance(r, dict)]


def _user_message(text: str, attachments: list[dict[str, Any]] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"text": text}
    if attachments:
        message["attachments"] = attachments
    return message


def turn_started(text: str, attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``session/turnStarted`` with a fresh turn id."""
    return builders.session_turn_started(turn_id=str(uuid.uuid4()), user_message=_user_message(text, attachments))


def pending_message(kind: str, text: str, attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``session/pendingMessageSet`` for a steering or queued message."""
    return builders.session_pending_message_set(kind=kind, id=str(uuid.uuid4()), user_message=_user_message(text, attachments))


def confirmation(
    turn_id: str,
    call: Mapping[str, Any],
    option: Mapping[str, Any],
    *,
    edited_input: str | None = None,
    reason_message: str | None = None,
) -> dict[str, Any]:
    """``session/toolCallConfirmed`` answering ``call`` with ``option`` (a host option or a plain pair)."""
    selected = option.get("id")
    if option.get("kind") == "approve":
        return builders.session_tool_call_approved(
            turn_id=turn_id, tool_call_id=call["toolCallId"], confirmed="user-action", selected_option_id=selected,
            edited_tool_input=edited_input if call.get("editable") else None,
        )
    return builders.session_tool_call_denied(
        turn_id=turn_id, tool_call_id=call["toolCallId"], reason="denied", selected_option_id=selected,
        reason_message=reason_message or None,
    )


def result_confirmation(turn_id: str, call: Mapping[str, Any], approved: bool) -> dict[str, Any]:
    return builders.session_tool_call_result_confirmed(turn_id=turn_id, tool_call_id=call["toolCallId"], approved=approved)


def first_option(call: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The host's first option of ``kind`` (approve/deny), or a bare ``{kind}`` when it offers none."""
    for option in call.get("options") or ():
        if isinstance(option, dict) and option.get("kind") == kind:
            return option
    return {"kind": kind}
