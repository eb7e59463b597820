"""Keeps each session's catalogue of chats in step with the chats: the one place that dispatches
``session/chatUpdated``.

Contract: ``ChatSummaries(store)`` is a store change observer. After an action changes a chat
channel, the fields of the chat that its session's catalogue entry (``SessionState.chats``, a
``ChatSummary``) carries (``CHAT_SUMMARY_FIELDS``)
are compared with the catalogue entry; when any differs, ``session/chatUpdated`` is dispatched on
the session with exactly the changed fields (a field the chat dropped is sent as ``None``, which
clears it). The session's status then follows (``host.state.channels.reduce`` refreshes it). A chat's
session is the one ``track`` was told, else the one its URI encodes (``ahp.state.parse_chat_uri``);
a chat whose session is gone, or which the session's catalogue does not list, is left alone.
The default chat's entry carries the session's title (once it has one): VS Code titles a
session's chat view from that entry, and a chat's own title cannot change by any action, so the
entry follows ``session/titleChanged``. Producers never maintain a session's status or a chat's
summary by hand. ``sync`` does the same
comparison unasked (at start-up, for catalogues written by builds that carried fewer fields).
A chat change that moves none of those fields, after a comparison that found the entry showing
the chat's state before it, is not compared again (nothing changed the entry since: any change of
the session's catalogue or title makes the next change of each of its chats compared in full).

The root's ``SessionSummary.chats`` is the compact ``SessionChatSummary`` of each entry
(``compact_chat_summary``).
"""

from __future__ import annotations

from typing import Any

from ahp.protocol import builders
from ahp.state import parse_chat_uri

__all__ = ["CHAT_SUMMARY_FIELDS", "SESSION_CHAT_SUMMARY_FIELDS", "ChatSummaries", "compact_chat_summary", "summary_of_chat"]

CHAT_SUMMARY_FIELDS = ("title", "status", "modifiedAt", "changes", "origin", "movable", "interactivity", "workingDirectories")
"""``ChatSummary``'s fields besides ``resource`` (1.0.0 state schema; ``title``, ``status`` and
``modifiedAt`` required, and every chat state has them). Not ``activity``: it changes several
times a model call, and clearing it would take a ``null`` the schema does not allow."""

SESSION_CHAT_SUMMARY_FIELDS = ("title", "origin", "interactivity", "status", "changes")
"""``SessionChatSummary``'s fields besides ``resource``: the root listing's compact catalogue."""


def compact_chat_summary(entry: dict[str, Any]) -> dict[str, Any]:
    """A catalogue entry (``ChatSummary``) as the root listing's ``SessionChatSummary``."""
    return {key: entry[key] for key in ("resource", *SESSION_CHAT_SUMMARY_FIELDS) if entry.get(key) is not None}


def summary_of_chat(chat_uri: str, chat: dict[str, Any]) -> dict[str, Any]:
    """The catalogue entry (``SessionChatSummary``) of a chat state."""
    summary: dict[str, Any] = {"resource": chat_uri}
    for key in CHAT_SUMMARY_FIELDS:
        if chat.get(key) is not None:
            summary[key] = chat[key]
    return summary


class ChatSummaries:
    def __init__(self, store: Any) -> None:
        self._store = store
        self._session_of: dict[str, str] = {}
        self._agreed: dict[str, dict[str, Any]] = {}
        """Per chat, the state of it that ``sync`` last found its catalogue entry to show as it
        is; dropped when the session's catalogue or title changes (the entry may differ then)."""

    def track(self, chat_uri: str, session_uri: str) -> None:
        """Say which session a chat belongs to (needed for chat URIs that do not encode it)."""
        self._session_of[chat_uri] = session_uri

    def forget(self, chat_uri: str) -> None:
        self._session_of.pop(chat_uri, None)
        self._agreed.pop(chat_uri, None)

    def session_of(self, chat_uri: str) -> str | None:
        session = self._session_of.get(chat_uri)
        if session is None:
            parsed = parse_chat_uri(chat_uri)
            session = parsed[1] if parsed is not None else None
        return session

    def observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if before is after:
            return
        kind = self._store.kind(channel)
        if kind == "chat":
            if self._agreed.get(channel) is before and all(before.get(key) is after.get(key) for key in CHAT_SUMMARY_FIELDS):
                # The entry agreed with ``before`` and no field it shows moved (an activity, a
                # response part): it agrees with ``after``.
                self._agreed[channel] = after
                return
            self.sync(channel, after)
        elif kind == "session":
            if self._agreed and (before.get("chats") is not after.get("chats") or before.get("title") is not after.get("title")):
                for entry in after.get("chats") or before.get("chats") or ():
                    if isinstance(entry, dict):
                        self._agreed.pop(entry.get("resource"), None)  # type: ignore[arg-type]
            if before.get("title") != after.get("title") and isinstance(after.get("defaultChat"), str):
                self.sync(after["defaultChat"])

    def sync(self, channel: str, after: dict[str, Any] | None = None) -> None:
        """``session/chatUpdated`` with the summary fields of the chat ``channel`` (its state
        ``after``, else the store's) that its session's catalogue entry does not show; nothing
        when they agree."""
        if self._store.kind(channel) != "chat":
            return
        if after is None:
            after = self._store.state(channel) or {}
        session_uri = self.session_of(channel)
        if session_uri is None or self._store.kind(session_uri) != "session":
            return
        session = self._store.state(session_uri) or {}
        entry = next((chat for chat in session.get("chats") or () if isinstance(chat, dict) and chat.get("resource") == channel), None)
        if entry is None:
            return
        shown = {key: after.get(key) for key in CHAT_SUMMARY_FIELDS}
        if channel == session.get("defaultChat") and session.get("title"):
            shown["title"] = session["title"]
        changes = {key: value for key, value in shown.items() if value != entry.get(key)}
        if changes:
            self._agreed.pop(channel, None)
            self._store.dispatch(session_uri, builders.session_chat_updated(chat=channel, changes=changes))
            # The entry now shows ``after`` (every field that differed was sent), so the chat's
            # next change that moves no summary field needs no comparison; a change of the chat
            # meanwhile (an observer of that dispatch) makes its next ``before`` another object.
            self._agreed[channel] = after
        else:
            self._agreed[channel] = after
