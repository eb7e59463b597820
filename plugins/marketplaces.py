"""Claude Code plugin marketplaces and installed-plugin records, read in their published shapes.

Contract (pure apart from reading the files it is given; nothing here clones or copies: the host
does that, ``host.runtime.customizations.claude_plugins``):

- :func:`parse_source` reads where a marketplace comes from, as a user types it
  (``owner/repo``, a git URL, a local folder) or as settings write it
  (``{"source": "github", "repo": "owner/repo", "ref"?}``, ``{"source": "git", "url": ...}``,
  ``{"source": "directory", "path": ...}``, ``{"source": "file", "path": ".../.claude-plugin/marketplace.json"}``);
  a ``{"source": "url"}`` marketplace (a ``marketplace.json`` address) and anything else raise :class:`MarketplaceError` saying
  what is accepted.
- :func:`read_marketplace` reads ``.claude-plugin/marketplace.json`` of a marketplace folder into a
  :class:`Marketplace`. A file that is missing or not a JSON object raises
  :class:`MarketplaceError`; a bad plugin entry is reported in ``problems`` and the others are kept.
  An entry's source is a :class:`PluginSource`: a path inside the marketplace (``./plugins/x``, or
  a bare name under ``metadata.pluginRoot``; a path leaving the marketplace is refused), or another
  git repository (``{"source": "github", "repo"}``, ``{"source": "url", "url"}``, both with
  optional ``ref`` and ``sha``; ``git-subdir`` with ``path``). Other kinds (``npm``...) are kept as
  ``unsupported`` with the reason, so listing shows them and installing says why not.
- :func:`read_installed_plugins` / :func:`read_known_marketplaces` read Claude Code's own records
  (``<config dir>/plugins/installed_plugins.json``, versions 1 and 2, and
  ``known_marketplaces.json``), so a Claude Code user's plugins are used where they are. Unreadable
  records are empty (and say why in the second element).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from plugins._jsonspan import JsonSyntaxError, parse_json
from regular_files import read_regular_text

__all__ = [
    "MARKETPLACE_FILE", "Marketplace", "MarketplaceEntry", "MarketplaceError", "MarketplaceSource", "PluginSource",
    "parse_source", "read_installed_plugins", "read_known_marketplaces", "read_marketplace",
]

MARKETPLACE_FILE = ".claude-plugin/marketplace.json"
_GITHUB = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class MarketplaceError(ValueError):
    """A marketplace source or file that cannot be used; the message says what to do."""


@dataclass(frozen=True)
class MarketplaceSource:
    """Where a marketplace (or a plugin kept in another repository) comes from."""

    kind: Literal["github", "git", "directory"]
    location: str
    """``owner/repo``, a git URL, or an absolute folder."""
    ref: str | None = None
    sha: str | None = None
    path: str | None = None
    """A folder inside the repository (``git-subdir``)."""

    @property
    def git_url(self) -> str | None:
        """The URL ``git clone`` is given (None for a folder)."""
        if self.kind == "github":
            return f"https://github.com/{self.location}.git"
        return self.location if self.kind == "git" else None

    def describe(self) -> str:
        text = self.location
        if self.ref:
            text += f"#{self.ref}"
        return text

    def to_settings(self) -> dict[str, Any]:
        """The source object Claude Code writes in settings and ``known_marketplaces.json``."""
        if self.kind == "github":
            out: dict[str, Any] = {"source": "github", "repo": self.location}
        elif self.kind == "git":
            out = {"source": "git", "url": self.location}
        else:
            out = {"source": "directory", "path": self.location}
        if self.ref:
            out["ref"] = self.ref
        return out


def _looks_like_git_url(text: str) -> bool:
    return (text.startswith(("https://", "http://", "ssh://", "git://", "file://")) or
            bool(re.match(r"^[\w.-]+@[\w.-]+:", text)) or text.endswith(".git"))


def parse_source(value: Any, *, base: Path | None = None, plugin: bool = False) -> MarketplaceSource:
    """A marketplace source from what a user typed or a settings ``source`` object (with
    ``plugin``: a marketplace entry's source, where ``{"source": "url"}`` is a git repository;
    for a marketplace it is the address of a ``marketplace.json`` this host does not download).
    Relative folders are placed against ``base`` (default: the current folder)."""
    if isinstance(value, str):
        text = value.strip()
        if not text:
            raise MarketplaceError("an empty marketplace source; give owner/repo, a git URL or a folder")
        ref = None
        if "#" in text and not text.startswith("/"):
            text, _, ref = text.partition("#")
        local = Path(text).expanduser()
        if text.startswith(("/", "./", "../", "~")) or (not _looks_like_git_url(text) and local.exists()):
            folder = local if local.is_absolute() else (base or Path.cwd()) / local
            return MarketplaceSource("directory", str(folder.absolute()))
        if _looks_like_git_url(text):
            return MarketplaceSource("git", text, ref=ref or None)
        if _GITHUB.match(text):
            return MarketplaceSource("github", text, ref=ref or None)
        raise MarketplaceError(f"cannot tell what {value!r} is: give a GitHub owner/repo, a git URL, or a folder "
                               "(an absolute path, or one starting with ./)")
    if not isinstance(value, dict):
        raise MarketplaceError(f"a marketplace source must be a string or an object, not {value!r}")
    kind = value.get("source")
    ref = value.get("ref") if isinstance(value.get("ref"), str) else None
    sha = value.get("sha") if isinstance(value.get("sha"), str) else None
    if kind == "github" and isinstance(value.get("repo"), str) and _GITHUB.match(value["repo"]):
        return MarketplaceSource("github", value["repo"], ref=ref, sha=sha)
    if kind == "url" and not plugin:
        raise MarketplaceError(f"the marketplace source {value.get('url')!r} is a marketplace.json address, which this "
                               "host does not download; add the git repository that holds it instead")
    if kind in ("git", "url") and isinstance(value.get("url"), str) and value["url"]:
        return MarketplaceSource("git", value["url"], ref=ref, sha=sha)
    if kind == "file" and isinstance(value.get("path"), str) and value["path"].endswith(MARKETPLACE_FILE):
        folder = Path(value["path"][: -len(MARKETPLACE_FILE)] or ".").expanduser()
        return MarketplaceSource("directory", str(folder if folder.is_absolute() else (base or Path.cwd()) / folder))
    if kind == "directory" and isinstance(value.get("path"), str) and value["path"]:
        folder = Path(value["path"]).expanduser()
        return MarketplaceSource("directory", str(folder if folder.is_absolute() else (base or Path.cwd()) / folder))
    raise MarketplaceError(f"unsupported marketplace source {value!r}: this host reads "
                           '{"source": "github", "repo": "owner/repo"}, {"source": "git", "url": ...} '
                           'and {"source": "directory", "path": ...}')


@dataclass(frozen=True)
class PluginSource:
    """Where one marketplace entry's plugin is."""

    kind: Literal["path", "git", "unsupported"]
    path: str | None = None
    """``path``: POSIX path relative to the marketplace root (no ``..``)."""
    git: MarketplaceSource | None = None
    reason: str | None = None
    """``unsupported``: why it cannot be installed here."""

    def describe(self) -> str:
        if self.kind == "path":
            return f"./{self.path}"
        if self.kind == "git" and self.git is not None:
            return self.git.describe() + (f" ({self.git.path})" if self.git.path else "")
        return f"unsupported ({self.reason})"


@dataclass(frozen=True)
class MarketplaceEntry:
    name: str
    source: PluginSource
    description: str | None = None
    version: str | None = None
    category: str | None = None
    strict: bool = True
    """False: the entry itself is the plugin's manifest (Claude Code's ``strict: false``)."""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class Marketplace:
    name: str
    root: Path
    owner: str | None = None
    description: str | None = None
    plugins: tuple[MarketplaceEntry, ...] = ()
    problems: tuple[str, ...] = ()

    def entry(self, name: str) -> MarketplaceEntry | None:
        return next((entry for entry in self.plugins if entry.name == name), None)


def _inside(relative: str) -> str | None:
    cleaned = posixpath.normpath(relative.replace("\\", "/"))
    if cleaned.startswith("/") or cleaned == ".." or cleaned.startswith("../"):
        return None
    return "" if cleaned == "." else cleaned


def _plugin_source(value: Any, plugin_root: str) -> PluginSource:
    if isinstance(value, str):
        text = value if value.startswith(("./", "../", "/")) or not plugin_root else posixpath.join(plugin_root, value)
        inside = _inside(text)
        if inside is None:
            return PluginSource("unsupported", reason=f"the path {value!r} leaves the marketplace")
        return PluginSource("path", path=inside)
    if isinstance(value, dict):
        kind = value.get("source")
        if kind in ("github", "url", "git"):
            try:
                return PluginSource("git", git=parse_source(value, plugin=True))
            except MarketplaceError as error:
                return PluginSource("unsupported", reason=str(error))
        if kind == "git-subdir" and isinstance(value.get("path"), str):
            url = value.get("url") or value.get("repo")
            try:
                git = parse_source({"source": "github" if value.get("repo") and not value.get("url") else "git",
                                    "repo": url, "url": url, "ref": value.get("ref"), "sha": value.get("sha")}, plugin=True)
            except MarketplaceError as error:
                return PluginSource("unsupported", reason=str(error))
            inside = _inside(value["path"])
            if inside is None:
                return PluginSource("unsupported", reason=f"the path {value['path']!r} leaves its repository")
            return PluginSource("git", git=MarketplaceSource(git.kind, git.location, git.ref, git.sha, inside or None))
        return PluginSource("unsupported", reason=f"{kind!r} sources are not supported here (only paths and git repositories)")
    return PluginSource("unsupported", reason="no source given")


def read_marketplace(root: Path) -> Marketplace:
    """Read ``<root>/.claude-plugin/marketplace.json`` (see the module contract)."""
    path = root / MARKETPLACE_FILE
    if not path.is_file():
        raise MarketplaceError(f"{root} has no {MARKETPLACE_FILE}: it is not a Claude Code marketplace")
    try:
        data, _spans = parse_json(read_regular_text(path))
    except JsonSyntaxError as error:
        raise MarketplaceError(f"{path} is not valid JSON: {error}") from None
    except (OSError, UnicodeDecodeError, ValueError):
        raise MarketplaceError(f"{path} cannot be read as UTF-8 text") from None
    if not isinstance(data, dict):
        raise MarketplaceError(f"{path}: expected a JSON object with name, owner and plugins")
    name = data.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise MarketplaceError(f"{path}: \"name\" must be a marketplace name (letters, digits, '.', '_', '-'), not {name!r}")
    metadata = data.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    plugin_root = metadata.get("pluginRoot")
    if not isinstance(plugin_root, str):
        plugin_root = ""
    problems: list[str] = []
    entries: list[MarketplaceEntry] = []
    raw_plugins = data.get("plugins")
    if not isinstance(raw_plugins, list):
        problems.append('"plugins" is not a list; no plugins listed')
        raw_plugins = []
    seen: set[str] = set()
    for index, item in enumerate(raw_plugins):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not _NAME.match(item["name"]):
            problems.append(f"plugins[{index}]: expected an object with a plugin \"name\"; skipped")
            continue
        if item["name"] in seen:
            problems.append(f"plugins[{index}]: the name {item['name']!r} is listed twice; the first is kept")
            continue
        seen.add(item["name"])
        entries.append(MarketplaceEntry(
            name=item["name"], source=_plugin_source(item.get("source"), plugin_root),
            description=_text(item, "description"), version=_text(item, "version"), category=_text(item, "category"),
            strict=item.get("strict") is not False, raw=item,
        ))
    owner = data.get("owner")
    return Marketplace(
        name=name, root=root, owner=owner.get("name") if isinstance(owner, dict) and isinstance(owner.get("name"), str) else None,
        description=data.get("description") if isinstance(data.get("description"), str) else (
            metadata.get("description") if isinstance(metadata.get("description"), str) else None),
        plugins=tuple(entries), problems=tuple(problems),
    )


def _json_file(path: Path) -> tuple[Any, str | None]:
    if not path.is_file():
        return None, None
    try:
        return parse_json(read_regular_text(path))[0], None
    except JsonSyntaxError as error:
        return None, f"{path} is not valid JSON ({error}); its records are not used"
    except (OSError, UnicodeDecodeError, ValueError):
        return None, f"{path} cannot be read; its records are not used"


def read_installed_plugins(config_dir: Path, project: Path | None = None) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Claude Code's installed plugins: ``{"name@marketplace": {"installPath", "version",
    "gitCommitSha"...}}``. Version 2 keeps a list per plugin (one per scope); the user-scope
    entry is taken, or the project-scope one of ``project``."""
    data, problem = _json_file(config_dir / "plugins" / "installed_plugins.json")
    if not isinstance(data, dict):
        return {}, problem or (None if data is None else "installed_plugins.json is not a JSON object")
    plugins = data.get("plugins")
    if not isinstance(plugins, dict):
        plugins = data
    found: dict[str, dict[str, Any]] = {}
    for plugin_id, value in plugins.items():
        if not isinstance(plugin_id, str) or "@" not in plugin_id:
            continue
        candidates = value if isinstance(value, list) else [value]
        chosen = None
        for entry in candidates:
            if not isinstance(entry, dict) or not isinstance(entry.get("installPath"), str):
                continue
            scope = entry.get("scope", "user")
            if scope == "user" or (project is not None and entry.get("projectPath") == str(project)):
                chosen = entry
                break
            chosen = chosen or (entry if scope not in ("project", "local") else None)
        if chosen is not None:
            found[plugin_id] = chosen
    return found, problem


def read_known_marketplaces(config_dir: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Claude Code's ``known_marketplaces.json``: ``{"name": {"source": {...}, "installLocation"}}``."""
    data, problem = _json_file(config_dir / "plugins" / "known_marketplaces.json")
    if not isinstance(data, dict):
        return {}, problem
    return {name: entry for name, entry in data.items() if isinstance(entry, dict)}, problem


def _text(item: dict[str, Any], key: str) -> str | None:
    """A string field of a marketplace entry; None when absent or not a string."""
    value = item.get(key)
    return value if isinstance(value, str) else None
