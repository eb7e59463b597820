"""Each renamed object: ``*_down(*_up(x)) == x`` for 0.2.0 shapes, and what each rename does."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ahp.dialects.v0_2 import shapes
from ahp.dialects.v0_2.uris import default_chat_uri, internal_session_uri, v02_session_uri

user_messages = st.fixed_dictionaries({"text": st.text(max_size=5)}, optional={"_meta": st.just({"k": 1}),
                                                                               "attachments": st.just([{"type": "simple", "label": "l"}])})
calls = st.fixed_dictionaries(
    {"toolCallId": st.just("c"), "toolName": st.just("t"), "displayName": st.just("T"),
     "status": st.sampled_from(["streaming", "pending-confirmation", "running", "completed", "cancelled"])},
    optional={"toolClientId": st.sampled_from(["tui", ""]), "_meta": st.just({"x": 1}), "userSuggestion": user_messages,
              "toolInput": st.just("{}")},
)
parts = st.one_of(
    st.builds(lambda call: {"kind": "toolCall", "toolCall": call}, calls),
    st.just({"kind": "markdown", "id": "m", "content": "x"}),
    st.just({"kind": "systemNotification", "content": {"markdown": "*"}}),
)
turns = st.fixed_dictionaries(
    {"id": st.just("t"), "userMessage": user_messages, "responseParts": st.lists(parts, max_size=3),
     "state": st.sampled_from(["complete", "cancelled", "error"])},
    optional={"usage": st.just({"inputTokens": 1}), "error": st.just({"errorType": "x", "message": "m"})},
)
customizations = st.fixed_dictionaries(
    {"type": st.sampled_from(["plugin", "directory", "mcpServer"]), "id": st.just("c"), "uri": st.just("u:/"),
     "name": st.just("n"), "enabled": st.booleans()},
    optional={"children": st.just([{"type": "mcpServer", "id": "k", "uri": "u:/k", "name": "k", "enabled": False}])},
)


@given(user_messages)
def test_messages(message):
    lifted = shapes.message_up(message, model={"id": "m"})
    assert lifted["origin"] == {"kind": "user"} and lifted["model"] == {"id": "m"}
    assert shapes.user_message_down(lifted) == message


@given(calls)
def test_tool_calls(call):
    assert shapes.tool_call_down(shapes.tool_call_up(call)) == call
    if "toolClientId" in call:
        assert shapes.tool_call_up(call)["contributor"] == {"kind": "client", "clientId": call["toolClientId"]}


@given(turns)
def test_turns(turn):
    assert shapes.turn_down(shapes.turn_up(turn)) == turn


@given(st.lists(customizations, max_size=3))
def test_customizations(entries):
    assert shapes.customizations_down(shapes.customizations_up(entries)) == entries


@given(st.fixed_dictionaries({"label": st.just("L"), "uriTemplate": st.sampled_from(["a:/x", "a:/{turnId}", "a:/{originalTurnId}/{modifiedTurnId}"])},
                             optional={"files": st.integers(0, 3), "description": st.just("d")}))
def test_changesets(summary):
    lifted = shapes.changeset_up(summary)
    assert lifted["changeKind"] == {"a:/x": "session", "a:/{turnId}": "turn"}.get(summary["uriTemplate"], "compare-turns")
    assert shapes.changeset_down(lifted) == summary


def test_an_mcp_contributor_has_no_0_2_0_form_and_a_paused_call_is_running():
    call = {"toolCallId": "c", "status": "auth-required", "contributor": {"kind": "mcp", "customizationId": "m"},
            "intention": "look", "auth": {"reason": "required"}, "confirmed": "not-needed"}
    assert shapes.tool_call_down(call) == {"toolCallId": "c", "status": "running", "confirmed": "not-needed"}


def test_plugin_decisions_add_up_to_enabled():
    plugin = {"type": "plugin", "id": "p", "uri": "u:/", "name": "P"}
    assert shapes.customization_down(plugin)["enabled"] is True
    assert shapes.customization_down({**plugin, "enablement": [{"kind": "session", "enabled": False},
                                                               {"kind": "global", "enabled": True}]})["enabled"] is False
    assert shapes.session_decision(True, [{"kind": "session", "enabled": False}, {"kind": "global", "enabled": False}]) == [
        {"kind": "session", "enabled": True}, {"kind": "global", "enabled": False}]


def test_terminal_claims_and_lists():
    providers = {"s": "p"}.get
    claim = {"kind": "session", "session": "ahp-session:/s", "toolCallId": "c"}
    lifted = shapes.claim_up(claim, lambda uri: internal_session_uri(uri, providers))
    assert lifted == {**claim, "session": "p:/s", "chat": default_chat_uri("p:/s")}
    assert shapes.claim_down(lifted, v02_session_uri) == claim
    info = {"resource": "ahp-terminal:/t", "title": "sh", "claim": {"kind": "client", "clientId": "c"}}
    assert shapes.terminal_info_up(info, providers)["lifecycle"] == {"status": "running"}
    assert shapes.terminal_info_down(shapes.terminal_info_up({**info, "exitCode": 2}, providers), v02_session_uri) == {**info, "exitCode": 2}
