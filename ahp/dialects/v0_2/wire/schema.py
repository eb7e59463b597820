"""Access to the vendored AHP 0.2.0 JSON Schema (``spec/ahp-0.2.0.schema.json``).

Contract:
- ``SCHEMA_PATH`` points at the merged, repaired schema shipped as package data.
- ``load_schema()`` parses it once and returns the same dict on every call; callers
  must treat it as read-only.
- ``wire_schema()`` is ``load_schema()`` with the known gaps of the repaired schema
  closed, and is what validators and the code generator use. The gaps, each checked
  against the 0.2.0 TypeScript types (which win over the generated schema):

  * ``session/activeClientChanged`` releases the role with ``activeClient: null``
    (PROTOCOL.md 2, 9), but the schema dropped the ``null`` branch of that required key.
    ``NULLABLE_REQUIRED_FIELDS`` lists such (definition, property) pairs.
  * ``ToolResultFileEditContent`` extends ``FileEdit`` in the types, so its
    ``before``/``after.content`` is a ``ContentRef``; the schema kept the string that
    SOURCE.txt says was repaired in ``FileEdit`` only.
  * ``ToolDefinition.inputSchema``/``outputSchema`` are JSON Schema objects whose
    ``properties`` is a record of schemas and ``required`` a list of names; the schema
    generator flattened both to strings, which no real tool definition satisfies.
  * ``Snapshot.state`` lists root, session, terminal and changeset states but not
    ``ResourceWatchState``, whose own definition says it is "returned when a client
    subscribes to an ``ahp-resource-watch:`` URI" (PROTOCOL.md 11): a watch snapshot is a
    ``Snapshot`` too.
- ``union_members(name)`` lists the definitions an ``anyOf`` definition is made of
  (``SessionToolCallConfirmedAction`` -> approved, denied), following nested unions,
  and is ``(name,)`` for a plain object definition.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

SPEC_DIR = Path(__file__).resolve().parent / "spec"
SCHEMA_PATH = SPEC_DIR / "ahp-0.2.0.schema.json"
REDUCER_CASES_DIR = SPEC_DIR / "test-cases" / "reducers"
_REF_PREFIX = "#/$defs/"


@cache
def load_schema() -> dict[str, Any]:
    """The parsed schema document (cached; do not mutate)."""
    with SCHEMA_PATH.open(encoding="utf-8") as handle:
        schema: dict[str, Any] = json.load(handle)
    return schema


NULLABLE_REQUIRED_FIELDS: tuple[tuple[str, str], ...] = (
    ("SessionActiveClientChangedAction", "activeClient"),
)


@cache
def wire_schema() -> dict[str, Any]:
    """The schema with ``NULLABLE_REQUIRED_FIELDS`` admitting ``null`` (cached; do not mutate)."""
    patched = copy.deepcopy(load_schema())
    for definition, prop in NULLABLE_REQUIRED_FIELDS:
        node = patched["$defs"][definition]["properties"][prop]
        branches = node.pop("anyOf", None)
        if branches is None:
            branches = [{key: node.pop(key) for key in list(node) if key != "description"}]
        node["anyOf"] = [*branches, {"type": "null"}]
    defs = patched["$defs"]
    file_edit_content = defs["ToolResultFileEditContent"]["properties"]
    for side in ("before", "after"):
        file_edit_content[side]["properties"]["content"] = {"$ref": "#/$defs/ContentRef"}
    for key in ("inputSchema", "outputSchema"):
        tool_schema = defs["ToolDefinition"]["properties"][key]["properties"]
        tool_schema["properties"] = {"type": "object", "additionalProperties": {}}
        tool_schema["required"] = {"type": "array", "items": {"type": "string"}}
    snapshot_states = defs["Snapshot"]["properties"]["state"]["anyOf"]
    if {"$ref": _REF_PREFIX + "ResourceWatchState"} not in snapshot_states:
        snapshot_states.append({"$ref": _REF_PREFIX + "ResourceWatchState"})
    return patched


def definitions() -> dict[str, Any]:
    """The schema's ``$defs`` mapping (cached; do not mutate)."""
    defs: dict[str, Any] = load_schema()["$defs"]
    return defs


@cache
def union_members(name: str) -> tuple[str, ...]:
    """The object definitions behind definition ``name``, flattening ``anyOf`` unions."""
    definition = definitions()[name]
    branches = definition.get("anyOf")
    if not branches or not all("$ref" in branch for branch in branches):
        return (name,)
    members: list[str] = []
    for branch in branches:
        ref = branch["$ref"]
        if not ref.startswith(_REF_PREFIX):
            raise ValueError(f"unexpected reference {ref!r} in definition {name!r}")
        for member in union_members(ref[len(_REF_PREFIX):]):
            if member not in members:
                members.append(member)
    return tuple(members)
