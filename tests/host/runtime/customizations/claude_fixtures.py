"""Claude Code set-ups in their published shapes, for tests: plugins, marketplaces (a folder, and a
local bare git repository standing in for a remote), a ``~/.claude`` with its settings and
``plugins/installed_plugins.json`` / ``known_marketplaces.json`` records.

The shapes follow anthropics/claude-code's ``.claude-plugin/marketplace.json`` and plugins
(``commit-commands``: ``commands/*.md``; ``security-guidance``: ``hooks/hooks.json``), and the
records Claude Code writes (installed_plugins.json version 2: a list of installs per plugin id)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": "/nonexistent", "GIT_CONFIG_NOSYSTEM": "1", "PATH": "/usr/bin:/bin"}


def git(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def plugin(root: Path, name: str, *, command: str | None = None, hook_marker: Path | None = None,
           version: str = "1.0.0") -> Path:
    """A plugin folder: a manifest, one command (``commands/<command>.md``) and, with
    ``hook_marker``, a ``UserPromptSubmit`` hook that appends its stdin and ``$MARKER_ENV`` there."""
    folder = root / name
    (folder / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (folder / ".claude-plugin" / "plugin.json").write_text(json.dumps({
        "name": name, "version": version, "description": f"The {name} plugin",
        "author": {"name": "Anthropic", "email": "support@anthropic.com"}}, indent=2))
    (folder / "commands").mkdir(exist_ok=True)
    (folder / "commands" / f"{command or name}.md").write_text(
        f"---\ndescription: Run {name}\nallowed-tools: Bash(git status:*)\n---\nDo the {name} thing with $ARGUMENTS.\n")
    if hook_marker is not None:
        (folder / "hooks").mkdir(exist_ok=True)
        (folder / "hooks" / "hooks.json").write_text(json.dumps({
            "description": f"{name} hook",
            "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
                                                        "command": f'echo "{name} $MARKER_ENV" >> {hook_marker}'}]}]}}))
    return folder


def marketplace(root: Path, name: str, entries: list[dict[str, Any]]) -> Path:
    """A marketplace folder in anthropics/claude-code's shape (``./plugins/<name>`` sources)."""
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps({
        "$schema": "https://json.schemastore.org/claude-code-marketplace.json",
        "name": name, "version": "1.0.0", "description": "Bundled plugins",
        "owner": {"name": "Anthropic", "email": "support@anthropic.com"},
        "plugins": entries,
    }, indent=2))
    return root


def local_marketplace(root: Path, name: str = "claude-code-plugins", plugins: tuple[str, ...] = ("commit-commands",),
                      *, hook_marker: Path | None = None) -> Path:
    for each in plugins:
        plugin(root / "plugins", each, hook_marker=hook_marker)
    return marketplace(root, name, [{"name": each, "description": f"The {each} plugin", "source": f"./plugins/{each}",
                                     "category": "productivity"} for each in plugins])


def bare_remote(source: Path, bare: Path) -> Path:
    """Commit ``source`` as a git repository and clone it bare to ``bare`` (the "remote")."""
    git("init", "--quiet", "-b", "main", cwd=source)
    git("add", "-A", cwd=source)
    git("commit", "--quiet", "-m", "initial", cwd=source)
    git("clone", "--quiet", "--bare", str(source), str(bare))
    return bare


def claude_home(config_dir: Path, *, settings: dict[str, Any] | None = None,
                installed: dict[str, Path] | None = None, known: dict[str, Path] | None = None) -> Path:
    """A ``~/.claude``: ``settings.json`` and the records of plugins Claude Code installed there."""
    config_dir.mkdir(parents=True, exist_ok=True)
    if settings is not None:
        (config_dir / "settings.json").write_text(json.dumps(settings, indent=2))
    if installed or known:
        (config_dir / "plugins").mkdir(exist_ok=True)
    if installed:
        (config_dir / "plugins" / "installed_plugins.json").write_text(json.dumps({"version": 2, "plugins": {
            plugin_id: [{"scope": "user", "installPath": str(path), "version": "1.0.0",
                         "installedAt": "2026-10-01T10:00:00.000Z", "lastUpdated": "2026-10-01T10:00:00.000Z",
                         "gitCommitSha": "5cfc0a19aa" + "0" * 30, "isLocal": True}]
            for plugin_id, path in installed.items()}}, indent=2))
    if known:
        (config_dir / "plugins" / "known_marketplaces.json").write_text(json.dumps({
            name: {"source": {"source": "github", "repo": f"anthropics/{name}"}, "installLocation": str(path),
                   "lastUpdated": "2026-10-01T10:00:00.000Z"} for name, path in known.items()}, indent=2))
    return config_dir
