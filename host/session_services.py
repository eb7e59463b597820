"""The session services of a host: what sessions use and the first ``initialize`` does not.

A host answers its first ``initialize`` with the store recovered and the root channel current
(agents, root config, active sessions); the services below act only on sessions, their chats,
terminals, changesets and resource watches, so ``agent-host serve`` builds them after it listens
(the start-up plan, ``host.startup``: this module is imported in a worker thread once the host
listens and built on the event loop when that import ends, or at once by whatever needs one
sooner). ``AgentHost`` reads each of them through a property that builds them all on first use,
and its start is in two parts: ``AgentHost.start`` (the store, the root channel) and
``AgentHost.start_sessions`` (what of the start needs these services); the connection holds every
request but the handshake until the second part has run (``AgentHost.started``).

:func:`build` makes them in the order ``AgentHost`` made them before they were deferred: the turn
environment's contributors are asked in the order they were added (customizations, the
environment preamble, the tools and their confirmation, sub-agents, terminals, background jobs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from host.config import HostConfig
from host.resources.changesets.service import ChangesetService
from host.resources.client_resources import ClientResources
from host.resources.files import ResourceService
from host.resources.watches import ResourceWatches
from host.runtime.agents.environment import TurnEnvironment
from host.runtime.agents.preamble import EnvironmentPreamble
from host.runtime.customizations.claude_code import ClaudeCode
from host.runtime.customizations.claude_config import ClaudeRootConfig
from host.runtime.customizations.contributor import CustomizationContributor
from host.runtime.customizations.service import CustomizationService
from host.runtime.inputs import InputRequests
from host.runtime.processes import BackgroundContributor, BackgroundProcesses
from host.runtime.subagents import SubagentContributor, SubagentSpec
from host.runtime.terminals import TerminalContributor, TerminalService
from host.runtime.tools.runtime import ToolsRuntime
from host.runtime.tools.settings import ToolSettings
from host.state.chat_summaries import ChatSummaries
from host.state.content import ContentStore
from host.state.store import Store

__all__ = ["Host", "SessionServices", "build"]


class Host(Protocol):
    """What of ``AgentHost`` the services are built on."""

    config: HostConfig
    store: Store
    environment: TurnEnvironment
    inputs: InputRequests
    client_resources: ClientResources
    claude: ClaudeCode | None
    claude_config: ClaudeRootConfig | None
    chat_summaries: ChatSummaries
    content: ContentStore
    tool_settings: ToolSettings | None
    private_data: Path | None
    resources: ResourceService
    background: BackgroundProcesses
    default_directory: Path
    clock: Callable[[], int]

    def instruction_files(self, session: str) -> list[str]: ...
    def allowed_roots(self) -> Sequence[Path]: ...
    def open_chat(self, session: str, state: dict[str, Any]) -> None: ...
    def subagent_specs(self, session: str) -> list[SubagentSpec]: ...


@dataclass(frozen=True, slots=True)
class SessionServices:
    customizations: CustomizationService
    """Plugins, workspace customizations, MCP servers and hooks of each session (issue 5)."""
    preamble: EnvironmentPreamble | None
    """The environment facts a turn starts with (``[sessions] preamble``), else None."""
    tools: ToolsRuntime | None
    """Built-in and client tools with their confirmation (issue 4), None when tools are off."""
    subagents: SubagentContributor | None
    """The sub-agent tool (``[sessions] subagents``, with tools), else None."""
    terminals: TerminalService
    """Terminal channels: createTerminal's shells and the shell tool's commands."""
    changesets: ChangesetService
    """What the sessions' tools changed on disk, to review, keep and undo."""
    watches: ResourceWatches
    """Resource watch channels."""


def build(host: Host) -> SessionServices:
    """The services of ``host``, wired to its store, turn environment and root config."""
    config, store, environment = host.config, host.store, host.environment
    customizations = CustomizationService(config, store, inputs=host.inputs, client_files=host.client_resources,
                                          claude=host.claude, session_of=host.chat_summaries.session_of)
    if host.claude_config is not None:
        customizations.claude_listeners.append(host.claude_config.publish)
    environment.contributors.append(CustomizationContributor(
        runtime_of=customizations.runtime, wait_started=customizations.wait_started,
        ask=host.inputs.ask, trust_for=customizations.trust_for,
    ))
    preamble: EnvironmentPreamble | None = None
    if config.sessions.preamble:
        preamble = EnvironmentPreamble(host.clock, host.instruction_files)
        environment.contributors.append(preamble)
    tools: ToolsRuntime | None = None
    subagents: SubagentContributor | None = None
    if host.tool_settings is not None:
        tools = ToolsRuntime(
            store, config.tools, host.content, host.inputs, settings=host.tool_settings,
            private_directory=host.private_data, readable_roots=host.allowed_roots,
        )
        tools.install(environment)
        tools.session_settings = customizations.permission_settings
        if config.sessions.subagents:
            subagents = SubagentContributor(store, host.open_chat, host.subagent_specs, limit=config.sessions.max_subagents)
            environment.contributors.append(subagents)
    terminals = TerminalService(
        store, resolve_directory=host.resources.resolve_uri, default_directory=host.default_directory, clock=host.clock,
        background=host.background,
    )
    if tools is not None:
        environment.contributors.append(TerminalContributor(terminals))
        environment.contributors.append(BackgroundContributor(host.background))
    changesets = ChangesetService(store, host.content, host.resources.resolve_uri, host.chat_summaries.session_of)
    watches = ResourceWatches(store, host.resources, limit=config.server.max_resource_watches)
    return SessionServices(customizations, preamble, tools, subagents, terminals, changesets, watches)
