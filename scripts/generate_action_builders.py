"""Generate the action builders: one typed function per action of the internal model.

Usage (from the repository root)::

    python scripts/generate_action_builders.py          # rewrite the builders module
    python scripts/generate_action_builders.py --check  # exit 1 if it is stale

Contract:
- One output: ``ahp/protocol/builders.py`` builds the internal model's actions (AHP 0.9.0) from
  the vendored 1.0.0 actions schema (``ahp/dialects/v0_2/wire/spec-1.0.0/schema/actions.schema.json``) with
  the defects its SOURCE.txt lists repaired (the malformed ``{"$ref": "#/$defs/"}`` branch of
  ``StateAction`` dropped, ``SessionStatus`` a non-negative integer, the fields an action clears
  accepting ``null``); the 0.10.0 canvas actions (``chat/canvasesChanged``,
  ``canvas/stateChanged``) are left out, since 0.9.0 has none. Our own clients speak the model's
  versions, so no older version's actions are built (the 0.2.0 projection writes its own).
- Output is plain functions returning plain dicts, because actions are built on the hot path
  (one per streamed token) where constructing a pydantic model would cost more than the rest of
  the work. The generated wire models stay the validators.
- One function per action definition, named after its ``type``: ``chat/toolCallStart`` is
  ``chat_tool_call_start``. The confirmed union has one builder per branch
  (``chat_tool_call_approved`` / ``chat_tool_call_denied``), each writing its own ``approved``
  literal. Constant fields are written, never asked for.
- Parameters are keyword-only and snake_case (``turn_id``), ``_meta`` is ``meta``. A required
  field is a parameter without a default and is always written, even when ``None`` (some
  required fields are nullable); an optional field defaults to ``None`` and is left out when
  ``None`` (for a field an action clears, leaving it out is the clearing). The function's
  docstring is the first paragraph of the schema's description.
- Output is deterministic (sorted by the action's type, then name).
- The script needs only the standard library.
"""

from __future__ import annotations

import argparse
import difflib
import json
import keyword
import re
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
INTERNAL_OUTPUT = REPO_ROOT / "ahp" / "protocol" / "builders.py"
SPEC_1_0_0_ACTIONS = REPO_ROOT / "ahp" / "protocol" / "spec-1.0.0" / "schema" / "actions.schema.json"
CANVAS_ACTIONS = frozenset({"chat/canvasesChanged", "canvas/stateChanged"})
# SOURCE.txt defect 3: fields an action clears ("or `undefined` to clear").
CLEARING_FIELDS = (
    ("SessionActivityChangedAction", "activity"),
    ("ChatActivityChangedAction", "activity"),
    ("SessionChangesetsChangedAction", "changesets"),
    ("ChangesetOperationsChangedAction", "operations"),
    ("ChatChangesetsChangedAction", "changesets"),
    ("SessionDefaultChatChangedAction", "defaultChat"),
    ("ChatDraftChangedAction", "draft"),
    ("SessionMetaChangedAction", "_meta"),
    ("AutomationRunPrimarySessionChangedAction", "primarySession"),
    ("ChatInputAnswerChangedAction", "answer"),
)


def _snake(name: str) -> str:
    if name == "_meta":
        return "meta"
    snake = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    return snake + "_" if keyword.iskeyword(snake) else snake


def _python_type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        if "const" in target or "enum" in target:
            return "str"
        return _python_type(target, defs)
    if "anyOf" in node:
        branches = [_python_type(branch, defs) for branch in node["anyOf"]]
        return " | ".join(dict.fromkeys(" | ".join(branches).split(" | ")))
    kind = node.get("type")
    if isinstance(kind, list):
        return " | ".join(dict.fromkeys(_python_type({**node, "type": k}, defs) for k in kind))
    return {
        "string": "str",
        "boolean": "bool",
        "integer": "int",
        "number": "float",
        "null": "None",
        "array": "Sequence[Any]",
        "object": "Mapping[str, Any]",
    }.get(str(kind), "Any")


def _doc(description: str) -> str:
    first = description.strip().split("\n\n", 1)[0].replace("\n", " ")
    first = re.sub(r"\{@link [^}|]*\|\s*([^}]*)\}", r"\1", first)
    first = re.sub(r"\{@link ([^}]*)\}", r"\1", first)
    return first.replace("\\", "\\\\").replace('"' * 3, "'" * 3)


def _repaired_1_0_0_actions() -> dict[str, Any]:
    """The vendored 1.0.0 actions schema with SOURCE.txt's defects repaired."""
    schema = json.loads(SPEC_1_0_0_ACTIONS.read_text(encoding="utf-8"))
    defs = schema["$defs"]
    union = defs["StateAction"]["oneOf"]
    defs["StateAction"]["oneOf"] = [branch for branch in union if branch.get("$ref") != "#/$defs/"]
    status = defs["SessionStatus"]
    defs["SessionStatus"] = {"type": "integer", "minimum": 0, "description": status.get("description", "")}
    for definition, prop in CLEARING_FIELDS:
        node = defs[definition]["properties"][prop]
        defs[definition]["properties"][prop] = {"anyOf": [node, {"type": "null"}], "description": node.get("description", "")}
    return schema


def _action_definitions_internal(defs: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """(type, definition name, definition) for every 0.9.0 action: the ``StateAction`` union's
    branches, a union branch (the confirmed approved/denied pair) expanded, canvas left out."""
    found = []
    pending = [branch["$ref"].rsplit("/", 1)[-1] for branch in defs["StateAction"]["oneOf"]]
    while pending:
        name = pending.pop(0)
        definition = defs[name]
        if "oneOf" in definition:
            pending[:0] = [branch["$ref"].rsplit("/", 1)[-1] for branch in definition["oneOf"]]
            continue
        action_type = definition["properties"]["type"]["const"]
        if action_type not in CANVAS_ACTIONS:
            found.append((action_type, name, definition))
    return found


def _builder_name(action_type: str, definition_name: str) -> str:
    prefix, short = action_type.split("/", 1)
    if definition_name.endswith(("ApprovedAction", "DeniedAction")) and short == "toolCallConfirmed":
        short = "toolCallApproved" if definition_name.endswith("ApprovedAction") else "toolCallDenied"
    return _snake(prefix) + "_" + _snake(short)


def render(target: str) -> str:
    """The text of the builders module for ``target`` (``internal``: the only one)."""
    if target != "internal":
        raise ValueError(f"no builders for {target!r}")
    defs = _repaired_1_0_0_actions()["$defs"]
    actions = _action_definitions_internal(defs)
    header = "# generated by scripts/generate_action_builders.py from spec-1.0.0/schema/actions.schema.json (repaired), do not edit"
    title = "Typed builders for every action of the internal model (AHP 0.9.0): keyword arguments in, the dict out."
    lines = [
        header,
        f'"""{title}',
        "",
        "Generated; see ``scripts/generate_action_builders.py`` for the naming and ``None`` rules.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "from collections.abc import Mapping, Sequence",
        "from typing import Any",
    ]
    names = []
    for action_type, definition_name, definition in sorted(actions, key=lambda item: (_builder_name(item[0], item[1]))):
        function = _builder_name(action_type, definition_name)
        names.append(function)
        every = definition.get("properties", {})
        fixed = {k: v["const"] for k, v in every.items() if k != "type" and "const" in v}
        if definition_name.endswith(("ToolCallApprovedAction", "ToolCallDeniedAction")):
            # The schemas lost TypeScript's `approved: true` / `approved: false` literals.
            fixed["approved"] = definition_name.endswith("ApprovedAction")
        properties = {k: v for k, v in every.items() if k != "type" and k not in fixed}
        required = [k for k in definition.get("required", []) if k in properties]
        params = []
        for key in required:
            params.append(f"{_snake(key)}: {_python_type(properties[key], defs)}")
        for key, node in properties.items():
            if key not in required:
                kind = _python_type(node, defs)
                kind = kind if "None" in kind.split(" | ") else f"{kind} | None"
                params.append(f"{_snake(key)}: {kind} = None")
        signature = f"def {function}(*, {', '.join(params)}) -> dict[str, Any]:" if params else f"def {function}() -> dict[str, Any]:"
        lines += ["", signature]
        lines.append(f'    """{_doc(definition.get("description", action_type))}"""')
        fields = ", ".join(
            [f'"type": "{action_type}"']
            + [f'"{key}": {value!r}' for key, value in fixed.items()]
            + [f'"{key}": {_snake(key)}' for key in required]
        )
        optional = [key for key in properties if key not in required]
        if not optional:
            lines.append(f"    return {{{fields}}}")
            continue
        lines.append(f"    action: dict[str, Any] = {{{fields}}}")
        for key in optional:
            lines.append(f"    if {_snake(key)} is not None:")
            lines.append(f'        action["{key}"] = {_snake(key)}')
        lines.append("    return action")
    lines += ["", "", "__all__ = ["] + [f'    "{name}",' for name in sorted(names)] + ["]", ""]
    # two blank lines between top-level functions, as the house formatter writes them
    text = "\n".join(lines)
    return re.sub(r"\n\ndef ", "\n\n\ndef ", text)


OUTPUTS = {"internal": INTERNAL_OUTPUT}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a builders module is stale")
    args = parser.parse_args(argv)
    stale = 0
    for target, path in OUTPUTS.items():
        text = render(target)
        if not args.check:
            path.write_text(text, encoding="utf-8")
            continue
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(), path.name, "expected", lineterm="")
            print("\n".join(list(diff)[:40]))
            print(f"{path.relative_to(REPO_ROOT)} is stale: run python scripts/generate_action_builders.py", file=sys.stderr)
            stale = 1
    return stale


if __name__ == "__main__":
    sys.exit(main())
