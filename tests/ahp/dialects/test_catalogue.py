"""The version catalogue answers for the three lines the host meets: 0.2.0, 0.7.0 and 0.9.0.

The tables are checked against independent sources in the repository: the action types of the
vendored 0.7.0 merged schema and the 1.0.0 actions schema, the 0.2.0 reducers' catalogue and the
0.2.0 protocol module's "introduced in" column.
"""

from __future__ import annotations

import pytest

from ahp import state as internal
from ahp.dialects import catalogue
from ahp.dialects.catalogue import action_types_known_to, introduced_in, known_to, notification_known_to
from ahp.dialects.v0_2.state import ACTION_TYPES as ACTION_TYPES_0_2_REDUCERS
from ahp.dialects.v0_2.wire.actions import ACTIONS as ACTIONS_0_2
from tests.ahp.state._support import schema_0_7, schema_1_0


def _schema_action_types(schema: dict) -> set[str]:
    defs, found = schema["$defs"], set()

    def walk(name: str) -> None:
        definition = defs[name]
        if "oneOf" in definition:
            for branch in definition["oneOf"]:
                walk(branch["$ref"].split("/")[-1])
        else:
            found.add(definition["properties"]["type"]["const"])

    walk("StateAction")
    return found


def test_the_registry_table_is_the_1_0_0_schema_s_action_list():
    assert set(catalogue.ACTION_INTRODUCED_IN) == _schema_action_types(schema_1_0())
    assert len(catalogue.ACTION_INTRODUCED_IN) == 106


def test_0_7_0_knows_exactly_the_85_types_of_its_schema():
    assert action_types_known_to("0.7.0") == _schema_action_types(schema_0_7())


def test_0_9_0_knows_the_1_0_0_types_but_the_0_10_0_canvas_ones_and_the_internal_model_has_them_all():
    known = action_types_known_to("0.9.0")
    assert known == _schema_action_types(schema_1_0()) - {"chat/canvasesChanged", "canvas/stateChanged"}
    assert known == set().union(*internal.ACTION_TYPES.values())
    assert action_types_known_to("1.0.0") == _schema_action_types(schema_1_0())


def test_0_2_0_knows_exactly_the_0_2_0_catalogue_with_its_introduced_versions():
    types_0_2 = set().union(*ACTION_TYPES_0_2_REDUCERS.values())
    assert catalogue.ACTION_TYPES_0_2 == types_0_2 == set(ACTIONS_0_2)
    assert {action_type: introduced_in(action_type) for action_type in types_0_2} == {
        action_type: spec.introduced_in for action_type, spec in ACTIONS_0_2.items()
    }
    assert action_types_known_to("0.1.0") == {t for t, spec in ACTIONS_0_2.items() if spec.introduced_in == "0.1.0"}


@pytest.mark.parametrize(
    ("action_type", "versions_that_know_it"),
    [
        ("session/delta", {"0.2.0"}),
        ("session/turnStarted", {"0.2.0"}),
        ("session/activeClientChanged", {"0.2.0"}),
        ("session/agentChanged", {"0.2.0"}),
        ("session/titleChanged", {"0.2.0", "0.5.2", "0.6.0", "0.7.0", "0.9.0"}),
        ("chat/turnStarted", {"0.5.2", "0.6.0", "0.7.0", "0.9.0"}),
        ("session/activeClientSet", {"0.5.2", "0.6.0", "0.7.0", "0.9.0"}),
        ("changeset/filesReviewedChanged", {"0.5.2"}),
        ("changeset/filesReviewChanged", {"0.6.0", "0.7.0", "0.9.0"}),
        ("session/workingDirectorySet", {"0.7.0", "0.9.0"}),
        ("session/workingDirectoryReplaced", {"0.9.0"}),
        ("automation/set", {"0.9.0"}),
        ("chat/turnResume", {"0.9.0"}),
        ("chat/canvasesChanged", set()),
        ("future/newAction", set()),
    ],
)
def test_known_to(action_type, versions_that_know_it):
    offered = {"0.2.0", "0.5.2", "0.6.0", "0.7.0", "0.9.0"}
    assert {version for version in offered if known_to(version, action_type)} == versions_that_know_it


@pytest.mark.parametrize("version", ["", "0.9", "v0.9.0", "0.9.0-beta", "00.9.0", None, 9])
def test_a_malformed_version_knows_nothing(version):
    assert not known_to(version, "root/agentsChanged")
    assert not notification_known_to(version, "root/sessionAdded")


def test_notifications_by_version():
    assert {m for m in catalogue.NOTIFICATION_INTRODUCED_IN if notification_known_to("0.2.0", m)} == {
        "root/sessionAdded",
        "root/sessionRemoved",
        "root/sessionSummaryChanged",
        "auth/required",
        "otlp/exportLogs",
        "otlp/exportTraces",
        "otlp/exportMetrics",
    }
    known_0_9 = {m for m in catalogue.NOTIFICATION_INTRODUCED_IN if notification_known_to("0.9.0", m)}
    assert known_0_9 == {m for m in catalogue.NOTIFICATION_INTRODUCED_IN if notification_known_to("0.7.0", m)}
    assert "root/progress" in known_0_9 and len(known_0_9) == 8
    assert not notification_known_to("1.0.0", "channel/frame") and notification_known_to("1.1.0", "tcp/eof")
    assert not notification_known_to("0.9.0", "action")


def _schema_commands(schema: dict) -> set[str]:
    params = {name[: -len("Params")] for name in schema["$defs"] if name.endswith("Params")}
    return {name[0].lower() + name[1:] for name in params} - {
        "base", "paginated",  # shared shapes, not methods
        "authRequired", "sessionAdded", "sessionRemoved", "sessionSummaryChanged", "progress",  # host→client
        "otlpExportLogs", "otlpExportMetrics", "otlpExportTraces",
    }


def test_the_0_2_0_methods_are_those_of_the_0_2_0_table():
    from ahp.dialects.v0_2.wire import METHODS

    clients = {name: spec for name, spec in METHODS.items() if spec.sent_by_client()}
    assert catalogue.CLIENT_REQUESTS["0.2.0"] == {n for n, s in clients.items() if s.kind == "request"}
    assert catalogue.CLIENT_NOTIFICATIONS["0.2.0"] == {n for n, s in clients.items() if s.kind == "notification"}


def test_the_0_7_0_methods_are_the_commands_of_the_0_7_0_schema():
    served = catalogue.CLIENT_REQUESTS["0.7.0"] | catalogue.CLIENT_NOTIFICATIONS["0.7.0"] - {"setClientManagedSettingsPermissions"}
    assert served == _schema_commands(schema_0_7())


@pytest.mark.parametrize("method", ["listAutomationTriggerDefinitions", "fetchAutomationRuns", "runAutomation"])
def test_automations_are_0_9_0_methods(method):
    assert method in catalogue.CLIENT_REQUESTS["0.9.0"]
    assert method not in catalogue.CLIENT_REQUESTS["0.7.0"]


def test_a_0_9_0_connection_never_sees_a_0_2_0_only_or_a_0_10_0_type():
    assert not known_to("0.9.0", "session/delta")
    assert not known_to("0.9.0", "session/activeClientChanged")
    assert not known_to("0.9.0", "chat/canvasesChanged")
    assert known_to("0.9.0", "chat/turnStarted")
    assert known_to("0.9.0", "automation/set")
    assert not known_to("0.7.0", "automation/set")
    assert not known_to("0.2.0", "chat/delta")
    assert known_to("0.2.1", "session/delta")
    assert not known_to("0.9.0", "no/suchAction")


def test_1_0_0_has_the_methods_of_0_9_0_and_the_actions_of_its_registry():
    # The 1.0.0 registry adds no method, action or notification to 0.9.0's (beyond 0.10.0's canvas actions).
    assert catalogue.CLIENT_REQUESTS["1.0.0"] == catalogue.CLIENT_REQUESTS["0.9.0"]
    assert catalogue.CLIENT_NOTIFICATIONS["1.0.0"] == catalogue.CLIENT_NOTIFICATIONS["0.9.0"]
    assert action_types_known_to("1.0.0") - action_types_known_to("0.9.0") == {"chat/canvasesChanged", "canvas/stateChanged"}
    assert known_to("1.0.0", "chat/isReadChanged") and known_to("1.0.0", "session/mcpServerBackgroundRequested")
    assert not known_to("1.0.0", "session/delta")
