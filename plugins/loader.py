"""Discovering and loading Open Plugins from disk (FORMAT.md sections 2-4).

Contract:
- :func:`discover_plugins` turns configured directories into plugin roots: a directory that
  is itself a plugin (it has a manifest or a component folder/file), or else a directory of
  such plugin directories (immediate children, sorted by name).
- :func:`load_plugin` reads one plugin root and returns a :class:`~plugins.model.LoadedPlugin`.
  It never raises for bad plugin content and never starts a process:
  * an unreadable root, or a manifest that is not a JSON object -> ``error``, no components;
  * anything skipped (a skill without frontmatter, an invalid hooks file, an escaping path,
    a duplicate name) -> ``degraded`` with one message listing every problem;
  * unknown keys, unknown hook events, LSP configs -> warnings/info only.
- Manifest precedence: ``.plugin/plugin.json``, then the vendor folders FORMAT.md lists
  (``.claude-plugin``, ``.cursor-plugin``, ``.github/plugin``, ``.codex-plugin``), then a
  root ``plugin.json``. No manifest is fine: the name is the folder name.
- Declared component paths supplement the default folder unless ``{"paths", "exclusive": true}``.
  Paths must stay inside the plugin root after resolving symlinks.
- Order is deterministic: default folder first, then declared paths, entries sorted by name.
  Within one plugin the first component of a name wins (skills and commands share one slash
  namespace); MCP sources are merged inline -> ``.mcp.json`` -> declared files.
- Command, skill and agent bodies have the plugin's own variables filled in
  (``${CLAUDE_PLUGIN_ROOT}``, a skill's ``${CLAUDE_SKILL_DIR}``...: ``plugins.bodies``).
- The environment used for ``${VAR}`` expansion in MCP configs is passed in (``environ``);
  ``data_root`` gives each plugin ``PLUGIN_DATA = data_root/<name>`` (not created here).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import plugins._schema as schema
from plugins._collect import Collector
from plugins._components import MARKDOWN_SUFFIXES, parse_agent, parse_command, parse_rule, parse_skill
from plugins._config import parse_hooks_document, parse_mcp_document
from plugins._jsonspan import JsonSyntaxError, Span, parse_json
from plugins.bodies import expand_plugin_variables
from plugins.diagnostics import Diagnostic, LoadState, Severity, load_state_from
from plugins.expand import plugin_variables
from plugins.model import Agent, Command, HookFile, Icon, LoadedPlugin, McpServer, Rule, Skill
from regular_files import read_regular, read_regular_text

T = TypeVar("T")
_Bodied = TypeVar("_Bodied", Skill, Command, Agent)

__all__ = ["MANIFEST_LOCATIONS", "DiscoveryResult", "discover_plugins", "is_plugin_root", "load_plugin", "load_plugins"]

MANIFEST_LOCATIONS = (
    ".plugin/plugin.json",
    ".claude-plugin/plugin.json",
    ".cursor-plugin/plugin.json",
    ".github/plugin/plugin.json",
    ".codex-plugin/plugin.json",
    "plugin.json",
)
_COMPONENT_MARKERS = ("skills", "commands", "agents", "rules", "hooks/hooks.json", ".mcp.json")
_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,62}[a-z0-9])?$")
_ICON_TYPES = {".svg": "image/svg+xml", ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg",
               ".gif": "image/gif", ".webp": "image/webp", ".ico": "image/x-icon"}
_ICON_MAX_BYTES = 256 * 1024
"""Icons travel inline in session state; a bigger logo is left out rather than bloat every snapshot."""


@dataclass(frozen=True)
class DiscoveryResult:
    """Plugin roots found in the configured directories, plus what could not be searched."""

    roots: tuple[Path, ...]
    diagnostics: tuple[Diagnostic, ...] = ()


def is_plugin_root(path: Path) -> bool:
    """True when ``path`` has a manifest or any default component folder/file."""
    if not path.is_dir():
        return False
    markers = MANIFEST_LOCATIONS + _COMPONENT_MARKERS
    return any((path / marker).exists() for marker in markers)


def discover_plugins(directories: Iterable[str | os.PathLike[str]]) -> DiscoveryResult:
    """Plugin roots under the configured directories, in configuration order, without repeats."""
    roots: list[Path] = []
    diagnostics: list[Diagnostic] = []
    for configured in directories:
        directory = Path(configured).expanduser().absolute()
        if not directory.is_dir():
            diagnostics.append(Diagnostic(Severity.PROBLEM, str(directory), None, (),
                                          "configured plugin directory does not exist or is not a directory"))
            continue
        if is_plugin_root(directory):
            found = [directory]
        else:
            try:
                children = sorted(directory.iterdir(), key=lambda p: p.name)
            except OSError as exc:
                diagnostics.append(Diagnostic(Severity.PROBLEM, str(directory), None, (),
                                              f"cannot list directory ({exc.strerror or 'I/O error'})"))
                continue
            found = [child for child in children if not child.name.startswith(".") and is_plugin_root(child)]
        for root in found:
            if root not in roots:
                roots.append(root)
    return DiscoveryResult(tuple(roots), tuple(diagnostics))


def load_plugins(
    directories: Iterable[str | os.PathLike[str]],
    *,
    environ: Mapping[str, str] | None = None,
    data_root: Path | None = None,
) -> list[LoadedPlugin]:
    """Discover and load every plugin under ``directories``."""
    return [load_plugin(root, environ=environ, data_root=data_root)
            for root in discover_plugins(directories).roots]


def load_plugin(
    root: str | os.PathLike[str],
    *,
    environ: Mapping[str, str] | None = None,
    data_root: Path | None = None,
    name: str | None = None,
) -> LoadedPlugin:
    """Parse one plugin root. ``name`` overrides the fallback name when there is no manifest
    name (e.g. the name a client published); ``environ`` defaults to ``os.environ``."""
    given = Path(root).expanduser().absolute()
    fallback = name or given.name
    collector = Collector(fallback, given)
    if not given.is_dir():
        collector.add(Severity.FATAL, None, (), "plugin root does not exist or is not a directory")
        return _finish(collector, LoadedPlugin(name=fallback, root=given, state=LoadState("loading")))
    root_path = given.resolve()
    collector.root = root_path
    return _PluginLoader(root_path, fallback, collector, dict(os.environ if environ is None else environ),
                         data_root).load()


def _finish(collector: Collector, plugin: LoadedPlugin) -> LoadedPlugin:
    """Stamp the final name on every diagnostic, derive the state, empty a broken plugin."""
    diagnostics = tuple(replace(d, container=plugin.name) for d in collector.items)
    state = load_state_from(diagnostics)
    if state.kind == "error":
        return LoadedPlugin(name=plugin.name, root=plugin.root, state=state, diagnostics=diagnostics,
                            manifest_path=plugin.manifest_path)
    return replace(plugin, state=state, diagnostics=diagnostics)


class _PluginLoader:
    """One load of one plugin; holds the shared context the per-kind steps need."""

    def __init__(self, root: Path, fallback: str, collector: Collector, environ: dict[str, str],
                 data_root: Path | None) -> None:
        self.root = root
        self.fallback = fallback
        self.collector = collector
        self.environ = environ
        self.data_root = data_root
        self.manifest: dict[str, Any] = {}
        self.manifest_path: Path | None = None
        self.manifest_spans: dict[Any, Span] = {}
        self.seen_files: set[Path] = set()

    # -- manifest -------------------------------------------------------------------------

    def read_manifest(self) -> bool:
        """Load the winning manifest into ``self.manifest``; False when it is fatal."""
        present = [loc for loc in MANIFEST_LOCATIONS if (self.root / loc).is_file()]
        if not present:
            return True
        chosen = present[0]
        self.manifest_path = self.root / chosen
        for other in present[1:]:
            self.collector.add(Severity.INFO, other, (), f"another manifest; {chosen} is used")
        report = self.collector.for_file(self.manifest_path)
        try:
            text = read_regular_text(self.manifest_path)
            data, self.manifest_spans = parse_json(text)
        except JsonSyntaxError as exc:
            report(Severity.FATAL, (), f"manifest is not valid JSON: {exc}")
            return False
        except (OSError, UnicodeDecodeError):
            report(Severity.FATAL, (), "manifest cannot be read as UTF-8 text")
            return False
        if not isinstance(data, dict):
            report(Severity.FATAL, (), "manifest must be a JSON object")
            return False
        self.manifest = data
        return True

    def plugin_name(self, values: dict[str, Any]) -> str:
        report = self.collector.for_file(self.manifest_path)
        name = values.get("name")
        if name is None:
            if self.manifest_path is not None and "name" not in self.manifest:
                report(Severity.PROBLEM, ("name",), f"required key is missing; using {self.fallback!r}")
            return self.fallback
        if not _NAME.match(name) or "--" in name or ".." in name:
            report(Severity.PROBLEM, ("name",),
                   f"{name!r} is not a valid plugin name (1-64 of a-z 0-9 - .); using {self.fallback!r}")
            return self.fallback
        return name

    # -- paths ----------------------------------------------------------------------------

    def inside(self, relative: str, key: str) -> Path | None:
        """Resolve a declared path; None (reported) when it escapes the root."""
        candidate = (self.root / relative).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            self.collector.add(Severity.PROBLEM, self.manifest_path, (key,),
                               f"path {relative!r} escapes the plugin root; ignored")
            return None
        return candidate

    def declared_paths(self, key: str, value: Any) -> tuple[list[Path], bool]:
        """``(declared paths, exclusive)`` from a component field's path forms."""
        exclusive = False
        if isinstance(value, dict) and "paths" in value:
            exclusive = value.get("exclusive") is True
            value = value["paths"]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.collector.add(Severity.PROBLEM, self.manifest_path, (key,),
                               "expected a path, a list of paths or {\"paths\": [...], \"exclusive\": bool}; ignored")
            return [], False
        paths = []
        for relative in value:
            path = self.inside(relative, key)
            if path is None:
                continue
            if not path.exists():
                self.collector.add(Severity.PROBLEM, self.manifest_path, (key,),
                                   f"declared path {relative!r} does not exist")
                continue
            paths.append(path)
        return paths, exclusive

    def component_paths(self, key: str, default: str) -> list[Path]:
        """Default location (unless exclusive) followed by declared paths."""
        declared: list[Path] = []
        exclusive = False
        if key in self.manifest:
            declared, exclusive = self.declared_paths(key, self.manifest[key])
        paths = [] if exclusive else [self.root / default]
        return paths + [p for p in declared if p not in paths]

    def first_time(self, path: Path) -> bool:
        """Overlapping declared paths must not load one file twice."""
        resolved = path.resolve()
        if resolved in self.seen_files:
            return False
        self.seen_files.add(resolved)
        return True

    def markdown_files(self, folder: Path) -> list[Path]:
        if folder.is_file():
            return [folder]
        if not folder.is_dir():
            return []
        return sorted((p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in MARKDOWN_SUFFIXES),
                      key=lambda p: p.name)

    # -- components -----------------------------------------------------------------------

    def skills(self) -> list[Skill]:
        skills: list[Skill] = []
        locations = self.component_paths("skills", "skills")
        for location in locations:
            if location.is_file():
                candidates = [location] if location.name == "SKILL.md" else []
            elif (location / "SKILL.md").is_file():
                candidates = [location / "SKILL.md"]
            elif location.is_dir():
                candidates = [d / "SKILL.md" for d in sorted(location.iterdir(), key=lambda p: p.name)
                              if d.is_dir() and (d / "SKILL.md").is_file()]
            else:
                candidates = []
            for skill_md in candidates:
                if self.first_time(skill_md):
                    skill = parse_skill(skill_md, self.collector.for_file(skill_md))
                    if skill is not None:
                        skills.append(self.expanded(skill))
        root_skill = self.root / "SKILL.md"
        if not (self.root / "skills").exists() and "skills" not in self.manifest and root_skill.is_file():
            skill = parse_skill(root_skill, self.collector.for_file(root_skill), fallback_name=self.name)
            if skill is not None:
                skills.append(self.expanded(skill))
        return skills

    def commands(self) -> list[Command]:
        return [self.expanded(c) for c in self._markdown_components("commands", parse_command)]

    def agents(self) -> list[Agent]:
        return [self.expanded(a) for a in self._markdown_components("agents", parse_agent)]

    def expanded(self, item: _Bodied) -> _Bodied:
        """A skill, command or agent with ``${CLAUDE_PLUGIN_ROOT}`` and the other plugin
        variables (a skill's ``${CLAUDE_SKILL_DIR}`` too) filled in in its body."""
        variables = dict(self.plugin_vars)
        if "PLUGIN_DATA" in variables:
            variables["CLAUDE_PLUGIN_DATA"] = variables["PLUGIN_DATA"]
        if isinstance(item, Skill):
            variables["CLAUDE_SKILL_DIR"] = str(item.folder)
        body = expand_plugin_variables(item.body, variables)
        return replace(item, body=body) if body != item.body else item

    def rules(self) -> list[Rule]:
        return self._markdown_components("rules", parse_rule)

    def _markdown_components(self, kind: str, parse: Callable[[Path, Any], T | None]) -> list[T]:
        """Every markdown file of the ``kind`` folders (default and manifest-declared), parsed once."""
        found: list[T] = []
        for location in self.component_paths(kind, kind):
            for file in self.markdown_files(location):
                if self.first_time(file):
                    parsed = parse(file, self.collector.for_file(file))
                    if parsed is not None:
                        found.append(parsed)
        return found

    def read_json(self, path: Path) -> tuple[Any, dict[Any, Span]] | None:
        report = self.collector.for_file(path)
        try:
            return parse_json(read_regular_text(path))
        except JsonSyntaxError as exc:
            report(Severity.PROBLEM, (), f"not valid JSON: {exc}; skipped")
        except (OSError, UnicodeDecodeError):
            report(Severity.PROBLEM, (), "cannot be read as UTF-8 text; skipped")
        return None

    def declared_documents(self, key: str, default: str) -> Iterator[tuple[Path, Any, Any, tuple[str, ...]]]:
        """The JSON documents declaring ``key`` (hooks, MCP servers), each as ``(path, data, spans,
        prefix)``: the manifest's own value when it is an object without ``paths`` (prefix
        ``(key,)``), then each file the manifest names, or the conventional ``default`` file."""
        value = self.manifest.get(key)
        paths: list[Path] = [self.root / default]
        if isinstance(value, dict) and "paths" not in value:
            assert self.manifest_path is not None
            yield self.manifest_path, value, self.manifest_spans, (key,)
        elif value is not None:
            paths = self.component_paths(key, default)
        for path in paths:
            if not path.is_file() or not self.first_time(path):
                continue
            read = self.read_json(path)
            if read is not None:
                yield path, read[0], read[1], ()

    def hook_files(self) -> list[HookFile]:
        files: list[HookFile] = []
        common: dict[str, Any] = dict(plugin_root=self.root, plugin_vars=self.plugin_vars, environ=self.environ)
        for path, data, spans, prefix in self.declared_documents("hooks", "hooks/hooks.json"):
            report = self.collector.for_file(path, prefix)
            hooks = parse_hooks_document(data, source=path, report=report, allow_flat=bool(prefix), **common)
            if prefix:
                files.append(HookFile(name=f"{self.relative(path)}#hooks", path=path, hooks=hooks, range=spans.get(prefix)))
            else:
                files.append(HookFile(name=self.relative(path), path=path, hooks=hooks))
        return files

    def mcp_servers(self) -> list[McpServer]:
        servers: list[McpServer] = []
        common: dict[str, Any] = dict(plugin_root=self.root, plugin_vars=self.plugin_vars, environ=self.environ)
        for path, data, spans, prefix in self.declared_documents("mcpServers", ".mcp.json"):
            servers += parse_mcp_document(data, source=path, spans=spans, span_prefix=prefix,
                                          report=self.collector.for_file(path, prefix), **common)
        return self.unique(servers, "MCP server")

    def unique(self, items: list[Any], kind: str) -> list[Any]:
        """First of each name wins; later ones are reported and dropped."""
        kept: dict[str, Any] = {}
        for item in items:
            if item.name in kept:
                self.collector.add(Severity.PROBLEM, item.path, (),
                                   f"duplicate {kind} name {item.name!r} (already declared in "
                                   f"{self.relative(kept[item.name].path)}); ignored")
            else:
                kept[item.name] = item
        return list(kept.values())

    def relative(self, path: Path) -> str:
        return self.collector.relative(path)

    def icon(self) -> Icon | None:
        logo = self.manifest.get("logo")
        if not isinstance(logo, str) or not logo.strip():
            return None
        if logo.startswith(("https://", "http://", "data:")):
            return Icon(src=logo)
        report = self.collector.for_file(self.manifest_path, ("logo",))
        path = (self.root / logo).resolve()
        content_type = _ICON_TYPES.get(path.suffix.lower())
        if self.root not in path.parents or not path.is_file():
            report(Severity.WARNING, (), f"logo {logo!r} is not a file inside the plugin; no icon")
            return None
        if content_type is None:
            report(Severity.WARNING, (), f"logo {logo!r} is not a known image type; no icon")
            return None
        try:
            data = read_regular(path, _ICON_MAX_BYTES + 1)
        except OSError:
            report(Severity.WARNING, (), f"logo {logo!r} cannot be read; no icon")
            return None
        if len(data) > _ICON_MAX_BYTES:
            report(Severity.WARNING, (), f"logo {logo!r} is larger than {_ICON_MAX_BYTES} bytes; no icon")
            return None
        encoded = base64.b64encode(data).decode("ascii")
        return Icon(src=f"data:{content_type};base64,{encoded}", content_type=content_type)

    # -- orchestration --------------------------------------------------------------------

    def load(self) -> LoadedPlugin:
        if not self.read_manifest():
            return _finish(self.collector, LoadedPlugin(name=self.fallback, root=self.root,
                                                        state=LoadState("loading"),
                                                        manifest_path=self.manifest_path))
        values = schema.MANIFEST.validate(self.manifest, self.collector.for_file(self.manifest_path))
        self.name = self.plugin_name(values)
        data_dir = self.data_root / self.name if self.data_root is not None else None
        self.plugin_vars = plugin_variables(self.root, data_dir)
        for ignored in ("lspServers", "outputStyles"):
            if ignored in self.manifest:
                self.collector.add(Severity.INFO, self.manifest_path, (ignored,), "not supported by AHP; ignored")
        if (self.root / ".lsp.json").exists():
            self.collector.add(Severity.INFO, ".lsp.json", (), "LSP servers are not supported by AHP; ignored")
        skills = self.skills()
        commands = self.commands()
        # Skills and commands share the slash namespace, so a name may exist only once.
        named = self.unique([*skills, *commands], "skill or command")
        plugin = LoadedPlugin(
            name=self.name,
            root=self.root,
            state=LoadState("loading"),
            manifest_path=self.manifest_path,
            version=values.get("version"),
            description=values.get("description"),
            icon=self.icon(),
            data_dir=data_dir,
            skills=tuple(s for s in named if isinstance(s, Skill)),
            commands=tuple(c for c in named if isinstance(c, Command)),
            agents=tuple(self.unique(self.agents(), "agent")),
            rules=tuple(self.unique(self.rules(), "rule")),
            hook_files=tuple(self.hook_files()),
            mcp_servers=tuple(self.mcp_servers()),
        )
        return _finish(self.collector, plugin)

