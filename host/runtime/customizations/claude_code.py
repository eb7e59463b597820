"""A Claude Code user's set-up as this host uses it: settings layers, their plugins, rules and env.

Contract:
- ``ClaudeCode(config_dir, data_dir)`` is the host's view of one Claude Code configuration
  folder (``$CLAUDE_CONFIG_DIR``, default ``~/.claude``; the host passes it in, so tests never read
  the real home) and of the plugins this host installed (``ClaudePlugins``).
- ``load()`` (host start, and whenever the user settings or the plugin record changed: ``refresh``)
  reads the user settings. Their hooks form a host-level container (``user_container``): the user's
  own, so they run without workspace trust. The user's ``CLAUDE.md`` there is another
  (``user_instructions``): always-on instructions in every session's prompt, as Claude Code has them. Their ``permissions`` and ``env`` apply to every session.
- ``session_view(folder, trusted)`` is what a session in ``folder`` gets: the project and local
  settings layered over the user's (``plugins.claude_settings``), and the plugins to list:
  every ``name@marketplace`` the layered ``enabledPlugins`` switch on (the user's choices made on
  this host count as user settings), each loaded from where it is installed (``ClaudePlugins.resolve``;
  one parse per folder, shared by the sessions), else from its marketplace when that is a folder
  on this machine and the entry is a path in it, else as an
  ``error`` plugin saying how to install it. ``install_missing`` installs such a plugin when its
  marketplace is known (the host calls it in the background for a session's plugins that may run:
  the user's, and a trusted project's), as Claude Code does. A plugin switched on only by the project's files is ``held_by`` them:
  it runs nothing until the folder is trusted. One a project switches off is listed off.
  Project and local ``permissions`` allow rules, ``additionalDirectories``, ``defaultMode`` and
  ``env`` count only in a trusted folder; their ``deny`` and ``ask`` rules always count (they can
  only make the host ask more).
- Rules are translated with ``plugins.claude_code_tools.host_rules`` and parsed with
  ``tools.policy.parse_rule``; every rule that cannot be used is a diagnostic of its file.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import plugins
from ahp.workspace_trust import WAITING
from host.runtime.customizations.claude_plugins import ClaudePlugins, MarketplaceError
from plugins.claude_settings import SettingsLayer, permission_rules, read_settings, settings_paths
from plugins.diagnostics import Diagnostic, LoadState, Severity
from tools.policy import PolicyRuleError, Rule, parse_rule

__all__ = ["ClaudeCode", "ClaudePlugin", "SessionView"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClaudePlugin:
    """One plugin a session lists."""

    plugin_id: str
    loaded: Any
    """``LoadedPlugin``."""
    enabled: bool = True
    held_by: Path | None = None
    """The project settings file that switched it on, when only that file did (trust needed)."""
    markets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The marketplaces settings declare that may place it (``extraKnownMarketplaces``)."""
    missing: bool = False
    """Not installed, and its marketplace is known: the host can install it."""


@dataclass
class SessionView:
    plugins: list[ClaudePlugin] = field(default_factory=list)
    rules: tuple[Rule, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    additional_directories: tuple[str, ...] = ()
    default_mode: str | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)


class ClaudeCode:
    """The Claude Code configuration folder, its settings and plugins (see the module contract)."""

    def __init__(self, config_dir: Path, data_dir: Path, *, home: str | None = None, git: str = "git") -> None:
        self.config_dir = config_dir
        self.data_dir = data_dir
        self.home = home
        self.store = ClaudePlugins(config_dir, data_dir, git=git)
        self.user = SettingsLayer("user", config_dir / "settings.json")
        self.user_container: Any = None
        """``LoadedDirectory`` of the user settings' hooks (None: no user settings file)."""
        self.user_instructions: Any = None
        """``LoadedDirectory`` of the user's ``CLAUDE.md`` (None: there is none): the user's own
        instructions, in every session's prompt as Claude Code puts them there."""
        self._user_stamp: tuple[tuple[int, int] | None, ...] | None = None
        self._loaded: dict[tuple[str, str], Any] = {}
        self._user_rules: tuple[Rule, ...] = ()
        self._user_notes: list[Diagnostic] = []
        self.install_failures: dict[str, str] = {}
        """Plugins the host tried to install by itself (``install_missing``) and why it could not."""

    # -- loading -------------------------------------------------------------------------------

    def _settings_stamp(self) -> tuple[tuple[int, int] | None, ...]:
        stamps: list[tuple[int, int] | None] = []
        for name in ("settings.json", "CLAUDE.md"):
            try:
                stat = (self.config_dir / name).stat()
            except OSError:
                stamps.append(None)
                continue
            stamps.append((stat.st_mtime_ns, stat.st_size))
        return tuple(stamps)

    def load(self) -> None:
        self._user_stamp = self._settings_stamp()
        self.user = read_settings(self.config_dir / "settings.json", "user", home=self.home)
        self._user_rules, self._user_notes = self._rules(self.user, trusted=True)
        self.user_container = None
        if self.user.exists:
            spec = plugins.DirectorySpec(".", "settings", name="Claude Code user settings", writable=False,
                                         files=("settings.json",), in_project=False)
            self.user_container = plugins.load_directory(self.config_dir, spec,
                                                         extra_diagnostics=[*self.user.diagnostics, *self._user_notes])
        self.user_instructions = None
        if (self.config_dir / "CLAUDE.md").is_file():
            # The user's CLAUDE.md with its @path imports (the spec is made here: the plugin loader is
            # one the start-up plan defers, see host/startup.py).
            spec = plugins.DirectorySpec(".", "files", name="Claude Code user instructions", writable=False,
                                         files=("CLAUDE.md",), in_project=False)
            self.user_instructions = plugins.load_directory(self.config_dir, spec)
        for diagnostic in [*self.user.diagnostics, *self._user_notes]:
            logger.log(logging.WARNING if diagnostic.severity.value in ("problem", "fatal") else logging.INFO, "%s", diagnostic)

    def refresh(self) -> bool:
        """Re-read what changed on disk (user settings, the plugin record); True when anything did."""
        changed = self.store.refresh()
        if self._settings_stamp() != self._user_stamp:
            self.load()
            changed = True
        return changed

    def user_enabled(self) -> dict[str, bool]:
        """The user-level ``enabledPlugins``: user settings, then the choices made on this host."""
        return self.store.effective_enabled(self.user.enabled_plugins)

    def declared_marketplaces(self, project: SettingsLayer | None = None) -> dict[str, dict[str, Any]]:
        return {**self.user.marketplaces, **(project.marketplaces if project is not None else {})}

    def _plugin(self, plugin_id: str, declared: dict[str, dict[str, Any]]) -> Any:
        where = self.store.resolve(plugin_id)
        name = plugin_id.rpartition("@")[0]
        if isinstance(where, str):
            where = self._in_marketplace(plugin_id, declared) or where
        if isinstance(where, str) and plugin_id in self.install_failures:
            where = f"{plugin_id} could not be installed: {self.install_failures[plugin_id]}"
        if isinstance(where, str):
            return plugins.LoadedPlugin(name=name, root=self.data_dir / "claude-code" / "missing" / plugin_id,
                                        state=LoadState("error", where))
        key = (plugin_id, str(where))
        if key not in self._loaded:
            self._loaded[key] = plugins.load_plugin(where, name=name, data_root=self.data_dir / "plugins")
        return self._loaded[key]

    def in_marketplace(self, plugin_id: str) -> Path | None:
        """Where a plugin not installed can be used in place (see ``_in_marketplace``), or None."""
        return self._in_marketplace(plugin_id, self.user.marketplaces)

    def _in_marketplace(self, plugin_id: str, declared: dict[str, dict[str, Any]]) -> Path | None:
        """A plugin not installed whose marketplace is a folder on this machine, with the plugin at
        a path inside it: used where it is (a marketplace cloned from git is installed from)."""
        name, _, market_name = plugin_id.rpartition("@")
        known = self.store.marketplaces(declared).get(market_name)
        if known is None or known.source is None or known.source.kind != "directory":
            return None
        try:
            market = self.store.marketplace(market_name, declared)
        except MarketplaceError:
            return None
        entry = market.entry(name)
        if entry is None or entry.source.kind != "path" or not entry.strict:
            return None
        folder = (market.root / (entry.source.path or "")).resolve()
        return folder if folder.is_dir() and folder.is_relative_to(market.root.resolve()) else None

    def _rules(self, layer: SettingsLayer, *, trusted: bool) -> tuple[tuple[Rule, ...], list[Diagnostic]]:
        texts, notes = permission_rules(layer, home=self.home)
        rules: list[Rule] = []
        for effect in ("deny", "ask", "allow"):
            if effect == "allow" and not trusted:
                continue
            for text in texts[effect]:
                try:
                    rules.append(parse_rule(text, effect))
                except PolicyRuleError as error:
                    notes.append(Diagnostic(Severity.PROBLEM, "Claude Code settings", str(layer.path),
                                            ("permissions", effect), f"{text!r}: {error}; ignored", "directory"))
        return tuple(rules), notes

    @staticmethod
    def _not_installed(plugin_id: str, loaded: Any, *, waiting: bool) -> Any:
        """The listing of a plugin the host will install: when, and from where."""
        market = plugin_id.rpartition("@")[2]
        message = (f"{WAITING}: the project's settings switch it on; it is installed from the marketplace {market} "
                   "once you trust this folder") if waiting else f"being installed from the marketplace {market}"
        return replace(loaded, state=LoadState("error", message))

    def install_missing(self, plugins: list[ClaudePlugin]) -> bool:
        """Install switched-on plugins that are not installed but whose marketplace is known, as
        Claude Code does (blocking: git, copies). Nothing is switched on by it. True when one was
        installed; a failure is kept in ``install_failures`` (and tried again only at a restart)."""
        done = False
        for plugin in plugins:
            if not plugin.missing or plugin.plugin_id in self.install_failures:
                continue
            try:
                self.store.install(plugin.plugin_id, plugin.markets, enable=False)
            except MarketplaceError as error:
                self.install_failures[plugin.plugin_id] = str(error)
                logger.warning("could not install %s: %s", plugin.plugin_id, error)
            else:
                logger.info("installed %s", plugin.plugin_id)
            done = True
        return done

    # -- listing -------------------------------------------------------------------------------

    def marketplace_rows(self) -> list[dict[str, Any]]:
        """Every known marketplace: ``name``, ``source`` (as typed: ``owner/repo``, a URL, a
        folder), ``origin`` (``here``, ``claude-code``, ``settings``), ``plugins`` (names) or ``error``."""
        rows = []
        for name, known in sorted(self.store.marketplaces(self.user.marketplaces).items()):
            row: dict[str, Any] = {"name": name, "source": known.source.describe() if known.source else "", "origin": known.origin}
            try:
                market = self.store.marketplace(name, self.user.marketplaces)
            except MarketplaceError as error:
                row["error"] = str(error)
            else:
                row["plugins"] = [entry.name for entry in market.plugins]
                if market.description:
                    row["description"] = market.description
            rows.append(row)
        return rows

    def plugin_rows(self) -> list[dict[str, Any]]:
        """Every plugin known at user level: installed (here or by Claude Code), or switched on by
        the user's settings: ``id``, ``enabled``, ``installed`` (``here``, ``claude-code``,
        ``in place``, or None), ``version``, ``path``, ``problem``."""
        installed = self.store.installed()
        enabled = self.user_enabled()
        rows = []
        for plugin_id in sorted(set(installed) | set(enabled)):
            entry = installed.get(plugin_id)
            row: dict[str, Any] = {"id": plugin_id, "enabled": enabled.get(plugin_id, False)}
            if entry is not None:
                row.update(installed=entry["origin"], version=entry.get("version"), path=entry.get("installPath"))
            else:
                where = self._in_marketplace(plugin_id, self.user.marketplaces)
                row.update(installed="in place" if where else None, path=str(where) if where else None)
            loaded = self._plugin(plugin_id, self.user.marketplaces) if row["enabled"] else None
            if loaded is not None and loaded.state.kind in ("error", "degraded"):
                row["problem"] = loaded.state.message
            rows.append(row)
        return rows

    def find_plugin(self, name: str) -> str:
        """``name@marketplace`` for what a user typed: a full id as it is, a bare name when exactly
        one known marketplace lists it (raises ``MarketplaceError`` otherwise)."""
        if "@" in name:
            return name
        found = [f"{name}@{row['name']}" for row in self.marketplace_rows() if name in row.get("plugins", ())]
        if len(found) == 1:
            return found[0]
        if not found:
            raise MarketplaceError(f"no known marketplace lists a plugin {name!r}; add one first (plugin marketplace add)")
        raise MarketplaceError(f"{name!r} is in several marketplaces; name one: {', '.join(found)}")

    # -- sessions ------------------------------------------------------------------------------

    def project_layers(self, folder: Path | None) -> list[SettingsLayer]:
        if folder is None:
            return []
        return [read_settings(path, scope, home=self.home) for scope, path in settings_paths(self.config_dir, folder)[1:]]

    def session_view(self, folder: Path | None, trusted: bool) -> SessionView:
        view = SessionView()
        layers = self.project_layers(folder)
        user_enabled = self.user_enabled()
        wanted = dict(user_enabled)
        brought: dict[str, Path] = {}
        for layer in layers:
            for plugin_id, flag in layer.enabled_plugins.items():
                if flag and not user_enabled.get(plugin_id):
                    brought.setdefault(plugin_id, layer.path)
                elif not flag:
                    brought.pop(plugin_id, None)
                wanted[plugin_id] = flag
        # A marketplace the project declares places only the plugins the project itself brings (they
        # wait for trust): it never decides where a plugin the user switched on comes from.
        declared = {**{k: v for layer in layers for k, v in layer.marketplaces.items()}, **self.user.marketplaces}
        for plugin_id, flag in wanted.items():
            if not flag and not user_enabled.get(plugin_id):
                continue  # never switched on anywhere: not listed
            markets = declared if plugin_id in brought else self.user.marketplaces
            loaded = self._plugin(plugin_id, markets)
            missing = (flag and loaded.state.kind == "error" and plugin_id not in self.install_failures
                       and isinstance(self.store.resolve(plugin_id), str)
                       and plugin_id.rpartition("@")[2] in self.store.marketplaces(markets))
            if missing:
                loaded = self._not_installed(plugin_id, loaded, waiting=plugin_id in brought and not trusted)
            view.plugins.append(ClaudePlugin(plugin_id, loaded, enabled=flag, held_by=brought.get(plugin_id),
                                             markets=markets, missing=missing))
        rules = list(self._user_rules)
        view.env = dict(self.user.env)
        directories = list(self.user.permissions.additional_directories)
        view.default_mode = self.user.permissions.default_mode
        for layer in layers:
            layer_rules, notes = self._rules(layer, trusted=trusted)
            rules += layer_rules
            view.diagnostics += [*layer.diagnostics, *notes]
            if trusted:
                view.env.update(layer.env)
                directories += [d for d in layer.permissions.additional_directories if d not in directories]
                view.default_mode = layer.permissions.default_mode or view.default_mode
        view.rules = tuple(rules)
        view.additional_directories = tuple(directories)
        return view
