"""0.2.0 actions taken by the internal model: ``down(reduce_internal(S, up(a))) == reduce_0.2.0(down(S), a)``.

Run over the 160 official 0.2.0 vectors and the 3,300 differential cases (their session cases;
the other kinds are in ``test_channel_actions.py``): each vector's initial state is lifted
(``session_lift``), each of its actions translated (``session_action_up``, as a journal written by
the 0.2.0 host would be: host-only types too) and applied by the internal reducers; after every
action the projection of the internal session must equal what the 0.2.0 reducer computes from
the projection before it. Where the two models cannot agree, ``DIVERGENCES`` names the case, the
reason, and the only part of the state that may differ; every entry must be needed (by the corpus,
or, for the ones that only sessions of 0.9.0 clients show (``MIXED_VERSION``), by an example). Vectors that never
needed one must also end where the vector says.

The same law is then checked with hypothesis on internal sessions as 0.9.0 clients leave them
(several chats and active clients, drafts, paused MCP calls, answered input requests, resumable
errors) and every 0.2.0 session action type.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from functools import cache

import pytest
from hypothesis import HealthCheck, example, given, settings

from ahp.dialects.v0_2.actions_up import CLIENT_DISPATCHABLE, Up, session_action_up
from ahp.dialects.v0_2.shapes import open_input_requests
from ahp.dialects.v0_2.state import SESSION_ACTION_TYPES
from ahp.dialects.v0_2.state import reduce as reduce_v02
from ahp.dialects.v0_2.states import InternalSession, session_lift
from ahp.dialects.v0_2.timestamps import EPOCH_ISO, iso_to_ms
from tests.ahp._wire import first_difference, strip_none, wire_equal

from . import _internal_strategies as strategies
from . import _v02_strategies as v02_strategies
from ._dialect import CLOCK, REPLICA_CLOCK_TYPES, apply_internal, down, in_domain, without_paths
from .state._support import load_differential_cases, load_vectors


def _calls(state: dict, action: dict) -> list[dict]:
    """The 0.2.0 tool calls ``action`` addresses in ``state``'s active turn."""
    active = state.get("activeTurn")
    if not isinstance(active, dict) or active.get("id") != action.get("turnId"):
        return []
    return [
        part["toolCall"]
        for part in active.get("responseParts") or []
        if isinstance(part, dict) and part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict)
        and part["toolCall"].get("toolCallId") == action.get("toolCallId")
    ]


@dataclasses.dataclass(frozen=True)
class Divergence:
    """A case where 0.9.0 cannot do what 0.2.0 does, and what may differ because of it."""

    name: str
    reason: str
    applies: Callable[[dict, dict, Up, InternalSession], bool]
    """``(0.2.0 state before, 0.2.0 action, translation, internal session before)``: whether the
    case is this one."""
    may_differ: tuple[str, ...]
    """Dotted paths of the 0.2.0 state that may differ; nothing else may."""


DIVERGENCES = (
    Divergence(
        "replica clock",
        "0.2.0 stamps summary.modifiedAt with each replica's own clock on these actions; 0.9.0 moves "
        "a chat's modifiedAt only at a turn's start and end, from the turn's own times",
        lambda state, action, up, session: action.get("type") in REPLICA_CLOCK_TYPES,
        ("summary.modifiedAt",),
    ),
    Divergence(
        "turn ended before it started",
        "0.9.0 stamps a turn's end at its start plus its duration, never earlier; a host clock behind "
        "the turn's startedAt (made by another host) cannot move modifiedAt back as 0.2.0's does",
        lambda state, action, up, session: action.get("type") in ("session/turnComplete", "session/turnCancelled", "session/error")
        and _started_after(session, CLOCK),
        ("summary.modifiedAt",),
    ),
    Divergence(
        "session without a default chat",
        "a 0.9.0 session may have no default chat (none made yet, or it was removed): there is no "
        "conversation to hold 0.2.0's turns, so per-turn actions are refused",
        lambda state, action, up, session: session.default_chat_uri is None and up.refused is not None,
        ("activeTurn", "turns", "steeringMessage", "queuedMessages", "inputRequests", "summary.status", "summary.modifiedAt",
         "summary.model", "summary.agent"),
    ),
    Divergence(
        "input requests sharing an id",
        "0.9.0 raises input requests by id, so two open requests with one id become one when a new "
        "turn carries them over from the turn it replaces (0.2.0 keeps both)",
        lambda state, action, up, session: action.get("type") == "session/turnStarted" and _duplicate_requests(state),
        ("inputRequests",),
    ),
    Divergence(
        "several active clients",
        "0.9.0 sessions have several active clients and 0.2.0 shows the last; a 0.2.0 client giving up "
        "the role removes that one, and the one before it shows",
        lambda state, action, up, session: action.get("type") == "session/activeClientChanged"
        and action.get("activeClient") is None
        and len(session.state.get("activeClients") or []) > 1,
        ("activeClient",),
    ),
    Divergence(
        "input request outside a turn",
        "0.2.0 accepts an input request with no active turn; 0.9.0 keeps input requests inside the "
        "active turn, so the translation is refused",
        lambda state, action, up, session: action.get("type") == "session/inputRequested" and not isinstance(state.get("activeTurn"), dict),
        ("inputRequests", "summary.status", "summary.modifiedAt"),
    ),
    Divergence(
        "toolCallReady on a call pending confirmation",
        "0.2.0 ignores it but recomputes the status, which changes only a status that was already "
        "wrong (random initial states); 0.9.0 would update the call, so the translation drops it",
        lambda state, action, up, session: action.get("type") == "session/toolCallReady"
        and bool(_calls(state, action))
        and all(call.get("status") == "pending-confirmation" for call in _calls(state, action)),
        ("summary.status",),
    ),
    Divergence(
        "re-readied call keeps its input",
        "0.2.0 takes a re-readied running call's toolInput from the action (none: no input); 0.9.0 "
        "keeps the call's input when the action brings none",
        lambda state, action, up, session: action.get("type") == "session/toolCallReady"
        and action.get("toolInput") is None
        and any(call.get("status") == "running" and call.get("toolInput") is not None for call in _calls(state, action)),
        ("activeTurn.responseParts",),
    ),
    Divergence(
        "calls sharing an id",
        "the random corpus gives several tool calls of one turn the same id in different statuses; "
        "the two models' tables differ on some statuses (pending-confirmation), so such a group moves "
        "differently",
        lambda state, action, up, session: len(_calls(state, action)) > 1,
        ("activeTurn.responseParts", "summary.status"),
    ),
    Divergence(
        "edited input that is not inline",
        "0.2.0 puts an edited input in place of any tool input; 0.9.0 only in place of inline text, "
        "so the translation is refused",
        lambda state, action, up, session: action.get("type") == "session/toolCallConfirmed"
        and action.get("editedToolInput") is not None
        and up.refused is not None,
        ("activeTurn.responseParts", "summary.status"),
    ),
    Divergence(
        "call paused for MCP authentication",
        "0.2.0 has no auth-required status and shows a call paused for its MCP server's authentication "
        "as the running call it was; 0.9.0 takes no re-ready, confirmation, success or content for a "
        "paused call (only a failed result, which keeps the output from before the pause), so the "
        "translation is refused and 0.2.0's update of the call and recomputed status do not happen",
        lambda state, action, up, session: up.refused is not None
        and any(call.get("status") == "auth-required" for call in _internal_calls(session, action)),
        ("activeTurn.responseParts", "summary.status"),
    ),
)


def _internal_calls(session: InternalSession, action: dict) -> list[dict]:
    """The 0.9.0 tool calls ``action`` addresses in the default chat's active turn (``_calls`` of
    the chat, where a paused call still says ``auth-required``)."""
    return _calls(session.default_chat or {}, action)


def _duplicate_requests(state: dict) -> bool:
    ids = [request.get("id") for request in state.get("inputRequests") or [] if isinstance(request, dict)]
    return len(ids) != len(set(map(repr, ids)))


def _started_after(session: InternalSession, now: int) -> bool:
    active = (session.default_chat or {}).get("activeTurn")
    started = iso_to_ms(active.get("startedAt")) if isinstance(active, dict) else None
    return started is not None and started > now


@dataclasses.dataclass
class Outcome:
    """How one case went: the divergences it needed and the failures it had (none, we hope)."""

    needed: Counter = dataclasses.field(default_factory=Counter)
    failures: list[str] = dataclasses.field(default_factory=list)
    final: dict | None = None


def run_case(initial: dict, actions: list) -> tuple[Outcome, list[str]]:
    """Lift ``initial``, take every action up, and compare each step with the 0.2.0 reducer."""
    state, changes = in_domain(initial)
    outcome = Outcome()
    session: InternalSession = session_lift(state)
    if not wire_equal(down(session), state):
        outcome.failures.append(f"lift is not a right inverse: {first_difference(down(session), state)}")
        return outcome, changes
    for step, action in enumerate(actions):
        before, previous = down(session), session
        expected = strip_none(reduce_v02("session", before, action, CLOCK))
        up = session_action_up(action, session, now=CLOCK, from_client=False)
        for channel, internal_action in up.envelopes:
            session = apply_internal(session, channel, internal_action)
        got = down(session)
        if wire_equal(got, expected):
            continue
        applicable = [rule for rule in DIVERGENCES if rule.applies(before, action, up, previous)]
        paths = tuple(path for rule in applicable for path in rule.may_differ)
        if applicable and wire_equal(without_paths(got, paths), without_paths(expected, paths)):
            outcome.needed.update(rule.name for rule in applicable)
            continue
        outcome.failures.append(
            f"step {step} {action.get('type')}: {first_difference(got, expected)}"
            + (f" (refused: {up.refused})" if up.refused else "")
        )
    outcome.final = down(session)
    return outcome, changes


VECTORS = [vector for vector in load_vectors() if vector["reducer"] == "session"]
CASES = [(index, case) for index, case in enumerate(load_differential_cases()) if case["kind"] == "session"]


@cache
def vector_outcome(index: int) -> tuple[Outcome, list[str]]:
    return run_case(VECTORS[index]["initial"], VECTORS[index]["actions"])


@cache
def case_outcome(index: int) -> tuple[Outcome, list[str]]:
    return run_case(dict(CASES[index][1]["initial"]), CASES[index][1]["actions"])


@pytest.mark.parametrize("index", range(len(VECTORS)), ids=[vector["description"] for vector in VECTORS])
def test_official_vector_commutes(index):
    outcome, changes = vector_outcome(index)
    assert outcome.failures == []
    # The fixtures' legacy resources are renamed on both sides, which changes nothing a reducer reads.
    if not outcome.needed and set(changes) <= {"a legacy resource URI"}:
        expected, _ = in_domain(VECTORS[index]["expected"])
        assert wire_equal(outcome.final, expected), first_difference(outcome.final, expected)


@pytest.mark.parametrize("position", range(len(CASES)), ids=[f"{index}-session" for index, _ in CASES])
def test_differential_case_commutes(position):
    outcome, changes = case_outcome(position)
    assert outcome.failures == []
    if not outcome.needed and not changes:
        expected, _ = in_domain(CASES[position][1]["expected"])
        assert wire_equal(outcome.final, expected), first_difference(outcome.final, expected)


def test_the_corpora_hold_every_0_2_0_session_action_type():
    seen = {action["type"] for vector in VECTORS for action in vector["actions"]}
    seen |= {action["type"] for _, case in CASES for action in case["actions"]}
    assert SESSION_ACTION_TYPES <= seen


MIXED_VERSION = {"turn ended before it started", "session without a default chat", "several active clients",
                 "input requests sharing an id", "call paused for MCP authentication"}
"""Divergences only sessions made or changed by 0.9.0 clients show (the 0.2.0 corpora are lifts)."""


def check_step(session: InternalSession, action: dict) -> tuple[list[str], bool]:
    """One 0.2.0 action on an internal session: the divergences it needed (``None`` as the second
    value when it fails even with them)."""
    before = down(session)
    expected = strip_none(reduce_v02("session", before, action, CLOCK))
    up = session_action_up(action, session, now=CLOCK, from_client=False)
    after = session
    for channel, internal_action in up.envelopes:
        after = apply_internal(after, channel, internal_action)
    got = down(after)
    if wire_equal(got, expected):
        return [], True
    applicable = [rule for rule in DIVERGENCES if rule.applies(before, action, up, session)]
    paths = tuple(path for rule in applicable for path in rule.may_differ)
    ok = bool(applicable) and wire_equal(without_paths(got, paths), without_paths(expected, paths))
    return [rule.name for rule in applicable], ok


def _paused_call_example() -> InternalSession:
    """The session hypothesis found a paused MCP call in: a side chat is the default chat, and its
    active turn holds call ``c3`` waiting for authentication (no output yet)."""
    chat = "ahp-chat://side/cDovczE"
    call = {"toolCallId": "c3", "toolName": "bash", "displayName": "Bash", "status": "auth-required", "invocationMessage": "",
            "confirmed": "not-needed", "contributor": {"kind": "mcp", "customizationId": "mcp-top"},
            "auth": {"reason": "required", "resource": {"resource": "https://mcp.example"}}}
    summary = {"resource": chat, "title": "", "status": 1, "modifiedAt": EPOCH_ISO}
    active = {"id": "t1", "startedAt": EPOCH_ISO, "message": {"text": "", "origin": {"kind": "user"}},
              "responseParts": [{"kind": "toolCall", "toolCall": call}]}
    return InternalSession(
        uri="p:/s1",
        state={"provider": "p", "title": "", "status": 1, "lifecycle": "creating", "activeClients": [], "chats": [summary],
               "defaultChat": chat},
        chats={chat: {**summary, "turns": [], "activeTurn": active}},
        created_at=EPOCH_ISO,
    )


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(strategies.internal_sessions(), v02_strategies.session_actions())
@example(_paused_call_example(),
         {"type": "session/toolCallContentChanged", "turnId": "t1", "toolCallId": "c3", "content": [{"type": "text", "text": ""}]})
@example(_paused_call_example(),
         {"type": "session/toolCallReady", "turnId": "t1", "toolCallId": "c3", "invocationMessage": '{"k": 1}', "confirmationTitle": "ls -la",
          "options": [{"id": "o1", "label": "Allow", "kind": "approve"}, {"id": "o2", "label": "Deny", "kind": "deny"}], "editable": False})
@example(_paused_call_example(),
         {"type": "session/toolCallConfirmed", "turnId": "t1", "toolCallId": "c3", "approved": False, "reason": "denied", "selectedOptionId": "o2"})
@example(_paused_call_example(),
         {"type": "session/toolCallComplete", "turnId": "t1", "toolCallId": "c3",
          "result": {"success": False, "pastTenseMessage": {"markdown": '{"k": 1}'}}, "requiresResultConfirmation": False})
def test_0_2_0_actions_on_sessions_of_0_9_0_clients_commute(session, action):
    """Internal sessions as 0.9.0 clients leave them (several chats, several active clients, drafts,
    paused MCP calls, answered input requests, resumable errors...) and every 0.2.0 session action."""
    needed, ok = check_step(session, action)
    assert ok, (action, needed)


def test_the_mixed_version_divergences_are_real():
    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 8, "createdAt": 0,
                         "modifiedAt": 0}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    chat = session.default_chat_uri
    late = apply_internal(session, chat, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "1970-01-01T00:00:20.000Z",
                                          "message": {"text": "hi", "origin": {"kind": "user"}}})
    assert check_step(late, {"type": "session/turnComplete", "turnId": "t1"}) == (["turn ended before it started"], True)
    chatless = apply_internal(session, session.uri, {"type": "session/chatRemoved", "chat": chat})
    assert check_step(chatless, {"type": "session/turnStarted", "turnId": "t1", "userMessage": {"text": "hi"}}) == (
        ["session without a default chat"], True)
    crowded = session
    for client in ("vscode", "tui"):
        crowded = apply_internal(crowded, session.uri, {"type": "session/activeClientSet", "activeClient": {"clientId": client, "tools": []}})
    assert check_step(crowded, {"type": "session/activeClientChanged", "activeClient": None}) == (["several active clients"], True)
    busy = apply_internal(session, chat, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "1970-01-01T00:00:00.000Z",
                                          "message": {"text": "hi", "origin": {"kind": "user"}}})
    twice = {"kind": "inputRequest", "request": {"id": "r1", "message": "?"}}
    busy = apply_internal(busy, chat, {"type": "chat/responsePart", "turnId": "t1", "part": twice})
    busy = apply_internal(busy, chat, {"type": "chat/responsePart", "turnId": "t1", "part": twice})
    assert check_step(busy, {"type": "session/turnStarted", "turnId": "t2", "userMessage": {"text": "again"}}) == (
        ["input requests sharing an id"], True)


def test_every_listed_divergence_is_needed_and_most_steps_need_none():
    needed: Counter = Counter()
    steps = 0
    for index in range(len(VECTORS)):
        needed += vector_outcome(index)[0].needed
        steps += len(VECTORS[index]["actions"])
    for position in range(len(CASES)):
        needed += case_outcome(position)[0].needed
        steps += len(CASES[position][1]["actions"])
    assert set(needed) == {rule.name for rule in DIVERGENCES} - MIXED_VERSION, needed
    assert sum(needed.values()) < steps / 4, (needed, steps)


# --- what a 0.2.0 client may and may not dispatch -------------------------------------------------


def test_a_client_cannot_dispatch_host_only_actions():
    session = session_lift(in_domain(CASES[0][1]["initial"])[0])
    up = session_action_up({"type": "session/delta", "turnId": "t1", "partId": "p", "content": "x"}, session, now=CLOCK)
    assert up.refused == "session/delta is dispatched by the host only" and up.envelopes == ()
    assert "session/turnStarted" in CLIENT_DISPATCHABLE and len(CLIENT_DISPATCHABLE) == 27


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ({"type": "session/nonExistentAction"}, "unknown action type 'session/nonExistentAction' in AHP 0.2.0"),
        ({"type": "terminal/input", "data": "x"}, "terminal/input belongs on a terminal channel, not a session channel"),
        ({"kind": "no type"}, "an action is an object with a string type"),
        ("session/ready", "an action is an object with a string type"),
    ],
)
def test_refusals_say_why(action, reason):
    session = session_lift(in_domain(CASES[0][1]["initial"])[0])
    assert session_action_up(action, session, now=CLOCK).refused == reason


def test_a_session_without_a_default_chat_cannot_take_a_turn():
    session = session_lift(in_domain(CASES[0][1]["initial"])[0])
    bare = dataclasses.replace(session, state={k: v for k, v in session.state.items() if k != "defaultChat"})
    up = session_action_up({"type": "session/turnStarted", "turnId": "t9", "userMessage": {"text": "hi"}}, bare, now=CLOCK)
    assert up.refused == "the session has no default chat to hold its conversation"


def test_a_turn_started_by_a_0_2_0_client_carries_the_model_and_time():
    state = {
        "summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1, "createdAt": 5,
                    "modifiedAt": 5, "model": {"id": "gpt"}, "agent": {"uri": "agent:/a"}},
        "lifecycle": "ready",
        "turns": [],
    }
    session = session_lift(state)
    up = session_action_up({"type": "session/turnStarted", "turnId": "t1", "userMessage": {"text": "hi"}}, session, now=1_000)
    (channel, action), = up.envelopes
    assert channel == "ahp-chat://default/cDovcw"  # p:/s
    assert action == {
        "type": "chat/turnStarted",
        "turnId": "t1",
        "startedAt": "1970-01-01T00:00:01.000Z",
        "message": {"text": "hi", "origin": {"kind": "user"}, "model": {"id": "gpt"}, "agent": {"uri": "agent:/a"}},
    }


def test_model_change_becomes_the_drafts_model_and_keeps_the_draft_text():
    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1, "createdAt": 5,
                         "modifiedAt": 5}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    chat = session.default_chat_uri
    session = apply_internal(session, chat, {"type": "chat/draftChanged", "draft": {"text": "half a thought", "origin": {"kind": "user"}}})
    up = session_action_up({"type": "session/modelChanged", "model": {"id": "m2"}}, session, now=CLOCK)
    assert up.envelopes == ((chat, {"type": "chat/draftChanged", "draft": {"text": "half a thought", "origin": {"kind": "user"}, "model": {"id": "m2"}}}),)
    assert down(apply_internal(session, *up.envelopes[0]))["summary"]["model"] == {"id": "m2"}


def test_claiming_the_active_client_role_makes_the_client_the_one_0_2_0_shows():
    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 1, "createdAt": 5,
                         "modifiedAt": 5}, "lifecycle": "ready", "turns": []}
    session = session_lift(state)
    ours = {"clientId": "tui", "tools": []}
    session = apply_internal(session, session.uri, {"type": "session/activeClientSet", "activeClient": ours})
    vscode = {"clientId": "vscode", "tools": []}
    session = apply_internal(session, session.uri, {"type": "session/activeClientSet", "activeClient": vscode})
    assert down(session)["activeClient"] == vscode  # the last to join
    ours = {"clientId": "tui", "tools": [{"name": "open"}]}
    up = session_action_up({"type": "session/activeClientChanged", "activeClient": ours}, session, now=CLOCK)
    assert [action["type"] for _, action in up.envelopes] == ["session/activeClientRemoved", "session/activeClientSet"]
    for envelope in up.envelopes:
        session = apply_internal(session, *envelope)
    assert down(session)["activeClient"] == ours
    assert [client["clientId"] for client in session.state["activeClients"]] == ["vscode", "tui"]


def _session_with_a_paused_call() -> InternalSession:
    """A session whose active turn ``t1`` has MCP call ``c1``, with some output, paused for authentication."""
    state = {"summary": {"resource": "ahp-session:/s", "provider": "p", "title": "T", "status": 8, "createdAt": 5,
                         "modifiedAt": 5}, "lifecycle": "ready", "turns": [],
             "activeTurn": {"id": "t1", "userMessage": {"text": "hi"}, "responseParts": []}}
    session = session_lift(state)
    chat = session.default_chat_uri
    for action in (
        {"type": "chat/toolCallStart", "turnId": "t1", "toolCallId": "c1", "toolName": "search", "displayName": "Search",
         "contributor": {"kind": "mcp", "customizationId": "m"}},
        {"type": "chat/toolCallReady", "turnId": "t1", "toolCallId": "c1", "invocationMessage": "Searching", "confirmed": "not-needed"},
        {"type": "chat/toolCallContentChanged", "turnId": "t1", "toolCallId": "c1", "content": [{"type": "text", "text": "3 hits"}]},
        {"type": "chat/toolCallAuthRequired", "turnId": "t1", "toolCallId": "c1", "auth": {"reason": "required", "resource": {"resource": "https://m"}}},
    ):
        session = apply_internal(session, chat, action)
    return session


@pytest.mark.parametrize(
    "action",
    [
        {"type": "session/toolCallContentChanged", "turnId": "t1", "toolCallId": "c1", "content": [{"type": "text", "text": "4 hits"}]},
        {"type": "session/toolCallReady", "turnId": "t1", "toolCallId": "c1", "invocationMessage": "Searching again", "confirmed": "not-needed"},
        {"type": "session/toolCallComplete", "turnId": "t1", "toolCallId": "c1", "result": {"success": True, "pastTenseMessage": "Searched"}},
        {"type": "session/toolCallComplete", "turnId": "t1", "toolCallId": "c1", "result": {"success": False, "pastTenseMessage": "Gave up"}},
    ],
    ids=["content", "ready", "success", "failure"],
)
def test_a_call_paused_for_mcp_authentication_is_a_real_divergence(action):
    session = _session_with_a_paused_call()
    shown = down(session)["activeTurn"]["responseParts"][0]["toolCall"]
    assert shown["status"] == "running" and shown["content"] == [{"type": "text", "text": "3 hits"}]
    # 0.2.0 updates the running call it sees; 0.9.0 keeps the paused call as it was.
    expected = reduce_v02("session", down(session), action, CLOCK)
    assert expected["activeTurn"]["responseParts"][0]["toolCall"] != shown
    assert check_step(session, action) == (["call paused for MCP authentication"], True)
    assert session_action_up(action, session, now=CLOCK, from_client=False).refused == (
        "the tool call waits for its MCP server's authentication, not for a client")


def test_a_client_cannot_answer_for_a_call_waiting_on_mcp_authentication():
    session = _session_with_a_paused_call()
    assert down(session)["activeTurn"]["responseParts"][0]["toolCall"]["status"] == "running"
    up = session_action_up(
        {"type": "session/toolCallComplete", "turnId": "t1", "toolCallId": "c1", "result": {"success": True, "pastTenseMessage": "x"}},
        session, now=CLOCK,
    )
    assert up.refused == "the tool call waits for its MCP server's authentication, not for a client"
    assert open_input_requests(session.default_chat.get("activeTurn")) == []
