"""The generated builders of the internal model (AHP 0.9.0): fresh, complete, and rebuilding
every action of the official 0.7.0 vectors whose shape 0.9.0 kept, exactly."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ahp.protocol import builders
from ahp.state import ACTION_TYPES

REPO_ROOT = Path(__file__).resolve().parents[3]
SCRIPT = REPO_ROOT / "scripts" / "generate_action_builders.py"
VECTORS = REPO_ROOT / "ahp" / "dialects" / "v0_7" / "spec-0.7.0" / "test-cases" / "reducers"
SPEC_1_0_0_ACTIONS = REPO_ROOT / "ahp" / "protocol" / "spec-1.0.0" / "schema" / "actions.schema.json"


def test_both_builders_modules_are_up_to_date_with_their_schemas():
    completed = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def _built_types() -> set[str]:
    built = set()
    for name in builders.__all__:
        function = getattr(builders, name)
        required = {p.name: "x" for p in inspect.signature(function).parameters.values() if p.default is inspect.Parameter.empty}
        built.add(function(**required)["type"])
    return built


def test_every_action_type_the_internal_reducers_know_has_a_builder():
    known = set().union(*ACTION_TYPES.values())
    assert known <= _built_types()


def test_the_builders_are_the_1_0_0_actions_without_the_0_10_0_canvas_ones():
    schema = json.loads(SPEC_1_0_0_ACTIONS.read_text(encoding="utf-8"))
    typed = {
        definition["properties"]["type"]["const"]
        for name, definition in schema["$defs"].items()
        if name.endswith("Action") and "const" in definition.get("properties", {}).get("type", {})
    }
    assert _built_types() == typed - {"chat/canvasesChanged", "canvas/stateChanged"}
    assert "canvas/stateChanged" not in _built_types()


def _snake(key: str) -> str:
    if key == "_meta":
        return "meta"
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _builder_for(action: dict):
    prefix, short = action["type"].split("/", 1)
    if short == "toolCallConfirmed":
        short = "toolCallApproved" if action.get("approved") else "toolCallDenied"
    return getattr(builders, _snake(prefix) + "_" + _snake(short), None)


def test_every_vector_action_with_a_0_9_0_shape_is_rebuilt_exactly_from_its_fields():
    seen = 0
    for path in sorted(VECTORS.glob("*.json")):
        for action in json.loads(path.read_text(encoding="utf-8"))["actions"]:
            builder = _builder_for(action) if isinstance(action.get("type"), str) and "/" in action["type"] else None
            if builder is None:
                continue
            parameters = inspect.signature(builder).parameters
            fixed = ("type", "approved") if action["type"].endswith("/toolCallConfirmed") else ("type",)
            given = {_snake(k): v for k, v in action.items() if k not in fixed}
            required = {n for n, p in parameters.items() if p.default is inspect.Parameter.empty}
            if not required <= given.keys() or not given.keys() <= parameters.keys():
                continue  # a 0.7.0 shape 0.9.0 changed, or a broken action the vectors feed on purpose
            # an optional field sent as null means the same as one left out (the clearing fields)
            expected = {k: v for k, v in action.items() if v is not None or _snake(k) in required or k in fixed}
            assert builder(**given) == expected, path.name
            seen += 1
    assert seen > 350


def test_a_missing_required_field_is_a_type_error_not_a_bad_frame():
    with pytest.raises(TypeError, match="part_id"):
        builders.chat_delta(turn_id="t1", content="hi")  # type: ignore[call-arg]  # deliberately incomplete


def test_the_confirmed_union_has_one_builder_per_branch_with_its_literal():
    approved = builders.chat_tool_call_approved(turn_id="t", tool_call_id="c", confirmed="user-action")
    denied = builders.chat_tool_call_denied(turn_id="t", tool_call_id="c", reason="denied")
    assert approved["approved"] is True and denied["approved"] is False
    assert approved["type"] == denied["type"] == "chat/toolCallConfirmed"
