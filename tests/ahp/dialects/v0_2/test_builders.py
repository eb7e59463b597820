"""The generated 0.2.0 action builders: fresh, complete, and rebuilding every real 0.2.0 action exactly."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from ahp.dialects.v0_2 import builders
from ahp.dialects.v0_2.wire import ACTIONS, action_model
from ahp.dialects.v0_2.wire._models import adapter_for
from tests.ahp.dialects.v0_2.state._support import load_differential_cases

REPO_ROOT = Path(__file__).resolve().parents[4]
SCRIPT = REPO_ROOT / "scripts" / "generate_action_builders.py"
VECTORS = REPO_ROOT / "ahp" / "dialects" / "v0_2" / "wire" / "spec" / "test-cases" / "reducers"


def test_builders_are_up_to_date_with_the_schema():
    completed = subprocess.run([sys.executable, str(SCRIPT), "--check"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_every_action_type_has_a_builder():
    built = set()
    for name in builders.__all__:
        function = getattr(builders, name)
        required = {p.name: "x" for p in inspect.signature(function).parameters.values() if p.default is inspect.Parameter.empty}
        built.add(function(**required)["type"])
    assert built == set(ACTIONS)


def _snake(key: str) -> str:
    if key == "_meta":
        return "meta"
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _builder_for(action: dict):
    short = action["type"].split("/", 1)[1]
    if action["type"] == "session/toolCallConfirmed":
        short = "toolCallApproved" if action.get("approved") else "toolCallDenied"
    return getattr(builders, _snake(action["type"].split("/")[0]) + "_" + _snake(short))


def _valid(action: dict) -> bool:
    if action.get("type") not in ACTIONS:
        return False
    model = action_model(action["type"])
    if action["type"] == "session/toolCallConfirmed":
        # the schema lost the `approved` literals, so the union alone accepts either branch's shape
        model = adapter_for("SessionToolCallApprovedAction" if action.get("approved") else "SessionToolCallDeniedAction")
    try:
        model.validate_python(action)
    except ValidationError:
        return False
    return True


def _real_actions():
    """Every valid action the official vectors and the differential cases fold (the unknown
    types and broken payloads they also feed reducers are left out: no builder makes those)."""
    for path in sorted(VECTORS.glob("*.json")):
        yield from filter(_valid, json.loads(path.read_text(encoding="utf-8"))["actions"])
    for case in load_differential_cases():
        yield from filter(_valid, case.get("actions", []))


def test_every_action_in_the_vectors_is_rebuilt_exactly_from_its_fields():
    seen = 0
    for action in _real_actions():
        builder = _builder_for(action)
        parameters = inspect.signature(builder).parameters
        optional = {name for name, p in parameters.items() if p.default is None}
        # fields no 0.2.0 type declares (tolerated on the wire) are not the builders' business,
        # and an optional field sent as null means the same as one left out
        kept = {k: v for k, v in action.items() if k in ("type", "approved") or _snake(k) in parameters}
        expected = {k: v for k, v in kept.items() if v is not None or _snake(k) not in optional}
        fixed = ("type", "approved") if action["type"] == "session/toolCallConfirmed" else ("type",)
        assert builder(**{_snake(k): v for k, v in kept.items() if k not in fixed}) == expected
        seen += 1
    assert seen > 1000


def test_a_missing_required_field_is_a_type_error_not_a_bad_frame():
    with pytest.raises(TypeError, match="part_id"):
        builders.session_delta(turn_id="t1", content="hi")  # type: ignore[call-arg]  # deliberately incomplete
