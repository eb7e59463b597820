"""Claude Code plugins on this host: marketplaces added, plugins installed and switched on.

Contract:
- One record, ``<data dir>/claude-code/plugins.json`` (written whole, atomically), holds what was
  done here: ``marketplaces`` (name -> source, where its files are, the commit read), ``plugins``
  (``name@marketplace`` -> ``installPath``, ``version``, ``gitCommitSha``, ``installedAt``) and
  ``enabled`` (``name@marketplace`` -> true/false, the user's choices made here). The command line,
  the terminal client (through the host) and protocol clients (the root config's
  ``enabledPlugins``) all change it through this class; a running host re-reads it when it changed
  on disk (``refresh``).
- A Claude Code user's own set-up is read in place, never copied or written: marketplaces of
  ``<config dir>/plugins/known_marketplaces.json`` (their ``installLocation``), plugins of
  ``installed_plugins.json`` (their ``installPath``), and ``enabledPlugins`` of the user settings
  (``effective_enabled``: the user settings, then the choices made here).
- ``add_marketplace`` reads a local folder where it is; a git URL or GitHub ``owner/repo`` is cloned
  with ``git`` (``GIT_TERMINAL_PROMPT=0``: nothing waits for a password) into
  ``claude-code/marketplaces/<name>``. A source that cannot be reached raises
  :class:`~plugins.marketplaces.MarketplaceError` naming it and git's reason.
- ``install`` (adding first a marketplace that settings declare in ``extraKnownMarketplaces`` and
  that was not added yet) copies an entry whose source is a path in its marketplace, or clones one whose
  source is another git repository, into ``claude-code/cache/<marketplace>/<plugin>/<version>``
  where the version is the commit it came from (a folder that is no git checkout: a hash of its
  files); an entry with ``strict: false`` gets its manifest written from the entry. The plugin is
  then switched on. ``uninstall`` removes the copy and the record.
- ``resolve(plugin_id)`` is where a plugin's files are: an install made here, else Claude Code's
  install; else a message saying how to install it.

Blocking (git, copying): the host calls these through ``asyncio.to_thread``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import child_processes
from plugins.claude_settings import plugin_id_parts
from plugins.marketplaces import (
    Marketplace,
    MarketplaceError,
    MarketplaceSource,
    parse_source,
    read_installed_plugins,
    read_known_marketplaces,
    read_marketplace,
)

__all__ = ["ClaudePlugins", "KnownMarketplace", "MarketplaceError"]

GIT_TIMEOUT = 300.0
"""Seconds one git command may take."""
_MANIFEST_KEYS = ("name", "version", "description", "author", "homepage", "repository", "license", "keywords",
                  "commands", "agents", "skills", "hooks", "mcpServers")


@dataclass(frozen=True)
class KnownMarketplace:
    name: str
    source: MarketplaceSource | None
    root: Path | None
    """Where its files are (None: declared in settings but not added yet)."""
    origin: str
    """``here`` (added on this host), ``claude-code`` (Claude Code's record) or ``settings``."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size


class ClaudePlugins:
    """Marketplaces and plugins: this host's record plus a Claude Code user's own."""

    def __init__(self, config_dir: Path, data_dir: Path, *, git: str = "git") -> None:
        self.config_dir = config_dir
        self.root = data_dir / "claude-code"
        self.record_path = self.root / "plugins.json"
        self.git = git
        self._record: dict[str, Any] = {}
        self._stamp: tuple[int, int] | None = None
        self.problems: list[str] = []
        """Why a record could not be read (shown in ``list`` and logged by the host)."""
        self._cache: dict[tuple[str, str], tuple[Any, Any]] = {}
        """Files read before, by what and path: (their stamp, what was read); read again when changed."""
        self.refresh()

    def _cached(self, what: str, path: Path, read: Any) -> Any:
        """``read()`` of ``path``, again only when the file changed (sessions ask for the same
        marketplaces and records once per plugin)."""
        stamp = _stamp(path)
        key = (what, str(path))
        hit = self._cache.get(key)
        if hit is not None and hit[0] == stamp and stamp is not None:
            return hit[1]
        value = read()
        self._cache[key] = (stamp, value)
        return value

    def read_marketplace(self, root: Path) -> Marketplace:
        """``plugins.marketplaces.read_marketplace``, cached by the file's stamp (errors are not cached)."""
        return self._cached("marketplace", root / ".claude-plugin" / "marketplace.json", lambda: read_marketplace(root))

    # -- the record ----------------------------------------------------------------------------

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            stat = self.record_path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def refresh(self) -> bool:
        """Re-read the record when it changed on disk; True when it did."""
        stamp = self._file_stamp()
        if stamp == self._stamp and (stamp is not None or self._record):
            return False
        self._stamp = stamp
        record: Any = {}
        self.problems = []
        if stamp is not None:
            try:
                record = json.loads(self.record_path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as error:
                self.problems.append(f"{self.record_path} cannot be read ({error}); this host's plugin record starts empty")
                record = {}
        if not isinstance(record, dict):
            record = {}
        self._record = {key: record.get(key) if isinstance(record.get(key), dict) else {}
                        for key in ("marketplaces", "plugins", "enabled")}
        return True

    def _save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(dir=self.root, prefix=".plugins.", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(self._record, out, indent=2, sort_keys=True)
        os.replace(temp, self.record_path)
        self._stamp = self._file_stamp()

    @property
    def enabled_here(self) -> dict[str, bool]:
        """The enable/disable choices made on this host."""
        return {k: v for k, v in self._record["enabled"].items() if isinstance(v, bool)}

    def effective_enabled(self, user_settings: dict[str, bool]) -> dict[str, bool]:
        """The user-level ``enabledPlugins``: Claude Code's user settings, then this host's choices."""
        return {**user_settings, **self.enabled_here}

    # -- marketplaces --------------------------------------------------------------------------

    def marketplaces(self, declared: dict[str, dict[str, Any]] | None = None) -> dict[str, KnownMarketplace]:
        """Every marketplace known: added here, Claude Code's, and those settings declare
        (``extraKnownMarketplaces``; a directory one is usable in place, others once added)."""
        found: dict[str, KnownMarketplace] = {}
        for name, entry in (declared or {}).items():
            try:
                source = parse_source(entry)
            except MarketplaceError:
                source = None
            root = Path(source.location) if source is not None and source.kind == "directory" else None
            found[name] = KnownMarketplace(name, source, root, "settings")
        known, problem = self._cached("known", self.config_dir / "plugins" / "known_marketplaces.json",
                                      lambda: read_known_marketplaces(self.config_dir))
        if problem and problem not in self.problems:
            self.problems.append(problem)
        for name, entry in known.items():
            try:
                source = parse_source(entry.get("source")) if entry.get("source") is not None else None
            except MarketplaceError:
                source = None
            location = entry.get("installLocation")
            root = Path(location) if isinstance(location, str) else (
                Path(source.location) if source is not None and source.kind == "directory" else None)
            found[name] = KnownMarketplace(name, source, root, "claude-code")
        for name, entry in self._record["marketplaces"].items():
            try:
                source = parse_source(entry.get("source"))
            except (MarketplaceError, AttributeError):
                source = None
            location = entry.get("installLocation") if isinstance(entry, dict) else None
            found[name] = KnownMarketplace(name, source, Path(location) if isinstance(location, str) else None, "here")
        return found

    def marketplace(self, name: str, declared: dict[str, dict[str, Any]] | None = None) -> Marketplace:
        """Read a known marketplace's ``marketplace.json`` (raises ``MarketplaceError``)."""
        known = self.marketplaces(declared).get(name)
        if known is None:
            raise MarketplaceError(f"no marketplace named {name!r}; add it first: agent-host plugin marketplace add <owner/repo|url|folder>")
        if known.root is None:
            where = known.source.describe() if known.source is not None else "its source"
            raise MarketplaceError(f"the marketplace {name!r} (from {where}) is not added yet: agent-host plugin marketplace add {where}")
        return self.read_marketplace(known.root)

    def add_marketplace(self, value: Any, *, base: Path | None = None) -> Marketplace:
        """Add a marketplace from a folder, a git URL or ``owner/repo`` (see the contract)."""
        source = parse_source(value, base=base)
        if source.kind == "directory":
            market = read_marketplace(Path(source.location))
            root = Path(source.location)
            commit = None
        else:
            self.root.mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(dir=self.root, prefix=".clone."))
            try:
                self._clone(source, staging / "repo")
                market = read_marketplace(staging / "repo")
                root = self.root / "marketplaces" / market.name
                existing = self._record["marketplaces"].get(market.name)
                if existing and existing.get("source") != source.to_settings():
                    raise MarketplaceError(f"a marketplace named {market.name!r} was already added from another source; "
                                           f"remove it first: agent-host plugin marketplace remove {market.name}")
                _put_in_place(staging / "repo", root)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
            commit = self._commit(root)
            market = read_marketplace(root)
        self._record["marketplaces"][market.name] = {
            "source": source.to_settings(), "installLocation": str(root), "commit": commit, "lastUpdated": _now()}
        self._save()
        return market

    def update_marketplace(self, name: str) -> Marketplace:
        """Fetch a marketplace added here again (a folder is simply re-read)."""
        entry = self._record["marketplaces"].get(name)
        if not isinstance(entry, dict):
            known = self.marketplaces().get(name)
            if known is not None and known.root is not None:
                return read_marketplace(known.root)  # Claude Code's: it updates its own
            raise MarketplaceError(f"no marketplace named {name!r} was added on this host")
        source = parse_source(entry.get("source"))
        root = Path(entry["installLocation"])
        if source.kind != "directory":
            if not (root / ".git").exists():
                return self.add_marketplace(entry.get("source"))
            self._run_git(["fetch", "--depth", "1", "origin", source.ref or "HEAD"], root, source)
            self._run_git(["reset", "--hard", "FETCH_HEAD"], root, source)
            entry["commit"] = self._commit(root)
        market = read_marketplace(root)
        entry["lastUpdated"] = _now()
        self._save()
        return market

    def remove_marketplace(self, name: str) -> list[str]:
        """Forget a marketplace added here and uninstall the plugins installed from it; returns those."""
        entry = self._record["marketplaces"].pop(name, None)
        if entry is None:
            raise MarketplaceError(f"no marketplace named {name!r} was added on this host"
                                   + (" (it is Claude Code's: remove it there)" if name in self.marketplaces() else ""))
        removed = [plugin_id for plugin_id in list(self._record["plugins"]) if (plugin_id_parts(plugin_id) or ("", ""))[1] == name]
        for plugin_id in removed:
            self._drop_install(plugin_id)
        location = Path(entry.get("installLocation") or "")
        if location.is_relative_to(self.root / "marketplaces") and location.exists():
            shutil.rmtree(location, ignore_errors=True)
        self._save()
        return removed

    # -- plugins -------------------------------------------------------------------------------

    def installed(self) -> dict[str, dict[str, Any]]:
        """Plugins installed here, and Claude Code's (``origin`` says which)."""
        claude, problem = self._cached("installed", self.config_dir / "plugins" / "installed_plugins.json",
                                       lambda: read_installed_plugins(self.config_dir))
        if problem and problem not in self.problems:
            self.problems.append(problem)
        found = {plugin_id: {**entry, "origin": "claude-code"} for plugin_id, entry in claude.items()}
        found.update({plugin_id: {**entry, "origin": "here"} for plugin_id, entry in self._record["plugins"].items()
                      if isinstance(entry, dict)})
        return found

    def resolve(self, plugin_id: str) -> Path | str:
        """The folder of an installed plugin, or why there is none (with what to do)."""
        entry = self.installed().get(plugin_id)
        if entry is not None:
            path = Path(str(entry.get("installPath")))
            if path.is_dir():
                return path
            return (f"{plugin_id} was installed at {path}, which is gone; reinstall it: "
                    f"agent-host plugin install {plugin_id}")
        return f"{plugin_id} is enabled but not installed: agent-host plugin install {plugin_id} (or /plugin install {plugin_id})"

    def install(self, plugin_id: str, declared: dict[str, dict[str, Any]] | None = None, *, enable: bool = True) -> dict[str, Any]:
        """Install ``name@marketplace`` from its marketplace and switch it on (see the contract);
        ``enable=False`` leaves the switches alone (a plugin a project's settings switch on)."""
        parts = plugin_id_parts(plugin_id)
        if parts is None:
            raise MarketplaceError(f"{plugin_id!r} is not a plugin id: write name@marketplace")
        name, market_name = parts
        known = self.marketplaces(declared).get(market_name)
        if known is not None and known.root is None and known.source is not None:
            self.add_marketplace(known.source.to_settings())  # declared in settings, not added yet: added now
        market = self.marketplace(market_name, declared)
        entry = market.entry(name)
        if entry is None:
            listed = ", ".join(e.name for e in market.plugins[:20]) or "none"
            raise MarketplaceError(f"the marketplace {market_name!r} has no plugin {name!r} (it lists: {listed})")
        self.root.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=self.root, prefix=".install."))
        try:
            if entry.source.kind == "path":
                source_dir = (market.root / (entry.source.path or "")).resolve()
                if not source_dir.is_relative_to(market.root.resolve()) or not source_dir.is_dir():
                    raise MarketplaceError(f"{plugin_id}: its source {entry.source.describe()} is not a folder in {market.root}")
                version = self._commit(market.root) or _tree_hash(source_dir)
                shutil.copytree(source_dir, staging / "plugin", symlinks=True, ignore=shutil.ignore_patterns(".git"))
            elif entry.source.kind == "git" and entry.source.git is not None:
                self._clone(entry.source.git, staging / "repo")
                version = self._commit(staging / "repo") or _tree_hash(staging / "repo")
                inner = staging / "repo" / (entry.source.git.path or "")
                if not inner.is_dir():
                    raise MarketplaceError(f"{plugin_id}: {entry.source.git.path} is not a folder of {entry.source.git.describe()}")
                shutil.copytree(inner, staging / "plugin", symlinks=True, ignore=shutil.ignore_patterns(".git"))
            else:
                raise MarketplaceError(f"{plugin_id} cannot be installed here: {entry.source.reason}")
            if not entry.strict:
                _write_manifest(staging / "plugin", entry.raw)
            target = self.root / "cache" / market_name / name / version[:40]
            _put_in_place(staging / "plugin", target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        previous = self._record["plugins"].get(plugin_id)
        if isinstance(previous, dict) and previous.get("installPath") != str(target):
            _remove_under(Path(str(previous.get("installPath"))), self.root / "cache")
        record = {"installPath": str(target), "version": entry.version or _manifest_version(target) or version[:12],
                  "gitCommitSha": version,
                  "installedAt": _now(), "marketplace": market_name}
        self._record["plugins"][plugin_id] = record
        if enable:
            self._record["enabled"][plugin_id] = True
        self._save()
        return record

    def uninstall(self, plugin_id: str) -> None:
        if plugin_id not in self._record["plugins"]:
            if plugin_id in self.installed():
                raise MarketplaceError(f"{plugin_id} was installed by Claude Code; disable it here "
                                       f"(agent-host plugin disable {plugin_id}) or uninstall it with Claude Code")
            raise MarketplaceError(f"{plugin_id} is not installed on this host")
        self._drop_install(plugin_id)
        self._save()

    def set_enabled(self, plugin_id: str, enabled: bool | None) -> None:
        """Switch a plugin on or off for this user (None: forget the choice made here)."""
        if plugin_id_parts(plugin_id) is None:
            raise MarketplaceError(f"{plugin_id!r} is not a plugin id: write name@marketplace")
        if enabled is None:
            self._record["enabled"].pop(plugin_id, None)
        else:
            self._record["enabled"][plugin_id] = enabled
        self._save()

    def _drop_install(self, plugin_id: str) -> None:
        entry = self._record["plugins"].pop(plugin_id, None)
        self._record["enabled"].pop(plugin_id, None)
        if isinstance(entry, dict):
            _remove_under(Path(str(entry.get("installPath"))), self.root / "cache")

    # -- git -----------------------------------------------------------------------------------

    def _run_git(self, args: list[str], cwd: Path | None, source: MarketplaceSource) -> str:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
        try:
            done = child_processes.run([self.git, *args], cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=GIT_TIMEOUT, stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise MarketplaceError(f"cannot fetch {source.describe()}: git is not installed (or not on PATH)") from None
        except subprocess.TimeoutExpired:
            raise MarketplaceError(f"cannot fetch {source.describe()}: git took longer than {GIT_TIMEOUT:g} s") from None
        if done.returncode != 0:
            lines = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
            reason = next((line for line in lines if line.startswith(("fatal:", "error:"))), lines[-1] if lines else
                          f"git exited with {done.returncode}")
            raise MarketplaceError(f"cannot fetch {source.describe()}: {reason.removeprefix('fatal: ').removeprefix('error: ')}")
        return done.stdout

    def _clone(self, source: MarketplaceSource, target: Path) -> None:
        url = source.git_url
        assert url is not None
        if source.sha:
            self._run_git(["clone", "--quiet", url, str(target)], None, source)
            self._run_git(["checkout", "--quiet", source.sha], target, source)
            return
        args = ["clone", "--quiet", "--depth", "1"]
        if source.ref:
            args += ["--branch", source.ref]
        self._run_git([*args, url, str(target)], None, source)

    def _commit(self, folder: Path) -> str | None:
        if not (folder / ".git").exists():
            return None
        try:
            done = child_processes.run([self.git, "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True, timeout=30,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() or None if done.returncode == 0 else None


def _tree_hash(folder: Path) -> str:
    """A version for a folder that is no git checkout: a hash of its files' paths and bytes."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".git" not in p.parts):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            pass
    return digest.hexdigest()


def _manifest_version(folder: Path) -> str | None:
    try:
        data = json.loads((folder / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = data.get("version") if isinstance(data, dict) else None
    return version if isinstance(version, str) and version else None


def _write_manifest(folder: Path, entry: dict[str, Any]) -> None:
    """``strict: false``: the marketplace entry is the plugin's manifest."""
    manifest = folder / ".claude-plugin" / "plugin.json"
    if manifest.exists():
        return
    manifest.parent.mkdir(parents=True, exist_ok=True)
    manifest.write_text(json.dumps({k: entry[k] for k in _MANIFEST_KEYS if k in entry}, indent=2), encoding="utf-8")


def _remove_under(path: Path, parent: Path) -> None:
    """Remove ``path`` if it lies in ``parent`` (never anything of Claude Code's)."""
    try:
        inside = path.resolve().is_relative_to(parent.resolve())
    except OSError:
        return
    if inside and path.exists():
        shutil.rmtree(path, ignore_errors=True)


def _put_in_place(staged: Path, target: Path) -> None:
    """Move a fully prepared folder to ``target``, replacing what was there (a marketplace clone or
    an installed plugin): whatever fails before this leaves the old copy untouched."""
    if target.exists():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(staged, target)
