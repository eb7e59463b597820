"""A session's catalogue and status follow its chats: after a chat's summary fields change, the
host dispatches ``session/chatUpdated`` (and only then), and the session's status follows."""

from __future__ import annotations

from typing import Any

from ahp.state import default_chat_uri, refresh_session_status
from host.state.chat_summaries import CHAT_SUMMARY_FIELDS, ChatSummaries
from host.state.sessions import internal_session_uri, new_chat_state, new_session_state, session_id
from host.state.store import Store

SESSION = "replay:/s1"
CHAT = default_chat_uri(SESSION)


class Sink:
    def __init__(self) -> None:
        self.frames: list[str] = []

    def send(self, text: str) -> None:
        self.frames.append(text)


def _store() -> tuple[Store, list[dict[str, Any]]]:
    store = Store({"agents": []}, clock=lambda: 1_000)
    summaries = ChatSummaries(store)
    store.change_observers.append(summaries.observe)
    store.create(SESSION, "session", {**new_session_state(SESSION, provider="replay"), "lifecycle": "ready"})
    store.create(CHAT, "chat", new_chat_state(CHAT, now=1_000))
    seen: list[dict[str, Any]] = []
    store.change_observers.append(lambda channel, before, after, envelope: seen.append(envelope))
    return store, seen


def test_a_running_turn_makes_the_session_in_progress_and_its_end_idle_again() -> None:
    store, seen = _store()
    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "1970-01-01T00:00:01.000Z",
                          "message": {"text": "hi", "origin": {"kind": "user"}}})
    updates = [e["action"] for e in seen if e["action"]["type"] == "session/chatUpdated"]
    assert updates and updates[-1]["chat"] == CHAT and updates[-1]["changes"]["status"] & 8
    # The session's status as its list shows it follows the catalogue; the session channel's own
    # status is what every subscriber's reducer computes, which chat/* actions do not move.
    assert refresh_session_status(store.state(SESSION))["status"] & 31 == 8
    assert store.state(SESSION)["chats"][0]["status"] & 31 == 8
    assert store.state(SESSION)["chats"][0]["modifiedAt"] == "1970-01-01T00:00:01.000Z"
    store.dispatch(CHAT, {"type": "chat/turnComplete", "turnId": "t", "duration": 5})
    assert refresh_session_status(store.state(SESSION))["status"] & 31 == 1
    assert store.state(SESSION)["chats"][0]["modifiedAt"] == "1970-01-01T00:00:01.005Z"


def test_streamed_tokens_and_unchanged_summaries_dispatch_nothing() -> None:
    store, seen = _store()
    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "1970-01-01T00:00:01.000Z",
                          "message": {"text": "hi", "origin": {"kind": "user"}}})
    store.dispatch(CHAT, {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}})
    before = len([e for e in seen if e["action"]["type"] == "session/chatUpdated"])
    for _ in range(50):
        store.dispatch(CHAT, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "x"})
    store.dispatch(CHAT, {"type": "chat/usage", "turnId": "t", "usage": {"inputTokens": 1, "outputTokens": 1}})
    assert len([e for e in seen if e["action"]["type"] == "session/chatUpdated"]) == before


def test_an_entry_changed_on_the_session_is_compared_again_at_the_chat_s_next_change() -> None:
    # Changes that move no summary field are not compared while the entry agrees; once anything
    # changed the catalogue (here a stale status written on the session), the chat's next change,
    # even one that moves no summary field, puts the entry right again.
    store, seen = _store()
    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "1970-01-01T00:00:01.000Z",
                          "message": {"text": "hi", "origin": {"kind": "user"}}})
    store.dispatch(CHAT, {"type": "chat/activityChanged", "activity": "Waiting"})
    store.dispatch(CHAT, {"type": "chat/activityChanged", "activity": "Writing"})
    assert store.state(SESSION)["chats"][0]["status"] & 8
    store.dispatch(SESSION, {"type": "session/chatUpdated", "chat": CHAT, "changes": {"status": 1}})
    assert not store.state(SESSION)["chats"][0]["status"] & 8
    updates = len([e for e in seen if e["action"]["type"] == "session/chatUpdated"])
    store.dispatch(CHAT, {"type": "chat/activityChanged", "activity": "Thinking"})
    assert len([e for e in seen if e["action"]["type"] == "session/chatUpdated"]) == updates + 1
    assert store.state(SESSION)["chats"][0]["status"] & 8
    store.dispatch(SESSION, {"type": "session/titleChanged", "title": "Named"})
    assert store.state(SESSION)["chats"][0]["title"] == "Named"
    store.dispatch(CHAT, {"type": "chat/activityChanged", "activity": "Writing"})
    assert store.state(SESSION)["chats"][0]["title"] == "Named" and store.state(SESSION)["chats"][0]["status"] & 8


def test_after_an_update_the_entry_shows_the_chat_and_activity_changes_send_nothing() -> None:
    # A change that dispatched ``session/chatUpdated`` leaves the entry showing the chat as it is:
    # the activity changes after it (which move no summary field) send nothing, and the entry
    # still agrees with the chat, field by field, after each of them and after the turn's end.
    store, seen = _store()

    def updates() -> int:
        return len([e for e in seen if e["action"]["type"] == "session/chatUpdated"])

    def agrees() -> bool:
        entry = store.state(SESSION)["chats"][0]
        chat = store.state(CHAT)
        return all(entry.get(key) == chat.get(key) for key in CHAT_SUMMARY_FIELDS if key != "title")

    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "1970-01-01T00:00:01.000Z",
                          "message": {"text": "hi", "origin": {"kind": "user"}}})
    after_start = updates()
    assert after_start >= 1 and agrees()
    for activity in ("Waiting", "Writing"):
        store.dispatch(CHAT, {"type": "chat/activityChanged", "activity": activity})
        assert updates() == after_start and agrees()
    store.dispatch(CHAT, {"type": "chat/turnComplete", "turnId": "t", "duration": 5})
    assert updates() == after_start + 1 and agrees()
    store.dispatch(CHAT, {"type": "chat/activityChanged"})
    assert updates() == after_start + 1 and agrees()
    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": "u", "startedAt": "1970-01-01T00:00:02.000Z",
                          "message": {"text": "again", "origin": {"kind": "user"}}})
    assert updates() == after_start + 2 and agrees() and store.state(SESSION)["chats"][0]["status"] & 8


def test_session_names_of_both_models_and_ids_unique_across_providers() -> None:
    assert internal_session_uri("replay", "ahp-session:/abc") == "replay:/abc"
    assert internal_session_uri("replay", "replay:/abc") == "replay:/abc"
    assert internal_session_uri("replay", "copilot:/abc") is None
    assert internal_session_uri("replay", "ahp-session:/../x") is None
    assert session_id("replay:/abc") == session_id("ahp-session:/abc") == "abc"
    state = new_session_state(SESSION, provider="replay", working_directory="file:///w")
    assert state["defaultChat"] == CHAT and state["chats"][0]["resource"] == CHAT
    assert state["workingDirectories"] == ["file:///w"] and state["activeClients"] == []
