"""Small, valid AHP states and actions shared by the client tests."""

from __future__ import annotations

SESSION = "ahp-session:/11111111-1111-4111-8111-111111111111"
OTHER_SESSION = "ahp-session:/22222222-2222-4222-8222-222222222222"
ROOT = "ahp-root://"


def session_state(channel: str = SESSION, title: str = "New Session") -> dict:
    """A freshly created, ready session with no turns."""
    return {
        "summary": {
            "resource": channel,
            "provider": "scripted",
            "title": title,
            "status": 1,
            "createdAt": 1000,
            "modifiedAt": 1000,
        },
        "lifecycle": "ready",
        "turns": [],
    }


def model_session_state(channel: str = SESSION, title: str = "New Session") -> dict:
    """The same session as the model (AHP 1.0.0) holds it: its metadata at the top, its turns in
    its default chat (not mirrored here)."""
    return {"provider": "scripted", "title": title, "status": 1, "createdAt": 1000, "modifiedAt": 1000,
            "lifecycle": "ready", "chats": [], "activeClients": []}


def model_summary(channel: str = SESSION, title: str = "New Session") -> dict:
    """A model ``SessionSummary`` of that session (``listSessions``, ``root/sessionAdded``)."""
    return {"resource": channel, "provider": "scripted", "title": title, "status": 1, "createdAt": 1000, "modifiedAt": 1000}


def model_chat_state(channel: str, title: str = "New Session") -> dict:
    """A model (AHP 1.0.0) chat with no turns: where a session's turns and pending messages live."""
    return {"resource": channel, "title": title, "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []}


def chat_queue(message_id: str, text: str) -> dict:
    """The model's queued message (``chat/pendingMessageSet``)."""
    return {"type": "chat/pendingMessageSet", "kind": "queued", "id": message_id,
            "message": {"text": text, "origin": {"kind": "user"}}}


def root_state() -> dict:
    return {"agents": [], "activeSessions": 0}


def title(text: str) -> dict:
    return {"type": "session/titleChanged", "title": text}


def queue(message_id: str, text: str) -> dict:
    return {
        "type": "session/pendingMessageSet",
        "kind": "queued",
        "id": message_id,
        "userMessage": {"text": text},
    }


def queued_ids(state: dict) -> list[str]:
    return [m["id"] for m in state.get("queuedMessages", [])]


def envelope(channel: str, action: dict, seq: int, origin: tuple[str, int] | None = None, reason: str | None = None) -> dict:
    env: dict = {"channel": channel, "action": action, "serverSeq": seq}
    if origin is not None:
        env["origin"] = {"clientId": origin[0], "clientSeq": origin[1]}
    if reason is not None:
        env["rejectionReason"] = reason
    return env
