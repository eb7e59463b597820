"""Parsers for Markdown components: skills, commands, agents, rules/instructions, prompts.

Contract (FORMAT.md 3.1-3.5 with its [INF] recommendations):
- Each parser takes a file and a reporter and returns a component or None (skipped). It never
  raises. A skipped file is always reported as a ``problem`` naming the file, which makes the
  container ``degraded``; the caller simply leaves the component out.
- Skills need frontmatter with a ``description``; a missing ``name`` comes from the folder.
  Agents need a ``description``; a missing ``name`` comes from the file name. Commands and
  prompts need nothing (frontmatter optional). Rules keep loading without a ``description``
  but report it (plugin rules only; instructions files and AGENTS.md need none).
- Names derived from files drop the kind's suffix (``.agent.md``, ``.prompt.md``,
  ``.instructions.md``, ``.md``, ``.mdc``, ``.markdown``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import plugins._schema as schema
from plugins._collect import Report
from plugins._frontmatter import FrontmatterError, read_leniently, split_frontmatter
from plugins.diagnostics import Severity
from plugins.model import Agent, Command, Prompt, Rule, Skill
from regular_files import read_regular_text

__all__: list[str] = []

MARKDOWN_SUFFIXES = (".md", ".mdc", ".markdown")
_NAME_SUFFIXES = (
    ".instructions.md",
    ".prompt.md",
    ".agent.md",
    ".chatmode.md",
    ".md",
    ".mdc",
    ".markdown",
    ".txt",
)


def stem(path: Path) -> str:
    """File name without the component kind's suffix."""
    name = path.name
    for suffix in _NAME_SUFFIXES:
        if name.lower().endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return path.stem


def read_text(path: Path, report: Report) -> str | None:
    """The file as text, or None after reporting why it cannot be read."""
    try:
        return read_regular_text(path)  # a FIFO or device is refused, never waited on
    except UnicodeDecodeError:
        report(Severity.PROBLEM, (), "file is not UTF-8 text; skipped")
    except OSError as exc:
        report(Severity.PROBLEM, (), f"cannot read file ({exc.strerror or 'I/O error'}); skipped")
    return None


def _read(path: Path, report: Report, spec: schema.Schema) -> tuple[dict[str, Any] | None, str] | None:
    text = read_text(path, report)
    if text is None:
        return None
    try:
        return split_frontmatter(text)
    except FrontmatterError as exc:
        if "never closed" in str(exc):
            report(Severity.PROBLEM, ("frontmatter",), f"{exc}; skipped")
            return None
        # Claude Code reads such files leniently, and published plugins rely on it.
        report(Severity.WARNING, ("frontmatter",), f"{exc}; read as plain 'key: value' lines instead")
        return read_leniently(text, keys=set(spec.fields))


def _validated(front: dict[str, Any], spec: schema.Schema, report: Report) -> dict[str, Any]:
    return spec.validate(front, report, ("frontmatter",))


def _described(path: Path, report: Report, spec: schema.Schema, kind: str) -> tuple[dict[str, Any], str, str] | None:
    """A skill's or an agent's file: its validated frontmatter, description and body, or None
    (reported, and the component skipped) when the frontmatter or the description is missing."""
    read = _read(path, report, spec)
    if read is None:
        return None
    front, body = read
    if front is None:
        report(Severity.PROBLEM, ("frontmatter",), f"no YAML frontmatter, so the {kind} has no description; skipped")
        return None
    values = _validated(front, spec, report)
    description = values.get("description", "").strip()
    if not description:
        report(Severity.PROBLEM, ("frontmatter", "description"), f"a{'n' if kind[0] in 'aeiou' else ''} {kind} needs a description; skipped")
        return None
    return values, description, body


def parse_skill(path: Path, report: Report, fallback_name: str | None = None) -> Skill | None:
    """``<folder>/SKILL.md``: frontmatter with ``description`` required."""
    described = _described(path, report, schema.SKILL, "skill")
    if described is None:
        return None
    values, description, body = described
    folder_name = fallback_name or path.parent.name
    name = values.get("name", "").strip() or folder_name
    if name != folder_name:
        report(Severity.INFO, ("frontmatter", "name"), f"name {name!r} differs from its folder {folder_name!r}")
    return Skill(
        name=name,
        description=description,
        body=body,
        path=path,
        **_invocation_fields(values),
        license=values.get("license"),
    )


def _invocation_fields(values: dict[str, Any]) -> dict[str, Any]:
    """The frontmatter keys skills and commands share: who may invoke them, and how."""
    return {
        "disable_model_invocation": values.get("disable-model-invocation", False),
        "user_invocable": values.get("user-invocable", True),
        "allowed_tools": values.get("allowed-tools", ()),
        "argument_hint": values.get("argument-hint"),
        "model": values.get("model"),
    }


def parse_command(path: Path, report: Report) -> Command | None:
    """``commands/<name>.md``: frontmatter optional; the name is the file name."""
    read = _read(path, report, schema.COMMAND)
    if read is None:
        return None
    front, body = read
    values = _validated(front, schema.COMMAND, report) if front is not None else {}
    description = values.get("description", "").strip() or None
    return Command(
        name=values.get("name", "").strip() or stem(path),
        description=description,
        body=body,
        path=path,
        **_invocation_fields(values),
    )


def parse_agent(path: Path, report: Report) -> Agent | None:
    """``agents/<name>.md`` or ``*.agent.md``: ``description`` required; body = system prompt."""
    described = _described(path, report, schema.AGENT, "agent")
    if described is None:
        return None
    values, description, body = described
    disabled = values.get("disable-model-invocation", False) or values.get("infer") is False
    return Agent(
        name=values.get("name", "").strip() or stem(path),
        description=description,
        body=body,
        path=path,
        tools=values.get("tools"),
        models=values.get("model", ()),
        disable_model_invocation=disabled,
        user_invocable=values.get("user-invocable", True),
    )


RuleMode = Literal["rule", "instructions", "always"]


def parse_rule(path: Path, report: Report, mode: RuleMode = "rule") -> Rule | None:
    """A rule (``.mdc``), an instructions file, or an always-on file such as AGENTS.md.

    ``rule``: Open Plugins/Cursor keys; ``applyTo`` without ``alwaysApply`` means automatic.
    ``instructions``: VS Code; ``applyTo`` present means ``alwaysApply`` plus globs.
    ``always``: the whole file applies to every request (AGENTS.md, CLAUDE.md).
    """
    read = _read(path, report, schema.RULE)
    if read is None:
        return None
    front, body = read
    values = _validated(front, schema.RULE, report) if front is not None else {}
    if mode == "always":
        return Rule(name=path.name, description=values.get("description"), body=body, path=path, always_apply=True)
    globs = values.get("globs", ()) + values.get("applyTo", ()) + values.get("paths", ())
    globs = tuple(dict.fromkeys(globs))  # keep order, drop duplicates
    if "alwaysApply" in values:
        always = values["alwaysApply"]
    else:
        always = "applyTo" in values
    description = values.get("description", "").strip() or None
    if description is None and mode == "rule":
        report(Severity.PROBLEM, ("frontmatter", "description"), "a rule should have a description (rule kept)")
    return Rule(
        name=values.get("name", "").strip() or stem(path),
        description=description,
        body=body,
        path=path,
        always_apply=always,
        globs=globs,
    )


def parse_prompt(path: Path, report: Report) -> Prompt | None:
    """``*.prompt.md``: everything optional; the name defaults to the file name."""
    read = _read(path, report, schema.PROMPT)
    if read is None:
        return None
    front, body = read
    values = _validated(front, schema.PROMPT, report) if front is not None else {}
    return Prompt(
        name=values.get("name", "").strip() or stem(path),
        description=values.get("description", "").strip() or None,
        body=body,
        path=path,
        argument_hint=values.get("argument-hint"),
        agent=values.get("agent") or values.get("mode"),
        model=values.get("model"),
        tools=values.get("tools"),
    )
