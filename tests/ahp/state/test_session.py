"""Session catalogue behaviours the official vectors leave open."""

from __future__ import annotations

from ahp import state as internal

SUMMARY = {"resource": "ahp-chat:/c", "title": "C", "status": 1, "modifiedAt": "x", "activity": "thinking"}
SESSION = {
    "provider": "p",
    "title": "S",
    "status": 1,
    "lifecycle": "ready",
    "activeClients": [],
    "chats": [SUMMARY],
    "defaultChat": "ahp-chat:/c",
}


def test_chat_updated_never_moves_a_chat_and_a_null_change_clears_the_field():
    action = {
        "type": "session/chatUpdated",
        "chat": "ahp-chat:/c",
        "changes": {"resource": "ahp-chat:/x", "activity": None, "title": "T"},
    }
    chat = internal.reduce("session", SESSION, action, 0)["chats"][0]
    assert chat == {"resource": "ahp-chat:/c", "title": "T", "status": 1, "modifiedAt": "x"}


def test_removing_the_default_chat_clears_the_hint_and_an_unknown_chat_changes_nothing():
    assert internal.reduce("session", SESSION, {"type": "session/chatRemoved", "chat": "ahp-chat:/zz"}, 0) is SESSION
    removed = internal.reduce("session", SESSION, {"type": "session/chatRemoved", "chat": "ahp-chat:/c"}, 0)
    assert removed["chats"] == [] and "defaultChat" not in removed
