"""Root, terminal, changeset and resource-watch channels: both laws, over the official vectors and
the differential cases of those kinds, plus the 0.9.0-only actions of those channels.

Up:   ``down(reduce_internal(lift(s), up(a))) == reduce_0.2.0(s, a)``
Down: ``reduce_0.2.0(down(S), down(A)) == down(reduce_internal(S, A))``
"""

from __future__ import annotations

import pytest

from ahp.dialects.v0_2 import state as v02
from ahp.dialects.v0_2.actions_down import action_down
from ahp.dialects.v0_2.actions_up import action_up
from ahp.dialects.v0_2.states import changeset_down, terminal_down, terminal_lift
from ahp.dialects.v0_2.uris import default_chat_uri
from ahp.state import reduce as reduce_internal
from tests.ahp._wire import first_difference, strip_none, wire_equal

from ._dialect import CHANNEL_PROJECTIONS, CLOCK, provider_of
from .state._support import load_differential_cases, load_vectors

CHANNELS = {"root": "ahp-root://", "terminal": "ahp-terminal:/t1", "changeset": "ahp-changeset:/c1",
            "resourceWatch": "ahp-resource-watch:/w1"}

CASES = [(v["description"], v["reducer"], v["initial"], v["actions"]) for v in load_vectors() if v["reducer"] in CHANNELS]
CASES += [(f"{i}-{c['kind']}", c["kind"], c["initial"], c["actions"]) for i, c in enumerate(load_differential_cases()) if c["kind"] in CHANNELS]


@pytest.mark.parametrize(("name", "kind", "initial", "actions"), CASES, ids=[case[0] for case in CASES])
def test_both_laws_hold(name, kind, initial, actions):
    lift, project = CHANNEL_PROJECTIONS[kind]
    channel = CHANNELS[kind]
    state = lift(strip_none(initial))
    for action in actions:
        shown = strip_none(project(state))
        expected = strip_none(v02.reduce(kind, shown, action, CLOCK))
        up = action_up(channel, action, now=CLOCK, provider_of=provider_of, session_of=lambda uri: None, from_client=False)
        if up.refused:
            assert action["type"].endswith(("/nonExistentAction", "/unknownAction")), up.refused
        for internal_channel, internal_action in up.envelopes:
            assert internal_channel == channel
            after = reduce_internal(kind, state, internal_action, CLOCK)
            projected = action_down(kind, channel, internal_action)
            assert projected.exact and projected.channel == channel
            mirror = shown
            for translated in projected.actions:
                mirror = strip_none(v02.reduce(kind, mirror, translated, CLOCK))
            assert wire_equal(mirror, strip_none(project(after))), first_difference(mirror, strip_none(project(after)))
            state, shown = after, mirror
        got = strip_none(project(state))
        assert wire_equal(got, expected), f"{action['type']}: {first_difference(got, expected)}"


def test_0_9_0_changeset_actions_show_as_0_2_0_can():
    state = {"status": "ready", "files": [{"id": "f1", "edit": {"after": {"uri": "file:///a", "content": {"uri": "x:/1"}}}}],
             "operations": [{"id": "revert", "label": "Revert", "scopes": ["changeset"], "status": "idle"}]}
    channel = CHANNELS["changeset"]
    for action in (
        {"type": "changeset/filesReviewChanged", "files": ["f1"], "reviewed": True},
        {"type": "changeset/operationStatusChanged", "operationId": "revert", "status": "error", "error": {"errorType": "x", "message": "no"}},
        {"type": "changeset/contentChanged", "files": [{"id": "f2", "edit": {}}, {"id": "f3", "edit": {}, "reviewed": True}],
         "operations": [{"id": "pr", "label": "PR", "scopes": ["changeset"], "status": "running"}]},
        {"type": "changeset/statusChanged", "status": "recomputing"},
    ):
        after = reduce_internal("changeset", state, action, CLOCK)
        projected = action_down("changeset", channel, action)
        mirror = changeset_down(state)
        for translated in projected.actions:
            mirror = v02.reduce("changeset", mirror, translated, CLOCK)
        assert wire_equal(strip_none(mirror), strip_none(changeset_down(after))), action["type"]
        state = after
    assert changeset_down(state)["files"] == [{"id": "f2", "edit": {}}, {"id": "f3", "edit": {}}]


def test_a_terminal_that_exits_without_a_code_shows_no_code_and_claims_name_the_default_chat():
    channel = CHANNELS["terminal"]
    up = action_up(channel, {"type": "terminal/claimed", "claim": {"kind": "session", "session": "ahp-session:/s"}},
                   now=CLOCK, provider_of=provider_of, session_of=lambda uri: None)
    assert up.envelopes == ((channel, {"type": "terminal/claimed",
                                       "claim": {"kind": "session", "session": "p:/s", "chat": default_chat_uri("p:/s")}}),)
    state = terminal_lift({"title": "sh", "content": [], "claim": {"kind": "client", "clientId": "c"}, "exitCode": 1}, provider_of=provider_of)
    state = reduce_internal("terminal", state, {"type": "terminal/exited"}, CLOCK)
    assert state["lifecycle"] == {"status": "exited"} and "exitCode" not in terminal_down(state)


def test_terminal_lists_on_the_root_carry_lifecycles_and_chats():
    up = action_up("ahp-root://", {"type": "root/terminalsChanged", "terminals": [
        {"resource": "ahp-terminal:/t", "title": "sh", "claim": {"kind": "session", "session": "ahp-session:/s"}, "exitCode": 0}]},
        now=CLOCK, provider_of=provider_of, session_of=lambda uri: None, from_client=False)
    (_, action), = up.envelopes
    assert action["terminals"][0]["lifecycle"] == {"status": "exited", "exitCode": 0}
    assert action["terminals"][0]["claim"]["chat"] == default_chat_uri("p:/s")


@pytest.mark.parametrize(
    ("channel", "action", "reason"),
    [
        ("ahp-root://", {"type": "root/agentsChanged", "agents": []}, "root/agentsChanged is dispatched by the host only"),
        ("ahp-terminal:/t", {"type": "terminal/data", "data": "x"}, "terminal/data is dispatched by the host only"),
        ("ahp-terminal:/t", {"type": "root/configChanged", "config": {}}, "root/configChanged belongs on a root channel, not a terminal channel"),
        ("ahp-session:/nobody", {"type": "session/titleChanged", "title": "x"}, "no session ahp-session:/nobody"),
        ("ahp-chat://default/x", {"type": "chat/delta"}, "'ahp-chat://default/x' is not a 0.2.0 channel"),
    ],
)
def test_client_dispatches_that_are_refused(channel, action, reason):
    assert action_up(channel, action, now=CLOCK, provider_of=provider_of, session_of=lambda uri: None).refused == reason


def test_annotations_and_automations_show_nothing():
    for kind in ("annotations", "automation", "automationRun"):
        projected = action_down(kind, "p:/s/annotations", {"type": "annotations/removed", "annotationId": "a"})
        assert projected.actions == () and projected.channel is None
