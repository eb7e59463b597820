"""Workspace customization directories (FORMAT.md 6.1): one container per watched folder.

Contract:
- A :class:`DirectorySpec` names a folder relative to the session's working directory, the
  file format found there, and the one AHP child kind (``contents``) it yields.
  :data:`WORKSPACE_DIRECTORIES` lists the folders a host watches by default
  (``.github/instructions``, ``.github/prompts``, ``.github/agents``, skills folders, hooks,
  Cursor rules, Claude agents/commands) plus :data:`INSTRUCTION_FILES`, a file-set container
  over ``AGENTS.md``, ``CLAUDE.md`` and ``.github/copilot-instructions.md`` (always-on rules),
  each real file once (symlinks resolved) with its ``@path`` imports expanded once
  (``plugins.imports``), and :data:`CLAUDE_SETTINGS`, the ``hooks`` of Claude Code's project
  settings (``.claude/settings.json``, ``.claude/settings.local.json``; their other keys are read by
  ``plugins.claude_settings``, whose findings the host passes in as ``extra_diagnostics``).
- :func:`load_directory` never raises. A folder that does not exist yet loads as ``loaded``
  with no components (``exists=False``), so clients can write into it when ``writable``.
  Bad files are skipped and reported (``degraded``); unknown keys only warn.
- Variables in hooks files resolve ``${PLUGIN_ROOT}`` and ``${CLAUDE_PROJECT_DIR}`` to the working
  directory (hooks also get both in their environment).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from plugins._collect import Collector
from plugins._components import parse_agent, parse_command, parse_prompt, parse_rule, parse_skill
from plugins._config import parse_hooks_document
from plugins._jsonspan import JsonSyntaxError, parse_json
from plugins.diagnostics import Diagnostic, Severity, load_state_from
from plugins.expand import plugin_variables
from plugins.imports import expand_imports
from plugins.model import ContainerKind, HookFile, LoadedDirectory
from regular_files import read_regular_text

__all__ = ["CLAUDE_SETTINGS", "DirectoryFormat", "DirectorySpec", "INSTRUCTION_FILES", "WORKSPACE_DIRECTORIES", "load_directory",
           "load_workspace_directories"]

DirectoryFormat = Literal["instructions", "rules", "prompts", "agents", "skills", "commands", "hooks", "files", "settings"]

_CONTENTS: dict[str, ContainerKind] = {
    "instructions": "rule", "rules": "rule", "files": "rule", "prompts": "prompt", "agents": "agent",
    "skills": "skill", "commands": "skill", "hooks": "hook", "settings": "hook",
}
_SUFFIXES = {
    "instructions": (".instructions.md",),
    "rules": (".mdc", ".md"),
    "prompts": (".prompt.md",),
    "agents": (".agent.md", ".chatmode.md", ".md"),
    "commands": (".md",),
    "hooks": (".json",),
}


@dataclass(frozen=True)
class DirectorySpec:
    """A watched folder (or, for ``files``, a fixed set of files) and how to read it."""

    relative: str
    format: DirectoryFormat
    name: str | None = None
    """Display name; defaults to ``relative``."""
    writable: bool = True
    files: tuple[str, ...] = ()
    """For the ``files`` and ``settings`` formats: paths relative to the working directory."""
    in_project: bool = True
    """Whether the folder belongs to the project: its hooks' ``${CLAUDE_PROJECT_DIR}`` is the folder
    then; the user's own settings (not in any project) leave it to the hook's environment, where
    the host sets it to the session's working directory, as Claude Code does."""

    @property
    def contents(self) -> ContainerKind:
        """The AHP child kind this container holds."""
        return _CONTENTS[self.format]

    @property
    def display_name(self) -> str:
        return self.name or self.relative


INSTRUCTION_FILES = DirectorySpec(
    ".", "files", name="Workspace instructions", writable=False,
    files=("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"),
)

CLAUDE_SETTINGS = DirectorySpec(
    ".claude", "settings", name=".claude/settings.json", writable=False,
    files=(".claude/settings.json", ".claude/settings.local.json"),
)

WORKSPACE_DIRECTORIES: tuple[DirectorySpec, ...] = (
    DirectorySpec(".github/instructions", "instructions"),
    DirectorySpec(".github/prompts", "prompts"),
    DirectorySpec(".github/agents", "agents"),
    DirectorySpec(".github/skills", "skills"),
    DirectorySpec(".claude/skills", "skills"),
    DirectorySpec(".agents/skills", "skills"),
    DirectorySpec(".github/hooks", "hooks"),
    DirectorySpec(".cursor/rules", "rules"),
    DirectorySpec(".claude/agents", "agents"),
    DirectorySpec(".claude/commands", "commands"),
    CLAUDE_SETTINGS,
    INSTRUCTION_FILES,
)


def load_workspace_directories(
    working_directory: str | os.PathLike[str],
    specs: tuple[DirectorySpec, ...] = WORKSPACE_DIRECTORIES,
    *,
    environ: Mapping[str, str] | None = None,
) -> list[LoadedDirectory]:
    """Load every spec against one working directory, in spec order."""
    return [load_directory(working_directory, spec, environ=environ) for spec in specs]


def load_directory(
    working_directory: str | os.PathLike[str],
    spec: DirectorySpec,
    *,
    environ: Mapping[str, str] | None = None,
    extra_diagnostics: Sequence[Diagnostic] = (),
) -> LoadedDirectory:
    """Parse one watched folder of ``working_directory``; ``extra_diagnostics`` (what the host
    found in the same files, e.g. a settings file's other keys) join the container's."""
    workspace = Path(working_directory).expanduser().absolute()
    folder = (workspace / spec.relative) if spec.relative != "." else workspace
    collector = Collector(spec.display_name, folder, "directory")
    items: dict[str, list[Any]] = {"skills": [], "commands": [], "agents": [], "rules": [], "prompts": [],
                                   "hook_files": []}
    exists = folder.is_dir()
    if spec.format == "files":
        _load_instruction_files(workspace, spec, collector, items)
    elif spec.format == "settings":
        exists = any((workspace / relative).is_file() for relative in spec.files)
        for relative in spec.files:
            if (workspace / relative).is_file():
                hook_file = _hooks_file(workspace / relative, workspace, environ, collector, settings=True,
                                        project=spec.in_project)
                if hook_file is not None:
                    items["hook_files"].append(hook_file)
    elif exists:
        _load_folder(folder, spec, workspace, environ, collector, items)
    _drop_duplicates(items, collector)
    diagnostics = (*collector.items, *extra_diagnostics)
    return LoadedDirectory(
        name=spec.display_name,
        root=folder,
        state=load_state_from(diagnostics),
        diagnostics=diagnostics,
        contents=spec.contents,
        exists=exists,
        writable=spec.writable,
        files=tuple(workspace / f for f in spec.files) if spec.format == "files" else None,
        skills=tuple(items["skills"]),
        commands=tuple(items["commands"]),
        agents=tuple(items["agents"]),
        rules=tuple(items["rules"]),
        prompts=tuple(items["prompts"]),
        hook_files=tuple(items["hook_files"]),
    )


def _load_instruction_files(workspace: Path, spec: DirectorySpec, collector: Collector, items: dict[str, list[Any]]) -> None:
    """AGENTS.md, CLAUDE.md...: each real file once (a CLAUDE.md symlinked to AGENTS.md is one
    file), with its ``@path`` imports inside the workspace expanded once (``plugins.imports``)."""
    roots = [Path(os.path.realpath(workspace))]
    seen: set[Path] = set()
    for relative in spec.files:
        path = workspace / relative
        if not path.is_file():
            continue
        real = Path(os.path.realpath(path))
        if real in seen:
            collector.add(Severity.INFO, path, (), f"same file as an instruction file already loaded ({real.name}); not added twice")
            continue
        seen.add(real)
        rule = parse_rule(path, collector.for_file(path), mode="always")
        if rule is None:
            continue
        body, imported = expand_imports(rule.body, path, roots, seen)
        items["rules"].append(replace(rule, name=relative, body=body, imports=tuple(imported)))


def _files(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    try:
        entries = sorted(folder.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    return [p for p in entries if p.is_file() and p.name.lower().endswith(suffixes)]


def _load_folder(folder: Path, spec: DirectorySpec, workspace: Path, environ: Mapping[str, str] | None,
                 collector: Collector, items: dict[str, list[Any]]) -> None:
    report_for = collector.for_file
    if spec.format == "skills":
        for child in sorted(folder.iterdir(), key=lambda p: p.name):
            skill_md = child / "SKILL.md"
            if child.is_dir() and skill_md.is_file():
                skill = parse_skill(skill_md, report_for(skill_md))
                if skill is not None:
                    items["skills"].append(skill)
        return
    for path in _files(folder, _SUFFIXES[spec.format]):
        report = report_for(path)
        if spec.format == "instructions":
            rule = parse_rule(path, report, mode="instructions")
            if rule is not None:
                items["rules"].append(rule)
        elif spec.format == "rules":
            rule = parse_rule(path, report, mode="rule")
            if rule is not None:
                items["rules"].append(rule)
        elif spec.format == "prompts":
            prompt = parse_prompt(path, report)
            if prompt is not None:
                items["prompts"].append(prompt)
        elif spec.format == "agents":
            agent = parse_agent(path, report)
            if agent is not None:
                items["agents"].append(agent)
        elif spec.format == "commands":
            command = parse_command(path, report)
            if command is not None:
                items["commands"].append(command)
        elif spec.format == "hooks":
            hook_file = _hooks_file(path, workspace, environ, collector)
            if hook_file is not None:
                items["hook_files"].append(hook_file)


def _hooks_file(path: Path, workspace: Path, environ: Mapping[str, str] | None,
                collector: Collector, *, settings: bool = False, project: bool = True) -> HookFile | None:
    """A hooks file; with ``settings``, the ``hooks`` (and ``disableAllHooks``) of a settings file."""
    report = collector.for_file(path)
    try:
        data, _spans = parse_json(read_regular_text(path))
    except JsonSyntaxError as exc:
        report(Severity.PROBLEM, (), f"not valid JSON: {exc}; skipped")
        return None
    except (OSError, UnicodeDecodeError):
        report(Severity.PROBLEM, (), "cannot be read as UTF-8 text; skipped")
        return None
    if settings:
        if not isinstance(data, dict) or "hooks" not in data:
            return None  # settings without hooks: nothing of this host's
        data = {key: data[key] for key in ("hooks", "disableAllHooks") if key in data}
    hooks = parse_hooks_document(
        data, source=path, plugin_root=workspace,
        plugin_vars={**plugin_variables(workspace), **({"CLAUDE_PROJECT_DIR": str(workspace)} if project else {})},
        environ=dict(os.environ if environ is None else environ), report=report,
    )
    return HookFile(name=path.name, path=path, hooks=hooks)


def _drop_duplicates(items: dict[str, list[Any]], collector: Collector) -> None:
    for kind in ("skills", "commands", "agents", "rules", "prompts"):
        kept: dict[str, Any] = {}
        for item in items[kind]:
            if item.name in kept:
                collector.add(Severity.PROBLEM, item.path, (),
                              f"duplicate name {item.name!r} (already in {kept[item.name].path.name}); ignored")
            else:
                kept[item.name] = item
        items[kind] = list(kept.values())
