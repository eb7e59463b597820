"""tests/wire.py: FrameValidator accepts conformant host frames and names what is wrong."""

from __future__ import annotations

import json
import time

import pytest

from tests.wire import FrameValidator

SESSION = "ahp-session:/5b0c6f1e"


@pytest.fixture(scope="module")
def validator() -> FrameValidator:
    return FrameValidator()


def _response(result, id_=1):
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def _action(action, seq=1, **extra):
    return {
        "jsonrpc": "2.0",
        "method": "action",
        "params": {"channel": SESSION, "serverSeq": seq, "action": action, **extra},
    }


INITIALIZE_RESULT = {
    "protocolVersion": "0.2.0",
    "serverSeq": 0,
    "snapshots": [
        {
            "resource": "ahp-root://",
            "fromSeq": 0,
            "state": {"agents": [{"provider": "scripted", "displayName": "Scripted",
                                  "description": "test agent", "models": []}]},
        }
    ],
    "completionTriggerCharacters": ["@"],
}


@pytest.mark.parametrize(
    ("frame", "method"),
    [
        (_response(INITIALIZE_RESULT), "initialize"),
        (_response(None), "ping"),
        (_response(None), "createSession"),
        (_response({}), "subscribe"),
        (_response({"items": []}), "listSessions"),
        (_response({"type": "replay", "actions": [], "missing": []}), "reconnect"),
        (_response({"type": "snapshot", "snapshots": []}), "reconnect"),
        (_response({"turns": [], "hasMore": False}), "fetchTurns"),
        ({"jsonrpc": "2.0", "id": 4, "error": {"code": -32001, "message": "Session not found"}}, "subscribe"),
        ({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}, None),
        (_action({"type": "session/delta", "turnId": "t1", "partId": "p1", "content": "Hel"}), None),
        (_action({"type": "session/activeClientChanged", "activeClient": None}), None),
        (_action({"type": "session/toolCallConfirmed", "turnId": "t", "toolCallId": "c",
                  "approved": False, "reason": "denied"},
                 origin={"clientId": "client-1", "clientSeq": 2}, rejectionReason="not pending"), None),
        ({"jsonrpc": "2.0", "method": "root/sessionRemoved",
          "params": {"channel": "ahp-root://", "session": SESSION}}, None),
        ({"jsonrpc": "2.0", "method": "auth/required",
          "params": {"channel": "ahp-root://", "resource": "https://api.example", "reason": "expired"}}, None),
        ({"jsonrpc": "2.0", "id": 9, "method": "resourceRead",
          "params": {"channel": "ahp-root://", "uri": "virtual://plugin/x.md"}}, None),
    ],
    ids=[
        "initialize-result", "ping-null", "createSession-null", "subscribe-empty", "listSessions",
        "reconnect-replay", "reconnect-snapshot", "fetchTurns", "error", "parse-error-null-id",
        "action-delta", "action-active-client-released", "rejection-echo", "sessionRemoved",
        "auth-required", "host-request-resourceRead",
    ],
)
def test_valid_host_frames_pass(validator, frame, method):
    validator.check_server_frame(frame, answered_method=method)


def _assert_rejected(validator, frame, method=None, *fragments):
    with pytest.raises(AssertionError) as raised:
        validator.check_server_frame(frame, answered_method=method)
    message = str(raised.value)
    for fragment in fragments:
        assert fragment in message, message
    return message


def test_result_of_the_wrong_shape_names_method_definition_and_path(validator):
    broken = json.loads(json.dumps(INITIALIZE_RESULT))
    broken["snapshots"][0]["fromSeq"] = "zero"
    _assert_rejected(validator, _response(broken), "initialize",
                     "initialize result", "InitializeResult", "['snapshots'][0]['fromSeq']")


def test_null_result_method_must_answer_null(validator):
    _assert_rejected(validator, _response({}), "ping", "ping result must be null")


def test_result_for_a_union_result_reports_every_branch(validator):
    _assert_rejected(validator, _response({"type": "later"}), "reconnect",
                     "ReconnectReplayResult", "ReconnectSnapshotResult")


def test_bad_action_names_the_action_definition_and_field(validator):
    frame = _action({"type": "session/delta", "turnId": "t1", "partId": "p1", "content": 5})
    _assert_rejected(validator, frame, None, "SessionDeltaAction", "['action']['content']")


def test_unknown_action_type_is_rejected(validator):
    _assert_rejected(validator, _action({"type": "session/diffsChanged"}), None, "session/diffsChanged")


def test_envelope_without_server_seq_is_rejected(validator):
    frame = _action({"type": "session/ready"})
    del frame["params"]["serverSeq"]
    _assert_rejected(validator, frame, None, "ActionEnvelope", "serverSeq")


def test_null_optional_field_is_rejected(validator):
    # Absent means undefined; a null in a non-nullable key is not valid AHP.
    _assert_rejected(validator, _action({"type": "session/ready"}, origin=None), None,
                     "ActionEnvelope", "origin")


@pytest.mark.parametrize(
    ("frame", "fragment"),
    [
        ({"id": 1, "result": None}, "jsonrpc"),
        ({"jsonrpc": "1.0", "id": 1, "result": None}, "jsonrpc"),
        ({"jsonrpc": "2.0", "id": 1}, "neither"),
        ({"jsonrpc": "2.0", "id": 1, "result": None, "error": {"code": 1, "message": "x"}}, "exactly one"),
        ({"jsonrpc": "2.0", "result": None}, "'id'"),
        ({"jsonrpc": "2.0", "id": True, "result": None}, "id"),
        ({"jsonrpc": "2.0", "id": 1, "result": None, "extra": 1}, "unknown top-level keys"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": "-32600", "message": "bad"}}, "integer"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32600}}, "message"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message":
            'Traceback (most recent call last):\n  File "host/x.py", line 3, in f'}}, "traceback"),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error",
            "data": {"detail": 'File "/srv/host/transport/rpc.py", line 88, in handle'}}}, "traceback"),
        ({"jsonrpc": "2.0", "method": "dispatchAction", "params": {}}, "client->host only"),
        ({"jsonrpc": "2.0", "method": "session/toolStart", "params": {}}, "unknown method"),
        ({"jsonrpc": "2.0", "id": 3, "method": "action", "params": {}}, "must not carry an id"),
        ({"jsonrpc": "2.0", "method": "resourceRead",
          "params": {"channel": "ahp-root://", "uri": "x"}}, "must carry an id"),
        ({"jsonrpc": "2.0", "method": "root/sessionRemoved"}, "params"),
        ([], "JSON object"),
    ],
)
def test_malformed_envelopes_are_rejected(validator, frame, fragment):
    _assert_rejected(validator, frame, None, fragment)


def test_check_server_text_parses_and_rejects_batches_and_nan(validator):
    frame = validator.check_server_text('{"jsonrpc":"2.0","id":1,"result":null}', answered_method="ping")
    assert frame["result"] is None
    with pytest.raises(AssertionError, match="JSON object"):
        validator.check_server_text('[{"jsonrpc":"2.0","id":1,"result":null}]')
    with pytest.raises(AssertionError, match="NaN"):
        validator.check_server_text('{"jsonrpc":"2.0","id":1,"result":{"x":NaN}}')
    with pytest.raises(AssertionError, match="not valid JSON"):
        validator.check_server_text("{")


def test_validating_thousands_of_frames_is_fast(validator):
    frame = _action({"type": "session/delta", "turnId": "t1", "partId": "p1", "content": "x"})
    validator.check_server_frame(frame)  # warm the compiled-validator cache
    start = time.perf_counter()
    for seq in range(2000):
        frame["params"]["serverSeq"] = seq
        validator.check_server_frame(frame)
    # Generous bound: a compiled validator checks a delta in well under a millisecond.
    assert time.perf_counter() - start < 10


def _vector_actions():
    from ahp.dialects.v0_2.wire import ACTIONS
    from ahp.dialects.v0_2.wire.schema import REDUCER_CASES_DIR

    for path in sorted(REDUCER_CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        for index, action in enumerate(case["actions"]):
            if action["type"] in ACTIONS:
                yield pytest.param(action, id=f"{case['description']}#{index}")


@pytest.mark.parametrize("action", list(_vector_actions()))
def test_reducer_vector_actions_pass_as_host_frames(validator, action):
    # Nulls other than activeClient mean "clear" in the vectors and are absent on the wire.
    payload = {k: v for k, v in action.items() if v is not None or k == "activeClient"}
    validator.check_server_frame(_action(payload, seq=12))


def test_action_params_without_an_action_object_are_rejected(validator):
    frame = {"jsonrpc": "2.0", "method": "action", "params": {"channel": SESSION, "serverSeq": 1}}
    _assert_rejected(validator, frame, None, "'action' object")


def test_rejection_echoes_the_client_action_verbatim_even_when_malformed(validator):
    origin = {"clientId": "client-1", "clientSeq": 4}
    for echoed in ({"type": "session/notAThing"}, {"type": "session/titleChanged"}):
        validator.check_server_frame(_action(echoed, origin=origin, rejectionReason="Unknown action type."))


def test_rejection_needs_origin_and_a_readable_reason(validator):
    action = {"type": "session/notAThing"}
    _assert_rejected(validator, _action(action, rejectionReason="nope"), None, "origin")
    origin = {"clientId": "c", "clientSeq": 1}
    _assert_rejected(validator, _action(action, origin=origin, rejectionReason=""), None, "rejectionReason")
    _assert_rejected(
        validator,
        _action(action, origin=origin, rejectionReason='Traceback (most recent call last):\n  File "x.py", line 1, in f'),
        None,
        "traceback",
    )
