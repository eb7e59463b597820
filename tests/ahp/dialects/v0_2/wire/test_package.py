"""The 0.2.0 wire package surface (ahp.dialects.v0_2.wire): cheap to import, complete __all__."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import ahp.dialects.v0_2.wire as protocol

REPO_ROOT = Path(__file__).resolve().parents[5]


def test_importing_the_package_does_not_import_the_generated_models():
    code = (
        "import sys, ahp.dialects.v0_2.wire as p\n"
        "assert p.METHODS['ping'] and p.ACTIONS['session/delta']\n"
        "print('ahp.dialects.v0_2.wire._generated' in sys.modules)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "False"


def test_generated_models_load_on_first_attribute_access():
    code = "import ahp.dialects.v0_2.wire as p; print(p.ActionEnvelope.__module__)"
    completed = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60
    )
    assert completed.stdout.strip() == "ahp.dialects.v0_2.wire._generated", completed.stderr


def test_every_name_in_all_is_importable():
    for name in protocol.__all__:
        assert getattr(protocol, name) is not None, name
    assert len(protocol.__all__) == len(set(protocol.__all__))


def test_unknown_attributes_raise_attribute_error():
    try:
        protocol.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("expected AttributeError")
