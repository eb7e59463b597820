"""Host configuration: a TOML file, then environment variables, then command-line flags.

Every key is declared here; an unknown key or a bad value is a ``ConfigError`` that names the
file, the key, the value and what is expected, so a typo never silently changes behaviour.
Precedence (later wins): built-in defaults < config file < ``AGENT_HOST_*`` environment < flags.
Secrets (the connection token, provider keys) are never logged or echoed back.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from host.errors import ConfigError
from tools.policy import parse_rule

__all__ = [
    "ClusterConfig",
    "HostConfig",
    "ServerConfig",
    "SessionDefaults",
    "AgentConfig",
    "ModelConfig",
    "RecordingConfig",
    "PluginsConfig",
    "ClaudeCodeConfig",
    "McpConfig",
    "TrustConfig",
    "AgentKind",
    "DEFAULT_KEY_VARIABLES",
    "load_config",
    "is_loopback",
    "default_data_dir",
]

AgentKind = Literal["openai", "openai-chat", "anthropic", "litellm", "replay"]
"""Which provider an ``[agents.<id>]`` table drives (``replay`` serves recorded cassettes)."""

DEFAULT_KEY_VARIABLES: dict[str, str | None] = {
    "openai": "OPENAI_API_KEY",
    "openai-chat": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "litellm": None,
    "replay": None,
}
"""The environment variable an agent kind reads its key from unless ``api_key_env`` says otherwise."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ServerConfig(_Section):
    host: str = "127.0.0.1"
    """Address to bind. Anything but loopback requires an explicit token."""
    port: int = Field(default=8765, ge=0, le=65535)
    """TCP port; 0 picks a free one."""
    token: str | None = None
    """Connection token; when unset, one is generated at start and printed with the URL."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Browser origins allowed to open the WebSocket (exact match, e.g. "http://localhost:3000")."""
    max_frame_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    """Largest inbound WebSocket message; larger ones close the connection with 1009. A connection
    holds at most one inbound message at a time (reading pauses until it is handled), so inbound
    memory is bounded by about max_frame_bytes x max_connections."""
    max_connections: int = Field(default=256, ge=1)
    """WebSocket connections the host serves at once; one more is closed with 1013 and a reason."""
    max_connections_per_token: int = Field(default=64, ge=1)
    """Connections one token may hold at once (a runaway script cannot take every slot)."""
    max_queued_bytes: int = Field(default=128 * 1024 * 1024, ge=1024 * 1024)
    """Bytes the host holds for all clients together that have not read what it sent them. Past
    it, the clients holding the most are disconnected first (close code 1013, with a reason), until
    the rest fit; a client that keeps up holds at most one event-loop tick's frames, so it goes only
    after every client that holds more."""
    max_queued_bytes_per_client: int = Field(default=64 * 1024 * 1024, ge=64 * 1024)
    """Bytes one client may have waiting unread before it is disconnected (1013, with a reason).
    It can reconnect and be replayed what it missed."""
    max_resource_watches: int = Field(default=256, ge=1)
    """Resource watches (createResourceWatch) open at once; one more is refused saying so. Each holds
    an OS file watcher, which the OS may run out of first (Linux: fs.inotify.max_user_instances)."""
    data_dir: str | None = None
    """Where the journal lives; default: $XDG_DATA_HOME/agent-host."""
    replay_buffer: int = Field(default=10_000, ge=0)
    """How many recent actions a reconnecting client can be replayed."""
    replay_buffer_chars: int = Field(default=4_000_000, ge=1)
    """At most this many characters of those actions (a terminal printing megabytes must not make
    the replay buffer, or the journal, hold them); the newest one is always kept."""
    snapshot_every: int = Field(default=5_000, ge=1)
    """Write a snapshot (of what changed) after this many journal rows (a run of text appends is one row)."""
    snapshot_every_chars: int = Field(default=8_000_000, ge=1)
    """...or after this many characters journaled, whichever comes first: what the journal holds
    beyond its states stays under this plus replay_buffer_chars."""


class SessionDefaults(_Section):
    default_directory: str | None = None
    """Working directory offered to clients (InitializeResult.defaultDirectory) and used by sessions
    created without one; default: the directory the host was started in."""
    allowed_directories: list[str] | None = None
    """Directories (and everything below them) a client may choose as a session's working
    directory. Unset: the user's home, the default directory and the system temporary directory."""
    preamble: bool = True
    """Tell provider-backed agents where they work: an <environment> block in the system prompt with
    the working directory, platform, shell, date, git branch and short status, and the instruction
    files loaded."""
    subagents: bool = True
    """Offer provider-backed agents the ``task`` tool: a job run in a sub-agent chat of the session,
    optionally by a custom agent from the session's plugins (sub-agents)."""
    max_subagents: int = Field(default=4, ge=1, le=64)
    """Sub-agents one session runs at once; a further ``task`` call waits until one finishes."""
    offline_agent: bool = True
    """Offer the built-in offline agent."""
    default_agent: str | None = None
    """The agent a session gets when createSession names none. Unset: the first agent whose
    provider key is set, else the replay agent (recorded, offline), else the first agent."""
    offline_delay: float = Field(default=0.01, ge=0)
    """Seconds between the offline agent's streamed words."""
    recent_turns: int = Field(default=50, ge=0)
    """Completed turns a chat keeps in its state, which is what an AHP 0.7.0/0.9.0 client gets on
    ``subscribe``; older ones stay on disk and are paged in with ``fetchTurns``, this many at a
    time. 0 keeps every turn in the state."""


class ModelConfig(_Section):
    id: str
    """The provider's model id, sent on every request (e.g. "gpt-5", "claude-sonnet-4-5")."""
    name: str | None = None
    """Display name; default: the id."""
    context_window: int | None = Field(default=None, ge=1)
    """Tokens the model can take in (SessionModelInfo.maxContextWindow)."""
    vision: bool = False
    """Whether images attached to messages are sent to this model."""
    reasoning: Literal["none", "effort", "thinking"] = "none"
    """Which knob clients get: "effort" (OpenAI reasoning effort), "thinking" (Anthropic extended
    thinking level), "none". Becomes the model's configSchema."""
    default_level: str | None = None
    """Default reasoning effort / thinking level offered in the configSchema."""
    cassette: str | None = None
    """Replay agents only: the cassette this model replays (relative to the config file): a session
    cassette written by ``serve --record`` (checked request by request), or an older vcrpy one."""


class AgentConfig(_Section):
    kind: AgentKind
    """openai (Responses API), openai-chat (Chat Completions, any compatible server), anthropic,
    litellm, or replay (recorded cassettes, offline)."""
    display_name: str | None = None
    """Name shown to users; default: the agent id."""
    description: str | None = None
    models: list[ModelConfig] = Field(default_factory=list)
    """The models offered; the first is the default for new sessions."""
    base_url: str | None = None
    """Endpoint override (Ollama, vLLM, a proxy...); LiteLLM calls it api_base."""
    api_key_env: str | None = None
    """Environment variable holding the key; default OPENAI_API_KEY / ANTHROPIC_API_KEY by kind."""
    api_key: str | None = Field(default=None, repr=False)
    """The key itself (prefer api_key_env: config files get copied around). Never logged."""
    system_prompt: str | None = None
    """Replaces the host's built-in system prompt (``host.runtime.agents.system_prompt``) for this agent;
    "" sends none. Instruction files, plugin context and the <environment> block still follow it."""
    system_prompt_file: str | None = None
    """Like system_prompt, read from this UTF-8 file (relative to the config file) when the config
    is loaded; set one of the two."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Output-token cap per model call; default: the provider's own."""
    retries: int = Field(default=3, ge=0, le=20)
    """How often a model call is retried after 429, 5xx, 529 or a dropped connection (only while
    nothing has been streamed for that call yet)."""
    retry_base_delay: float = Field(default=1.0, ge=0)
    """Seconds before the first retry; doubled each time, unless the provider says retry-after."""
    retry_max_delay: float = Field(default=60.0, ge=0)
    """Longest wait the host accepts before a retry; a longer retry-after fails the turn instead."""
    max_model_calls: int = Field(default=50, ge=1)
    """Model calls allowed in one turn (each tool round is one call): stops runaway tool loops."""
    stall_timeout: float = Field(default=90.0, ge=0)
    """Seconds the host waits for anything from the provider (the response, the next stream event
    or keep-alive) before the model call fails as stalled and is retried like any other failure
    (while nothing has streamed). 0 turns the limit off."""
    compact_at: float = Field(default=0.8, ge=0, le=1)
    """Share of the model's context_window a request may fill before older turns are summarised
    by the model (compaction); 0 turns automatic compaction off (/compact still works)."""
    keep_recent_turns: int = Field(default=2, ge=0)
    """Turns kept word for word when older ones are compacted automatically."""
    tool_output_limit: int = Field(default=40_000, ge=1_000)
    """Characters of one tool result sent to the model; the rest is stored and the model is told how
    to read it with read_file."""
    title: Literal["model", "first-words"] = "model"
    """How a session's title is made after its first turn: ask the model, or the message's first words."""
    strict: bool = True
    """Replay agents only: compare every request with the recorded one and end the turn with a diff
    when they differ; false serves the recorded answers whatever is sent (the built-in demo agent)."""


class RecordingConfig(_Section):
    enabled: bool = False
    """Write each session's model calls to a session cassette (secrets and machine paths replaced)."""
    directory: str = "cassettes/recorded"
    """Where cassettes go: one per session, <directory>/<agent>/<session id>.yaml (relative: to the cwd)."""
    redact: list[str] = Field(default_factory=list)
    """Regular expressions whose matches in what is sent (tool output included) are stored as
    <redacted>, besides the built-in ones (provider-style keys, NAME_KEY=value lines)."""

    @field_validator("redact")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"{pattern!r} is not a regular expression ({error}); write it as Python's re module reads it") from None
        return patterns


class PluginsConfig(_Section):
    directories: list[str] = Field(default_factory=list)
    """Folders holding Open Plugins (a plugin root, or a folder of plugin roots); loaded at start."""
    workspace: bool = True
    """Publish each session's workspace customization folders (.github/instructions|prompts|agents,
    AGENTS.md, CLAUDE.md...) and start the servers of its .mcp.json."""
    client_plugins: bool = True
    """Resolve plugins the active client publishes (file:// URIs readable on this machine)."""


class ClaudeCodeConfig(_Section):
    enabled: bool = True
    """Use the user's Claude Code set-up: the user, project and local settings files (enabledPlugins,
    extraKnownMarketplaces, hooks, permissions, env), its installed plugins and marketplaces, and the
    plugins installed with ``agent-host plugin install`` or ``/plugin install``."""
    config_dir: str | None = None
    """Claude Code's configuration folder; default: $CLAUDE_CONFIG_DIR, else ~/.claude."""


class TrustConfig(_Section):
    require: bool = True
    """Ask before running what a session's folder brings (its hooks, .mcp.json servers, plugins inside it,
    the !`commands` of its slash commands); false trusts every folder, as before workspace trust."""
    folders: list[str] = Field(default_factory=list)
    """Folders (each with everything below it) trusted without asking; clients cannot revoke these."""
    client_trust: Literal["follow", "folders", "ignore"] = "follow"
    """A client's own workspace trust (VS Code forwards its trusted folders in the root config's
    ``workspaceTrust``): "follow" trusts its folders, and every folder while its workspace trust is
    switched off; "folders" only the folders it lists; "ignore" none of it."""


class McpConfig(_Section):
    servers: dict[str, dict[str, Any]] | list[dict[str, Any]] = Field(default_factory=dict)
    """``[mcp.servers.<name>]`` tables or ``[[mcp.servers]]`` entries with a ``name``; each has
    ``command``/``args``/``env``/``cwd`` (stdio) or ``url``/``headers`` (http, sse), ``type``,
    ``timeout`` (ms) and ``disabled``. Every session starts them."""
    start: Literal["first-turn", "session"] = "first-turn"
    """When a session's MCP servers (config, .mcp.json, plugins) start: at its first turn, so sessions
    that are only listed or restored after a restart cost no processes, or as soon as it opens."""
    idle_stop: float = Field(default=900.0, ge=0)
    """Seconds after a session's last turn ended before its MCP servers are stopped (they start
    again with its next turn); 0 keeps them running for the session's life."""
    unwatched_stop: float = Field(default=30.0, ge=0)
    """Seconds after the last client of a session disconnected (no turn running) before its MCP
    servers are stopped, so a finished ``agent-host chat -p`` leaves nothing running; 0: only
    ``idle_stop`` applies. In a cluster the clients of every process count."""
    start_wait: float = Field(default=3.0, ge=0)
    """Seconds a turn waits, from their launch, for MCP servers that are still starting for the
    first time; one that is not up by then (or crashed, or hung earlier in this host) is not
    waited for: the turn goes on without its tools, the session's customizations show it as
    starting or restarting, and its tools join the next model request once it is up. 0: never wait."""
    call_timeout: float = Field(default=300.0, gt=0)
    """Seconds one MCP tool call may take before it is cancelled and the model gets a timeout
    error; a server's own ``timeout`` (milliseconds, in its declaration) overrides it."""


class ToolsConfig(_Section):
    enabled: bool | None = None
    """Give sessions the built-in tools, the active client's tools and the confirmation flow.
    Unset: on for the agents this config defines, off when the host is handed agent objects
    directly (embedding, tests), which then opt in with ``enabled = true``."""
    allow: list[str] = Field(default_factory=list)
    """Rules that run a call without asking, e.g. "read_file", "shell(git status:*)", "write_file(src/**)"."""
    ask: list[str] = Field(default_factory=list)
    """Rules that always ask, even when an allow rule or auto-approve would run the call."""
    deny: list[str] = Field(default_factory=list)
    """Rules that refuse a call outright (the model is told why); nothing overrides them."""
    auto_approve: bool = False
    """Default of the per-session ``autoApprove`` switch (sessions can change it)."""
    remembered_approvals: Literal["all", "project", "none"] = "all"
    """Default of the per-session ``useRememberedApprovals`` property: which "Always allow"
    choices apply: this project's and host-wide ones, this project's only, or none."""
    permission_mode: Literal["default", "accept-edits", "plan", "full-auto"] = "default"
    """Default of the per-session ``permissionMode`` (sessions can change it): ask as the rules say,
    accept file edits in the session's folders, plan with read-only tools, or run everything."""
    sandbox: Literal["auto", "always", "off"] = "auto"
    """The OS sandbox (bubblewrap) for the shell tool's commands: ``"auto"`` runs them in it when the
    session's permission mode is ``full-auto`` (and refuses them there when the platform has none);
    ``"always"`` in every mode (refusing them where there is none); ``"off"`` never."""
    sandbox_network: bool = False
    """Whether sandboxed commands reach the network (off: only loopback inside the sandbox)."""
    sandbox_environment: list[str] = Field(default_factory=list)
    """Names of the host's environment variables sandboxed commands receive besides PATH, HOME,
    LANG, LC_*, TERM and a few other harmless ones (a trailing ``*`` matches a prefix, e.g. "CARGO_*")."""
    sandbox_hidden: list[str] = Field(default_factory=list)
    """Paths sandboxed commands may not read besides the built-in list (~/.ssh, ~/.aws, ~/.gnupg,
    ~/.netrc, keyrings...) and the host's data directory (``~`` expanded)."""
    sandbox_unix_sockets: list[str] = Field(default_factory=list)
    """Unix sockets outside the session's folders that sandboxed commands may still connect to
    (e.g. "/run/user/1000/docker.sock"); every other one is out of their reach."""
    result_confirmation: list[str] = Field(default_factory=list)
    """Tool names (``*`` wildcards) whose results the user confirms before the model sees them."""
    extra_roots: list[str] = Field(default_factory=list)
    """Directories tools and resource* methods may touch besides the session's working directory."""
    shell_timeout: float = Field(default=120.0, ge=1, le=3600)
    """Seconds a shell command may run when the model does not say."""
    client_tool_grace: float = Field(default=30.0, ge=0)
    """Seconds to wait for a departed active client to come back before its running tool calls fail."""

    @field_validator("allow", "ask", "deny")
    @classmethod
    def _rules_parse(cls, rules: list[str]) -> list[str]:
        for rule in rules:
            try:
                parse_rule(rule)
            except ValueError as error:
                raise ValueError(str(error)) from None
        return rules


class ClusterConfig(_Section):
    """``[cluster]``: run this host as a process of a cluster sharing one ordered log on NATS
    JetStream (``host.cluster``; ``pip install 'agent-host[cluster]'``). Unset ``url``: the
    embedded SQLite journal, one process, as always."""

    url: str | None = None
    """The NATS server, ``nats://HOST:PORT`` (``--cluster``); every process given the same one
    shares one ``serverSeq`` and one set of sessions."""
    credentials: str | None = None
    """A NATS credentials file (``.creds``: the user's JWT and NKey seed) for a server that asks."""
    name: str | None = None
    """What this process is called in the cluster (who holds a session's lease). Default: this
    machine's name and the data directory's, so a restarted process takes its sessions back at once."""
    timeout: float = Field(default=10.0, gt=0)
    """Seconds to wait for NATS before the log counts as unavailable."""

    @field_validator("url")
    @classmethod
    def _nats_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("nats://", "tls://", "ws://", "wss://")):
            raise ValueError(f"{value!r} is not a NATS URL: write it as nats://HOST:PORT")
        return value


class HostConfig(_Section):
    server: ServerConfig = Field(default_factory=ServerConfig)
    sessions: SessionDefaults = Field(default_factory=SessionDefaults)
    agents: dict[str, AgentConfig] | None = None
    """The ``[agents.<id>]`` tables; absent: the built-in defaults (see config.example.toml)."""
    recording: RecordingConfig = Field(default_factory=RecordingConfig)
    tools: ToolsConfig = Field(default_factory=ToolsConfig)
    """Tool policy, sandbox roots and client-tool timing (``[tools]``)."""
    plugins: PluginsConfig = Field(default_factory=PluginsConfig)
    claude_code: ClaudeCodeConfig = Field(default_factory=ClaudeCodeConfig)
    """A Claude Code user's settings and plugins (``[claude_code]``)."""
    trust: TrustConfig = Field(default_factory=TrustConfig)
    """Workspace trust (``[trust]``, ``host.runtime.trust``)."""
    mcp: McpConfig = Field(default_factory=McpConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    """One host on many processes (``[cluster]``, ``--cluster``)."""
    environ: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)
    """Provider key variables read from the environment at load time (never logged or dumped)."""
    source: str | None = Field(default=None, exclude=True)
    """The file this was read from, for messages."""

    def data_path(self) -> Path:
        return Path(self.server.data_dir).expanduser() if self.server.data_dir else default_data_dir()


def default_data_dir() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "agent-host"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_ENV = {
    "AGENT_HOST_TOKEN": ("server", "token"),
    "AGENT_HOST_HOST": ("server", "host"),
    "AGENT_HOST_PORT": ("server", "port"),
    "AGENT_HOST_DATA_DIR": ("server", "data_dir"),
    "AGENT_HOST_CLUSTER_URL": ("cluster", "url"),
}


def load_config(path: str | Path | None = None, *, overrides: dict[str, dict[str, Any]] | None = None,
                environ: dict[str, str] | None = None) -> HostConfig:
    """Read, merge and validate; raises ``ConfigError`` with a message a person can act on."""
    raw: dict[str, Any] = {}
    source = str(path) if path is not None else "<defaults>"
    if path is not None:
        try:
            raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"config file {path} does not exist; copy config.example.toml to start one") from None
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(f"{path} is not valid TOML: {error}") from None
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot read config file {path}: {error}") from None
    env = os.environ if environ is None else environ
    for variable, (section, key) in _ENV.items():
        if env.get(variable):
            raw.setdefault(section, {})[key] = env[variable]
            source = f"{source} + ${variable}"
    for section, values in (overrides or {}).items():
        for key, value in values.items():
            if value is not None:
                raw.setdefault(section, {})[key] = value
    try:
        config = HostConfig.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(_describe(error, source, raw)) from None
    config.source = source
    config.environ = _key_variables(config, env)
    return config


def _key_variables(config: HostConfig, env: Any) -> dict[str, str]:
    """Only the variables some agent may read its key from, so nothing else is kept around."""
    names = {name for name in DEFAULT_KEY_VARIABLES.values() if name}
    for agent in (config.agents or {}).values():
        if agent.api_key_env:
            names.add(agent.api_key_env)
    return {name: env[name] for name in names if env.get(name)}


def _describe(error: ValidationError, source: str, raw: dict[str, Any]) -> str:
    lines = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"])
        if item["type"] == "extra_forbidden":
            lines.append(f"unknown key {loc!r} (check the spelling against config.example.toml)")
            continue
        value: Any = raw
        for part in item["loc"]:
            if isinstance(value, dict):
                value = value.get(part)
            elif isinstance(value, list) and isinstance(part, int) and part < len(value):
                value = value[part]
            else:
                value = None
        expected = {
            "int_parsing": "a whole number",
            "int_type": "a whole number",
            "bool_parsing": "true or false",
            "bool_type": "true or false",
            "string_type": "a string",
            "list_type": "a list",
            "greater_than_equal": f"at least {item.get('ctx', {}).get('ge')}",
            "less_than_equal": f"at most {item.get('ctx', {}).get('le')}",
            "float_parsing": "a number",
            "value_error": str(item.get("msg", "")).removeprefix("Value error, "),
            "model_type": "a table",
            "dict_type": "a table",
            "missing": "a value (this key is required)",
            "literal_error": "one of " + str(item.get("ctx", {}).get("expected", "")),
        }.get(item["type"], "a different value")
        shown = "<hidden>" if loc.endswith(("token", "api_key")) else repr(value)
        lines.append(f"{loc} = {shown} is not valid: expected {expected}")
    return f"invalid configuration ({source}): " + "; ".join(lines)
