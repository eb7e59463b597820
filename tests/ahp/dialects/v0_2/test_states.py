"""States down (what a 0.2.0 client is shown) and up (``lift``): ``down(lift(s)) == s`` for every
0.2.0 state of the corpora, and the projection's rules field by field."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

from ahp.dialects.v0_2.states import (
    InternalSession,
    session_down,
    session_lift,
    summary_changes,
    summary_down,
    terminal_down,
)
from ahp.dialects.v0_2.uris import default_chat_uri
from ahp.state import reduce as reduce_internal
from tests.ahp._wire import first_difference, strip_none, wire_equal

from . import _internal_strategies as strategies
from ._dialect import CHANNEL_PROJECTIONS, apply_internal, down, in_domain
from .state._support import load_differential_cases, load_vectors


def _states(kind: str) -> list[dict]:
    found = [state for v in load_vectors() if v["reducer"] == kind for state in (v["initial"], v["expected"])]
    found += [state for c in load_differential_cases() if c["kind"] == kind for state in (c["initial"], c["expected"])]
    return found


SESSION_STATES = _states("session")


def test_lift_is_a_right_inverse_of_down_for_every_session_state_of_the_corpora():
    failures = []
    changed = 0
    for state in SESSION_STATES:
        state, changes = in_domain(state)
        changed += bool(set(changes) - {"a legacy resource URI"})
        got = down(session_lift(state))
        if not wire_equal(got, state):
            failures.append(first_difference(got, state))
    assert failures == []
    assert len(SESSION_STATES) == 2 * (124 + 2100) and changed < len(SESSION_STATES) / 4


@pytest.mark.parametrize("kind", sorted(CHANNEL_PROJECTIONS))
def test_lift_is_a_right_inverse_of_down_for_every_other_channel_state(kind):
    lift, project = CHANNEL_PROJECTIONS[kind]
    states = [strip_none(state) for state in _states(kind)]
    assert len(states) > 600
    failures = [first_difference(project(lift(s)), s) for s in states if not wire_equal(strip_none(project(lift(s))), s)]
    assert failures == []


def test_a_lifted_session_is_one_session_with_one_default_chat():
    state = {
        "summary": {"resource": "ahp-session:/abc", "provider": "p", "title": "Fix it", "status": 8 | 32 | 64, "createdAt": 1000,
                    "modifiedAt": 5000, "model": {"id": "m"}, "workingDirectory": "file:///w",
                    "changesets": [{"label": "Turn", "uriTemplate": "ahp-changeset:/t/{turnId}", "files": 2}]},
        "lifecycle": "creationFailed",
        "activeClient": {"clientId": "tui", "tools": []},
        "turns": [{"id": "t0", "userMessage": {"text": "a"}, "responseParts": [], "state": "error",
                   "error": {"errorType": "x", "message": "boom"}}],
        "activeTurn": {"id": "t1", "userMessage": {"text": "b"}, "responseParts": []},
        "inputRequests": [{"id": "r1", "message": "ok?"}],
        "customizations": [{"type": "plugin", "id": "pl", "uri": "https://p", "name": "P", "enabled": False}],
    }
    lifted = session_lift(state)
    chat_uri = default_chat_uri("p:/abc")
    assert lifted.uri == "p:/abc" and list(lifted.chats) == [chat_uri]
    assert lifted.created_at == "1970-01-01T00:00:01.000Z"
    session, chat = lifted.state, lifted.chats[chat_uri]
    assert session["lifecycle"] == "failed" and session["defaultChat"] == chat_uri
    assert session["activeClients"] == [{"clientId": "tui", "tools": []}]
    assert session["workingDirectories"] == ["file:///w"]
    assert session["changesets"][0]["changeKind"] == "turn"
    assert session["customizations"][0]["enablement"] == [{"kind": "session", "enabled": False}]
    assert chat["modifiedAt"] == "1970-01-01T00:00:05.000Z"
    assert chat["turns"][0]["message"] == {"text": "a", "origin": {"kind": "user"}}
    assert chat["turns"][0]["responseParts"] == [{"kind": "error", "error": {"errorType": "x", "message": "boom"}}]
    assert chat["activeTurn"]["startedAt"] == "1970-01-01T00:00:05.000Z"
    assert chat["activeTurn"]["responseParts"] == [{"kind": "inputRequest", "request": {"id": "r1", "message": "ok?"}}]
    assert chat["draft"] == {"text": "", "origin": {"kind": "user"}, "model": {"id": "m"}}
    assert wire_equal(down(lifted), state)


def test_a_lift_needs_a_0_2_0_session_name():
    with pytest.raises(ValueError):
        session_lift({"summary": {"resource": "copilot:/legacy", "provider": "copilot"}, "turns": []})


# --- the projection's rules -----------------------------------------------------------------------


def _session(**chat_fields) -> InternalSession:
    uri = "p:/s"
    chat = default_chat_uri(uri)
    chat_state = {"resource": chat, "title": "c", "status": 1, "modifiedAt": "1970-01-01T00:00:02.000Z", "turns": [], **chat_fields}
    state = {"provider": "p", "title": "S", "status": 1, "lifecycle": "ready", "activeClients": [],
             "chats": [{"resource": chat, "title": "c", "status": 1, "modifiedAt": chat_state["modifiedAt"]}], "defaultChat": chat}
    return InternalSession(uri, state, {chat: chat_state}, "1970-01-01T00:00:01.000Z")


def _message(model=None, agent=None):
    return {"text": "x", "origin": {"kind": "user"}, **({"model": model} if model else {}), **({"agent": agent} if agent else {})}


def test_the_model_is_the_drafts_else_the_latest_messages():
    turn = {"id": "t", "message": _message({"id": "old"}), "responseParts": [], "state": "complete"}
    active = {"id": "a", "startedAt": "1970-01-01T00:00:00.000Z", "message": _message({"id": "now"}), "responseParts": []}
    assert down(_session(turns=[turn]))["summary"]["model"] == {"id": "old"}
    assert down(_session(turns=[turn], activeTurn=active))["summary"]["model"] == {"id": "now"}
    draft = {"text": "", "origin": {"kind": "user"}, "agent": {"uri": "a:/x"}}
    shown = down(_session(turns=[turn], activeTurn=active, draft=draft))["summary"]
    # A draft decides both, even what it leaves out: the next message goes without a model.
    assert "model" not in shown and shown["agent"] == {"uri": "a:/x"}


def test_status_takes_the_chats_activity_and_read_flag_and_the_sessions_archive_flag():
    session = _session(status=8 | 32 | 64)
    session = InternalSession(session.uri, {**session.state, "status": 1}, session.chats, session.created_at)
    assert down(session)["summary"]["status"] == 8 | 32
    session = InternalSession(session.uri, {**session.state, "status": 1 | 64}, session.chats, session.created_at)
    assert down(session)["summary"]["status"] == 8 | 32 | 64


def test_a_call_paused_for_mcp_authentication_shows_running_and_in_progress():
    call = {"toolCallId": "c", "toolName": "s", "displayName": "S", "status": "auth-required", "invocationMessage": "m",
            "confirmed": "not-needed", "contributor": {"kind": "mcp", "customizationId": "x"}, "auth": {"reason": "required"}}
    active = {"id": "a", "startedAt": "1970-01-01T00:00:00.000Z", "message": _message(), "responseParts": [{"kind": "toolCall", "toolCall": call}]}
    shown = down(_session(status=24, activeTurn=active))
    assert shown["summary"]["status"] == 8
    assert shown["activeTurn"]["responseParts"][0]["toolCall"] == {
        "toolCallId": "c", "toolName": "s", "displayName": "S", "status": "running", "invocationMessage": "m", "confirmed": "not-needed",
    }


def test_timestamps_are_epoch_milliseconds_and_a_chatless_session_is_idle():
    session = _session()
    assert down(session)["summary"]["createdAt"] == 1000 and down(session)["summary"]["modifiedAt"] == 2000
    bare = InternalSession(session.uri, {k: v for k, v in session.state.items() if k != "defaultChat"} | {"status": 24 | 64}, {}, session.created_at)
    summary = down(bare)["summary"]
    assert summary["modifiedAt"] == 1000 and summary["status"] == 1 | 64 and down(bare)["turns"] == []


def test_answered_input_requests_and_error_parts_are_hidden():
    parts = [
        {"kind": "markdown", "id": "m", "content": "hi"},
        {"kind": "inputRequest", "request": {"id": "done"}, "response": "accept"},
        {"kind": "inputRequest", "request": {"id": "open"}},
        {"kind": "error", "error": {"errorType": "x", "message": "retrying"}, "resumable": True},
    ]
    active = {"id": "a", "startedAt": "1970-01-01T00:00:00.000Z", "message": _message(), "responseParts": parts}
    shown = down(_session(activeTurn=active))
    assert shown["activeTurn"]["responseParts"] == [{"kind": "markdown", "id": "m", "content": "hi"}]
    assert shown["inputRequests"] == [{"id": "open"}]


def test_only_a_final_error_part_is_the_turns_error():
    error = {"errorType": "x", "message": "boom"}
    resumed = {"id": "t", "message": _message(), "state": "complete",
               "responseParts": [{"kind": "error", "error": error, "resumable": True}, {"kind": "markdown", "id": "m", "content": "ok"}]}
    failed = {"id": "u", "message": _message(), "state": "error", "responseParts": [{"kind": "error", "error": error}]}
    turns = down(_session(turns=[resumed, failed]))["turns"]
    assert "error" not in turns[0] and turns[0]["responseParts"] == [{"kind": "markdown", "id": "m", "content": "ok"}]
    assert turns[1]["error"] == error and turns[1]["responseParts"] == []


def test_a_session_0_2_0_cannot_name_is_invisible():
    session = _session()
    assert session_down(InternalSession("urn:nothing", session.state, session.chats)) is None


def test_terminal_lifecycle_and_claims():
    internal = {"title": "sh", "content": [], "lifecycle": {"status": "exited", "exitCode": 3}, "isPty": True,
                "claim": {"kind": "session", "session": "p:/s", "chat": default_chat_uri("p:/s"), "turnId": "t"}}
    assert terminal_down(internal) == {"title": "sh", "content": [], "exitCode": 3,
                                       "claim": {"kind": "session", "session": "ahp-session:/s", "turnId": "t"}}
    assert terminal_down({**internal, "lifecycle": {"status": "exited"}}).get("exitCode") is None


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.internal_sessions())
def test_projection_never_raises_writes_no_none_and_ignores_chats_other_than_the_default(session):
    shown = session_down(session)
    assert shown is not None and strip_none(shown) == shown
    others = {uri: chat for uri, chat in session.chats.items() if uri != session.default_chat_uri}
    without_others = InternalSession(session.uri, session.state, {k: v for k, v in session.chats.items() if k not in others}, session.created_at)
    assert session_down(without_others) == shown


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.internal_sessions())
def test_lift_of_a_projection_projects_the_same(session):
    """``lift`` is not a left inverse (0.9.0 holds more), but what it builds shows the same."""
    shown = down(session)
    assert wire_equal(down(session_lift(shown)), shown)
    # and the internal reducers accept what lift builds
    lifted = session_lift(shown)
    assert reduce_internal("session", lifted.state, {"type": "session/titleChanged", "title": "x"}, 0)["title"] == "x"


def test_session_summaries_for_list_sessions_and_their_changes():
    session = _session()
    assert summary_down(session) == down(session)["summary"]
    started = apply_internal(session, session.default_chat_uri, {
        "type": "chat/turnStarted", "turnId": "t", "startedAt": "1970-01-01T00:00:03.000Z",
        "message": {"text": "x", "origin": {"kind": "user"}, "model": {"id": "m"}}})
    assert summary_changes(session, started) == {"modifiedAt": 3000, "model": {"id": "m"}, "status": 8}
    renamed = apply_internal(started, session.uri, {"type": "session/titleChanged", "title": "New"})
    assert summary_changes(started, renamed) == {"title": "New"}
    cleared = apply_internal(renamed, session.default_chat_uri, {"type": "chat/draftChanged", "draft": {"text": "", "origin": {"kind": "user"}}})
    assert summary_changes(renamed, cleared) == {"model": None}
    assert summary_changes(cleared, cleared) == {}
