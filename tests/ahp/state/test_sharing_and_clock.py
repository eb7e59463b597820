"""Two invariants of every internal reducer that the vectors cannot show: untouched sub-objects are
shared with the previous state (only the changed path is copied), and the chat reducer reads the
caller's ``now`` only when a turn's own timestamps are missing."""

from __future__ import annotations

from ahp import state as internal

MESSAGE = {"text": "hi", "origin": {"kind": "user"}}
OLD_TURN = {"id": "t0", "message": MESSAGE, "responseParts": [], "state": "complete"}
CHAT = {
    "resource": "ahp-chat:/c",
    "title": "C",
    "status": 8,
    "modifiedAt": "2026-01-01T00:00:00.000Z",
    "turns": [OLD_TURN],
    "queuedMessages": [{"id": "q", "message": MESSAGE}],
    "activeTurn": {
        "id": "t1",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": MESSAGE,
        "responseParts": [
            {"kind": "markdown", "id": "m1", "content": "a"},
            {"kind": "markdown", "id": "m2", "content": "b"},
        ],
    },
}


def test_a_streamed_delta_copies_only_the_path_to_its_part():
    after = internal.reduce("chat", CHAT, {"type": "chat/delta", "turnId": "t1", "partId": "m2", "content": "c"}, 0)
    assert after["activeTurn"]["responseParts"][1]["content"] == "bc"
    assert after["turns"] is CHAT["turns"] and after["queuedMessages"] is CHAT["queuedMessages"]
    assert after["activeTurn"]["message"] is MESSAGE
    assert after["activeTurn"]["responseParts"][0] is CHAT["activeTurn"]["responseParts"][0]
    assert CHAT["activeTurn"]["responseParts"][1]["content"] == "b"


def test_ending_a_turn_keeps_earlier_turns_shared():
    after = internal.reduce("chat", CHAT, {"type": "chat/turnComplete", "turnId": "t1", "duration": 5}, 0)
    assert after["turns"][0] is OLD_TURN and len(after["turns"]) == 2
    assert after["modifiedAt"] == "2026-01-01T00:00:00.005Z"


def test_session_setters_leave_the_catalogues_shared():
    session = {
        "provider": "p",
        "title": "S",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [{"clientId": "c", "tools": []}],
        "chats": [{"resource": "ahp-chat:/c", "title": "C", "status": 1, "modifiedAt": "x"}],
    }
    after = internal.reduce("session", session, {"type": "session/titleChanged", "title": "T"}, 0)
    assert after["title"] == "T" and after["chats"] is session["chats"]
    assert after["activeClients"] is session["activeClients"]


def test_the_clock_stands_in_only_for_missing_turn_timestamps():
    idle = {key: value for key, value in CHAT.items() if key != "activeTurn"}
    started = internal.reduce("chat", idle, {"type": "chat/turnStarted", "turnId": "t2", "message": MESSAGE}, 1000)
    assert started["modifiedAt"] == "1970-01-01T00:00:01.000Z" and "startedAt" not in started["activeTurn"]
    ended = internal.reduce("chat", started, {"type": "chat/turnCancelled", "turnId": "t2", "duration": 7}, 2000)
    assert ended["modifiedAt"] == "1970-01-01T00:00:02.000Z" and ended["turns"][-1]["duration"] == 7
    dated = internal.reduce(
        "chat",
        idle,
        {"type": "chat/turnStarted", "turnId": "t3", "startedAt": "2026-05-05T05:05:05.005Z", "message": MESSAGE},
        1000,
    )
    assert dated["modifiedAt"] == "2026-05-05T05:05:05.005Z"
    for action in (
        {"type": "chat/inputRequested", "request": {"id": "r", "message": "?"}},
        {"type": "chat/truncated", "turnId": "t0"},
        {"type": "chat/activityChanged", "activity": "thinking"},
    ):
        assert internal.reduce("chat", CHAT, action, 123456)["modifiedAt"] == CHAT["modifiedAt"]
