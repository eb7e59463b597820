"""The action catalogue against PROTOCOL.md section 9, METHODS.md and the schema."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from pydantic import ValidationError

from ahp.dialects.v0_2.wire import (
    ACTIONS,
    CLIENT_DISPATCHABLE,
    action_model,
    channel_kind_of,
    load_schema,
    state_action_model,
)
from ahp.dialects.v0_2.wire.schema import REDUCER_CASES_DIR, union_members

from ._checklist import CHECKLIST, checklist_sections

EXPECTED_PER_KIND = {"root": 4, "session": 40, "terminal": 11, "changeset": 5, "resourceWatch": 1}
NEW_IN_0_2_0 = {
    "session/agentChanged", "session/customizationRemoved", "session/changesetsChanged",
    "changeset/statusChanged", "changeset/fileSet", "changeset/fileRemoved",
    "changeset/operationsChanged", "changeset/cleared", "resourceWatch/changed",
}


def test_there_are_61_actions_27_of_them_client_dispatchable():
    assert len(ACTIONS) == 61
    assert len(CLIENT_DISPATCHABLE) == 27
    assert CLIENT_DISPATCHABLE == {t for t, s in ACTIONS.items() if s.client_dispatchable}


def test_action_counts_per_channel_kind():
    assert Counter(s.channel_kind for s in ACTIONS.values()) == EXPECTED_PER_KIND
    dispatchable = Counter(ACTIONS[t].channel_kind for t in CLIENT_DISPATCHABLE)
    assert dispatchable == {"root": 1, "session": 21, "terminal": 5}


def test_catalogue_matches_the_schema_action_type_enum():
    assert set(ACTIONS) == set(load_schema()["$defs"]["ActionType"]["enum"])


def test_every_model_definition_exists_and_names_its_type():
    defs = load_schema()["$defs"]
    for action_type, spec in ACTIONS.items():
        assert spec.model_def in defs, action_type
        for member in union_members(spec.model_def):
            type_ref = defs[member]["properties"]["type"]["$ref"]
            assert defs[type_ref.rsplit("/", 1)[1]]["const"] == action_type


def test_tool_call_confirmed_is_the_approved_denied_union():
    spec = ACTIONS["session/toolCallConfirmed"]
    assert spec.model_def == "SessionToolCallConfirmedAction"
    assert union_members(spec.model_def) == ("SessionToolCallApprovedAction", "SessionToolCallDeniedAction")


def test_introduced_in_marks_the_0_2_0_additions():
    assert {t for t, s in ACTIONS.items() if s.introduced_in == "0.2.0"} == NEW_IN_0_2_0
    assert {s.introduced_in for s in ACTIONS.values()} == {"0.1.0", "0.2.0"}


def test_only_tool_completion_and_content_are_owner_only():
    assert {t for t, s in ACTIONS.items() if s.owner_only} == {
        "session/toolCallComplete", "session/toolCallContentChanged",
    }


def test_channel_kind_of_reads_the_prefix_even_for_unknown_types():
    assert channel_kind_of("session/nonExistentAction") == "session"
    assert channel_kind_of("resourceWatch/changed") == "resourceWatch"
    assert channel_kind_of("bogus/thing") is None


def test_action_model_rejects_a_payload_of_another_shape():
    with pytest.raises(ValidationError):
        action_model("terminal/resized").validate_python({"type": "terminal/resized", "cols": "wide"})
    with pytest.raises(KeyError):
        action_model("session/nonExistentAction")


def _vector_actions():
    for path in sorted(REDUCER_CASES_DIR.glob("*.json")):
        case = json.loads(path.read_text(encoding="utf-8"))
        for index, action in enumerate(case["actions"]):
            if action["type"] in ACTIONS:
                yield pytest.param(action, id=f"{case['description']}#{index}")


@pytest.mark.parametrize("action", list(_vector_actions()))
def test_every_known_action_in_the_reducer_vectors_validates(action):
    # A null other than activeClient means "clear" in the vectors; on the wire such a
    # key is simply absent (PROTOCOL.md 2), so drop it as the host would.
    payload = {k: v for k, v in action.items() if v is not None or k == "activeClient"}
    model = action_model(action["type"]).validate_python(payload)
    assert model.type == action["type"]
    assert type(state_action_model().validate_python(payload)) is type(model)


@pytest.mark.skipif(not CHECKLIST.is_file(), reason="METHODS.md not available on this machine")
def test_catalogue_matches_the_checklist():
    listed: dict[str, str] = {}
    for heading, items in checklist_sections().items():
        if heading.endswith("actions") or "actions (" in heading:
            for name, dispatcher, _ in items:
                for single in name.split("`, `"):
                    listed[single] = dispatcher
    assert set(listed) == set(ACTIONS)
    client = {t for t, by in listed.items() if by.startswith("C")}
    assert client == CLIENT_DISPATCHABLE


@pytest.mark.parametrize(
    "payload",
    [
        {"type": "session/isReadChanged", "isRead": "yes"},
        {"type": "session/isReadChanged", "isRead": 1},
        {"type": "terminal/resized", "cols": "80", "rows": 24},
        {"type": "session/titleChanged", "title": 7},
    ],
)
def test_action_validation_does_not_coerce_json_types(payload):
    with pytest.raises(ValidationError):
        action_model(payload["type"]).validate_python(payload)
