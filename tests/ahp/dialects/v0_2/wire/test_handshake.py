"""The handshake's wire models (``_handshake.py``): validate exactly as the generated ones, load alone."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

import ahp.dialects.v0_2.wire as protocol
from ahp.dialects.v0_2.wire import METHODS
from ahp.dialects.v0_2.wire import _handshake as handshake
from ahp.dialects.v0_2.wire._models import HANDSHAKE

REPO_ROOT = Path(__file__).resolve().parents[5]
SCRIPT = REPO_ROOT / "scripts" / "generate_wire_types.py"


def _generator():
    spec = importlib.util.spec_from_file_location("generate_wire_types", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_resolver_and_the_generator_name_the_same_handshake_definitions():
    assert set(_generator().HANDSHAKE_DEFINITIONS) == HANDSHAKE
    for name in HANDSHAKE:
        assert getattr(handshake, name).__name__ == name


INITIALIZE_PAYLOADS = [
    {"channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": "c1"},
    {"channel": "ahp-root://", "protocolVersions": ["0.9.0", "0.2.0"], "clientId": "c1",
     "initialSubscriptions": ["ahp-root://"], "locale": "en-US", "somethingNewer": {"x": 1}},
    {"channel": "ahp-root://", "protocol_versions": ["0.2.0"], "client_id": "c1"},
    {"channel": "ahp-session://x", "protocolVersions": ["0.2.0"], "clientId": "c1"},
    {"channel": "ahp-root://", "protocolVersions": "0.2.0", "clientId": "c1"},
    {"channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": 7},
    {"channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": "c1", "initialSubscriptions": None},
    {"channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": "c1", "initialSubscriptions": [1]},
    {"channel": "ahp-root://", "protocolVersions": [2], "clientId": "c1", "locale": 5},
    {"protocolVersions": ["0.2.0"]},
    {},
]


def _outcome(model, payload):
    try:
        return "valid", model.model_validate(payload).to_wire()
    except ValidationError as error:
        return "invalid", error.errors(include_url=False)


@pytest.mark.parametrize("payload", INITIALIZE_PAYLOADS)
def test_initialize_params_validate_exactly_as_the_generated_model(payload):
    assert _outcome(handshake.InitializeParams, payload) == _outcome(protocol.InitializeParams, payload)


def test_the_initialize_method_validates_with_the_handshake_model():
    assert METHODS["initialize"].params_model is handshake.InitializeParams
    assert protocol.InitializeParams.__module__ == "ahp.dialects.v0_2.wire._generated"


def test_validating_a_first_initialize_does_not_build_the_other_wire_models():
    code = (
        "import sys\n"
        "from ahp.dialects.v0_2.wire import METHODS\n"
        "METHODS['initialize'].params_model.model_validate("
        "{'channel': 'ahp-root://', 'protocolVersions': ['0.2.0'], 'clientId': 'c'})\n"
        "print('ahp.dialects.v0_2.wire._generated' in sys.modules)\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "False"


GENERATED_TEXT = '''from typing import Any, Literal

from ahp.dialects.v0_2.wire._base import WireModel
from pydantic import Field


class Other(WireModel):
    x: int


class InitializeParams(WireModel):
    channel: Literal['ahp-root://']
    other: Other | None = Field(None, alias='other')
'''


def test_the_generator_refuses_a_handshake_definition_that_needs_another_definition():
    generator = _generator()
    with pytest.raises(generator.GenerationError, match="InitializeParams refers to Other"):
        generator.render_handshake(GENERATED_TEXT)


def test_the_generator_copies_a_handshake_class_with_only_the_imports_it_uses():
    generator = _generator()
    text = generator.render_handshake(GENERATED_TEXT.replace("    other: Other | None = Field(None, alias='other')\n", ""))
    assert "from typing import Literal\n\nfrom ahp.dialects.v0_2.wire._base import WireModel\n" in text
    assert "Field" not in text.split('"""')[-1] and "class Other" not in text
    assert text.endswith("class InitializeParams(WireModel):\n    channel: Literal['ahp-root://']\n")
