"""Keeps each session's catalogue of chats in step with the chats: the one place that dispatches
``session/chatUpdated``.

Contract: ``ChatSummaries(store)`` is a store change observer. After an action changes a chat
channel, the fields of the chat that its session's ``SessionChatSummary`` carries (``CHAT_SUMMARY_FIELDS``)
are compared with the catalogue entry; when any differs, ``session/chatUpdated`` is dispatched on
the session with exactly the changed fields (a field the chat dropped is sent as ``None``, which
clears it). The session's status then follows (``host.state.channels.reduce`` refreshes it). A chat's
session is the one ``track`` was told, else the one its URI encodes (``ahp.state.parse_chat_uri``);
a chat whose session is gone, or which the session's catalogue does not list, is left alone.
Producers never maintain a session's status or a chat's summary by hand.
"""

from __future__ import annotations

from typing import Any

from ahp.protocol import builders
from ahp.state import parse_chat_uri

__all__ = ["CHAT_SUMMARY_FIELDS", "ChatSummaries", "summary_of_chat"]

CHAT_SUMMARY_FIELDS = ("title", "status", "origin", "interactivity", "changes")
"""``SessionChatSummary``'s fields besides ``resource`` (1.0.0 state schema)."""


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

    def track(self, chat_uri: str, session_uri: str) -> None:
        """Say which session a chat belongs to (needed for chat URIs that do not encode it)."""
        self._session_of[chat_uri] = session_uri

    def forget(self, chat_uri: str) -> None:
        self._session_of.pop(chat_uri, None)

    def session_of(self, chat_uri: str) -> str | None:
        session = self._session_of.get(chat_uri)
        if session is None:
            parsed = parse_chat_uri(chat_uri)
            session = parsed[1] if parsed is not None else None
        return session

    def observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if before is after or self._store.kind(channel) != "chat":
            return
        session_uri = self.session_of(channel)
        if session_uri is None or self._store.kind(session_uri) != "session":
            return
        session = self._store.state(session_uri) or {}
        entry = next((chat for chat in session.get("chats") or () if isinstance(chat, dict) and chat.get("resource") == channel), None)
        if entry is None:
            return
        changes = {key: after.get(key) for key in CHAT_SUMMARY_FIELDS if after.get(key) != entry.get(key)}
        if changes:
            self._store.dispatch(session_uri, builders.session_chat_updated(chat=channel, changes=changes))
