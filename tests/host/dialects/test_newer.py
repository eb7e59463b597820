"""The 0.7.0 / 0.9.0 dialect on today's store, without a network: what such a client is told."""

from __future__ import annotations

from typing import Any

import pytest

from ahp.dialects.negotiation import Negotiated
from ahp.dialects.registry import ACTION_INTRODUCED_IN, action_known
from host.dialects import NOT_SERVED_YET, dialect_for, dialect_for_version
from host.dialects.newer import NewerDialect
from host.errors import ErrorCode, RpcError

ROOT = "ahp-root://"
V09 = dialect_for(Negotiated("0.9.0", "0.9.0"))
V07 = dialect_for(Negotiated("0.7.0", "0.7.0"))
V02 = dialect_for(Negotiated("0.2.0", "0.2.0"))


def test_one_shared_dialect_per_version_and_a_translator_only_where_shapes_differ() -> None:
    assert isinstance(V09, NewerDialect) and V09 is dialect_for(Negotiated("0.9.0", "0.9.0"))
    assert dialect_for_version("0.9.0") is V09
    assert dialect_for_version("0.7.3").baseline == "0.7.0"
    assert dialect_for_version("0.4.0") is V02  # not served: a reconnecting client is taken to speak 0.2.0
    assert V02.translator is None
    assert V09.translator is V09 and V07.translator is V07


@pytest.mark.parametrize("method", ["createSession", "disposeSession", "fetchTurns", "createChat", "disposeChat",
                                    "completions", "createTerminal", "invokeChangesetOperation", "resolveSessionConfig"])
def test_session_level_methods_get_an_honest_not_served_yet(method: str) -> None:
    refusal = V09.gate(method, True)
    assert refusal is not None and refusal.code == NOT_SERVED_YET != ErrorCode.METHOD_NOT_FOUND
    assert "does not serve" in refusal.message and "0.9.0" in refusal.message
    assert refusal.data["protocolVersion"] == "0.9.0"


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


@pytest.mark.parametrize(
    ("kind", "action", "expected"),
    [
        ("root", {"type": "session/turnStarted", "turnId": "t", "userMessage": {"text": "hi"}},
         ["AHP 0.2.0 action", "0.4.0", "chat/turnStarted"]),
        ("session", {"type": "session/delta", "turnId": "t", "partId": "p", "content": "x"}, ["AHP 0.2.0 action"]),
        ("session", {"type": "session/modelChanged", "model": {"id": "m"}}, ["AHP 0.2.0 action", "0.5.0"]),
        ("session", {"type": "session/titleChanged", "title": "t"}, ["does not serve sessions"]),
        ("root", {"type": "chat/turnStarted", "turnId": "t"}, ["does not serve chats"]),
        ("root", {"type": "canvas/stateChanged"}, ["came with AHP 0.10.0"]),
        ("root", {"type": "root/nonsense"}, ["Unknown action type 'root/nonsense'"]),
    ],
)
def test_a_dispatch_the_version_or_this_build_cannot_take_is_refused_with_a_reason(
        kind: str, action: dict[str, Any], expected: list[str]) -> None:
    lifted, reason = V09.lift(kind, action)
    assert lifted is None and reason is not None
    for text in expected:
        assert text in reason


def test_a_root_config_change_is_lifted_unchanged() -> None:
    action = {"type": "root/configChanged", "config": {"telemetryLevel": "all"}}
    assert V09.lift("root", action) == (action, None)
    assert V02.lift("root", action) == (action, None)


def test_a_0_2_0_connection_is_told_a_newer_action_is_not_part_of_its_version() -> None:
    lifted, reason = V02.lift("session", {"type": "chat/turnStarted"})
    assert lifted is None and "0.4.0" in reason and "0.2.0" in reason


def test_outgoing_envelopes_only_carry_what_the_version_knows() -> None:
    for action_type in ACTION_INTRODUCED_IN:
        if not action_known(action_type, "0.2.0"):
            continue  # the store holds 0.2.0 actions only, for now
        kind = {"root": "root", "resourceWatch": "resourceWatch"}.get(action_type.split("/")[0], action_type.split("/")[0])
        envelope = {"channel": "x", "action": {"type": action_type}, "serverSeq": 1}
        for dialect in (V07, V09):
            shown = dialect.envelope(kind, envelope)
            if shown is not None:
                assert action_known(shown["action"]["type"], dialect.version), (dialect, action_type)
                assert kind in ("root", "resourceWatch")


def test_notifications_in_the_newer_shape() -> None:
    summary = {"resource": "ahp-session:/s", "provider": "p", "title": "t", "status": 1, "createdAt": 0, "modifiedAt": 0,
               "model": {"id": "m"}}
    added = V09.notification("root", "root/sessionAdded", {"channel": ROOT, "summary": summary})
    assert added == {"channel": ROOT, "summary": {"resource": "ahp-session:/s", "provider": "p", "title": "t", "status": 1,
                                                 "createdAt": "1970-01-01T00:00:00.000Z",
                                                 "modifiedAt": "1970-01-01T00:00:00.000Z"}}
    removed = {"channel": ROOT, "session": "ahp-session:/s"}
    assert V09.notification("root", "root/sessionRemoved", removed) is removed
    assert V09.notification("root", "root/sessionSummaryChanged",
                            {"channel": ROOT, "session": "s", "changes": {"model": {"id": "m"}}}) is None
    assert V09.notification("root", "channel/opened", {}) is None


class _Host:
    def page_sessions(self, limit: int, after: Any = None) -> Any:
        keys = [(-3, "a"), (-2, "b"), (-1, "c")]
        start = 0 if after is None else next(i for i, k in enumerate(keys) if k > tuple(after))
        page = keys[start:start + limit]
        return [{"resource": k[1], "provider": "p", "title": k[1], "status": 1, "createdAt": 0, "modifiedAt": -k[0]}
                for k in page], (page[-1] if start + limit < len(keys) else None)


def test_list_sessions_pages_with_an_opaque_cursor() -> None:
    first = V09.list_sessions(_Host(), {"channel": ROOT, "limit": 2})
    assert [item["resource"] for item in first["items"]] == ["a", "b"]
    second = V09.list_sessions(_Host(), {"channel": ROOT, "limit": 2, "cursor": first["nextCursor"]})
    assert [item["resource"] for item in second["items"]] == ["c"] and "nextCursor" not in second


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 1.5}, {"limit": -3}, {"cursor": "not-ours"}, {"cursor": "W10"}])
def test_a_bad_limit_or_cursor_is_invalid_params(params: dict[str, Any]) -> None:
    with pytest.raises(RpcError) as error:
        V09.list_sessions(_Host(), {"channel": ROOT, **params})
    assert error.value.code == ErrorCode.INVALID_PARAMS
    assert ("limit" in params and "limit" in error.value.message) or "cursor" in error.value.message
