"""The runtime model of loaded plugins and workspace directories: pure, immutable data.

Contract:
- Every component records the absolute ``path`` of the file that declared it and, when it is
  one declaration inside a larger JSON file, the ``range`` of that declaration.
- A container whose load state is ``error`` holds no components at all: nothing of a broken
  plugin can be surfaced, run or started. ``degraded`` containers hold what did load.
- Strings that run as processes (hook commands, MCP command/args/env/cwd/url/headers) are
  already expanded (``${PLUGIN_ROOT}`` etc.); :attr:`Hook.env` and :attr:`McpServer.env` do
  *not* include the host environment: the process starter adds it. A plugin's skill, command
  and agent bodies have its variables (``${CLAUDE_PLUGIN_ROOT}``...) filled in already.
- Hook events are normalised to canonical PascalCase names (:class:`HookEvent`); each maps to
  the host lifecycle point (:class:`LifecyclePoint`) where the host fires it (FORMAT.md 7.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Literal

from plugins._jsonspan import Span
from plugins.bodies import substitute_arguments
from plugins.diagnostics import Diagnostic, LoadState, Severity
from plugins.globs import any_glob_matches

__all__ = [
    "Agent",
    "Command",
    "ContainerKind",
    "DEFAULT_HOOK_TIMEOUT",
    "Hook",
    "HookEvent",
    "HookFile",
    "Icon",
    "LifecyclePoint",
    "LoadedContainer",
    "LoadedDirectory",
    "LoadedPlugin",
    "McpServer",
    "Prompt",
    "Rule",
    "Skill",
    "substitute_arguments",
]

DEFAULT_HOOK_TIMEOUT = 60.0
"""Seconds a hook command may run when its action declares no ``timeout``."""

ContainerKind = Literal["agent", "skill", "prompt", "rule", "hook", "mcpServer"]


class LifecyclePoint(str, Enum):
    """Where in the host's lifecycle a hook fires."""

    SESSION_START = "session_start"
    SESSION_END = "session_end"
    USER_PROMPT_SUBMIT = "user_prompt_submit"
    BEFORE_TOOL_CALL = "before_tool_call"
    AFTER_TOOL_CALL = "after_tool_call"
    AFTER_TOOL_CALL_FAILURE = "after_tool_call_failure"
    BEFORE_READ_FILE = "before_read_file"
    STOP = "stop"
    SUBAGENT_START = "subagent_start"
    SUBAGENT_STOP = "subagent_stop"
    PRE_COMPACT = "pre_compact"
    NOTIFICATION = "notification"
    PERMISSION_REQUEST = "permission_request"
    AFTER_AGENT_RESPONSE = "after_agent_response"


class HookEvent(str, Enum):
    """Canonical (PascalCase) hook event names this host understands."""

    SESSION_START = "SessionStart"
    SESSION_END = "SessionEnd"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    PRE_TOOL_USE = "PreToolUse"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    BEFORE_SHELL_EXECUTION = "BeforeShellExecution"
    AFTER_SHELL_EXECUTION = "AfterShellExecution"
    BEFORE_MCP_EXECUTION = "BeforeMCPExecution"
    AFTER_MCP_EXECUTION = "AfterMCPExecution"
    BEFORE_READ_FILE = "BeforeReadFile"
    AFTER_FILE_EDIT = "AfterFileEdit"
    STOP = "Stop"
    SUBAGENT_START = "SubagentStart"
    SUBAGENT_STOP = "SubagentStop"
    PRE_COMPACT = "PreCompact"
    NOTIFICATION = "Notification"
    PERMISSION_REQUEST = "PermissionRequest"
    AFTER_AGENT_RESPONSE = "AfterAgentResponse"

    @property
    def point(self) -> LifecyclePoint:
        """The lifecycle point at which the host fires this event."""
        return _EVENT_POINTS[self]

    @classmethod
    def parse(cls, name: str) -> HookEvent | None:
        """Canonical event for a PascalCase, camelCase, Copilot CLI or Cursor name; else None."""
        if name in _ALIASES:
            return _ALIASES[name]
        candidate = name[:1].upper() + name[1:]
        try:
            return cls(candidate)
        except ValueError:
            return None


_EVENT_POINTS = {
    HookEvent.SESSION_START: LifecyclePoint.SESSION_START,
    HookEvent.SESSION_END: LifecyclePoint.SESSION_END,
    HookEvent.USER_PROMPT_SUBMIT: LifecyclePoint.USER_PROMPT_SUBMIT,
    HookEvent.PRE_TOOL_USE: LifecyclePoint.BEFORE_TOOL_CALL,
    HookEvent.BEFORE_SHELL_EXECUTION: LifecyclePoint.BEFORE_TOOL_CALL,
    HookEvent.BEFORE_MCP_EXECUTION: LifecyclePoint.BEFORE_TOOL_CALL,
    HookEvent.POST_TOOL_USE: LifecyclePoint.AFTER_TOOL_CALL,
    HookEvent.AFTER_FILE_EDIT: LifecyclePoint.AFTER_TOOL_CALL,
    HookEvent.AFTER_SHELL_EXECUTION: LifecyclePoint.AFTER_TOOL_CALL,
    HookEvent.AFTER_MCP_EXECUTION: LifecyclePoint.AFTER_TOOL_CALL,
    HookEvent.POST_TOOL_USE_FAILURE: LifecyclePoint.AFTER_TOOL_CALL_FAILURE,
    HookEvent.BEFORE_READ_FILE: LifecyclePoint.BEFORE_READ_FILE,
    HookEvent.STOP: LifecyclePoint.STOP,
    HookEvent.SUBAGENT_START: LifecyclePoint.SUBAGENT_START,
    HookEvent.SUBAGENT_STOP: LifecyclePoint.SUBAGENT_STOP,
    HookEvent.PRE_COMPACT: LifecyclePoint.PRE_COMPACT,
    HookEvent.NOTIFICATION: LifecyclePoint.NOTIFICATION,
    HookEvent.PERMISSION_REQUEST: LifecyclePoint.PERMISSION_REQUEST,
    HookEvent.AFTER_AGENT_RESPONSE: LifecyclePoint.AFTER_AGENT_RESPONSE,
}

# Dialect names that are not simply camelCase of a canonical name (FORMAT.md 3.6).
_ALIASES = {
    "userPromptSubmitted": HookEvent.USER_PROMPT_SUBMIT,
    "beforeSubmitPrompt": HookEvent.USER_PROMPT_SUBMIT,
    "agentStop": HookEvent.STOP,
    "beforeMCPExecution": HookEvent.BEFORE_MCP_EXECUTION,
    "afterMCPExecution": HookEvent.AFTER_MCP_EXECUTION,
}


@dataclass(frozen=True)
class Icon:
    """AHP ``Icon``: ``src`` is an http(s) URL or a ``data:`` URI."""

    src: str
    content_type: str | None = None

    def to_wire(self) -> dict[str, str]:
        wire = {"src": self.src}
        if self.content_type:
            wire["contentType"] = self.content_type
        return wire


@dataclass(frozen=True)
class Skill:
    """An Agent Skill (``skills/<dir>/SKILL.md``); the folder may hold resources."""

    name: str
    description: str
    body: str
    path: Path
    disable_model_invocation: bool = False
    user_invocable: bool = True
    allowed_tools: tuple[str, ...] = ()
    argument_hint: str | None = None
    model: str | None = None
    license: str | None = None

    @property
    def folder(self) -> Path:
        """The skill's folder (scripts/, references/, assets/ live here)."""
        return self.path.parent

    def render(self, arguments: str = "") -> str:
        """The body with ``$ARGUMENTS`` substituted, as sent when the user invokes it."""
        return substitute_arguments(self.body, arguments)


@dataclass(frozen=True)
class Command:
    """A command skill (``commands/<name>.md``): flat Markdown, published as an AHP skill."""

    name: str
    description: str | None
    body: str
    path: Path
    disable_model_invocation: bool = False
    user_invocable: bool = True
    allowed_tools: tuple[str, ...] = ()
    argument_hint: str | None = None
    model: str | None = None

    def render(self, arguments: str = "") -> str:
        """The body with ``$ARGUMENTS`` substituted."""
        return substitute_arguments(self.body, arguments)


@dataclass(frozen=True)
class Agent:
    """A custom agent; ``body`` is its system prompt."""

    name: str
    description: str
    body: str
    path: Path
    tools: tuple[str, ...] | None = None
    """Allow-list of tool names; None means no restriction was declared."""
    models: tuple[str, ...] = ()
    """Preferred model first, then fallbacks."""
    disable_model_invocation: bool = False
    user_invocable: bool = True

    @property
    def model(self) -> str | None:
        """The preferred model, if declared."""
        return self.models[0] if self.models else None


@dataclass(frozen=True)
class Rule:
    """A rule or instructions file; ``body`` is injected while the rule is active."""

    name: str
    description: str | None
    body: str
    path: Path
    always_apply: bool = False
    globs: tuple[str, ...] = ()
    imports: tuple[Path, ...] = ()
    """Files pulled in by ``@path`` imports (instruction files only), already part of ``body``."""

    @property
    def activation(self) -> Literal["always", "always_for_matching_files", "on_request", "on_request_for_matching_files"]:
        """FORMAT.md 3.4's four modes."""
        if self.always_apply:
            return "always_for_matching_files" if self.globs else "always"
        return "on_request_for_matching_files" if self.globs else "on_request"

    def applies_to(self, file_path: str | Path, root: str | Path | None = None) -> bool:
        """True when the rule is relevant to ``file_path`` (any file if it has no globs)."""
        return not self.globs or any_glob_matches(self.globs, file_path, root)


@dataclass(frozen=True)
class Prompt:
    """A user-only prompt file (``.github/prompts/*.prompt.md``)."""

    name: str
    description: str | None
    body: str
    path: Path
    argument_hint: str | None = None
    agent: str | None = None
    model: str | None = None
    tools: tuple[str, ...] | None = None

    def render(self, arguments: str = "") -> str:
        """The body with ``$ARGUMENTS`` substituted."""
        return substitute_arguments(self.body, arguments)


@dataclass(frozen=True)
class Hook:
    """One ``command`` hook action, ready to run."""

    event: HookEvent
    command: str
    """Shell command with plugin variables expanded; run through ``sh -c``."""
    plugin_root: Path
    source: Path
    matcher: str | None = None
    """Claude Code matcher over the event subject (tool name, SessionStart source, PreCompact trigger...); None = all."""
    timeout: float = DEFAULT_HOOK_TIMEOUT
    env: dict[str, str] = field(default_factory=dict)
    """Plugin-declared env plus PLUGIN_ROOT/CLAUDE_PLUGIN_ROOT/PLUGIN_DATA (not the host env)."""
    cwd: Path | None = None
    """Declared working directory; None means the session's working directory."""
    condition: str | None = None
    """Claude Code's ``if``: a permission rule (``Bash(git *)``, ``Edit(*.ts)``) the tool call must
    match for the hook to run; only tool events have one."""
    run_async: bool = False
    """``async: true``: run in the background; the event does not wait for it and its answer
    cannot block or change anything (its messages reach the next turn)."""
    async_rewake: bool = False
    """``asyncRewake: true``: like ``run_async``; an exit 2 is reported to the model (next turn)."""
    rewake_message: str | None = None
    """``rewakeMessage``: what the model is told before an ``asyncRewake`` hook's report."""
    rewake_summary: str | None = None
    """``rewakeSummary``: what the user is told of it."""

    @property
    def point(self) -> LifecyclePoint:
        """Where the host fires this hook."""
        return self.event.point

    def matches(self, subject: str | None, aliases: tuple[str, ...] = ()) -> bool:
        """True when the matcher accepts ``subject`` or one of its ``aliases`` (e.g. Claude's
        ``Bash`` for the host's ``shell``). As in Claude Code: no matcher, ``""`` or ``*`` accept
        everything; a matcher of only letters, digits, ``_`` and ``|`` is an exact name or a
        ``|`` list of exact names (``Edit`` is not ``NotebookEdit``); anything else is a regular
        expression searched in the name (``mcp__github__.*``, ``^Notebook``)."""
        if self.matcher is None or self.matcher in ("", "*"):
            return True
        candidates = ([subject] if subject is not None else []) + list(aliases)
        if _EXACT_MATCHER.fullmatch(self.matcher):
            names = set(self.matcher.split("|"))
            return any(candidate in names for candidate in candidates)
        return any(re.search(self.matcher, candidate) for candidate in candidates)


_EXACT_MATCHER = re.compile(r"[A-Za-z0-9_|]+")


@dataclass(frozen=True)
class HookFile:
    """One hooks configuration (a file, or the manifest's inline block); one AHP hook child."""

    name: str
    path: Path
    hooks: tuple[Hook, ...]
    range: Span | None = None


@dataclass(frozen=True)
class McpServer:
    """An MCP server declaration, expanded and normalised."""

    name: str
    transport: Literal["stdio", "http", "sse"]
    path: Path | None = None
    """The file that declares it (None for the host's own config)."""
    plugin_root: Path | None = None
    """The plugin it belongs to (None for workspace and config servers)."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Declared env plus PLUGIN_ROOT/CLAUDE_PLUGIN_ROOT/PLUGIN_DATA (not the host env)."""
    cwd: Path | None = None
    """Working directory for stdio servers (a plugin's defaults to its root)."""
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None
    """Per-call timeout in seconds (declared in milliseconds)."""
    range: Span | None = None


@dataclass(frozen=True, kw_only=True)
class LoadedContainer:
    """What plugins and directories share: a name, a root, a load state and components."""

    name: str
    root: Path
    state: LoadState
    diagnostics: tuple[Diagnostic, ...] = ()
    skills: tuple[Skill, ...] = ()
    commands: tuple[Command, ...] = ()
    agents: tuple[Agent, ...] = ()
    rules: tuple[Rule, ...] = ()
    prompts: tuple[Prompt, ...] = ()
    hook_files: tuple[HookFile, ...] = ()
    mcp_servers: tuple[McpServer, ...] = ()

    @property
    def hooks(self) -> tuple[Hook, ...]:
        """Every runnable hook, in file then declaration order."""
        return tuple(hook for hook_file in self.hook_files for hook in hook_file.hooks)

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        """Diagnostics that did not affect the load state (unknown keys, ignored kinds)."""
        return tuple(d for d in self.diagnostics if d.severity in (Severity.WARNING, Severity.INFO))


@dataclass(frozen=True, kw_only=True)
class LoadedPlugin(LoadedContainer):
    """A parsed Open Plugins plugin. ``name`` is the namespace prefix (``/name:skill``)."""

    manifest_path: Path | None = None
    version: str | None = None
    description: str | None = None
    icon: Icon | None = None
    data_dir: Path | None = None
    """``PLUGIN_DATA`` for this plugin, when the host supplied a data root."""


@dataclass(frozen=True, kw_only=True)
class LoadedDirectory(LoadedContainer):
    """A watched workspace folder whose children are all of one kind (``contents``)."""

    contents: ContainerKind
    exists: bool = True
    writable: bool = True
    files: tuple[Path, ...] | None = None
    """For file-set containers (AGENTS.md, CLAUDE.md): the files considered; None = a folder."""
