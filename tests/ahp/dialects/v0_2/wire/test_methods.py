"""The JSON-RPC method table against PROTOCOL.md section 5 and the schema."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from ahp.dialects.v0_2.wire import METHODS, MethodSpec, load_schema

from ._checklist import CHECKLIST, checklist_sections

NULL_RESULT_REQUESTS = {"ping", "createSession", "disposeSession", "createTerminal", "disposeTerminal"}
BOTH_DIRECTIONS = {
    "resourceRead", "resourceWrite", "resourceList", "resourceCopy", "resourceDelete",
    "resourceMove", "resourceResolve", "resourceMkdir", "resourceRequest", "createResourceWatch",
}


def test_there_are_35_methods_split_as_the_checklist_says():
    specs = list(METHODS.values())
    assert len(METHODS) == 35
    client_requests = [s for s in specs if s.kind == "request" and s.sent_by_client()]
    host_requests = [s for s in specs if s.kind == "request" and s.sent_by_host()]
    client_notifications = [s for s in specs if s.kind == "notification" and s.direction == "client->host"]
    host_notifications = [s for s in specs if s.kind == "notification" and s.direction == "host->client"]
    assert len(client_requests) == 25
    assert {s.name for s in host_requests} == BOTH_DIRECTIONS
    assert {s.name for s in client_notifications} == {"unsubscribe", "dispatchAction"}
    assert len(host_notifications) == 8


def test_every_params_and_result_definition_exists_in_the_schema():
    defs = load_schema()["$defs"]
    for spec in METHODS.values():
        assert spec.params_def in defs, spec.name
        for result in spec.result_defs:
            assert result in defs, spec.name


def test_null_results_are_recorded_as_none_and_validate_only_null():
    for spec in METHODS.values():
        if spec.kind == "request":
            assert spec.result_is_null == (spec.name in NULL_RESULT_REQUESTS), spec.name
    ping = METHODS["ping"]
    assert ping.result_def is None and ping.result_model is None
    assert ping.result_adapter().validate_python(None) is None
    with pytest.raises(ValueError):
        METHODS["action"].result_adapter()


def test_reconnect_result_is_the_schema_union():
    reconnect = METHODS["reconnect"]
    assert reconnect.result_def == "ReconnectReplayResult | ReconnectSnapshotResult"
    assert reconnect.result_defs == ("ReconnectReplayResult", "ReconnectSnapshotResult")
    assert isinstance(reconnect.result_model, TypeAdapter)


def test_models_are_the_generated_classes_named_like_the_definitions():
    for spec in METHODS.values():
        assert spec.params_model.__name__ == spec.params_def
        if spec.result_def is not None and "|" not in spec.result_def:
            assert spec.result_model.__name__ == spec.result_def


def test_empty_object_results_validate_an_empty_object():
    for name in ("authenticate", "resourceWrite", "resourceMkdir", "resourceDelete", "subscribe"):
        assert METHODS[name].result_adapter().validate_python({}) is not None, name


def test_method_specs_are_immutable():
    with pytest.raises(AttributeError):
        METHODS["ping"].kind = "notification"  # type: ignore[misc]  # deliberately writing a frozen field
    assert isinstance(METHODS["ping"], MethodSpec)


@pytest.mark.skipif(not CHECKLIST.is_file(), reason="METHODS.md not available on this machine")
def test_method_names_and_directions_match_the_checklist():
    sections = checklist_sections()
    def names(prefix: str) -> set[str]:
        heading = next(h for h in sections if h.startswith(prefix))
        return {name for name, _, _ in sections[heading]}

    assert names("Client → host requests") == {s.name for s in METHODS.values()
                                               if s.kind == "request" and s.sent_by_client()}
    assert names("Host → client requests") == BOTH_DIRECTIONS
    assert names("Client → host notifications") == {"unsubscribe", "dispatchAction"}
    assert names("Host → client notifications") == {s.name for s in METHODS.values()
                                                   if s.kind == "notification" and s.sent_by_host()}
