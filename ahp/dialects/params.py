"""Checking a command's params against the vendored schema of its version, pure.

Contract:

* ``ParamsCheck(schema_file)`` reads the schema the first time a check needs it, never at import:
  a connection that never speaks that version never pays for it. ``PARAMS_0_7`` checks against
  the vendored AHP 0.7.0 schema (``ahp/dialects/v0_7/spec-0.7.0/ahp-0.7.0.schema.json``).
* ``check(method, params)`` returns ``None`` when ``params`` fits ``<Method>Params`` (``listSessions``
  → ``ListSessionsParams``), else one sentence for the client naming the first offending field
  by its path (``limit must be a number``, ``claim.kind is required``); it never contains library
  text. A method the schema does not define has nothing to check (``None``).
* ``ActionCheck(schema_file)`` does the same for a dispatched action: ``check_action(action)`` against the
  definition of the action's ``type`` (found through the document's ``StateAction`` union); a
  type the document does not define has nothing to check. A ``null`` where the action may leave a
  field out counts as leaving it out (the reducers read it so, and the vendored schemas let
  several fields an action clears be only absent). ``ACTIONS_1_0`` checks against the vendored
  1.0.0 actions schema (``ahp/protocol/spec-1.0.0/``, the model's, 0.9.0's too), ``ACTIONS_0_7``
  against the 0.7.0 one.
* It understands the part of JSON Schema the AHP command schemas use: ``$ref`` (to ``#/$defs``),
  ``type``, ``const``, ``enum``, ``required``, ``properties``, ``additionalProperties`` (a schema),
  ``items`` and ``oneOf``/``anyOf`` (a value must fit one branch). Unknown properties are allowed,
  as the schemas allow them (0.8.0 adds ``_meta`` to every command).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["ACTIONS_0_7", "ACTIONS_1_0", "PARAMS_0_7", "ActionCheck", "ParamsCheck"]

_REF = "#/$defs/"

_TYPE_WORDS = {
    "string": "a string", "number": "a number", "integer": "a whole number", "boolean": "true or false",
    "array": "a list", "object": "an object", "null": "null",
}


def _fits_type(value: Any, name: str) -> bool:
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, float) and value.is_integer())
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    if name == "null":
        return value is None
    return True


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


class ParamsCheck:
    """Params checks against one vendored schema document (loaded on first use)."""

    def __init__(self, schema_file: Path) -> None:
        self._file = schema_file
        self._defs: dict[str, Any] | None = None

    @property
    def defs(self) -> dict[str, Any]:
        if self._defs is None:
            with self._file.open(encoding="utf-8") as handle:
                self._defs = json.load(handle)["$defs"]
        return self._defs

    def defines(self, method: str) -> bool:
        return _params_name(method) in self.defs

    def check(self, method: str, params: Any) -> str | None:
        schema = self.defs.get(_params_name(method))
        if schema is None:
            return None
        return self._problem(schema, params, "")

    # -- the subset of JSON Schema ------------------------------------------------------------

    def _resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while "$ref" in schema and seen < 32:
            ref = schema["$ref"]
            schema = self.defs.get(ref[len(_REF):], {}) if ref.startswith(_REF) else {}
            seen += 1
        return schema

    def _problem(self, schema: dict[str, Any], value: Any, path: str) -> str | None:
        schema = self._resolve(schema)
        where = path or "params"
        branches = schema.get("oneOf") or schema.get("anyOf")
        if branches:
            problems = [self._problem(branch, value, path) for branch in branches]
            if all(problem is not None for problem in problems):
                return _union_problem(where, value, [self._resolve(b) for b in branches], problems)
        if "const" in schema and value != schema["const"]:
            return f"{where} must be {_shown(schema['const'])}"
        if "enum" in schema and value not in schema["enum"]:
            if len(schema["enum"]) == 1:
                return f"{where} must be {_shown(schema['enum'][0])}"
            return f"{where} must be one of {', '.join(_shown(v) for v in schema['enum'][:8])}"
        declared = schema.get("type")
        names = [declared] if isinstance(declared, str) else list(declared or ())
        if names and not any(_fits_type(value, name) for name in names):
            return f"{where} must be {' or '.join(_TYPE_WORDS.get(n, n) for n in names)}"
        if isinstance(value, dict):
            return self._object_problem(schema, value, path)
        if isinstance(value, list) and isinstance(schema.get("items"), dict):
            for index, item in enumerate(value):
                problem = self._problem(schema["items"], item, f"{where}[{index}]")
                if problem is not None:
                    return problem
        return None

    def _object_problem(self, schema: dict[str, Any], value: dict[str, Any], path: str) -> str | None:
        prefix = f"{path}." if path else ""
        for name in schema.get("required") or ():
            if name not in value:
                return f"{prefix}{name} is required"
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in properties:
                problem = self._problem(properties[name], item, prefix + name)
            elif isinstance(extra, dict):
                problem = self._problem(extra, item, prefix + name)
            else:
                continue
            if problem is not None:
                return problem
        return None


class ActionCheck(ParamsCheck):
    """Checks of dispatched actions against one vendored schema document (loaded on first use)."""

    def __init__(self, schema_file: Path) -> None:
        super().__init__(schema_file)
        self._types: dict[str, str] | None = None

    @property
    def definitions(self) -> dict[str, str]:
        """Action type → the name of its definition (a type with variants, such as the approved
        and denied ``chat/toolCallConfirmed``, names the union of them)."""
        if self._types is None:
            found: dict[str, str] = {}
            for branch in (self.defs.get("StateAction") or {}).get("oneOf") or ():
                name = str(branch.get("$ref", ""))[len(_REF):]
                definition = self.defs.get(name)
                if not name or definition is None:
                    continue  # (1.0.0's malformed ``{"$ref": "#/$defs/"}`` branch)
                variants = [self._resolve(v) for v in definition.get("oneOf") or ()] or [definition]
                for variant in variants:
                    const = ((variant.get("properties") or {}).get("type") or {}).get("const")
                    if isinstance(const, str):
                        found.setdefault(const, name)
            self._types = found
        return self._types

    def check_action(self, action: Any) -> str | None:
        """None when ``action`` fits its type's definition (or its type is not defined here), else
        one sentence naming the first offending field."""
        if not isinstance(action, dict):
            return "the action must be an object"
        name = self.definitions.get(action.get("type"))  # type: ignore[arg-type]
        if name is None:
            return None
        schema = self.defs[name]
        required = set(schema.get("required") or ())
        present = {key: value for key, value in action.items() if value is not None or key in required}
        return self._problem(schema, present, "")


def _union_problem(where: str, value: Any, branches: list[dict[str, Any]], problems: list[str | None]) -> str:
    """One sentence for a value that fits no branch of a union: if every branch is an object
    tagged by a constant ``kind``/``type`` and the value names one, that branch's problem. Where
    several branches share the tag (an approved and a denied ``chat/toolCallConfirmed``), the one
    the value lacks the fewest required fields of (the first of equals): a denial with a malformed
    ``userSuggestion`` is told about that, not that an approval needs ``confirmed``."""
    if isinstance(value, dict):
        for tag in ("kind", "type"):
            consts = [((b.get("properties") or {}).get(tag) or {}).get("const") for b in branches]
            if all(c is not None for c in consts):
                if value.get(tag) in consts:
                    named = [index for index, const in enumerate(consts) if const == value.get(tag)]
                    best = min(named, key=lambda index: sum(name not in value for name in branches[index].get("required") or ()))
                    return problems[best] or f"{where} is malformed"
                return f"{where}.{tag} must be one of {', '.join(_shown(c) for c in consts)}"
    return f"{where} has the wrong shape"


def _params_name(method: str) -> str:
    return method[:1].upper() + method[1:] + "Params"


_SCHEMA_0_7 = Path(__file__).resolve().parent / "v0_7" / "spec-0.7.0" / "ahp-0.7.0.schema.json"

PARAMS_0_7 = ParamsCheck(_SCHEMA_0_7)
"""Params checks of AHP 0.7.0 (the served 0.9.0 dialect uses them too, see ``host.transport.dialects``)."""

ACTIONS_0_7 = ActionCheck(_SCHEMA_0_7)
"""Checks of actions a 0.7.0 client dispatches, in 0.7.0 shapes."""

ACTIONS_1_0 = ActionCheck(Path(__file__).resolve().parents[1] / "protocol" / "spec-1.0.0" / "schema" / "actions.schema.json")
"""Checks of actions a 1.0.0 or 0.9.0 client dispatches (the model's shapes)."""
