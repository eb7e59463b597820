"""The dialects without a network: what a client of each version is told and shown."""

from __future__ import annotations

from typing import Any

import pytest

from ahp.dialects.catalogue import ACTION_INTRODUCED_IN, known_to
from ahp.dialects.negotiation import Negotiated
from ahp.state.channels import default_chat_uri
from host.errors import ErrorCode, RpcError
from host.state.store import Store
from host.transport.dialects import Ahp02Dialect, Ahp07Dialect, dialect_for, dialect_for_version
from host.transport.dialects.newer import NewerDialect

ROOT = "ahp-root://"
V09 = dialect_for(Negotiated("0.9.0", "0.9.0"))
V07 = dialect_for(Negotiated("0.7.0", "0.7.0"))
V02 = dialect_for(Negotiated("0.2.0", "0.2.0"))


def test_one_shared_dialect_per_version_each_its_own_translator() -> None:
    assert isinstance(V09, NewerDialect) and V09 is dialect_for(Negotiated("0.9.0", "0.9.0"))
    assert isinstance(V07, Ahp07Dialect) and isinstance(V02, Ahp02Dialect)
    assert dialect_for_version("0.9.0") is V09
    assert dialect_for_version("0.7.3").baseline == "0.7.0"
    assert dialect_for_version("0.4.0") is dialect_for(Negotiated("1.0.0", "1.0.0"))  # not served: the default, the newest served
    assert V02.translator is V02 and V09.translator is V09 and V07.translator is V07


@pytest.mark.parametrize("method", ["createSession", "disposeSession", "fetchTurns", "createChat", "disposeChat",
                                    "completions", "createTerminal", "invokeChangesetOperation", "resolveSessionConfig"])
def test_session_level_methods_are_served_to_0_9_0(method: str) -> None:
    assert V09.gate(method, True) is None
    assert V07.gate(method, True) is None


@pytest.mark.parametrize("method", ["ping", "listSessions", "subscribe", "resourceRead", "authenticate",
                                    "createResourceWatch", "listAutomationTriggerDefinitions", "runAutomation"])
def test_what_0_9_0_is_served_passes_the_gate(method: str) -> None:
    assert V09.gate(method, True) is None


def test_a_method_of_another_version_is_not_found_naming_the_version() -> None:
    for dialect, method in [(V07, "runAutomation"), (V02, "createChat"), (V02, "listAutomationTriggerDefinitions")]:
        refusal = dialect.gate(method, True)
        assert refusal is not None and refusal.code == ErrorCode.METHOD_NOT_FOUND
        assert f"AHP {dialect.version}" in refusal.message
    assert V09.gate("teleport", True) is None  # no version has it: the JSON-RPC layer's "Unknown method"


def test_params_are_checked_against_the_versions_shapes() -> None:
    with pytest.raises(RpcError) as error:
        V09.params("listSessions", {"channel": ROOT, "limit": "ten"})
    assert error.value.code == ErrorCode.INVALID_PARAMS
    assert error.value.message == "Invalid listSessions params: limit must be a number."
    assert V09.params("listSessions", {"channel": ROOT, "_meta": {"a": 1}}) == {"channel": ROOT, "_meta": {"a": 1}}


class _StoreHost:
    """Enough of ``host.service.AgentHost`` for a dialect's lift: a store with a root, a session
    ``p:/s`` and its default chat."""

    def __init__(self) -> None:
        self.store = Store({"agents": [], "activeSessions": 1}, clock=lambda: 5)
        self.session = "p:/s"
        self.chat = default_chat_uri(self.session)
        self.store.create(self.session, "session", {"provider": "p", "title": "t", "status": 1, "lifecycle": "ready",
                                                    "chats": [{"resource": self.chat, "title": "t", "status": 1}],
                                                    "defaultChat": self.chat, "activeClients": [],
                                                    "_meta": {"createdAt": "1970-01-01T00:00:00.000Z"}})
        self.store.create(self.chat, "chat", {"resource": self.chat, "title": "t", "status": 1,
                                              "modifiedAt": "1970-01-01T00:00:00.000Z", "turns": []})

    def session_uri(self, name: Any) -> str | None:
        return self.session if name in (self.session, "ahp-session:/s") else None

    def clock(self) -> int:
        return 1_000


@pytest.mark.parametrize(
    ("channel", "action", "expected"),
    [
        (ROOT, {"type": "session/turnStarted", "turnId": "t", "userMessage": {"text": "hi"}},
         ["AHP 0.2.0 action", "0.4.0", "chat/turnStarted"]),
        ("p:/s", {"type": "session/delta", "turnId": "t", "partId": "p", "content": "x"}, ["AHP 0.2.0 action"]),
        ("p:/s", {"type": "session/modelChanged", "model": {"id": "m"}}, ["AHP 0.2.0 action", "0.5.0"]),
        (ROOT, {"type": "canvas/stateChanged"}, ["came with AHP 0.10.0"]),
        (ROOT, {"type": "root/nonsense"}, ["Unknown action type 'root/nonsense'"]),
    ],
)
def test_a_dispatch_the_version_does_not_have_is_refused_with_a_reason(
        channel: str, action: dict[str, Any], expected: list[str]) -> None:
    lifted, reason = V09.lift(_StoreHost(), channel, action)
    assert lifted == [] and reason is not None
    for text in expected:
        assert text in reason


def test_a_0_9_0_dispatch_is_taken_as_it_is_and_a_0_7_0_one_lifted() -> None:
    host = _StoreHost()
    action = {"type": "root/configChanged", "config": {"telemetryLevel": "all"}}
    assert V09.lift(host, ROOT, action) == ([(ROOT, action)], None)
    toggled = {"type": "session/customizationToggled", "id": "x", "enabled": False}
    [(channel, lifted)], reason = V07.lift(host, "p:/s", toggled)
    assert reason is None and channel == "p:/s" and lifted["enablement"] == [{"kind": "session", "enabled": False}]


def test_a_0_2_0_dispatch_on_its_session_name_becomes_chat_actions_on_the_default_chat() -> None:
    host = _StoreHost()
    started = {"type": "session/turnStarted", "turnId": "t1", "userMessage": {"text": "hi"}}
    envelopes, reason = V02.lift(host, "ahp-session:/s", started)
    assert reason is None
    [(channel, action)] = envelopes
    assert channel == host.chat and action["type"] == "chat/turnStarted"
    assert action["message"]["text"] == "hi" and action["message"]["origin"] == {"kind": "user"}
    refused, why = V02.lift(host, "ahp-session:/s", {"type": "session/turnCancelled", "turnId": "none"})
    assert refused == [] and "nothing to cancel" in why


def test_a_0_2_0_connection_is_told_a_newer_action_is_not_part_of_its_version() -> None:
    lifted, reason = V02.lift(_StoreHost(), "ahp-session:/s", {"type": "chat/turnStarted"})
    assert lifted == [] and "0.4.0" in reason and "0.2.0" in reason


def test_outgoing_envelopes_only_carry_what_the_version_knows() -> None:
    for action_type in ACTION_INTRODUCED_IN:
        kind = action_type.split("/")[0]
        envelope = {"channel": "x", "action": {"type": action_type}, "serverSeq": 1}
        for dialect in (V07, V09):
            shown = dialect.envelope(kind, envelope, None)
            if shown is not None:
                assert known_to(dialect.version, shown["action"]["type"]), (dialect, action_type)
        if known_to("0.9.0", action_type):
            assert V09.envelope(kind, envelope, None) is envelope  # the identity: the shared frame


def test_a_0_2_0_client_sees_a_token_of_the_default_chat_on_its_session_name_without_reading_state() -> None:
    chat = default_chat_uri("p:/s")
    token = {"type": "chat/delta", "turnId": "t", "partId": "x", "content": "hi"}
    assert not V02.wants_states("chat", token)
    shown = V02.envelope("chat", {"channel": chat, "action": token, "serverSeq": 9, "origin": {"clientId": "c", "clientSeq": 1}}, None)
    assert shown == {"channel": "ahp-session:/s", "action": {"type": "session/delta", "turnId": "t", "partId": "x", "content": "hi"},
                     "serverSeq": 9, "origin": {"clientId": "c", "clientSeq": 1}}
    other = "ahp-chat://side/" + chat.rsplit("/", 1)[1]
    assert V02.envelope("chat", {"channel": other, "action": token, "serverSeq": 9}, None) is None


def test_notifications_in_the_newer_shapes() -> None:
    summary = {"resource": "p:/s", "provider": "p", "title": "t", "status": 1, "createdAt": "1970-01-01T00:00:00.000Z",
               "modifiedAt": "1970-01-01T00:00:00.000Z", "chats": [], "defaultChat": default_chat_uri("p:/s")}
    added = {"channel": ROOT, "summary": summary}
    assert V09.notification("root", "root/sessionAdded", added) is added
    shown = V07.notification("root", "root/sessionAdded", added)
    assert shown is not None and "chats" not in shown["summary"] and "defaultChat" not in shown["summary"]
    assert V09.notification("root", "channel/opened", {}) is None


def test_0_2_0_notifications_name_sessions_as_0_2_0_does() -> None:
    host = _StoreHost()
    removed = V02.notification("root", "root/sessionRemoved", {"channel": ROOT, "session": "p:/s"}, host.store)
    assert removed == {"channel": ROOT, "session": "ahp-session:/s"}
    added = V02.notification("root", "root/sessionAdded", {"channel": ROOT, "summary": {"resource": "p:/s"}}, host.store)
    assert added is not None and added["summary"]["resource"] == "ahp-session:/s" and added["summary"]["createdAt"] == 0
    assert V02.notification("root", "root/progress", {}, host.store) is None


class _Host:
    def page_sessions(self, limit: int, after: Any = None) -> Any:
        keys = [(-3, "a"), (-2, "b"), (-1, "c")]
        start = 0 if after is None else next(i for i, k in enumerate(keys) if k > tuple(after))
        page = keys[start:start + limit]
        return [{"resource": k[1], "provider": "p", "title": k[1], "status": 1, "createdAt": 0, "modifiedAt": -k[0]}
                for k in page], (page[-1] if start + limit < len(keys) else None)

    def listing_meta(self, uri: str) -> dict[str, Any]:
        return {"firstMessage": f"about {uri}"} if uri == "b" else {}


def test_list_sessions_pages_with_an_opaque_cursor() -> None:
    first = V09.list_sessions(_Host(), {"channel": ROOT, "limit": 2})
    assert [item["resource"] for item in first["items"]] == ["a", "b"]
    assert "_meta" not in first["items"][0] and first["items"][1]["_meta"] == {"firstMessage": "about b"}
    second = V09.list_sessions(_Host(), {"channel": ROOT, "limit": 2, "cursor": first["nextCursor"]})
    assert [item["resource"] for item in second["items"]] == ["c"] and "nextCursor" not in second


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 1.5}, {"limit": -3}, {"cursor": "not-ours"}, {"cursor": "W10"}])
def test_a_bad_limit_or_cursor_is_invalid_params(params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as error:
        V09.list_sessions(_Host(), {"channel": ROOT, **params})
    assert error.value.code == ErrorCode.INVALID_PARAMS
    assert ("limit" in params and "limit" in error.value.message) or "cursor" in error.value.message


def test_a_replay_holding_a_change_an_older_version_may_not_say_is_answered_with_snapshots() -> None:
    host = _StoreHost()

    def envelope(channel: str, action: dict[str, Any], seq: int) -> dict[str, Any]:
        return {"channel": channel, "action": action, "serverSeq": seq}

    title = envelope(host.session, {"type": "session/titleChanged", "title": "u"}, 1)
    read = envelope(host.chat, {"type": "chat/isReadChanged", "isRead": True}, 2)
    moved = envelope(host.session, {"type": "session/workingDirectoryReplaced", "directory": "file:///a",
                                    "replacement": "file:///b"}, 3)
    assert V07.replayed(host, [title]) == [title]
    assert V07.replayed(host, [title, read]) is None  # the states it would need are gone: snapshots
    assert V07.replayed(host, [title, moved]) is None
    assert V09.replayed(host, [title, read, moved]) == [title, read, moved]
    assert V02.replayed(host, [title]) not in (None, [])
    assert V02.replayed(host, [title, moved]) is None
