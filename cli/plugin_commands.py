"""``agent-host plugin ...``: Claude Code marketplaces and plugins from the command line.

``agent-host plugin marketplace add SOURCE`` (GitHub ``owner/repo``, a git URL, or a folder),
``marketplace list``, ``marketplace update [NAME]``, ``marketplace remove NAME``;
``agent-host plugin install|uninstall|enable|disable NAME[@MARKETPLACE]`` and ``plugin list``.

They work on the data directory's record (``host.runtime.customizations.claude_plugins``) and read
the Claude Code configuration folder the host reads (``[claude_code] config_dir``, else
``$CLAUDE_CONFIG_DIR``, else ``~/.claude``). A host running on the same data directory picks the
change up at its next turn or new session. Exit codes: 0 done, 1 the operation failed (the message
names the source or plugin and why), 2 a configuration error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.config import user_config
from host.config import ConfigError, load_config
from host.runtime.customizations.claude_code import ClaudeCode
from plugins.claude_settings import claude_config_dir
from plugins.marketplaces import MarketplaceError

__all__ = ["run"]


def _claude(args: argparse.Namespace) -> Any:
    path = args.config
    if path is None and user_config().is_file():
        path = str(user_config())
    config = load_config(path, overrides={"server": {"data_dir": args.data_dir}})
    folder = Path(config.claude_code.config_dir).expanduser() if config.claude_code.config_dir else claude_config_dir()
    claude = ClaudeCode(folder, config.data_path())
    claude.load()
    return claude


def run(args: argparse.Namespace) -> int:
    try:
        claude = _claude(args)
    except ConfigError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 2
    try:
        for line in _run(claude, args):
            print(line)
    except MarketplaceError as error:
        print(f"agent-host: {error}", file=sys.stderr)
        return 1
    for problem in claude.store.problems:
        print(f"agent-host: note: {problem}", file=sys.stderr)
    return 0


def _run(claude: Any, args: argparse.Namespace) -> list[str]:
    store = claude.store
    command = args.plugin_command
    if command == "marketplace":
        sub = args.marketplace_command
        if sub == "add":
            market = store.add_marketplace(args.source)
            names = ", ".join(entry.name for entry in market.plugins) or "none"
            return [f"Added the marketplace {market.name} ({len(market.plugins)} plugins: {names})",
                    f"Install one with: agent-host plugin install <name>@{market.name}"]
        if sub == "list":
            return _marketplace_lines(claude.marketplace_rows()) or ["No marketplaces. Add one: agent-host plugin marketplace add owner/repo"]
        if sub == "update":
            chosen = [args.name] if args.name else [row["name"] for row in claude.marketplace_rows() if row["origin"] == "here"]
            return [f"Updated {store.update_marketplace(name).name}" for name in chosen] or ["No marketplace was added here."]
        if sub == "remove":
            removed = store.remove_marketplace(args.name)
            return [f"Removed the marketplace {args.name}" + (f" and its plugins {', '.join(removed)}" if removed else "")]
    if command == "list":
        return _plugin_lines(claude.plugin_rows()) or ["No plugins. Install one: agent-host plugin install <name>@<marketplace>"]
    plugin_id = claude.find_plugin(args.plugin)
    if command == "install":
        record = store.install(plugin_id, claude.user.marketplaces)
        return [f"Installed {plugin_id} {record['version']} in {record['installPath']} (switched on)"]
    if command == "uninstall":
        store.uninstall(plugin_id)
        return [f"Uninstalled {plugin_id}"]
    store.set_enabled(plugin_id, command == "enable")
    return [f"{'Enabled' if command == 'enable' else 'Disabled'} {plugin_id}"]


def _marketplace_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        where = {"here": "added here", "claude-code": "Claude Code's", "settings": "declared in settings"}[row["origin"]]
        listed = f"{len(row['plugins'])} plugins" if "plugins" in row else f"unusable: {row['error']}"
        lines.append(f"{row['name']}  {row['source']}  ({where}; {listed})")
    return lines


def _plugin_lines(rows: list[dict[str, Any]]) -> list[str]:
    lines = []
    for row in rows:
        state = "on " if row["enabled"] else "off"
        where = {"here": "installed here", "claude-code": "Claude Code's install", "in place": "in its marketplace",
                 None: "not installed"}[row.get("installed")]
        version = f" {row['version']}" if row.get("version") else ""
        line = f"{state} {row['id']}{version}  ({where})"
        if row.get("problem"):
            line += f"  problem: {row['problem']}"
        lines.append(line)
    return lines
