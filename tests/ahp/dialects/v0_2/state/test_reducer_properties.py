"""Properties every reducer must keep, plus the subtle behaviours PROTOCOL.md §13 lists.

Random inputs mix realistic material (initial states and actions from the differential corpus,
whose ids line up) with arbitrary JSON in every action field, so both the state machine corners
and malformed wire input are exercised.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ahp.dialects.v0_2.state import (
    ACTION_TYPES,
    CHANNEL_KINDS,
    SessionStatus,
    channel_kind,
    reduce,
    reduce_changeset,
    reduce_resource_watch,
    reduce_root,
    reduce_session,
    reduce_terminal,
)

from ._support import contains_none, load_differential_cases, strip_none

CASES = load_differential_cases()
CORPUS_STATES = {kind: [case["initial"] for case in CASES if case["kind"] == kind] for kind in CHANNEL_KINDS}
CORPUS_ACTIONS = {
    kind: [action for case in CASES if case["kind"] == kind for action in case["actions"]] for kind in CHANNEL_KINDS
}
FIELD_NAMES = sorted({key for actions in CORPUS_ACTIONS.values() for action in actions for key in action} - {"type"})
FIELD_NAMES += ["part", "userMessage", "queuedMessageId", "order", "kind", "id", "request", "answer", "questionId"]

PROPERTY_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
json_scalars |= st.sampled_from(["", "t1", "tc1", "p1", "md-1", "r1", "q1", "steering", "queued", "error"])
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(FIELD_NAMES), inner, max_size=4),
    max_leaves=8,
)


@st.composite
def channel_inputs(draw, *, clean_state: bool = False):
    """A channel kind, a state of that kind and a sequence of (possibly malformed) actions.

    The sequence starts from a differential case (whose ids match its state) and splices in
    actions from other cases and synthetic actions carrying arbitrary JSON in any field.
    """
    case = draw(st.sampled_from(CASES))
    kind, state = case["kind"], case["initial"]
    if clean_state:
        state = strip_none(state)
    borrowed = st.sampled_from(CORPUS_ACTIONS[kind])
    synthetic = st.builds(
        lambda action_type, fields: {"type": action_type, **fields},
        st.sampled_from(sorted(ACTION_TYPES[kind])),
        st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=5),
    )
    actions = list(case["actions"])
    for _ in range(draw(st.integers(0, 6))):
        position = draw(st.integers(0, len(actions)))
        actions.insert(position, draw(borrowed | synthetic))
    return kind, state, actions


@PROPERTY_SETTINGS
@given(channel_inputs())
def test_folding_never_raises_and_never_mutates_inputs(inputs):
    kind, state, actions = inputs
    state_before, actions_before = repr(copy.deepcopy(state)), repr(copy.deepcopy(actions))
    current = state
    for action in actions:
        current = reduce(kind, current, action, 12345)
        assert isinstance(current, dict)
    assert repr(state) == state_before
    assert repr(actions) == actions_before


@PROPERTY_SETTINGS
@given(channel_inputs(clean_state=True))
def test_reducers_never_write_none_into_state(inputs):
    kind, state, actions = inputs
    for action in actions:
        state = reduce(kind, state, action, 12345)
        assert not contains_none(state), action


@PROPERTY_SETTINGS
@given(
    st.sampled_from(CHANNEL_KINDS).flatmap(lambda kind: st.tuples(st.just(kind), st.sampled_from(CORPUS_STATES[kind]))),
    st.text(max_size=30),
    st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=4),
)
def test_unknown_action_types_return_the_state_unchanged(kind_and_state, action_type, fields):
    kind, state = kind_and_state
    known = set().union(*ACTION_TYPES.values())
    action = {**fields, "type": action_type if action_type not in known else action_type + "/x"}
    assert reduce(kind, state, action, 1) is state


@PROPERTY_SETTINGS
@given(st.sampled_from(CHANNEL_KINDS), json_values)
def test_non_dict_actions_and_states_are_no_ops(kind, junk):
    state = CORPUS_STATES[kind][0]
    assert reduce(kind, state, junk, 1) is state or isinstance(junk, dict)
    assert reduce(kind, junk, {"type": "session/titleChanged", "title": "x"}, 1) is junk or isinstance(junk, dict)


# ─── Helpers for the example tests ──────────────────────────────────────────────


def session(**fields):
    """A ready, idle session state with the given top-level fields added."""
    state = {
        "summary": {
            "resource": "ahp-session:/s",
            "provider": "scripted",
            "title": "T",
            "status": int(SessionStatus.Idle),
            "createdAt": 1,
            "modifiedAt": 2,
        },
        "lifecycle": "ready",
        "turns": [],
    }
    state.update(fields)
    return state


def active_turn(*parts, turn_id="t1"):
    return {"id": turn_id, "userMessage": {"text": "hi"}, "responseParts": list(parts)}


def tool_part(status, **fields):
    call = {"toolCallId": "tc1", "toolName": "shell", "displayName": "Shell", "status": status}
    call.update(fields)
    return {"kind": "toolCall", "toolCall": call}


def activity(state):
    return state["summary"]["status"] & 31


def run_session(state, *actions, now=5000):
    for action in actions:
        state = reduce_session(state, action, now)
    return state


# ─── Channel routing and the public surface ─────────────────────────────────────


def test_channel_kind_maps_each_uri_scheme_to_its_reducer():
    assert channel_kind("ahp-root://") == "root"
    assert channel_kind("ahp-session:/0b6c") == "session"
    assert channel_kind("ahp-terminal:/7") == "terminal"
    assert channel_kind("ahp-changeset:/s/t1") == "changeset"
    assert channel_kind("ahp-resource-watch:/w1") == "resourceWatch"
    assert channel_kind("ahp-otlp://logs") is None
    assert channel_kind("copilot:/test-session") is None
    assert channel_kind("ahp-session:/") is None
    assert channel_kind(None) is None


def test_session_status_bits_match_the_protocol():
    assert (SessionStatus.Idle, SessionStatus.Error, SessionStatus.InProgress) == (1, 2, 8)
    assert (SessionStatus.InputNeeded, SessionStatus.IsRead, SessionStatus.IsArchived) == (24, 32, 64)
    assert SessionStatus.InputNeeded & SessionStatus.InProgress  # waiting for input is still in progress


def test_reduce_routes_by_kind_and_ignores_unknown_kinds():
    state = {"agents": []}
    action = {"type": "root/agentsChanged", "agents": [{"provider": "p"}]}
    assert reduce("root", state, action, 1) == reduce_root(state, action) == {"agents": [{"provider": "p"}]}
    assert reduce("nonsense", state, action, 1) is state
    assert reduce("session", state, action, 1) is state  # a root action means nothing to a session


def test_resource_watch_state_never_changes():
    state = {"root": "file:///w", "recursive": True}
    changed = {"type": "resourceWatch/changed", "changes": {"items": [{"uri": "file:///w/a", "type": "added"}]}}
    assert reduce_resource_watch(state, changed) is state


# ─── Structural sharing: streaming must not copy the session ────────────────────


def test_delta_copies_only_the_path_it_changes():
    old_turn = {"id": "t0", "userMessage": {"text": "a"}, "responseParts": [], "state": "complete"}
    untouched = {"kind": "markdown", "id": "p0", "content": "x"}
    state = session(turns=[old_turn], activeTurn=active_turn(untouched, {"kind": "markdown", "id": "p1", "content": ""}))
    after = reduce_session(state, {"type": "session/delta", "turnId": "t1", "partId": "p1", "content": "hi"}, 9)
    assert after["activeTurn"]["responseParts"][1]["content"] == "hi"
    assert after["turns"] is state["turns"]
    assert after["summary"] is state["summary"]
    assert after["activeTurn"]["userMessage"] is state["activeTurn"]["userMessage"]
    assert after["activeTurn"]["responseParts"][0] is untouched
    assert state["activeTurn"]["responseParts"][1]["content"] == ""


# ─── PROTOCOL.md §13 behaviours ─────────────────────────────────────────────────


def test_empty_lists_count_as_present():
    state = session()
    catalogue = reduce_session(state, {"type": "session/changesetsChanged", "changesets": []}, 1)
    assert catalogue["summary"]["changesets"] == []
    removed = reduce_session(catalogue, {"type": "session/changesetsChanged", "changesets": None}, 1)
    assert "changesets" not in removed["summary"]

    running = session(activeTurn=active_turn(tool_part("streaming")))
    ready = reduce_session(
        running,
        {"type": "session/toolCallReady", "turnId": "t1", "toolCallId": "tc1", "invocationMessage": "m", "options": []},
        1,
    )
    assert ready["activeTurn"]["responseParts"][0]["toolCall"]["options"] == []


def test_queued_messages_reordered_ignores_duplicates_and_unknown_ids():
    queue = [{"id": i, "userMessage": {"text": i}} for i in ("a", "b", "c", "d")]
    state = session(queuedMessages=queue)
    after = reduce_session(state, {"type": "session/queuedMessagesReordered", "order": ["c", "x", "c", "a"]}, 1)
    assert [m["id"] for m in after["queuedMessages"]] == ["c", "a", "b", "d"]
    assert reduce_session(session(), {"type": "session/queuedMessagesReordered", "order": ["a"]}, 1) == session()


def test_confirmation_actions_recompute_status_even_as_no_ops():
    # The stored status is stale (Idle while a turn runs); a no-op tool-call action repairs it.
    state = session(activeTurn=active_turn(tool_part("running", invocationMessage="m", confirmed="not-needed")))
    for action_type in (
        "session/toolCallReady",
        "session/toolCallConfirmed",
        "session/toolCallComplete",
        "session/toolCallResultConfirmed",
    ):
        after = reduce_session(state, {"type": action_type, "turnId": "other", "toolCallId": "tc1"}, 1)
        assert activity(after) == SessionStatus.InProgress, action_type
        assert after["activeTurn"] == state["activeTurn"]


def test_content_changed_does_not_recompute_status():
    state = session(activeTurn=active_turn(tool_part("running", invocationMessage="m", confirmed="not-needed")))
    after = reduce_session(
        state, {"type": "session/toolCallContentChanged", "turnId": "t1", "toolCallId": "tc1", "content": []}, 1
    )
    assert after["activeTurn"]["responseParts"][0]["toolCall"]["content"] == []
    assert activity(after) == SessionStatus.Idle


def test_tool_call_complete_spreads_result_last_and_drops_running_content():
    running = tool_part(
        "running", invocationMessage="m", confirmed="user-action", content=[{"type": "text", "text": "partial"}]
    )
    state = session(activeTurn=active_turn(running), summary={**session()["summary"], "status": 8})
    result = {"success": True, "pastTenseMessage": "Ran", "confirmed": "setting"}
    after = reduce_session(
        state, {"type": "session/toolCallComplete", "turnId": "t1", "toolCallId": "tc1", "result": result}, 1
    )
    call = after["activeTurn"]["responseParts"][0]["toolCall"]
    assert call["status"] == "completed"
    assert call["confirmed"] == "setting"  # the result's key wins over the running call's
    assert "content" not in call
    with_content = {**result, "content": [{"type": "text", "text": "final"}]}
    after = reduce_session(
        state, {"type": "session/toolCallComplete", "turnId": "t1", "toolCallId": "tc1", "result": with_content}, 1
    )
    assert after["activeTurn"]["responseParts"][0]["toolCall"]["content"] == [{"type": "text", "text": "final"}]


def test_ready_never_touches_status():
    state = session(lifecycle="creating", activeTurn=active_turn(), summary={**session()["summary"], "status": 8 | 32})
    after = reduce_session(state, {"type": "session/ready"}, 1)
    assert after["lifecycle"] == "ready"
    assert after["summary"] is state["summary"]


def test_truncated_resets_error_to_idle():
    failed = run_session(
        session(activeTurn=active_turn()),
        {"type": "session/error", "turnId": "t1", "error": {"errorType": "x", "message": "boom"}},
    )
    assert activity(failed) == SessionStatus.Error
    truncated = run_session(failed, {"type": "session/truncated"}, now=7000)
    assert truncated["turns"] == []
    assert activity(truncated) == SessionStatus.Idle
    assert truncated["summary"]["modifiedAt"] == 7000


def test_open_input_requests_mean_input_needed_even_without_a_turn():
    request = {"id": "r1", "message": "Which?"}
    state = run_session(session(), {"type": "session/inputRequested", "request": request})
    assert "activeTurn" not in state
    assert activity(state) == SessionStatus.InputNeeded
    started = run_session(state, {"type": "session/turnStarted", "turnId": "t1", "userMessage": {"text": "go"}})
    assert started["inputRequests"] == [request]
    assert activity(started) == SessionStatus.InputNeeded
    done = run_session(started, {"type": "session/inputCompleted", "requestId": "r1", "response": "accept"})
    assert "inputRequests" not in done
    assert activity(done) == SessionStatus.InProgress


def test_is_read_leaves_modified_at_and_answers_leave_status():
    state = session(inputRequests=[{"id": "r1"}], summary={**session()["summary"], "status": 24})
    read = reduce_session(state, {"type": "session/isReadChanged", "isRead": True}, 777)
    assert read["summary"]["status"] == 24 | 32
    assert read["summary"]["modifiedAt"] == 2
    answered = reduce_session(
        read,
        {
            "type": "session/inputAnswerChanged",
            "requestId": "r1",
            "questionId": "q1",
            "answer": {"state": "draft", "value": {"kind": "text", "value": "a"}},
        },
        888,
    )
    assert answered["summary"]["modifiedAt"] == 888
    assert answered["summary"]["status"] == 24 | 32
    cleared = reduce_session(
        answered, {"type": "session/inputAnswerChanged", "requestId": "r1", "questionId": "q1"}, 999
    )
    assert "answers" not in cleared["inputRequests"][0]


def test_pending_message_with_any_other_kind_is_queued():
    message = {"type": "session/pendingMessageSet", "kind": "later", "id": "m1", "userMessage": {"text": "x"}}
    after = reduce_session(session(), message, 1)
    assert after["queuedMessages"] == [{"id": "m1", "userMessage": {"text": "x"}}]
    assert "steeringMessage" not in after
    steering = reduce_session(session(), {**message, "kind": "steering"}, 1)
    assert steering["steeringMessage"]["id"] == "m1"


def test_config_changed_with_replace_and_no_config_empties_values():
    config = {"schema": {"type": "object", "properties": {}}, "values": {"a": "1"}}
    root = reduce_root({"agents": [], "config": config}, {"type": "root/configChanged", "replace": True})
    assert root["config"]["values"] == {}
    sess = reduce_session(session(config=config), {"type": "session/configChanged", "replace": True}, 4242)
    assert sess["config"]["values"] == {}
    assert sess["summary"]["modifiedAt"] == 4242
    merged = reduce_session(session(config=config), {"type": "session/configChanged", "config": {"b": "2"}}, 1)
    assert merged["config"]["values"] == {"a": "1", "b": "2"}
    assert reduce_session(session(), {"type": "session/configChanged", "config": {"b": "2"}}, 1) == session()


def test_terminal_exited_without_exit_code_erases_it():
    state = {"title": "sh", "content": [], "claim": {"kind": "client", "clientId": "c"}, "exitCode": 3}
    assert "exitCode" not in reduce_terminal(state, {"type": "terminal/exited"})
    assert reduce_terminal(state, {"type": "terminal/exited", "exitCode": 0})["exitCode"] == 0


def test_command_finished_updates_every_command_with_that_id():
    command = {"type": "command", "commandId": "c1", "commandLine": "ls", "output": "", "timestamp": 1}
    state = {
        "title": "sh",
        "claim": {"kind": "client", "clientId": "c"},
        "content": [{**command, "isComplete": False}, {"type": "unclassified", "value": "x"}, {**command, "isComplete": False}],
    }
    after = reduce_terminal(state, {"type": "terminal/commandFinished", "commandId": "c1", "exitCode": 0})
    commands = [part for part in after["content"] if part["type"] == "command"]
    assert all(part["isComplete"] is True and part["exitCode"] == 0 for part in commands)


def test_terminal_data_appends_to_the_unfinished_command_then_starts_plain_text():
    state = {"title": "sh", "claim": {"kind": "client", "clientId": "c"}, "content": []}
    state = reduce_terminal(state, {"type": "terminal/commandExecuted", "commandId": "c1", "commandLine": "ls", "timestamp": 3})
    state = reduce_terminal(state, {"type": "terminal/data", "data": "a\n"})
    state = reduce_terminal(state, {"type": "terminal/commandFinished", "commandId": "c1", "exitCode": 0})
    state = reduce_terminal(state, {"type": "terminal/data", "data": "$ "})
    assert state["content"][0]["output"] == "a\n"
    assert state["content"][1] == {"type": "unclassified", "value": "$ "}
    assert state["supportsCommandDetection"] is True


def test_turn_end_force_cancels_unfinished_tool_calls():
    awaiting_result = tool_part(
        "pending-result-confirmation",
        toolCallId="tc2",
        invocationMessage="m",
        toolInput="i",
        confirmed="setting",
        success=True,
        pastTenseMessage="done",
    )
    parts = [tool_part("streaming", partialInput="{"), awaiting_result]
    state = session(activeTurn=active_turn(*parts), summary={**session()["summary"], "status": 24})
    after = reduce_session(state, {"type": "session/turnComplete", "turnId": "t1"}, 31)
    streaming, pending = (part["toolCall"] for part in after["turns"][0]["responseParts"])
    assert streaming["status"] == "cancelled" and streaming["reason"] == "skipped"
    assert streaming["invocationMessage"] == "" and "partialInput" not in streaming
    assert pending["status"] == "cancelled" and pending["toolInput"] == "i" and "success" not in pending
    assert after["turns"][0]["state"] == "complete"
    assert "activeTurn" not in after
    assert activity(after) == SessionStatus.Idle
    assert after["summary"]["modifiedAt"] == 31


def test_js_truthiness_of_approved_flags():
    pending = tool_part("pending-confirmation", invocationMessage="m")
    state = session(activeTurn=active_turn(pending))
    denied = reduce_session(
        state,
        {"type": "session/toolCallConfirmed", "turnId": "t1", "toolCallId": "tc1", "approved": 0, "reason": "denied"},
        1,
    )
    assert denied["activeTurn"]["responseParts"][0]["toolCall"]["status"] == "cancelled"
    approved = reduce_session(
        state,
        {"type": "session/toolCallConfirmed", "turnId": "t1", "toolCallId": "tc1", "approved": 1, "confirmed": "user-action"},
        1,
    )
    assert approved["activeTurn"]["responseParts"][0]["toolCall"]["status"] == "running"


def test_changeset_error_is_kept_only_for_error_status():
    state = {"status": "computing", "files": []}
    failed = reduce_changeset(state, {"type": "changeset/statusChanged", "status": "error", "error": {"message": "x"}})
    assert failed["error"] == {"message": "x"}
    recovered = reduce_changeset(failed, {"type": "changeset/statusChanged", "status": "ready", "error": {"message": "y"}})
    assert recovered == {"status": "ready", "files": []}
