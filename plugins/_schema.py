"""One declared schema per plugin file kind, with explicit, lenient validation.

Contract:
- A :class:`Schema` lists every key it knows, each with a converter that normalises the value
  (e.g. ``globs`` as a comma string or a YAML list -> ``tuple[str, ...]``).
- :meth:`Schema.validate` never raises. It returns the converted known keys and reports:
  unknown keys as ``warning`` (ignored), a known key with a bad value as ``problem`` (the key
  is dropped), and a missing required key as ``problem``. Each report carries the key path.
- Messages are our own words ("expected true or false, got 'yes'"); no library text.

The schemas here mirror FORMAT.md sections 2.3 (manifest), 3.1-3.7 (components).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from plugins.diagnostics import Severity

__all__: list[str] = []  # private module; names are imported explicitly by siblings

Report = Callable[[Severity, tuple[str, ...], str], None]


class Invalid(ValueError):
    """A converter rejected a value; the message says what was expected."""


@dataclass(frozen=True)
class Lenient:
    """A converter's result read in a way the author may not have meant (a JSON-ish list in a
    string, a YAML list where text was expected): the value is kept and ``note`` is reported as a
    warning, which never changes the load state."""

    value: Any
    note: str


def _describe(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return repr(shown)
    if value is None:
        return "null"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    return {bool: "a boolean", int: "a number", float: "a number", list: "a list", dict: "a mapping"}.get(
        type(value), type(value).__name__
    )


def text(value: Any) -> str:
    """A string; numbers are accepted and turned into text (YAML reads ``version: 1.0`` as float)."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise Invalid(f"expected a string, got {_describe(value)}")


def boolean(value: Any) -> bool | Lenient:
    """``true``/``false``; the strings "true"/"false" are tolerated (with a note: a frontmatter
    read leniently, or a quoted ``"true"``, gives them)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        flag = value.strip().lower() == "true"
        return Lenient(flag, f"read the text {_describe(value)} as {'true' if flag else 'false'}")
    raise Invalid(f"expected true or false, got {_describe(value)}")


def number(value: Any) -> float:
    """A non-negative number (timeouts)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    raise Invalid(f"expected a non-negative number, got {_describe(value)}")


def split_top_level(value: str, separators: str) -> list[str]:
    """Split on any separator character outside parentheses; ``Bash(git log:*)`` stays whole."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in value:
        if char == "(":
            depth += 1
        elif char == ")":
            depth = max(0, depth - 1)
        if depth == 0 and char in separators:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def _unquoted(item: str) -> str:
    item = item.strip()
    if len(item) >= 2 and item[0] == item[-1] and item[0] in "\"'":
        return item[1:-1].strip()
    return item


def string_list(separators: str, *, brackets: bool = False) -> Callable[[Any], tuple[str, ...] | Lenient]:
    """A YAML list of strings, or one string split on ``separators`` (outside parentheses). With
    ``brackets``, a string that is itself a bracketed list (``["Read", "Grep"]``, what a
    frontmatter that was not valid YAML leaves) is read as that list, with a note (not for globs,
    where ``[ab]`` is a character class)."""

    def convert(value: Any) -> tuple[str, ...] | Lenient:
        if isinstance(value, str):
            stripped = value.strip()
            if brackets and len(stripped) >= 2 and stripped[0] == "[" and stripped[-1] == "]":
                items = tuple(i for i in (_unquoted(part) for part in split_top_level(stripped[1:-1], ",")) if i)
                return Lenient(items, f"read the text {_describe(stripped)} as the list {list(items)}")
            return tuple(split_top_level(value, separators))
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return tuple(item.strip() for item in value if item.strip())
        raise Invalid(f"expected a string or a list of strings, got {_describe(value)}")

    return convert


def hint(value: Any) -> str | Lenient:
    """Text shown after a slash name (``argument-hint``). YAML reads the common
    ``argument-hint: [message]`` as a list; that is taken back as the text the author wrote."""
    if isinstance(value, list) and all(isinstance(item, (str, int, float)) for item in value):
        shown = "[" + ", ".join(str(item) for item in value) + "]"
        return Lenient(shown, f"YAML read this as a list; kept as the text {shown!r}")
    return text(value)


def strict_string_list(value: Any) -> tuple[str, ...]:
    """A JSON array of strings, kept exactly (MCP ``args``)."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise Invalid(f"expected a list of strings, got {_describe(value)}")


def string_map(value: Any) -> dict[str, str]:
    """An object whose values are strings (numbers and booleans are turned into text)."""
    if not isinstance(value, dict):
        raise Invalid(f"expected a mapping of strings, got {_describe(value)}")
    result: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool):
            result[str(key)] = "true" if item else "false"
        elif isinstance(item, (str, int, float)):
            result[str(key)] = str(item)
        else:
            raise Invalid(f"value of {key!r} must be a string, got {_describe(item)}")
    return result


def anything(value: Any) -> Any:
    """Known key whose content this host does not interpret."""
    return value


def mapping(value: Any) -> dict[str, Any]:
    """Any object."""
    if isinstance(value, dict):
        return value
    raise Invalid(f"expected a mapping, got {_describe(value)}")


def text_or_text_list(value: Any) -> tuple[str, ...]:
    """A string or a list of strings, as a tuple (agent ``model`` with fallbacks)."""
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise Invalid(f"expected a string or a list of strings, got {_describe(value)}")


def author(value: Any) -> dict[str, str]:
    """``{name?, email?, url?}``, or a plain string meaning the name (AHP's own plugins)."""
    if isinstance(value, str):
        return {"name": value}
    if isinstance(value, dict) and all(isinstance(v, str) for v in value.values()):
        return dict(value)
    raise Invalid(f"expected a string or an object with name, email and url, got {_describe(value)}")


@dataclass(frozen=True)
class Field:
    """One known key: its converter and whether it must be present."""

    convert: Callable[[Any], Any]
    required: bool = False


class Schema:
    """The known keys of one file kind (or one nested object of it)."""

    def __init__(self, kind: str, fields: Mapping[str, Field]) -> None:
        self.kind = kind
        self.fields = dict(fields)

    def validate(self, data: Mapping[str, Any], report: Report, where: tuple[str, ...] = ()) -> dict[str, Any]:
        """Return converted known keys; report unknown keys, bad values and missing keys."""
        clean: dict[str, Any] = {}
        for key, value in data.items():
            field = self.fields.get(key)
            if field is None:
                report(Severity.WARNING, where + (key,), f"unknown {self.kind} key (ignored)")
                continue
            try:
                converted = field.convert(value)
            except Invalid as exc:
                report(Severity.PROBLEM, where + (key,), f"{exc} (ignored)")
                continue
            if isinstance(converted, Lenient):
                report(Severity.WARNING, where + (key,), converted.note)
                converted = converted.value
            clean[key] = converted
        for key, field in self.fields.items():
            if field.required and key not in data:
                report(Severity.PROBLEM, where + (key,), "required key is missing")
        return clean


_TOOLS = string_list(", ", brackets=True)
_GLOBS = string_list(",")

SKILL = Schema(
    "skill frontmatter",
    {
        "name": Field(text),
        "description": Field(text),
        "license": Field(text),
        "compatibility": Field(text),
        "metadata": Field(mapping),
        "allowed-tools": Field(_TOOLS),
        "disable-model-invocation": Field(boolean),
        "user-invocable": Field(boolean),
        "argument-hint": Field(hint),
        "model": Field(text),
        "context": Field(text),
        "agent": Field(text),
        "version": Field(text),
    },
)

COMMAND = Schema(
    "command frontmatter",
    {
        "name": Field(text),
        "description": Field(text),
        "disable-model-invocation": Field(boolean),
        "user-invocable": Field(boolean),
        "argument-hint": Field(hint),
        "allowed-tools": Field(_TOOLS),
        "model": Field(text),
    },
)

AGENT = Schema(
    "agent frontmatter",
    {
        "name": Field(text),
        "description": Field(text),
        "tools": Field(_TOOLS),
        "model": Field(text_or_text_list),
        "color": Field(text),
        "argument-hint": Field(hint),
        "handoffs": Field(anything),
        "agents": Field(anything),
        "target": Field(text),
        "user-invocable": Field(boolean),
        "disable-model-invocation": Field(boolean),
        "infer": Field(boolean),
        "mcp-servers": Field(anything),
    },
)

RULE = Schema(
    "rule frontmatter",
    {
        "name": Field(text),
        "description": Field(text),
        "alwaysApply": Field(boolean),
        "globs": Field(_GLOBS),
        "applyTo": Field(_GLOBS),
        "paths": Field(_GLOBS),
        "excludeAgent": Field(anything),
    },
)

PROMPT = Schema(
    "prompt frontmatter",
    {
        "name": Field(text),
        "description": Field(text),
        "argument-hint": Field(hint),
        "agent": Field(text),
        "mode": Field(text),
        "model": Field(text),
        "tools": Field(_TOOLS),
    },
)

MANIFEST = Schema(
    "manifest",
    {
        "name": Field(text),
        "version": Field(text),
        "description": Field(text),
        "author": Field(author),
        "homepage": Field(text),
        "repository": Field(anything),
        "license": Field(text),
        "logo": Field(text),
        "keywords": Field(strict_string_list),
        # Component fields have several shapes; the loader validates them itself.
        "commands": Field(anything),
        "agents": Field(anything),
        "skills": Field(anything),
        "rules": Field(anything),
        "hooks": Field(anything),
        "mcpServers": Field(anything),
        "lspServers": Field(anything),
        "outputStyles": Field(anything),
        "id": Field(text),
        "userConfig": Field(anything),
        "$schema": Field(text),
        "extensions": Field(anything),
    },
)

MCP_SERVER = Schema(
    "MCP server",
    {
        "type": Field(text),
        "transport": Field(text),
        "command": Field(text),
        "args": Field(strict_string_list),
        "env": Field(string_map),
        "cwd": Field(text),
        "url": Field(text),
        "headers": Field(string_map),
        "envFile": Field(text),
        "oauth": Field(anything),
        "description": Field(text),
        "timeout": Field(number),
        "disabled": Field(boolean),
    },
)

HOOKS_FILE = Schema(
    "hooks file",
    {
        "hooks": Field(mapping, required=True),
        "description": Field(text),
        "disableAllHooks": Field(boolean),
        "version": Field(anything),
    },
)

HOOK_RULE = Schema(
    "hook rule",
    {
        "matcher": Field(text),
        "hooks": Field(anything),
        # Flat dialects (Cursor, Copilot CLI) put the action's keys on the rule itself.
        "type": Field(text),
        "command": Field(text),
        "bash": Field(text),
        "powershell": Field(text),
        "timeout": Field(number),
        "timeoutSec": Field(number),
        "cwd": Field(text),
        "env": Field(string_map),
        "description": Field(text),
    },
)

HOOK_ACTION = Schema(
    "hook action",
    {
        "type": Field(text),
        "command": Field(text),
        "bash": Field(text),
        "powershell": Field(text),
        "timeout": Field(number),
        "timeoutSec": Field(number),
        "cwd": Field(text),
        "env": Field(string_map),
        "prompt": Field(text),
        "model": Field(text),
        "url": Field(text),
        "statusMessage": Field(text),
        "async": Field(boolean),
        "asyncRewake": Field(boolean),
        "rewakeMessage": Field(text),
        "rewakeSummary": Field(text),
        "if": Field(text),
        "once": Field(boolean),
        "description": Field(text),
    },
)
