"""Reading the open chat's state and building the actions the chat client dispatches. Pure (but
for the fresh ids and start times of new turns and messages).

Shared by the interactive loop and the one-shot mode so both answer the host the same way.
The client speaks the model's versions (AHP 1.0.0 or 0.9.0): a session channel holds its
metadata and a catalogue of chats, each chat channel its turns (``ahp.state``).

* ``chat_view(session, chat)`` is what the terminal reads: the chat's own state (turns, active
  turn, pending messages, draft) with its session's config, customizations, lifecycle and a
  ``summary`` of the facts the terminal shows (agent, model, working directory, changesets,
  the session's title and, for a chat other than the session's default one, ``chatTitle``), and ``inputRequests``: the questions open in the chat (``open_requests``).
* The builders make the ``chat/*`` actions (to the chat's channel) and ``session/*`` ones (to the
  session's) with the model's builders (``ahp.protocol.builders``).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlparse

from ahp.protocol import builders
from ahp.state.clock import iso_timestamp

__all__ = [
    "chat_view",
    "open_requests",
    "message_text",
    "turn_error",
    "selection",
    "model_draft",
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


def selection(chat: Mapping[str, Any] | None, key: str) -> Any:
    """The chat's ``model`` or ``agent`` (``key``) selection: its draft's when it has a draft (what
    the next message is sent with), else its latest message's; None when neither names one."""
    chat = chat or {}
    source = chat.get("draft")
    if not isinstance(source, dict):
        active = chat.get("activeTurn")
        turns = chat.get("turns") or ()
        latest = active if isinstance(active, dict) else (turns[-1] if turns and isinstance(turns[-1], dict) else {})
        source = latest.get("message")
    return source.get(key) if isinstance(source, dict) else None


def open_requests(session: Mapping[str, Any] | None, chat_uri: str | None, chat: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The chat's questions still waiting for an answer, in order: the ``inputRequest`` parts of its
    running turn without a response, then those asked outside a turn, which only the session's
    ``inputNeeded`` lists (``chatInput`` entries naming the chat)."""
    found: dict[str, dict[str, Any]] = {}
    active = (chat or {}).get("activeTurn")
    for part in (active or {}).get("responseParts") or () if isinstance(active, dict) else ():
        request = part.get("request") if isinstance(part, dict) and part.get("kind") == "inputRequest" else None
        if isinstance(request, dict) and part.get("response") is None and isinstance(request.get("id"), str):
            found.setdefault(request["id"], request)
    for entry in (session or {}).get("inputNeeded") or ():
        request = entry.get("request") if isinstance(entry, dict) and entry.get("kind") == "chatInput" else None
        if entry.get("chat") == chat_uri and isinstance(request, dict) and isinstance(request.get("id"), str):
            found.setdefault(request["id"], request)
    return list(found.values())


_SESSION_FIELDS = ("config", "customizations", "serverTools", "lifecycle", "creationError", "provider")


def chat_view(session: Mapping[str, Any] | None, chat_uri: str | None, chat: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The open chat as the terminal reads it (see the module docstring); None when neither the
    session nor the chat is mirrored."""
    if session is None and chat is None:
        return None
    view: dict[str, Any] = dict(chat or {})
    session = session or {}
    for key in _SESSION_FIELDS:
        if key in session:
            view[key] = session[key]
    directories = [d for d in session.get("workingDirectories") or (chat or {}).get("workingDirectories") or ()
                   if isinstance(d, str)]
    default = chat_uri is None or chat_uri == session.get("defaultChat")
    summary: dict[str, Any] = {"provider": session.get("provider"), "title": session.get("title"),
                               "chatTitle": None if default else (chat or {}).get("title") or "chat"}
    model = selection(chat, "model")
    if model is not None:
        summary["model"] = model
    if directories:
        summary["workingDirectory"] = directories[0]
    if session.get("changesets"):
        summary["changesets"] = session["changesets"]
    view["summary"] = {k: v for k, v in summary.items() if v is not None}
    view["inputRequests"] = open_requests(session, chat_uri, chat)
    return view


def message_text(turn: Mapping[str, Any] | None) -> str:
    """The text of the message that started ``turn``."""
    message = (turn or {}).get("message")
    return str(message.get("text") or "") if isinstance(message, dict) else ""


def turn_error(turn: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The error a turn ended with: the ``error`` of its last part, when that is an error part."""
    parts = (turn or {}).get("responseParts") or ()
    last = parts[-1] if parts else None
    error = last.get("error") if isinstance(last, dict) and last.get("kind") == "error" else None
    return error if isinstance(error, dict) else None


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
    """The open questions of a ``chat_view``."""
    return [r for r in (state or {}).get("inputRequests") or () if isinstance(r, dict)]


def _user_message(text: str, attachments: list[dict[str, Any]] | None) -> dict[str, Any]:
    message: dict[str, Any] = {"text": text, "origin": {"kind": "user"}}
    if attachments:
        message["attachments"] = attachments
    return message


def turn_started(text: str, attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``chat/turnStarted`` with a fresh turn id, started now."""
    started = iso_timestamp(int(time.time() * 1000)) or "1970-01-01T00:00:00.000Z"
    return builders.chat_turn_started(turn_id=str(uuid.uuid4()), started_at=started, message=_user_message(text, attachments))


def pending_message(kind: str, text: str, attachments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``chat/pendingMessageSet`` for a steering or queued message."""
    return builders.chat_pending_message_set(kind=kind, id=str(uuid.uuid4()), message=_user_message(text, attachments))


def model_draft(chat: Mapping[str, Any] | None, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
    """``chat/draftChanged`` that keeps the chat's draft (or starts an empty one) with ``key``
    (``model`` or ``agent``) set to ``value``: the host runs the chat's next turn with it."""
    draft = (chat or {}).get("draft")
    base: dict[str, Any] = dict(draft) if isinstance(draft, dict) else {"text": "", "origin": {"kind": "user"}}
    for other in ("model", "agent"):
        if other != key and other not in base and selection(chat, other) is not None:
            base[other] = selection(chat, other)
    return builders.chat_draft_changed(draft={**base, key: dict(value)})


def confirmation(
    turn_id: str,
    call: Mapping[str, Any],
    option: Mapping[str, Any],
    *,
    edited_input: str | None = None,
    reason_message: str | None = None,
) -> dict[str, Any]:
    """``chat/toolCallConfirmed`` answering ``call`` with ``option`` (a host option or a plain pair)."""
    selected = option.get("id")
    if option.get("kind") == "approve":
        return builders.chat_tool_call_approved(
            turn_id=turn_id, tool_call_id=call["toolCallId"], confirmed="user-action", selected_option_id=selected,
            edited_tool_input=edited_input if call.get("editable") else None,
        )
    return builders.chat_tool_call_denied(
        turn_id=turn_id, tool_call_id=call["toolCallId"], reason="denied", selected_option_id=selected,
        reason_message=reason_message or None,
    )


def result_confirmation(turn_id: str, call: Mapping[str, Any], approved: bool) -> dict[str, Any]:
    return builders.chat_tool_call_result_confirmed(turn_id=turn_id, tool_call_id=call["toolCallId"], approved=approved)


def first_option(call: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The host's first option of ``kind`` (approve/deny), or a bare ``{kind}`` when it offers none."""
    for option in call.get("options") or ():
        if isinstance(option, dict) and option.get("kind") == kind:
            return option
    return {"kind": kind}
