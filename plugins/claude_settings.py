"""Claude Code's settings files, read and layered as Claude Code reads them.

Contract:
- :func:`claude_config_dir` is where Claude Code keeps its user files: ``$CLAUDE_CONFIG_DIR``,
  else ``~/.claude`` (the environment and the home folder are passed in, so nothing here reads
  the real home unless asked to).
- :func:`settings_paths` names the three files of a set-up, lowest precedence first: user
  (``<config dir>/settings.json``), project (``<project>/.claude/settings.json``) and local
  (``<project>/.claude/settings.local.json``).
- :func:`read_settings` reads one file into a :class:`SettingsLayer`: the keys this host acts on
  (``enabledPlugins``, ``extraKnownMarketplaces``, ``permissions`` with ``allow``/``ask``/``deny``/
  ``additionalDirectories``/``defaultMode``, ``env``; ``hooks`` are read by
  ``plugins.directories``). It never raises: a file that is not JSON, or a key of the wrong shape,
  becomes a :class:`~plugins.diagnostics.Diagnostic` (``problem``) naming the file and the key, and
  everything else in the file is still used. Keys of Claude Code's that this host does not act on
  are left alone without a warning (a settings file holds many).
- :func:`merge_layers` layers them as Claude Code does: ``enabledPlugins``,
  ``extraKnownMarketplaces`` and ``env`` are merged key by key (a later layer wins a key),
  permission rule lists and ``additionalDirectories`` are concatenated (deny wins at decision time
  whatever layer it came from), ``defaultMode`` is the last layer's that sets one.
- :func:`permission_rules` turns a layer's permission rules into this host's rule strings with
  ``plugins.claude_code_tools.host_rules`` (the one table between the two vocabularies); a rule
  naming a tool this host does not have is reported (``info``) and skipped.

Pure apart from reading the files it is given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plugins._jsonspan import JsonSyntaxError, parse_json
from plugins.claude_code_tools import host_rules
from plugins.diagnostics import Diagnostic, Severity
from regular_files import read_regular_text

__all__ = [
    "CLAUDE_MODES", "ClaudePermissions", "Scope", "SettingsLayer", "claude_config_dir", "merge_layers",
    "permission_rules", "plugin_id_parts", "read_settings", "settings_paths",
]

Scope = Literal["user", "project", "local"]

CLAUDE_MODES: dict[str, str] = {
    "default": "default",
    "acceptEdits": "accept-edits",
    "plan": "plan",
    "bypassPermissions": "full-auto",
}
"""Claude Code's ``permissions.defaultMode`` values and this host's permission modes."""

_EFFECTS = ("allow", "ask", "deny")


def claude_config_dir(environ: Mapping[str, str] | None = None, home: str | os.PathLike[str] | None = None) -> Path:
    """``$CLAUDE_CONFIG_DIR`` or ``<home>/.claude`` (``home`` defaults to the user's)."""
    env = os.environ if environ is None else environ
    configured = env.get("CLAUDE_CONFIG_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(home if home is not None else Path.home()) / ".claude"


def settings_paths(config_dir: Path, project: Path | None) -> list[tuple[Scope, Path]]:
    """The settings files of one set-up, lowest precedence first."""
    paths: list[tuple[Scope, Path]] = [("user", config_dir / "settings.json")]
    if project is not None:
        paths += [("project", project / ".claude" / "settings.json"), ("local", project / ".claude" / "settings.local.json")]
    return paths


def plugin_id_parts(plugin_id: str) -> tuple[str, str] | None:
    """``("name", "marketplace")`` of ``name@marketplace``, or None when it is not of that form."""
    name, at, market = plugin_id.rpartition("@")
    if not at or not name or not market:
        return None
    return name, market


@dataclass(frozen=True)
class ClaudePermissions:
    """The ``permissions`` of one file (or of several layered)."""

    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    additional_directories: tuple[str, ...] = ()
    """Absolute (``~`` and relative entries resolved against the project, or the home folder)."""
    default_mode: str | None = None
    """This host's permission mode for Claude Code's ``defaultMode``."""


@dataclass(frozen=True)
class SettingsLayer:
    """What this host reads from one settings file."""

    scope: Scope
    path: Path
    exists: bool = False
    enabled_plugins: dict[str, bool] = field(default_factory=dict)
    marketplaces: dict[str, dict[str, Any]] = field(default_factory=dict)
    """``extraKnownMarketplaces``: name -> its ``source`` object."""
    permissions: ClaudePermissions = ClaudePermissions()
    env: dict[str, str] = field(default_factory=dict)
    has_hooks: bool = False
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def root(self) -> Path:
        """The folder the file belongs to: the project for project and local settings, the
        config dir for user settings (where Claude Code's ``/path`` rules are relative to)."""
        return self.path.parent.parent if self.scope != "user" else self.path.parent


def _display(scope: Scope) -> str:
    return {"user": "Claude Code user settings", "project": "Claude Code project settings",
            "local": "Claude Code local settings"}[scope]


def read_settings(path: Path, scope: Scope, *, home: str | None = None) -> SettingsLayer:
    """Read one settings file (a missing file is an empty layer; see the module contract)."""
    diagnostics: list[Diagnostic] = []
    container = _display(scope)

    def report(severity: Severity, keys: tuple[str, ...], message: str) -> None:
        diagnostics.append(Diagnostic(severity, container, str(path), keys, message, "directory"))

    if not path.is_file():
        return SettingsLayer(scope, path)
    try:
        data, _spans = parse_json(read_regular_text(path))
    except JsonSyntaxError as error:
        report(Severity.PROBLEM, (), f"not valid JSON: {error}; this file's settings are not used")
        return SettingsLayer(scope, path, exists=True, diagnostics=tuple(diagnostics))
    except (OSError, UnicodeDecodeError, ValueError):
        report(Severity.PROBLEM, (), "cannot be read as UTF-8 text; this file's settings are not used")
        return SettingsLayer(scope, path, exists=True, diagnostics=tuple(diagnostics))
    if not isinstance(data, dict):
        report(Severity.PROBLEM, (), "expected a JSON object; this file's settings are not used")
        return SettingsLayer(scope, path, exists=True, diagnostics=tuple(diagnostics))
    base = path.parent.parent if scope != "user" else None
    return SettingsLayer(
        scope, path, exists=True,
        enabled_plugins=_enabled_plugins(data.get("enabledPlugins"), report),
        marketplaces=_marketplaces(data.get("extraKnownMarketplaces"), report),
        permissions=_permissions(data.get("permissions"), report, base=base, home=home),
        env=_env(data.get("env"), report),
        has_hooks="hooks" in data,
        diagnostics=tuple(diagnostics),
    )


def _enabled_plugins(value: Any, report: Any) -> dict[str, bool]:
    if value is None:
        return {}
    if isinstance(value, list):  # an older form: a list of enabled ids
        value = {item: True for item in value if isinstance(item, str)}
    if not isinstance(value, dict):
        report(Severity.PROBLEM, ("enabledPlugins",), 'expected an object {"name@marketplace": true|false}; ignored')
        return {}
    enabled: dict[str, bool] = {}
    for key, flag in value.items():
        if plugin_id_parts(key) is None:
            report(Severity.PROBLEM, ("enabledPlugins", key), 'expected a plugin id "name@marketplace"; ignored')
        elif not isinstance(flag, bool):
            report(Severity.PROBLEM, ("enabledPlugins", key), f"expected true or false, not {flag!r}; ignored")
        else:
            enabled[key] = flag
    return enabled


def _marketplaces(value: Any, report: Any) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        report(Severity.PROBLEM, ("extraKnownMarketplaces",), 'expected an object {"name": {"source": {...}}}; ignored')
        return {}
    found: dict[str, dict[str, Any]] = {}
    for name, entry in value.items():
        source = entry.get("source") if isinstance(entry, dict) else None
        if not isinstance(source, (dict, str)):
            report(Severity.PROBLEM, ("extraKnownMarketplaces", name),
                   'expected {"source": {"source": "github", "repo": "owner/repo"}} (or git, directory); ignored')
            continue
        found[name] = source if isinstance(source, dict) else {"source": "directory", "path": source}
    return found


def _strings(value: Any, report: Any, keys: tuple[str, ...]) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        report(Severity.PROBLEM, keys, "expected a list of strings; ignored")
        return ()
    kept = []
    for index, item in enumerate(value):
        if isinstance(item, str) and item.strip():
            kept.append(item)
        else:
            report(Severity.PROBLEM, (*keys, str(index)), f"expected a non-empty string, not {item!r}; ignored")
    return tuple(kept)


def _permissions(value: Any, report: Any, *, base: Path | None, home: str | None) -> ClaudePermissions:
    if value is None:
        return ClaudePermissions()
    if not isinstance(value, dict):
        report(Severity.PROBLEM, ("permissions",), "expected an object with allow, ask, deny...; ignored")
        return ClaudePermissions()
    lists = {effect: _strings(value.get(effect), report, ("permissions", effect)) for effect in _EFFECTS}
    directories = []
    for entry in _strings(value.get("additionalDirectories"), report, ("permissions", "additionalDirectories")):
        expanded = os.path.expanduser(entry) if home is None else (
            os.path.join(home, entry[2:]) if entry.startswith("~/") else entry)
        if not os.path.isabs(expanded):
            if base is None:
                report(Severity.PROBLEM, ("permissions", "additionalDirectories"),
                       f"{entry!r} is relative, and user settings have no project to place it in; ignored")
                continue
            expanded = str(base / expanded)
        directories.append(os.path.normpath(expanded))
    mode = value.get("defaultMode")
    host_mode = None
    if mode is not None:
        host_mode = CLAUDE_MODES.get(mode) if isinstance(mode, str) else None
        if host_mode is None:
            report(Severity.PROBLEM, ("permissions", "defaultMode"),
                   f"expected one of {', '.join(CLAUDE_MODES)}, not {mode!r}; ignored")
    return ClaudePermissions(lists["allow"], lists["ask"], lists["deny"], tuple(directories), host_mode)


def _env(value: Any, report: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        report(Severity.PROBLEM, ("env",), 'expected an object {"NAME": "value"}; ignored')
        return {}
    env: dict[str, str] = {}
    for name, item in value.items():
        if not name or "=" in name or "\0" in name:
            report(Severity.PROBLEM, ("env", name), "not a valid environment variable name; ignored")
        elif isinstance(item, bool) or not isinstance(item, (str, int, float)):
            report(Severity.PROBLEM, ("env", name), f"expected a string, not {item!r}; ignored")
        else:
            env[name] = str(item)
    return env


def merge_layers(layers: list[SettingsLayer]) -> SettingsLayer:
    """One layer from several, lowest precedence first (see the module contract). Its ``scope``
    and ``path`` are the last layer's."""
    if not layers:
        raise ValueError("merge_layers needs at least one layer")
    enabled: dict[str, bool] = {}
    markets: dict[str, dict[str, Any]] = {}
    env: dict[str, str] = {}
    lists: dict[str, list[str]] = {"allow": [], "ask": [], "deny": [], "dirs": []}
    mode = None
    for layer in layers:
        enabled.update(layer.enabled_plugins)
        markets.update(layer.marketplaces)
        env.update(layer.env)
        for effect in _EFFECTS:
            lists[effect] += [rule for rule in getattr(layer.permissions, effect) if rule not in lists[effect]]
        lists["dirs"] += [d for d in layer.permissions.additional_directories if d not in lists["dirs"]]
        mode = layer.permissions.default_mode or mode
    last = layers[-1]
    return SettingsLayer(
        last.scope, last.path, exists=any(layer.exists for layer in layers), enabled_plugins=enabled,
        marketplaces=markets, env=env, has_hooks=any(layer.has_hooks for layer in layers),
        permissions=ClaudePermissions(tuple(lists["allow"]), tuple(lists["ask"]), tuple(lists["deny"]), tuple(lists["dirs"]), mode),
        diagnostics=tuple(d for layer in layers for d in layer.diagnostics),
    )


def permission_rules(layer: SettingsLayer, *, home: str | None = None) -> tuple[dict[str, list[str]], list[Diagnostic]]:
    """``{"allow": [...], "ask": [...], "deny": [...]}`` in this host's rule syntax, and what could
    not be translated."""
    out: dict[str, list[str]] = {effect: [] for effect in _EFFECTS}
    notes: list[Diagnostic] = []
    for effect in _EFFECTS:
        for rule in getattr(layer.permissions, effect):
            try:
                translated = host_rules(rule, settings_root=str(layer.root), home=home)
            except ValueError as error:
                notes.append(Diagnostic(Severity.PROBLEM, _display(layer.scope), str(layer.path), ("permissions", effect),
                                        f"{rule!r}: {error}; ignored", "directory"))
                continue
            if not translated:
                notes.append(Diagnostic(Severity.INFO, _display(layer.scope), str(layer.path), ("permissions", effect),
                                        f"{rule!r} names a tool this host does not have; ignored", "directory"))
            out[effect] += [item for item in translated if item not in out[effect]]
    return out, notes
