"""Validation of tool arguments against the subset of JSON Schema tools declare.

Contract: `validate_arguments(schema, args)` returns a list of human-readable problems
(empty when the arguments are acceptable). It understands `type` (single or list),
`properties`, `required`, `additionalProperties: false`, `enum`, `minimum`/`maximum`,
`minLength`, `items`, `minItems`/`maxItems`. Unknown keywords are ignored rather than
rejected, so a schema from an MCP server never makes a call fail here for a keyword
this module does not implement; the server still validates on its side.

Invariant: booleans are never accepted as numbers or integers (JSON's `true` is not 1).
"""

from __future__ import annotations

from typing import Any

__all__ = ["validate_arguments"]

_TYPE_NAMES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "an array",
    "object": "an object",
    "null": "null",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _type_matches(expected: str, actual: str) -> bool:
    return expected == actual or (expected == "number" and actual == "integer")


def _check(schema: dict[str, Any], value: Any, where: str, problems: list[str]) -> None:
    expected = schema.get("type")
    actual = _json_type(value)
    if expected is not None:
        choices = expected if isinstance(expected, list) else [expected]
        if not any(_type_matches(t, actual) for t in choices):
            wanted = " or ".join(str(_TYPE_NAMES.get(t, t)) for t in choices)
            problems.append(f"{where} must be {wanted}, got {_TYPE_NAMES.get(actual, actual)}")
            return
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(v) for v in schema["enum"])
        problems.append(f"{where} must be one of {allowed}, got {value!r}")
    if actual in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where} must be at least {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where} must be at most {schema['maximum']}, got {value}")
    if actual == "string" and "minLength" in schema and len(value) < schema["minLength"]:
        if schema["minLength"] == 1:
            problems.append(f"{where} must not be empty")
        else:
            problems.append(f"{where} must be at least {schema['minLength']} characters long")
    if actual == "array":
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{where} must have at least {schema['minItems']} item(s)")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where} must have at most {schema['maxItems']} item(s)")
        item_schema = schema.get("items")
        if isinstance(item_schema, dict):
            for index, item in enumerate(value):
                _check(item_schema, item, f"{where}[{index}]", problems)
    if actual == "object":
        _check_object(schema, value, where, problems)


def _check_object(schema: dict[str, Any], value: dict[str, Any], where: str, problems: list[str]) -> None:
    properties: dict[str, Any] = schema.get("properties") or {}
    for key in schema.get("required") or []:
        if key not in value:
            problems.append(f"missing required argument {key!r}" if where == "" else f"{where} is missing {key!r}")
    if schema.get("additionalProperties") is False:
        for key in value:
            if key not in properties:
                known = ", ".join(properties) or "none"
                label = f"unexpected argument {key!r}" if where == "" else f"{where} has unexpected key {key!r}"
                problems.append(f"{label} (accepted: {known})")
    for key, sub_schema in properties.items():
        if key in value and isinstance(sub_schema, dict):
            label = f"argument {key!r}" if where == "" else f"{where}.{key}"
            _check(sub_schema, value[key], label, problems)


def validate_arguments(schema: dict[str, Any] | None, args: Any) -> list[str]:
    """Problems with `args` under `schema`, phrased for the model; `[]` when valid."""
    if not isinstance(args, dict):
        return [f"arguments must be a JSON object, got {_TYPE_NAMES.get(_json_type(args), 'something else')}"]
    if not schema:
        return []
    problems: list[str] = []
    _check_object(schema, args, "", problems)
    return problems
