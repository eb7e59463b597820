"""Open Plugins for the agent host: discovery, parsing, the AHP customization tree, and the
runtime model (skills, commands, agents, rules, hooks, MCP servers) the host acts on.

Deliberately not AHP-state-aware: this package turns files into immutable data and wire
dicts; the host decides when to publish them, which containers are enabled, when hooks fire
and when MCP servers start. Loading never raises for bad plugin content and never spawns a
process; only :func:`plugins.hooks.run_hook` runs anything.
"""

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
    "parse_slash",
    "plugin_customization",
    "plugin_environment",
    "random_id",
    "run_hook",
    "run_hooks",
    "select_hooks",
    "slash_entries",
    "substitute_arguments",
    "uri_id",
]
