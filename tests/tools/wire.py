"""Validate dicts against the AHP 0.2.0 schema shipped in /work/shared (test helper).

Two generator defects survive in the bundled schema and are repaired here, following the
0.2.0 TypeScript types:
* `ToolResultFileEditContent` types before/after `content` as a string; upstream it is
  `interface ToolResultFileEditContent extends FileEdit`, so `content` is a `ContentRef`
  (as PROTOCOL.md section 8 says). It is checked as `FileEdit` plus the `type` tag.
* `ToolDefinition.inputSchema`/`outputSchema` came out with `properties` and `required`
  typed as strings (the `{ items: T[] }`-style wrapper bug); upstream they mirror MCP's
  `{type: "object", properties?: object, required?: string[]}`.
"""

from __future__ import annotations

import copy
import json
from functools import cache, lru_cache
from pathlib import Path

import jsonschema

SCHEMA_PATH = Path("/work/shared/ahp/spec-0.2.0/ahp-0.2.0.schema.json")


@lru_cache(maxsize=1)
def _schema() -> dict:
    schema = json.loads(SCHEMA_PATH.read_text())
    defs = schema["$defs"]
    fixed = copy.deepcopy(defs["FileEdit"])
    fixed["properties"]["type"] = {"const": "fileEdit"}
    fixed["required"] = ["type"]
    defs["ToolResultFileEditContent"] = fixed
    object_schema = {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "properties": {"type": "object"},
            "required": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["type"],
    }
    defs["ToolDefinition"]["properties"]["inputSchema"] = object_schema
    defs["ToolDefinition"]["properties"]["outputSchema"] = object_schema
    return schema


@cache
def _validator(definition: str) -> jsonschema.Draft202012Validator:
    # Compiled once per definition: building a validator over the whole schema is the slow part.
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": _schema()["$defs"]})


def validate_wire(definition: str, value: object) -> None:
    """Raise if `value` is not a valid `$defs[definition]`."""
    error = jsonschema.exceptions.best_match(_validator(definition).iter_errors(value))
    if error is not None:
        raise error


def _no_none(value: object) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            assert item is not None, f"{key} is None"
            _no_none(item)
    elif isinstance(value, list):
        for item in value:
            _no_none(item)


def assert_wire(definition: str, value: object) -> None:
    """Valid against the schema, and no `None` anywhere (absent keys are omitted)."""
    validate_wire(definition, value)
    _no_none(value)
