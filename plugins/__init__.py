"""Open Plugins for the agent host: discovery, parsing, the AHP customization tree, and the
runtime model (skills, commands, agents, rules, hooks, MCP servers) the host acts on.

Deliberately not AHP-state-aware: this package turns files into immutable data and wire
dicts; the host decides when to publish them, which containers are enabled, when hooks fire
and when MCP servers start. Loading never raises for bad plugin content and never spawns a
process; only :func:`plugins.hooks.run_hook` runs anything.

The package's names are exported lazily (PEP 562): ``from plugins import load_plugin`` loads
``plugins.loader`` and what it needs, while ``from plugins.claude_code_tools import ...`` loads that
module alone. The host imports the small modules (the tool table, settings, bodies) at its start
and the loader only when a session first needs plugins (``host/startup.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers (tests/plugins/test_package.py checks both agree)
    from plugins.customizations import (
        NOTES_LIMIT,
        MintId,
        child_customizations,
        container_notes,
        directory_customization,
        loading_plugin_customization,
        plugin_customization,
        random_id,
        uri_id,
    )
    from plugins.diagnostics import Diagnostic, LoadState, Severity, load_state_from
    from plugins.directories import (
        CLAUDE_SETTINGS,
        INSTRUCTION_FILES,
        WORKSPACE_DIRECTORIES,
        DirectorySpec,
        load_directory,
        load_workspace_directories,
    )
    from plugins.expand import expand_config, expand_hook_command, plugin_environment
    from plugins.globs import any_glob_matches, glob_matches
    from plugins.hooks import HookOutcome, HookResult, hook_payload, run_hook, run_hooks, select_hooks
    from plugins.loader import (
        MANIFEST_LOCATIONS,
        DiscoveryResult,
        discover_plugins,
        is_plugin_root,
        load_plugin,
        load_plugins,
    )
    from plugins.mcp_servers import parse_server, server_entries
    from plugins.model import (
        DEFAULT_HOOK_TIMEOUT,
        Agent,
        Command,
        Hook,
        HookEvent,
        HookFile,
        Icon,
        LifecyclePoint,
        LoadedContainer,
        LoadedDirectory,
        LoadedPlugin,
        McpServer,
        Prompt,
        Rule,
        Skill,
        substitute_arguments,
    )
    from plugins.slash import SlashEntry, SlashInvocation, complete_slash, parse_slash, slash_entries

_WHERE: dict[str, str] = {
    "Agent": "plugins.model",
    "CLAUDE_SETTINGS": "plugins.directories",
    "Command": "plugins.model",
    "DEFAULT_HOOK_TIMEOUT": "plugins.model",
    "Diagnostic": "plugins.diagnostics",
    "DirectorySpec": "plugins.directories",
    "DiscoveryResult": "plugins.loader",
    "Hook": "plugins.model",
    "HookEvent": "plugins.model",
    "HookFile": "plugins.model",
    "HookOutcome": "plugins.hooks",
    "HookResult": "plugins.hooks",
    "INSTRUCTION_FILES": "plugins.directories",
    "Icon": "plugins.model",
    "LifecyclePoint": "plugins.model",
    "LoadState": "plugins.diagnostics",
    "LoadedContainer": "plugins.model",
    "LoadedDirectory": "plugins.model",
    "LoadedPlugin": "plugins.model",
    "MANIFEST_LOCATIONS": "plugins.loader",
    "McpServer": "plugins.model",
    "MintId": "plugins.customizations",
    "NOTES_LIMIT": "plugins.customizations",
    "Prompt": "plugins.model",
    "Rule": "plugins.model",
    "Severity": "plugins.diagnostics",
    "Skill": "plugins.model",
    "SlashEntry": "plugins.slash",
    "SlashInvocation": "plugins.slash",
    "WORKSPACE_DIRECTORIES": "plugins.directories",
    "any_glob_matches": "plugins.globs",
    "child_customizations": "plugins.customizations",
    "complete_slash": "plugins.slash",
    "container_notes": "plugins.customizations",
    "directory_customization": "plugins.customizations",
    "discover_plugins": "plugins.loader",
    "expand_config": "plugins.expand",
    "expand_hook_command": "plugins.expand",
    "glob_matches": "plugins.globs",
    "hook_payload": "plugins.hooks",
    "is_plugin_root": "plugins.loader",
    "load_directory": "plugins.directories",
    "load_plugin": "plugins.loader",
    "load_plugins": "plugins.loader",
    "load_state_from": "plugins.diagnostics",
    "load_workspace_directories": "plugins.directories",
    "loading_plugin_customization": "plugins.customizations",
    "parse_server": "plugins.mcp_servers",
    "parse_slash": "plugins.slash",
    "plugin_customization": "plugins.customizations",
    "plugin_environment": "plugins.expand",
    "random_id": "plugins.customizations",
    "run_hook": "plugins.hooks",
    "run_hooks": "plugins.hooks",
    "select_hooks": "plugins.hooks",
    "server_entries": "plugins.mcp_servers",
    "slash_entries": "plugins.slash",
    "substitute_arguments": "plugins.model",
    "uri_id": "plugins.customizations",
}
"""Each exported name → the module that defines it."""

__all__ = [
    "Agent",
    "Command",
    "DEFAULT_HOOK_TIMEOUT",
    "Diagnostic",
    "DirectorySpec",
    "DiscoveryResult",
    "Hook",
    "HookEvent",
    "HookFile",
    "HookOutcome",
    "HookResult",
    "CLAUDE_SETTINGS",
    "INSTRUCTION_FILES",
    "Icon",
    "LifecyclePoint",
    "LoadState",
    "LoadedContainer",
    "LoadedDirectory",
    "LoadedPlugin",
    "MANIFEST_LOCATIONS",
    "McpServer",
    "MintId",
    "NOTES_LIMIT",
    "container_notes",
    "Prompt",
    "Rule",
    "Severity",
    "Skill",
    "SlashEntry",
    "SlashInvocation",
    "WORKSPACE_DIRECTORIES",
    "any_glob_matches",
    "child_customizations",
    "complete_slash",
    "directory_customization",
    "discover_plugins",
    "expand_config",
    "expand_hook_command",
    "glob_matches",
    "hook_payload",
    "is_plugin_root",
    "load_directory",
    "load_plugin",
    "load_plugins",
    "load_state_from",
    "load_workspace_directories",
    "loading_plugin_customization",
    "parse_server",
    "parse_slash",
    "plugin_customization",
    "plugin_environment",
    "random_id",
    "run_hook",
    "run_hooks",
    "select_hooks",
    "server_entries",
    "slash_entries",
    "substitute_arguments",
    "uri_id",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'plugins' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
