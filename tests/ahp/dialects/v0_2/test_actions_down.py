"""Internal actions as 0.2.0 clients see them: ``down(reduce_internal(S, A)) == reduce_0.2.0(down(S), down(A))``.

``action_down`` returns the 0.2.0 actions and whether they are *exact*. When exact, a 0.2.0
replica that applies them to the projection it holds must end with the projection of the new
internal state, ``summary.modifiedAt`` excepted after the actions that make a 0.2.0 replica stamp
its own clock (``_dialect.STAMPED_BY_REPLICA``). When not exact, the reason must be one of those
the module documents, and it must be needed: the replica really does differ then.

Sources of internal actions: the 247 official 0.7.0 vectors (brought into the 0.9.0 model by
``ahp.dialects.v0_7``) and the hand-made 0.9.0 vectors, the actions ``actions_up`` makes of the
0.2.0 corpora, and hypothesis sequences over sessions with several chats (``_internal_strategies``).
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from ahp.dialects import v0_7
from ahp.dialects.v0_2.actions_down import chat_action_down
from ahp.dialects.v0_2.actions_up import session_action_up
from ahp.dialects.v0_2.states import InternalSession, session_lift, subagent_view
from ahp.dialects.v0_2.uris import default_chat_uri
from ahp.state._chat_status import chat_status
from ahp.state.channels import subagent_chat_uri
from tests.ahp.state._support import vectors_0_7, vectors_0_9

from . import _internal_strategies as strategies
from ._dialect import CLOCK, apply_internal, check_down, down, in_domain, without_paths
from .state._support import load_differential_cases, load_vectors

STALE_REASONS = {
    "the session's default chat changed: 0.2.0 shows another conversation now",
    "older turns were loaded (0.2.0 clients page with fetchTurns)",
    "the session's first working directory changed (0.2.0 has no action for it)",
    "a tool-call action replaced the call's _meta (0.2.0 takes _meta only at toolCallStart)",
    "toolCallReady updated a call already pending confirmation (0.2.0 ignores that)",
    "calls sharing one id were re-readied with different inputs",
    "a call paused for authentication shares its id with a re-readied one (0.2.0 re-readies both)",
    "a delta without content gave 0.2.0 an empty partial input",
    "an input-request part arrived as a plain response part",
    "a turn ended with an error part of another kind",
    "several open input requests share the completed id (0.2.0 removes them all)",
    "the last request asked outside a turn went away: 0.2.0 recomputes Idle, the chat shows another activity",
    "a request asked outside a turn was replaced without its answers (0.2.0 keeps them)",
    "an input request asked outside a turn was answered: 0.2.0 drops it now, the host with the session/inputNeededRemoved that follows",
}
"""Every reason ``action_down`` gives for an inexact projection (its module docstring lists them)."""

URI = "copilot:/test-session"
CHAT = default_chat_uri(URI)


def _session_around(kind: str, state: dict) -> tuple[InternalSession, str]:
    """An internal session holding a vector's state: a chat vector's state is the default chat."""
    if kind == "chat":
        summary = {key: state[key] for key in ("title", "status", "modifiedAt") if key in state}
        session = {"provider": "copilot", "title": "T", "status": 1, "lifecycle": "ready", "activeClients": [],
                   "chats": [{"resource": CHAT, **summary}], "defaultChat": CHAT}
        return InternalSession(URI, session, {CHAT: state}), CHAT
    return InternalSession(URI, state), URI


def _vector_streams():
    for vector in vectors_0_7():
        if vector["reducer"] in ("chat", "session"):
            actions = [v0_7.action_up(vector["reducer"], action) for action in vector["actions"]]
            yield vector["_file"], vector["reducer"], v0_7.state_up(vector["reducer"], vector["initial"]), [a for a in actions if a]
    for vector in vectors_0_9():
        if vector["reducer"] in ("chat", "session"):
            yield vector["_file"], vector["reducer"], vector["initial"], vector["actions"]


STREAMS = list(_vector_streams())


class Tally:
    def __init__(self) -> None:
        self.stale: Counter = Counter()
        self.stale_and_differing: Counter = Counter()
        self.failures: list[str] = []

    def check(self, channel, action, session, label) -> InternalSession:
        after, check = check_down(channel, action, session)
        if check.down.exact:
            if not check.agrees:
                self.failures.append(f"{label} {action.get('type')}: {check.explain()}")
        else:
            self.stale[check.down.stale] += 1
            if not check.agrees:
                self.stale_and_differing[check.down.stale] += 1
        return after


@pytest.mark.parametrize(("name", "kind", "initial", "actions"), STREAMS, ids=[stream[0] for stream in STREAMS])
def test_official_and_hand_made_internal_vectors_project_exactly(name, kind, initial, actions):
    session, channel = _session_around(kind, initial)
    tally = Tally()
    for action in actions:
        session = tally.check(channel, action, session, name)
    assert tally.failures == []
    assert set(tally.stale) <= STALE_REASONS


def test_the_actions_made_of_0_2_0_actions_project_back_exactly():
    tally = Tally()
    corpus = [(v["initial"], v["actions"]) for v in load_vectors() if v["reducer"] == "session"]
    corpus += [(c["initial"], c["actions"]) for c in load_differential_cases() if c["kind"] == "session"]
    for initial, actions in corpus:
        session = session_lift(in_domain(initial)[0])
        for action in actions:
            for channel, internal_action in session_action_up(action, session, now=CLOCK, from_client=False).envelopes:
                session = tally.check(channel, internal_action, session, action.get("type"))
    assert tally.failures == []
    assert set(tally.stale) <= STALE_REASONS


HYPOTHESIS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
TALLY = Tally()


@HYPOTHESIS
@given(strategies.internal_sessions(), st.data())
def test_random_sessions_with_several_chats_project_every_action_exactly(session, data):
    tally = Tally()
    for _ in range(data.draw(st.integers(1, 8))):
        channel, action = data.draw(strategies.envelopes(session))
        session = tally.check(channel, action, session, "random")
        TALLY.stale.update(tally.stale)
    assert tally.failures == []
    assert set(tally.stale) <= STALE_REASONS
    TALLY.stale_and_differing.update(tally.stale_and_differing)


def test_every_stale_reason_is_needed_somewhere():
    """Runs after the tests above (pytest keeps file order): each reason seen was needed at least
    once, i.e. the replica really differed from a fresh snapshot."""
    seen = set(TALLY.stale_and_differing)
    for name, kind, initial, actions in STREAMS:
        session, channel = _session_around(kind, initial)
        tally = Tally()
        for action in actions:
            session = tally.check(channel, action, session, name)
        seen |= set(tally.stale_and_differing)
    assert seen, "no inexact projection was exercised"
    assert seen <= STALE_REASONS


def test_a_request_outside_a_turn_replaced_without_its_answers_leaves_0_2_0_stale():
    """Hypothesis found it (the reason was missing above): 0.2.0's inputRequested on an open id keeps
    the answers given so far, 0.9.0 takes the new request whole."""
    chat = "ahp-chat://default/cDovczE"
    summary = {"resource": chat, "title": "", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z"}
    session = InternalSession("p:/s1", {"provider": "p", "title": "", "status": 1, "lifecycle": "creating", "activeClients": [],
                                        "chats": [summary], "defaultChat": chat}, {chat: {**summary, "turns": []}})
    answered = {"id": "r1", "message": "", "answers": {"q1": {"state": "draft", "value": {"kind": "text", "value": "because"}}}}
    tally = Tally()
    for request in (answered, {"id": "r1", "message": ""}):
        action = {"type": "session/inputNeededSet", "request": {"kind": "chatInput", "id": f"{chat}#r1", "chat": chat, "request": request}}
        session = tally.check(session.uri, action, session, "outside")
    assert tally.failures == []
    reason = "a request asked outside a turn was replaced without its answers (0.2.0 keeps them)"
    assert tally.stale == Counter({reason: 1}) and reason in tally.stale_and_differing


# --- what a 0.2.0 client sees of a second chat ----------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.internal_sessions(), strategies.chat_actions())
def test_a_0_2_0_client_sees_nothing_of_a_chat_that_is_not_the_default(session, action):
    others = [uri for uri in session.chats if uri != session.default_chat_uri]
    if not others:
        return
    after = apply_internal(session, others[0], action)
    projected = chat_action_down(others[0], action, session, after)
    assert projected.actions == () and projected.exact
    assert down(after) == down(session)


def test_a_second_chat_is_invisible_and_the_default_one_is_the_0_2_0_conversation():
    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1, "createdAt": 0,
                         "modifiedAt": 0}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    side = "ahp-chat://side/cDovcw"
    session = apply_internal(session, session.uri, {"type": "session/chatAdded",
                                                    "summary": {"resource": side, "title": "Side", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z"}})
    session = InternalSession(session.uri, session.state, {**session.chats, side: {"resource": side, "title": "Side", "status": 1,
                                                                                     "modifiedAt": "1970-01-01T00:00:00.000Z", "turns": []}})
    started = {"type": "chat/turnStarted", "turnId": "x", "startedAt": "1970-01-01T00:00:01.000Z", "message": {"text": "psst", "origin": {"kind": "user"}}}
    after = apply_internal(session, side, started)
    assert chat_action_down(side, started, session, after).actions == ()
    assert down(after) == down(session) and down(after)["turns"] == [] and "activeTurn" not in down(after)
    after = apply_internal(session, session.default_chat_uri, started)
    projected = chat_action_down(session.default_chat_uri, started, session, after)
    assert projected.channel == "ahp-session:/s"
    assert projected.actions == ({"type": "session/turnStarted", "turnId": "x", "userMessage": {"text": "psst"}},)


def test_a_request_asked_outside_a_turn_shows_between_turns_and_converges_at_each_step() -> None:
    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1 | 32, "createdAt": 0,
                         "modifiedAt": 0}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    chat = default_chat_uri(session.uri)
    request = {"id": "workspace-trust:1", "message": "Trust?", "questions": [
        {"id": "trust", "kind": "single-select", "message": "?", "options": [{"id": "a", "label": "A"}]}]}
    entry = {"id": f"{chat}|ask|workspace-trust:1", "chat": chat, "kind": "chatInput", "request": request}
    steps = [
        (session.uri, {"type": "session/inputNeededSet", "request": entry}),
        (chat, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "1970-01-01T00:00:01.000Z",
                "message": {"text": "hi", "origin": {"kind": "user"}}}),
        (chat, {"type": "chat/turnComplete", "turnId": "t1", "duration": 5}),
        (session.uri, {"type": "session/inputNeededRemoved", "id": entry["id"]}),
    ]
    shown = []
    for channel, action in steps:
        session, check = check_down(channel, action, session)
        assert check.down.exact and check.agrees, (action, check.explain())
        shown.append([r["id"] for r in down(session).get("inputRequests") or ()])
    assert shown == [["workspace-trust:1"], [], ["workspace-trust:1"], []]


# --- a sub-agent's chat, which a 0.2.0 client sees as a session of its own ---------------------

SUBAGENT_CHAT = subagent_chat_uri(strategies.SESSION_URI, "call-1")


@HYPOTHESIS
@given(strategies.internal_sessions(), strategies.chats(SUBAGENT_CHAT), st.data())
def test_a_sub_agent_chat_projected_as_a_session_commutes_with_every_chat_action(parent, chat, data):
    """reduce-then-project equals project-then-reduce for the projected session of a sub-agent's
    chat, and the projection is a function of the chat alone (a new snapshot of the view after an
    action is the view of the chat after it)."""
    view = subagent_view(parent.state, SUBAGENT_CHAT, chat, parent.created_at)
    assert view is not None and down(view)["summary"]["resource"] == "ahp-session:/s1/subagent/call-1"
    tally = Tally()
    for _ in range(data.draw(st.integers(1, 8))):
        view = tally.check(SUBAGENT_CHAT, data.draw(strategies.chat_actions()), view, "subagent")
        fresh = subagent_view(parent.state, SUBAGENT_CHAT, view.chats[SUBAGENT_CHAT], parent.created_at)
        assert fresh is not None and down(fresh) == down(view)
    assert tally.failures == []
    assert set(tally.stale) <= STALE_REASONS


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.internal_sessions(), strategies.chats(SUBAGENT_CHAT), st.data())
def test_a_sub_agent_s_projected_session_changes_with_its_chat_alone(parent, chat, data):
    """Actions on the parent session never reach a 0.2.0 client of the sub-agent's projected
    session, so they must not change it: only its first working directory may drift (0.2.0 has no
    action for that; the same listed reason as for any session)."""
    before = subagent_view(parent.state, SUBAGENT_CHAT, chat, parent.created_at)
    action = data.draw(strategies.session_actions(parent))
    after_parent = apply_internal(parent, parent.uri, action)
    after = subagent_view(after_parent.state, SUBAGENT_CHAT, chat, parent.created_at)
    assert before is not None and after is not None
    ignored = ("summary.workingDirectory",)
    assert without_paths(down(after), ignored) == without_paths(down(before), ignored)


def test_a_sub_agent_chat_is_a_session_to_0_2_0_with_the_chat_s_title_and_turns():
    parent = {"provider": "p", "title": "Parent", "status": 64 | 1, "lifecycle": "ready", "workingDirectories": ["file:///a", "file:///b"],
              "activeClients": [{"clientId": "tui", "tools": []}], "customizations": [], "defaultChat": strategies.DEFAULT_CHAT}
    chat = {"resource": SUBAGENT_CHAT, "title": "Sub-agent: Look", "status": 1, "modifiedAt": "1970-01-01T00:00:02.000Z",
            "origin": {"kind": "tool", "chat": strategies.DEFAULT_CHAT, "toolCallId": "call-1"}, "interactivity": "read-only",
            "turns": [{"id": "t1", "message": {"text": "Look.", "origin": {"kind": "user"}}, "responseParts": [
                {"kind": "markdown", "id": "p1", "content": "Looked."}], "state": "complete", "usage": None}]}
    shown = down(subagent_view(parent, SUBAGENT_CHAT, chat, "1970-01-01T00:00:01.000Z"))
    assert shown["summary"] == {"resource": "ahp-session:/s1/subagent/call-1", "provider": "p", "title": "Sub-agent: Look",
                                "status": 1, "createdAt": 1000, "modifiedAt": 2000, "workingDirectory": "file:///a"}
    assert shown["lifecycle"] == "ready" and "activeClient" not in shown and "customizations" not in shown
    assert [turn["userMessage"]["text"] for turn in shown["turns"]] == ["Look."]
    assert subagent_view(parent, strategies.DEFAULT_CHAT, chat) is None


@pytest.mark.parametrize("approved", [True, False])
@pytest.mark.parametrize("read", [False, True])
@pytest.mark.parametrize("earlier_turns", [0, 1])
def test_who_confirmed_a_result_reaches_0_2_0_by_saying_the_turn_again(approved, read, earlier_turns):
    """The host records who confirmed a tool call's result in the call's ``_meta`` (``answeredBy``),
    which no 0.2.0 tool-call action carries after ``toolCallStart``: the 0.2.0 client is told the
    active turn again (truncated to the turn before it, started, its parts), exactly, and the other
    calls of the turn (one still waiting for its confirmation) and the read flag come out as shown."""
    from ahp.protocol import builders

    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1, "createdAt": 0,
                         "modifiedAt": 0}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    chat = session.default_chat_uri
    tally = Tally()
    steps: list[dict] = []
    for index in range(earlier_turns):
        steps += [builders.chat_turn_started(turn_id=f"old{index}", started_at="1970-01-01T00:00:01.000Z",
                                             message={"text": f"earlier {index}", "origin": {"kind": "user"}}),
                  {"type": "chat/turnComplete", "turnId": f"old{index}", "duration": 5}]
    steps += [
        builders.chat_turn_started(turn_id="t", started_at="1970-01-01T00:00:02.000Z", message={"text": "read it", "origin": {"kind": "user"}}),
        builders.chat_tool_call_start(turn_id="t", tool_call_id="c1", tool_name="read_file", display_name="Read"),
        builders.chat_tool_call_ready(turn_id="t", tool_call_id="c1", invocation_message="Reading", tool_input="{}", confirmed="not-needed"),
        builders.chat_tool_call_complete(turn_id="t", tool_call_id="c1", result={"success": True, "pastTenseMessage": "Read it"},
                                         requires_result_confirmation=True),
        builders.chat_tool_call_start(turn_id="t", tool_call_id="c2", tool_name="bash", display_name="Bash"),
        builders.chat_tool_call_ready(turn_id="t", tool_call_id="c2", invocation_message="Running", tool_input="ls"),
    ]
    if read:
        steps.append({"type": "chat/isReadChanged", "isRead": True})
    for step in steps:
        session = tally.check(chat, step, session, step["type"])
    answered = builders.chat_tool_call_result_confirmed(turn_id="t", tool_call_id="c1", approved=approved,
                                                        meta={"answeredBy": {"clientId": "alice"}})
    after, check = check_down(chat, answered, session)
    assert check.down.exact and check.agrees, check.explain()
    types = [action["type"] for action in check.down.actions]
    assert types[:2] == ["session/truncated", "session/turnStarted"] and "session/responsePart" in types
    [call] = [part["toolCall"] for part in check.mirror["activeTurn"]["responseParts"] if part.get("kind") == "toolCall"
              and part["toolCall"]["toolCallId"] == "c1"]
    assert call["_meta"] == {"answeredBy": {"clientId": "alice"}}
    assert len(check.mirror["turns"]) == earlier_turns
    assert tally.failures == []


def test_who_confirmed_a_result_stays_a_known_drift_when_the_chat_holds_no_turn_to_say_it_after():
    """A chat whose finished turns are all paged out (``turnsNextCursor``, no turn in its state):
    saying the turn again would truncate away the turns a 0.2.0 client holds, so the plain
    confirmation goes and the drift is reported."""
    import dataclasses

    from ahp.protocol import builders

    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1, "createdAt": 0,
                         "modifiedAt": 0}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    chat = session.default_chat_uri
    session = dataclasses.replace(session, chats={**session.chats, chat: {**session.chats[chat], "turnsNextCursor": "older"}})
    for step in (
        builders.chat_turn_started(turn_id="t", started_at="1970-01-01T00:00:02.000Z", message={"text": "go", "origin": {"kind": "user"}}),
        builders.chat_tool_call_start(turn_id="t", tool_call_id="c1", tool_name="read_file", display_name="Read"),
        builders.chat_tool_call_ready(turn_id="t", tool_call_id="c1", invocation_message="Reading", tool_input="{}", confirmed="not-needed"),
        builders.chat_tool_call_complete(turn_id="t", tool_call_id="c1", result={"success": True}, requires_result_confirmation=True),
    ):
        session = apply_internal(session, chat, step)
    answered = builders.chat_tool_call_result_confirmed(turn_id="t", tool_call_id="c1", approved=True,
                                                        meta={"answeredBy": {"clientId": "alice"}})
    _, check = check_down(chat, answered, session)
    assert [action["type"] for action in check.down.actions] == ["session/toolCallResultConfirmed"]
    assert check.down.stale == "a tool-call action replaced the call's _meta (0.2.0 takes _meta only at toolCallStart)"


@pytest.mark.parametrize("turn_id", [None, "t1"])
def test_a_truncation_keeps_the_input_requests_asked_outside_a_turn_for_a_0_2_0_client(turn_id):
    # 0.2.0's session/truncated drops every input request; 0.9.0's chat/truncated keeps a question
    # asked outside a turn (a trust question, say), so the 0.2.0 client is asked it again.
    chat = "ahp-chat://default/cDovczE"
    summary = {"resource": chat, "title": "", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z"}
    turn = {"id": "t1", "message": {"text": "hi"}, "responseParts": [], "usage": None, "state": "complete"}
    session = InternalSession(
        uri="p:/s1",
        state={"provider": "p", "title": "", "status": 1, "lifecycle": "ready", "activeClients": [],
               "chats": [dict(summary)], "defaultChat": chat},
        chats={chat: {**summary, "turns": [turn]}}, created_at="1970-01-01T00:00:00.000Z")
    tally = Tally()
    asked = {"type": "session/inputNeededSet", "request": {
        "kind": "chatInput", "id": f"{chat}#r1", "chat": chat, "request": {"id": "r1", "message": "Trust this folder?"}}}
    session = tally.check("p:/s1", asked, session, "asked")
    truncated = {"type": "chat/truncated", **({"turnId": turn_id} if turn_id else {})}
    after, check = check_down(chat, truncated, session)
    assert check.down.exact and check.agrees, check.explain()
    assert down(after)["inputRequests"] == [{"id": "r1", "message": "Trust this folder?"}]
    assert tally.failures == []


# --- a call paused for authentication beside what makes a chat InputNeeded -----------------------

_STARTED = {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "1970-01-01T00:00:01.000Z", "message": {"text": "Go.", "origin": {"kind": "user"}}}
_CALL = {"turnId": "t1", "toolCallId": "c1"}
_BLOCKERS = {
    "a call pending confirmation": (
        [{"type": "chat/toolCallStart", **_CALL, "toolName": "bash", "displayName": "Bash"},
         {"type": "chat/toolCallReady", **_CALL, "invocationMessage": "ls", "toolInput": "ls"}],
        {"type": "chat/toolCallConfirmed", **_CALL, "approved": True, "confirmed": "user-action"},
    ),
    "a call pending its result's confirmation": (
        [{"type": "chat/toolCallStart", **_CALL, "toolName": "bash", "displayName": "Bash"},
         {"type": "chat/toolCallReady", **_CALL, "invocationMessage": "ls", "toolInput": "ls", "confirmed": "not-needed"},
         {"type": "chat/toolCallComplete", **_CALL, "result": {"success": True, "pastTenseMessage": "Listed"},
          "requiresResultConfirmation": True}],
        {"type": "chat/toolCallResultConfirmed", **_CALL, "approved": True},
    ),
    "an open input request": (
        [{"type": "chat/inputRequested", "request": {"id": "r1", "message": "Which folder?"}}],
        {"type": "chat/inputCompleted", "requestId": "r1", "response": "accept"},
    ),
}
_PAUSED_FOR_AUTH = {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "toolCall", "toolCall": {
    "toolCallId": "c2", "toolName": "search", "displayName": "Search", "status": "auth-required", "invocationMessage": "Searching",
    "confirmed": "not-needed", "contributor": {"kind": "mcp", "customizationId": "mcp-top"},
    "auth": {"reason": "required", "resource": {"resource": "https://mcp.example"}}}}}


def _idle_chat_session(resource: str) -> InternalSession:
    """A session on ``resource``'s chat (its default chat, or a sub-agent's projected session)."""
    if resource == strategies.DEFAULT_CHAT:
        return session_lift({"summary": {"resource": "ahp-session:/s1", "provider": "p", "title": "T", "status": 1, "createdAt": 0,
                                         "modifiedAt": 0}, "lifecycle": "ready", "turns": []})
    parent = {"provider": "p", "title": "Parent", "status": 1, "lifecycle": "ready", "activeClients": [], "defaultChat": strategies.DEFAULT_CHAT}
    chat = {"resource": resource, "title": "Sub-agent", "status": 1, "modifiedAt": "1970-01-01T00:00:00.000Z",
            "origin": {"kind": "tool", "chat": strategies.DEFAULT_CHAT, "toolCallId": "call-1"}, "turns": []}
    view = subagent_view(parent, resource, chat, "1970-01-01T00:00:00.000Z")
    assert view is not None
    return view


@pytest.mark.parametrize("chat", [strategies.DEFAULT_CHAT, SUBAGENT_CHAT], ids=["default chat", "sub-agent chat"])
@pytest.mark.parametrize("blocker", sorted(_BLOCKERS))
def test_a_call_paused_for_authentication_beside_what_makes_the_chat_input_needed_projects_exactly(chat, blocker):
    """The reachable counterpart of a generated state the chat strategy once drew (InputNeeded with
    nothing blocking, where 0.2.0 and the model parted on an ``auth-required`` call's arrival): a
    chat made InputNeeded by the reducers, then a call paused for MCP authentication arrives as a
    response part. 0.2.0 keeps showing InputNeeded while the other blocker is open, and once it is
    answered shows InProgress (a paused call runs, for 0.2.0) where the model says InputNeeded."""
    blocking, answer = _BLOCKERS[blocker]
    session = _idle_chat_session(chat)
    channel = chat if chat in session.chats else session.default_chat_uri
    tally = Tally()
    for action in [_STARTED, *blocking]:
        session = tally.check(channel, action, session, action["type"])
    assert session.chats[channel]["status"] & 31 == 24 and down(session)["summary"]["status"] & 31 == 24
    shown = []
    for action in (_PAUSED_FOR_AUTH, answer):
        session, check = check_down(channel, action, session)
        assert check.down.exact and check.agrees, (action["type"], check.explain())
        shown.append((session.chats[channel]["status"] & 31, check.mirror["summary"]["status"] & 31))
    assert shown == [(24, 24), (24, 8)]
    assert tally.failures == []


# --- the chat strategy draws the statuses the reducers reach, all of them --------------------------

_REACHED_WITHOUT_DERIVING = {
    (8, 24): "a blocking part arrived by chat/responsePart, which derives no status",
    (1, 2): "a truncation to a turn that ended in an error derives Idle",
}
"""(drawn activity, the model's ``chat_status`` of the content): the pairs the reducers leave apart."""


def _activity_and_content(chat: dict) -> tuple[int, str]:
    active = chat.get("activeTurn")
    if active is not None:
        return chat["status"] & 31, "blocking" if strategies.blocks(active) else "active"
    ended = chat["turns"]
    return chat["status"] & 31, "ended in error" if ended and ended[-1]["state"] == "error" else "ended"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strategies.chats(strategies.DEFAULT_CHAT))
def test_the_chat_strategy_draws_a_status_the_reducers_reach_from_the_content(chat):
    ended_in_error = "activeTurn" not in chat and bool(chat["turns"]) and chat["turns"][-1]["state"] == "error"
    derived = chat_status(chat, ended_in_error=ended_in_error) & 31  # as the action that ended the last turn left it
    drawn = chat["status"] & 31
    assert drawn == derived or (drawn, derived) in _REACHED_WITHOUT_DERIVING, (drawn, derived, chat)


@pytest.mark.parametrize("reachable", [(24, "blocking"), (8, "blocking"), (8, "active"), (2, "ended in error"), (1, "ended in error"),
                                       (1, "ended")], ids=str)
def test_the_chat_strategy_draws_every_reachable_status(reachable):
    found = find(strategies.chats(strategies.DEFAULT_CHAT), lambda chat: _activity_and_content(chat) == reachable,
                 settings=settings(database=None, max_examples=2000))
    assert _activity_and_content(found) == reachable


@pytest.mark.parametrize("confirmed", [None, "not-needed"], ids=["to confirm", "confirmed"])
@pytest.mark.parametrize("arrived", ["paused by the reducers", "as a response part"])
def test_a_call_paused_for_authentication_is_not_re_readied_for_a_0_2_0_client(confirmed, arrived):
    """Found by the chat strategy (seed 5): ``chat/toolCallReady`` on a call paused for MCP
    authentication changes nothing in the model (no edge leaves ``auth-required`` on it), but 0.2.0,
    which shows the call running, would re-ready it (pending confirmation, or running with the
    action's message). The 0.2.0 client gets only the status the model recomputes: InProgress to it
    either way, from the InputNeeded the pause made or the InProgress a paused call that arrived as
    a response part left."""
    session = _idle_chat_session(strategies.DEFAULT_CHAT)
    chat = session.default_chat_uri
    call = {"turnId": "t1", "toolCallId": "c2"}
    if arrived == "paused by the reducers":
        steps = [{"type": "chat/toolCallStart", **call, "toolName": "search", "displayName": "Search",
                  "contributor": {"kind": "mcp", "customizationId": "mcp-top"}},
                 {"type": "chat/toolCallReady", **call, "invocationMessage": "Searching", "confirmed": "not-needed"},
                 {"type": "chat/toolCallAuthRequired", **call, "auth": {"reason": "required", "resource": {"resource": "https://mcp.example"}}}]
    else:
        steps = [_PAUSED_FOR_AUTH]
    tally = Tally()
    for action in [_STARTED, *steps]:
        session = tally.check(chat, action, session, action["type"])
    paused = session.chats[chat]["activeTurn"]["responseParts"][0]["toolCall"]
    assert paused["status"] == "auth-required"
    ready = {"type": "chat/toolCallReady", **call, "invocationMessage": "", **({"confirmed": confirmed} if confirmed else {})}
    after, check = check_down(chat, ready, session)
    assert check.down.exact and check.agrees, check.explain()
    assert after.chats[chat]["activeTurn"]["responseParts"][0]["toolCall"] == paused
    assert [c["status"] for c in _0_2_0_calls(check.mirror)] == ["running"] and check.mirror["summary"]["status"] & 31 == 8
    assert tally.failures == []


def _0_2_0_calls(state: dict) -> list[dict]:
    return [part["toolCall"] for part in state["activeTurn"]["responseParts"] if part.get("kind") == "toolCall"]
