"""The vendored protocol data is what its SOURCE.txt files say it is.

* ``ahp/dialects/v0_7/spec-0.7.0``: the merged schema is a valid 2020-12 schema; every state and every
  action of the 247 reducer vectors, with null-valued keys dropped (the vectors write ``null`` for
  TypeScript's ``undefined``), validates against it, except the actions of the vectors that use
  deliberately unknown types and the deliberately unknown response part of vector 103, exactly as
  SOURCE.txt reports.
* ``ahp/protocol/spec-1.0.0``: the three schema files have the sha256 sums SOURCE.txt lists, are
  valid 2020-12 schemas, and every ``$ref`` resolves except the one malformed union branch
  SOURCE.txt names (which ``_support.schema_1_0`` drops).
* Both carry their licence.
"""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from jsonschema import Draft202012Validator

from ._support import (
    DELIBERATELY_UNKNOWN,
    SPEC_0_7,
    SPEC_1_0,
    STATE_DEFINITIONS,
    schema_0_7,
    schema_errors,
    vectors_0_7,
)

VECTORS = vectors_0_7()


def test_the_merged_0_7_0_schema_is_a_valid_schema_with_357_definitions():
    Draft202012Validator.check_schema(schema_0_7())
    assert len(schema_0_7()["$defs"]) == 357


@pytest.mark.parametrize("vector", VECTORS, ids=[vector["description"] for vector in VECTORS])
def test_vector_states_and_actions_validate_against_the_0_7_0_schema(vector):
    definition = STATE_DEFINITIONS[vector["reducer"]]
    for key in ("initial", "expected"):
        errors = schema_errors(schema_0_7(), definition, vector[key])
        if vector["_file"].startswith("103-"):
            # The deliberately unknown future response part is the only thing out of schema.
            assert all(error.startswith("activeTurn/responseParts/0:") for error in errors), errors
            assert errors
        else:
            assert errors == [], f"{key}: {errors}"
    for action in vector["actions"]:
        errors = schema_errors(schema_0_7(), "StateAction", action)
        assert (errors != []) == (action["type"] in DELIBERATELY_UNKNOWN), errors


def _listed_sums() -> dict[str, str]:
    text = (SPEC_1_0 / "SOURCE.txt").read_text(encoding="utf-8")
    return dict(re.findall(r"^\s+(\w+)\.schema\.json\s+[\d,]+\s+yes\s+[\d,]+\s+([0-9a-f]{64})$", text, re.M))


@pytest.mark.parametrize("name", ["state", "actions", "notifications"])
def test_each_1_0_0_schema_file_is_the_copy_source_txt_describes(name):
    path = SPEC_1_0 / "schema" / f"{name}.schema.json"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == _listed_sums()[name]
    schema = json.loads(path.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    refs = set(re.findall(r'"\$ref": "#/\$defs/([^"]*)"', path.read_text(encoding="utf-8")))
    assert refs - set(schema["$defs"]) == ({""} if name == "actions" else set())


def test_the_licence_travels_with_the_data():
    for spec in (SPEC_0_7, SPEC_1_0):
        assert "MIT License" in (spec / "LICENSE").read_text(encoding="utf-8")
        assert (spec / "SOURCE.txt").is_file()
