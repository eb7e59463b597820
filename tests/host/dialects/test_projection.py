"""The root channel and session summaries as 0.7.0 and 0.9.0 clients see them."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import ahp.dialects
from ahp.dialects.v0_2.state.root import reduce_root
from host.dialects import projection
from host.root_config import root_config_state

CLIENT_TERMINAL = {"resource": "ahp-terminal:/a", "title": "bash", "claim": {"kind": "client", "clientId": "c1"}}
EXITED_TERMINAL = {"resource": "ahp-terminal:/b", "title": "make", "claim": {"kind": "client", "clientId": "c1"}, "exitCode": 2}
SESSION_TERMINAL = {"resource": "ahp-terminal:/c", "title": "agent", "claim": {"kind": "session", "session": "ahp-session:/s", "toolCallId": "t1"}}

PLUGIN = {
    "type": "plugin", "id": "file:///p", "uri": "file:///p", "name": "p", "enabled": True,
    "load": {"kind": "loaded"},
    "children": [
        {"type": "skill", "id": "k", "uri": "file:///p/skills/k", "name": "k"},
        {"type": "mcpServer", "id": "m", "uri": "file:///p/.mcp.json", "name": "m"},
    ],
}
AGENT = {
    "provider": "openai", "displayName": "OpenAI", "description": "OpenAI models",
    "models": [{"id": "gpt-5", "provider": "openai", "name": "GPT-5", "supportsVision": True, "maxContextWindow": 400000,
                "configSchema": {"type": "object", "properties": {"reasoningEffort": {
                    "type": "string", "title": "Reasoning effort", "enum": ["low", "high"], "default": "low"}}}}],
    "customizations": [PLUGIN],
}
ROOT_STATE = {
    "agents": [AGENT],
    "activeSessions": 2,
    "terminals": [CLIENT_TERMINAL, EXITED_TERMINAL, SESSION_TERMINAL],
    "config": {**root_config_state(), "values": {"telemetryLevel": "off", "http.proxy": ""}},
}

ROOT_ACTIONS = [
    {"type": "root/agentsChanged", "agents": [AGENT, {**AGENT, "provider": "other", "customizations": []}]},
    {"type": "root/agentsChanged", "agents": []},
    {"type": "root/activeSessionsChanged", "activeSessions": 7},
    {"type": "root/terminalsChanged", "terminals": [EXITED_TERMINAL, SESSION_TERMINAL]},
    {"type": "root/terminalsChanged", "terminals": []},
    {"type": "root/configChanged", "config": {"sandbox": {"enabled": "off"}}},
    {"type": "root/configChanged", "config": {"telemetryLevel": "all"}, "replace": True},
]


@cache
def _validator(definition: str) -> Draft202012Validator:
    schema = json.loads((Path(ahp.dialects.__file__).parents[1] / "protocol" / "spec-0.7.0" / "ahp-0.7.0.schema.json").read_text("utf-8"))
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"})


def assert_valid(value: Any, definition: str) -> None:
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in _validator(definition).iter_errors(value)]
    assert errors == [], errors[:3]


@pytest.mark.parametrize("version", ["0.7.0", "0.9.0"])
def test_the_root_state_fits_the_newer_schema(version: str) -> None:
    shown = projection.root_state(ROOT_STATE, version)
    assert_valid(shown, "RootState")
    assert [a["provider"] for a in shown["agents"]] == ["openai"]
    assert shown["agents"][0]["models"] == AGENT["models"]
    assert shown["activeSessions"] == 2 and shown["config"] == ROOT_STATE["config"]


def test_an_agents_mcp_server_declaration_gains_what_0_7_0_requires() -> None:
    [container] = projection.agent_info(AGENT)["customizations"]
    server = container["children"][1]
    assert server["enabled"] is True and server["state"] == {"kind": "stopped"}
    assert container["children"][0] == PLUGIN["children"][0]
    assert PLUGIN["children"][1].keys() == {"type", "id", "uri", "name"}  # the input is not changed


def test_0_7_0_lists_terminals_as_0_2_0_did() -> None:
    assert projection.root_state(ROOT_STATE, "0.7.0")["terminals"] == ROOT_STATE["terminals"]


def test_0_9_0_terminals_have_a_lifecycle_and_only_client_held_ones_are_listed() -> None:
    terminals = projection.root_state(ROOT_STATE, "0.9.0")["terminals"]
    assert terminals == [
        {**CLIENT_TERMINAL, "lifecycle": {"status": "running"}},
        {"resource": "ahp-terminal:/b", "title": "make", "claim": EXITED_TERMINAL["claim"],
         "lifecycle": {"status": "exited", "exitCode": 2}},
    ]
    assert projection.root_state(ROOT_STATE, "0.9.3")["terminals"] == terminals


@pytest.mark.parametrize("version", ["0.7.0", "0.9.0"])
@pytest.mark.parametrize("action", ROOT_ACTIONS, ids=lambda a: a["type"])
def test_translating_an_action_commutes_with_the_root_reducer(action: dict[str, Any], version: str) -> None:
    shown = projection.root_action(action, version)
    assert shown is not None
    assert_valid(shown, "StateAction")
    # Root reducers are the same in every version: replace a field, merge config values.
    assert reduce_root(projection.root_state(ROOT_STATE, version), shown) == projection.root_state(
        reduce_root(ROOT_STATE, action), version)


def test_an_action_whose_shape_did_not_change_is_passed_as_the_same_object() -> None:
    for action in ROOT_ACTIONS:
        if action["type"] in ("root/activeSessionsChanged", "root/configChanged"):
            assert projection.root_action(action, "0.9.0") is action
    assert projection.root_action({"type": "session/ready"}, "0.9.0") is None


SUMMARY = {
    "resource": "ahp-session:/s", "provider": "openai", "title": "Fix the build", "status": 8, "activity": "running tests",
    "createdAt": 1764189900123, "modifiedAt": 1764189960000, "workingDirectory": "file:///home/u/project",
    "model": {"id": "gpt-5"}, "agent": {"uri": "file:///a"}, "changesets": [],
}


def test_a_session_summary_in_the_newer_shape() -> None:
    shown = projection.session_summary(SUMMARY)
    assert shown == {
        "resource": "ahp-session:/s", "provider": "openai", "title": "Fix the build", "status": 8,
        "activity": "running tests", "createdAt": "2025-11-26T20:45:00.123Z", "modifiedAt": "2025-11-26T20:46:00.000Z",
        "workingDirectories": ["file:///home/u/project"],
    }
    assert_valid(shown, "SessionSummary")


def test_summary_changes_in_the_newer_shape() -> None:
    assert projection.summary_changes({"title": "t", "modifiedAt": 0, "model": {"id": "m"}}) == {
        "title": "t", "modifiedAt": "1970-01-01T00:00:00.000Z"}
    assert projection.summary_changes({"model": {"id": "m"}}) == {}
