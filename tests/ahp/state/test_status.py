"""The status bitset, the chat's derived activity, and a session's status from its chats."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ahp import state as internal
from ahp.state import SessionStatus, refresh_session_status, session_status_from_chats
from ahp.state.status import ACTIVITY_MASK, input_needed_status, with_flag

IDLE, ERROR, BUSY, INPUT, READ, ARCHIVED = 1, 2, 8, 24, 32, 64


def chat(uri: str, status: int, modified: str) -> dict:
    return {"resource": uri, "title": uri, "status": status, "modifiedAt": modified}


def test_the_default_chat_gives_the_session_its_activity():
    chats = [chat("c1", BUSY, "2026-01-01T00:00:00.000Z"), chat("c2", IDLE, "2026-01-02T00:00:00.000Z")]
    assert session_status_from_chats(IDLE | READ, chats, default_chat="c1") == BUSY | READ


def test_without_a_default_the_most_recently_modified_chat_decides():
    chats = [chat("c1", BUSY, "2026-01-01T00:00:00.000Z"), chat("c2", IDLE, "2026-01-02T00:00:00.000Z")]
    assert session_status_from_chats(BUSY, chats) == IDLE
    assert session_status_from_chats(BUSY, chats, default_chat="gone") == IDLE
    # Timestamps are compared as times, not as strings.
    later = [chat("c1", BUSY, "2026-01-01T10:00:00.000+05:00"), chat("c2", IDLE, "2026-01-01T06:00:00.000Z")]
    assert session_status_from_chats(IDLE, later) == IDLE
    assert (
        session_status_from_chats(
            IDLE, [chat("a", BUSY, "2026-01-01T00:00:00.000Z"), chat("b", IDLE, "2026-01-01T00:00:00.000Z")]
        )
        == BUSY
    )


def test_input_needed_then_error_are_promoted_from_any_chat():
    calm = chat("c1", IDLE, "2026-01-03T00:00:00.000Z")
    assert session_status_from_chats(IDLE, [calm, chat("c2", INPUT, "2026-01-01T00:00:00.000Z")], "c1") == INPUT
    assert session_status_from_chats(IDLE, [calm, chat("c2", ERROR, "2026-01-01T00:00:00.000Z")], "c1") == ERROR
    both = [calm, chat("c2", ERROR, "x"), chat("c3", INPUT | READ, "y")]
    assert session_status_from_chats(ARCHIVED, both, "c1") == ARCHIVED | INPUT


def test_the_session_s_own_input_queue_promotes_except_for_client_executions():
    chats = [chat("c1", BUSY, "2026-01-01T00:00:00.000Z")]
    assert session_status_from_chats(BUSY, chats, input_needed=[{"kind": "chatInput", "id": "r"}]) == INPUT
    assert session_status_from_chats(BUSY, chats, input_needed=[{"kind": "toolClientExecution", "id": "r"}]) == BUSY


def test_without_chats_the_activity_stands_and_flags_always_survive():
    assert session_status_from_chats(BUSY | READ | (1 << 31), []) == BUSY | READ | (1 << 31)
    assert session_status_from_chats(None, [{"no": "status"}]) == 0


def test_refresh_session_status_reads_the_catalogue_and_keeps_the_object_when_nothing_changes():
    session = {
        "provider": "p",
        "title": "t",
        "status": IDLE | READ,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [chat("c1", BUSY, "2026-01-01T00:00:00.000Z")],
        "defaultChat": "c1",
    }
    refreshed = refresh_session_status(session)
    assert refreshed["status"] == BUSY | READ and session["status"] == IDLE | READ
    assert refresh_session_status(refreshed) is refreshed


def test_the_session_reducer_keeps_the_catalogue_in_step_for_the_helper():
    session = {"provider": "p", "title": "t", "status": IDLE, "lifecycle": "ready", "activeClients": [], "chats": []}
    session = internal.reduce(
        "session", session, {"type": "session/chatAdded", "summary": chat("c1", IDLE, "2026-01-01T00:00:00.000Z")}, 0
    )
    session = internal.reduce(
        "session", session, {"type": "session/chatUpdated", "chat": "c1", "changes": {"status": INPUT}}, 0
    )
    assert refresh_session_status(session)["status"] == INPUT


@given(st.integers(0, 2**40), st.integers(0, 2**40))
def test_flag_and_activity_updates_keep_every_other_bit(status, other):
    assert with_flag(status, SessionStatus.IsRead, True) & ~READ == status & ~READ
    assert input_needed_status(status, [{"kind": "chatInput"}]) & ~ACTIVITY_MASK == status & ~ACTIVITY_MASK
    assert input_needed_status(status, []) == status & ~16
    chats = [{"resource": "c", "status": other, "modifiedAt": "2026-01-01T00:00:00.000Z"}]
    assert session_status_from_chats(status, chats) & ~ACTIVITY_MASK == status & ~ACTIVITY_MASK
