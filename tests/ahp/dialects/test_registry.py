"""The version tables agree with the vendored schemas of each served version."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import ahp.dialects
from ahp.dialects.registry import (
    ACTION_INTRODUCED_IN,
    CLIENT_NOTIFICATIONS,
    CLIENT_REQUESTS,
    action_known,
    notification_known,
)
from ahp.protocol import ACTIONS, METHODS

SCHEMA_0_7 = json.loads((Path(ahp.dialects.__file__).parents[1] / "protocol" / "spec-0.7.0" / "ahp-0.7.0.schema.json").read_text("utf-8"))


def _action_types(defs: dict) -> set[str]:
    return {d["properties"]["type"]["const"] for name, d in defs.items()
            if name.endswith("Action") and "const" in d.get("properties", {}).get("type", {})}


def test_a_0_2_0_connection_knows_exactly_the_0_2_0_catalogue() -> None:
    assert {t for t in ACTION_INTRODUCED_IN if action_known(t, "0.2.0")} == set(ACTIONS)


def test_a_0_7_0_connection_knows_exactly_the_0_7_0_schemas_action_types() -> None:
    assert {t for t in ACTION_INTRODUCED_IN if action_known(t, "0.7.0")} == _action_types(SCHEMA_0_7["$defs"])


def test_a_0_9_0_connection_never_sees_a_0_2_0_only_or_a_0_10_0_type() -> None:
    assert not action_known("session/delta", "0.9.0")
    assert not action_known("session/turnStarted", "0.9.0")
    assert not action_known("session/activeClientChanged", "0.9.0")
    assert not action_known("chat/canvasesChanged", "0.9.0")
    assert action_known("chat/turnStarted", "0.9.0")
    assert action_known("session/chatsReordered", "0.9.0")
    assert action_known("automation/set", "0.9.0")
    assert not action_known("automation/set", "0.7.0")
    assert not action_known("chat/delta", "0.2.0")
    assert action_known("session/delta", "0.2.1")
    assert not action_known("no/suchAction", "0.9.0")


def test_notifications_by_version() -> None:
    assert notification_known("root/sessionAdded", "0.2.0")
    assert not notification_known("root/progress", "0.2.0")
    assert notification_known("root/progress", "0.9.0")
    assert not notification_known("channel/opened", "0.9.0")


def test_the_0_2_0_methods_are_those_of_the_0_2_0_table() -> None:
    clients = {name: spec for name, spec in METHODS.items() if spec.sent_by_client()}
    assert CLIENT_REQUESTS["0.2.0"] == {n for n, s in clients.items() if s.kind == "request"}
    assert CLIENT_NOTIFICATIONS["0.2.0"] == {n for n, s in clients.items() if s.kind == "notification"}


def test_the_0_7_0_methods_are_the_commands_of_the_0_7_0_schema() -> None:
    params = {name[: -len("Params")] for name in SCHEMA_0_7["$defs"] if name.endswith("Params")}
    commands = {name[0].lower() + name[1:] for name in params} - {
        "base", "paginated",  # shared shapes, not methods
        "authRequired", "sessionAdded", "sessionRemoved", "sessionSummaryChanged", "progress",  # host→client
        "otlpExportLogs", "otlpExportMetrics", "otlpExportTraces",
    }
    served = CLIENT_REQUESTS["0.7.0"] | CLIENT_NOTIFICATIONS["0.7.0"] - {"setClientManagedSettingsPermissions"}
    assert served == commands


@pytest.mark.parametrize("method", ["listAutomationTriggerDefinitions", "fetchAutomationRuns", "runAutomation"])
def test_automations_are_0_9_0_methods(method: str) -> None:
    assert method in CLIENT_REQUESTS["0.9.0"]
    assert method not in CLIENT_REQUESTS["0.7.0"]
