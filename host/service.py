"""The host's AHP operations that are not tied to one connection.

``AgentHost`` owns the store, the journal, the agents and the turn runner. Connections
(``host.transport.connection``) call it to create, dispose, list and page sessions and to read content;
it keeps the root channel current (agents, active session count) and turns session changes into
``root/sessionSummaryChanged`` notifications.

What runs in sessions (customizations, tools, terminals, changesets, resource watches, sub-agents)
is built on first use or once ``agent-host serve`` listens (``host.session_services``, read through
the properties of the same names). ``start`` recovers the store and makes the root channel current;
``start_sessions`` (run by ``start`` itself unless ``sessions_later``) does the rest, and
``started`` waits for it.

Start-up recovers the store from the journal; any turn that was running when the host stopped is
ended with a ``session/error`` saying so, sessions stuck in ``creating`` are prepared again, every
other chat's pending messages start (a message queued as a turn ended, just before a ``kill -9``,
runs now rather than never), and stale active-client claims are released (no client is connected
yet).
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from ahp.protocol import builders
from ahp.state import annotations_uri, refresh_session_status, session_of_annotations
from ahp.state.channels import channel_kind
from ahp.state.clock import iso_timestamp, parse_timestamp
from host import startup
from host.config import HostConfig
from host.errors import ConfigError, ErrorCode, RpcError
from host.reload import ConfigChanges, config_changes, merged
from host.resources.client_resources import ClientResources
from host.resources.files import ResourceService
from host.resources.workdirs import WorkingDirectoryError, allowed_directories, check_working_directory, directory_of
from host.root_config import root_config_state
from host.runtime.agents import Agent, build_agents
from host.runtime.agents.environment import TurnEnvironment
from host.runtime.customizations.claude_code import ClaudeCode
from host.runtime.customizations.claude_config import ClaudeRootConfig
from host.runtime.inputs import InputRequests
from host.runtime.processes import BackgroundProcesses
from host.runtime.subagents import SUBAGENT_CHAT_PREFIX, SubagentSpec, adopt_child_sessions
from host.runtime.tools.published import publish_remembered
from host.runtime.tools.settings import ToolSettings
from host.runtime.turns import TurnRunner
from host.session_config import MODEL, WORKING_DIRECTORY, SessionConfigResolver
from host.state.chat_summaries import ChatSummaries, compact_chat_summary, summary_of_chat
from host.state.content import CONTENT_SCHEME, ContentStore
from host.state.journal import Journal
from host.state.journal_upgrade import upgrade_journal
from host.state.log import LogRecord, OrderedLog
from host.state.private_files import private_directory
from host.state.sessions import (
    DEFAULT_TITLE,
    forked_turns,
    internal_session_uri,
    new_chat_state,
    new_session_state,
    session_id,
)
from host.state.store import ROOT, Store
from host.state.transcripts import TranscriptStore
from plugins.claude_settings import claude_config_dir as claude_config_dir_of

if TYPE_CHECKING:
    from host.resources.changesets import ChangesetService
    from host.resources.watches import ResourceWatches
    from host.runtime.agents.preamble import EnvironmentPreamble
    from host.runtime.customizations import CustomizationService
    from host.runtime.subagents import SubagentContributor
    from host.runtime.terminals import TerminalService
    from host.runtime.tools import ToolsRuntime
    from host.session_services import SessionServices

__all__ = ["AgentHost", "INTERRUPTED_ERROR", "TAKEN_OVER_ERROR"]

logger = logging.getLogger(__name__)

AGENT_CAPABILITIES = {"multipleChats": {"fork": True}}
"""What every agent of this host offers beyond one chat per session (``AgentInfo.capabilities``):
more chats in a session (``createChat``) and forks of a chat from a turn (a ``fork`` source), as
VS Code's own agent host advertises them; clients must not use either unless it is advertised.
Not ``sideChat`` (a side chat here would not see the source turn) and not
``multipleWorkingDirectories`` (a session's tools work in its first directory)."""

FORK_TITLE_PREFIX = "Forked: "
FORKED_CHAT_TITLE = "Forked Chat"
"""A forked chat's title: the prefix and its source chat's title, or the second while the source
has none (VS Code shows it in the chat view's header)."""

INTERRUPTED_ERROR = {
    "errorType": "hostRestarted",
    "message": "The agent host stopped while this turn was running, so it did not finish. "
    "Send your message again to retry.",
}

TAKEN_OVER_ERROR = {
    "errorType": "hostRestarted",
    "message": "The agent host process running this session stopped, or lost its connection to the cluster, while "
    "this turn was running; a live process runs the session now. Resume the turn to continue it.",
}
"""A turn's end when its process died or lost the session's lease and a live process took the
session over (a cluster): the error part says ``resumable``, and ``chat/turnResume`` runs the
turn again on the new owner."""

WRITE_REFUSED_ERROR = {
    "errorType": "connectionLost",
    "message": "This agent host process lost its connection to the cluster's log while this turn was running, so "
    "what came after the answer so far could not be stored. Resume the turn to continue it.",
}
"""A turn's end when the cluster's log refused one of its writes while this process still ran
the session (a brief cut, a NATS server restarted): the turn stopped there, with no hole in its
answer, and ends with this resumable error once the log takes writes again
(``AgentHost._write_refused``)."""

INTERRUPTED_RETRY = 1.0
"""Seconds after which ending a turn stopped by a refused write is tried again when the log
refused that end too (it was not writable yet)."""

CUT_OFF_REASON = "this agent host process lost its cluster's log (NATS) and cannot write; reconnect to another process"
"""The close reason a cluster's process that lost NATS gives its clients (WebSocket code 1013)."""

SessionKey = tuple[int, str]
"""Where a session sits in ``page_sessions``' order: (-modifiedAt, URI)."""

_FETCH_LIMIT_MAX = 200


def epoch_ms() -> int:
    """Milliseconds since the epoch: the host's clock (``AgentHost.clock``, read once per dispatch).
    From ``time_ns`` by an integer division: some 400 instructions cheaper than ``int(time() * 1000)``."""
    return time.time_ns() // 1_000_000


_FIRST_MESSAGE = 200
"""Characters of a session's first message ``listSessions`` shows."""

def _cluster_log(config: HostConfig) -> OrderedLog:
    """The ordered log on NATS JetStream for ``[cluster] url`` (imported only then: the ``cluster``
    extra brings its packages)."""
    try:
        from host.cluster.process import open_cluster_log
    except ImportError as error:
        raise ConfigError(f"cluster.url is set but the cluster's packages are missing ({error.name}): "
                          "pip install 'agent-host[cluster]'") from None
    return open_cluster_log(config.cluster, config.data_path())


class AgentHost:
    def __init__(self, config: HostConfig, *, agents: Iterable[Agent] | None = None, in_memory: bool = False,
                 claude_config_dir: Path | None = None) -> None:
        self.config = config
        self.clock = epoch_ms
        agent_list = list(agents) if agents is not None else build_agents(config)
        self.agents: dict[str, Agent] = {agent.provider: agent for agent in agent_list}
        self._retired_agents: list[Agent] = []
        """Agents a config reload replaced (a turn may still run on one); closed when the host stops."""
        self._forwarded_resumes: set[asyncio.Future[Any]] = set()
        """Resumes told to the processes running the sessions (``resumed``), kept until answered."""
        if not in_memory:
            private_directory(config.data_path())  # every session's history, transcripts, tokens: the user's only
        log = _cluster_log(config) if config.cluster.url and not in_memory else None
        journal = None if in_memory or log is not None else Journal(config.data_path() / "journal.sqlite3")
        self._journal = journal
        # Content referenced from state (tool output, edit previews), readable with resourceRead.
        self.content = ContentStore(None if in_memory else config.data_path() / "content.sqlite3")
        # Provider-native turn transcripts live next to the journal, so memory survives restarts.
        self.transcripts = TranscriptStore(None if in_memory else config.data_path() / "transcripts.sqlite3")
        # What sessions add to every turn (tools, prompt, hooks, confirmation): see host.runtime.agents.environment.
        self.environment = TurnEnvironment()
        for agent in agent_list:
            self._bind(agent)
        self.store = Store(
            {"agents": [], "activeSessions": 0, "config": root_config_state()},
            clock=self.clock,
            journal=journal,
            replay_capacity=config.server.replay_buffer,
            snapshot_every=config.server.snapshot_every,
            # A cluster's log keeps no chat's older turns apart from its state (host.cluster.ordered_log).
            recent_turns=config.sessions.recent_turns if log is None else 0,
            replay_chars=config.server.replay_buffer_chars,
            snapshot_chars=config.server.snapshot_every_chars,
            log=log,
        )
        # A session's catalogue and status follow its chats, and which session a chat is in is
        # asked of it (a chat URI need not encode its session): the one place that says so.
        self.chat_summaries = ChatSummaries(self.store)
        self.runner = TurnRunner(self.store, self.agents.get, self.chat_summaries.session_of)
        # Plugins, workspace customization folders and MCP servers of each session (issue 5).
        # Questions to a session's user (ask_user, MCP elicitation): inputRequested → inputCompleted.
        self.inputs = InputRequests(self.store, self.chat_summaries.session_of)
        self.store.change_observers.append(self.inputs.observe)
        # Host→client resource* requests (a client's virtual:// plugins are read through them).
        self.client_resources = ClientResources()
        # A Claude Code user's settings, marketplaces and plugins (``[claude_code]``): where its
        # configuration folder is can be given (tests), else the config, else $CLAUDE_CONFIG_DIR or ~/.claude.
        self.claude: ClaudeCode | None = None
        if config.claude_code.enabled:
            folder = claude_config_dir or (Path(config.claude_code.config_dir).expanduser() if config.claude_code.config_dir
                                           else claude_config_dir_of(os.environ))
            self.claude = ClaudeCode(folder, config.data_path())
        # The user's plugins and marketplaces in the root config, listed and changed by any client
        # (a change reaches the sessions through the customization service).
        self.claude_config: ClaudeRootConfig | None = None
        if self.claude is not None:
            self.claude_config = ClaudeRootConfig(self.store, self.claude, lambda: self.customizations.claude_changed())
        self.store.change_observers.append(self._publish_summary_changes)
        self.store.change_observers.append(self.chat_summaries.observe)
        self._connected: dict[str, int] = {}
        self._takeovers: set[asyncio.Task[None]] = set()
        """What ``taken_over`` still asks the other processes (kept referenced until done)."""
        self._interrupted: dict[str, str] = {}
        """Chats whose running turn stopped here because the log refused one of its writes →
        that turn's id: each ends with a resumable error once the log takes writes again."""
        self._ending: asyncio.Task[None] | None = None
        """Ending the ``_interrupted`` turns (``_end_interrupted``), while it runs."""
        self._letting_go: set[asyncio.Task[None]] = set()
        """The sessions ``lost`` still ends the processes of (awaited, not cancelled, at ``stop``:
        no server process survives)."""
        self.cut_off: str | None = None
        """Why this process cannot write now (a cluster's process that lost NATS), else None: the
        transport closes its connections with it and refuses new ones until NATS is back."""
        self.cut_off_listeners: list[Callable[[str], None]] = []
        """Called with the reason when this process is cut off from its cluster's log."""
        self.client_versions: dict[str, str] = {}
        """The AHP version each client negotiated at its last ``initialize``, so that a
        ``reconnect`` on a new connection speaks it again (memory only: see host.transport.dialects)."""
        self.resync_from: dict[str, int] = {}
        """Clients closed because their version could not say a change (``ClientConnection.resync``)
        → the serverSeq of that change: a ``reconnect`` from before it is answered with snapshots."""
        self._turn_index: dict[str, tuple[tuple[Any, int], dict[Any, int]]] = {}
        """Per chat: the version of its turns (state's list, older count) and each turn id's
        position among all of them (0.2.0 ``fetchTurns`` ``before``)."""
        self.default_directory = Path(config.sessions.default_directory or os.getcwd()).resolve()
        # Built-in and client tools, the confirmation flow and policy (issue 4): host.runtime.tools.
        # Their remembered approvals are opened now: the root config lists them from the start.
        self.tool_settings: ToolSettings | None = None
        if config.tools.enabled if config.tools.enabled is not None else agents is None:
            self.tool_settings = ToolSettings(None if in_memory else config.data_path() / "tool_settings.sqlite3")
        self.private_data: Path | None = None if in_memory else config.data_path()
        """The host's own files, which no tool tracks as the user's changes (None in memory)."""
        self.resources = ResourceService(self.allowed_roots)
        # Processes that outlive their command (a shell tool call's background jobs, a terminal's
        # nohup'd ones): kept per session or terminal, ended with it or at stop; the host reaps them.
        self.background = BackgroundProcesses(record=None if in_memory else config.data_path() / "processes.json")
        # Customizations, tools, terminals, changesets and resource watches: built on first use,
        # or once the host listens (``host.session_services``).
        self._services: SessionServices | None = None
        self._sessions_started: asyncio.Future[None] | None = None
        self.sessions_started = False
        """Whether :meth:`start_sessions` has run (without error): :meth:`started` is done."""
        self.session_config = SessionConfigResolver(
            self.agents, self.default_provider,
            lambda: allowed_directories(config.sessions.allowed_directories, self.default_directory),
            self.default_directory,
            lambda: [(state.get("workingDirectories") or [None])[0] for _, state in self.store.channels("session")],
            config.tools.auto_approve if self.tool_settings is not None else None,
            config.tools.remembered_approvals,
            config.tools.permission_mode,
            self._project_permission_mode,
        )

    def _project_permission_mode(self, working_directory: str) -> str | None:
        """A trusted project's Claude Code ``defaultMode`` (its project and local settings), unless
        ``[tools] permission_mode`` chose one; None elsewhere (the user's, or the default, applies)."""
        if self.claude is None or self.config.tools.permission_mode != "default":
            return None
        folder = directory_of(working_directory)
        if folder is None or not self.customizations.trust.is_trusted(folder):
            return None
        mode = None
        for layer in self.claude.project_layers(folder):
            mode = layer.permissions.default_mode or mode
        return mode

    # -- the session services (host.session_services) ----------------------------------------

    def services(self) -> SessionServices:
        """The session services, built now if they are not yet (importing their modules, or waiting
        for the worker thread that imports them once the host listens)."""
        if self._services is None:
            self._services = startup.load("host.session_services").build(self)
        return self._services

    @property
    def services_built(self) -> SessionServices | None:
        """The session services if they are built, else None (then no session runs customizations
        and no resource watch exists yet: what would only tell them something can be skipped)."""
        return self._services

    @property
    def customizations(self) -> CustomizationService:
        return self.services().customizations

    @property
    def preamble(self) -> EnvironmentPreamble | None:
        return self.services().preamble

    @property
    def tools(self) -> ToolsRuntime | None:
        return self.services().tools

    @property
    def subagents(self) -> SubagentContributor | None:
        return self.services().subagents

    @property
    def terminals(self) -> TerminalService:
        return self.services().terminals

    @property
    def changesets(self) -> ChangesetService:
        return self.services().changesets

    @property
    def watches(self) -> ResourceWatches:
        return self.services().watches

    # -- lifecycle -----------------------------------------------------------------------------

    def reload(self, edited: HostConfig) -> ConfigChanges:
        """Take on what of ``edited`` a running host can (``host.reload``): new agents (a running
        turn finishes on its old one, closed when the host stops), the ``[tools]`` permission
        rules, ``[sessions] default_agent``. Returns what changed: taken on, and waiting for the
        next start. Raises ``ConfigError`` (from building an agent) with nothing changed."""
        changes = config_changes(self.config, edited)
        config = merged(self.config, edited)
        if "agents" in changes.applied:
            agents = build_agents(config)
            for agent in agents:
                self._bind(agent)
            self._retired_agents.extend(self.agents.values())
            self.agents.clear()  # the same mapping the runner and the session config resolver read
            self.agents.update({agent.provider: agent for agent in agents})
            self._publish_agents()
        if self.tools is not None:
            self.tools.set_rules(allow=config.tools.allow, ask=config.tools.ask, deny=config.tools.deny)
        self.config = config
        return changes

    def _bind(self, agent: Agent) -> None:
        """Hand an agent the host's transcripts and turn environment, where it takes them."""
        bind = getattr(agent, "bind_transcripts", None)
        if bind is not None:
            bind(self.transcripts)
        bind_environment = getattr(agent, "bind_environment", None)
        if bind_environment is not None:
            bind_environment(self.environment)

    def _publish_agents(self) -> None:
        """``root/agentsChanged`` when the agents (or the host plugins they carry) changed."""
        # (no services yet: the host has no plugins of its own, AgentHost.start)
        plugins = self._services.customizations.agent_customizations() if self._services is not None else []
        agents = [{**agent.info(), "capabilities": AGENT_CAPABILITIES, **({"customizations": plugins} if plugins else {})}
                  for agent in self.agents.values()]
        root = self.store.state(ROOT) or {}
        if root.get("agents") != agents:
            self.store.dispatch(ROOT, builders.root_agents_changed(agents=agents))

    async def open(self) -> None:
        """Reach what the host's state lives on when it is a service (a cluster's NATS:
        ``LogUnavailable`` when it cannot be reached), before a port is served; ``start`` does
        it otherwise."""
        await self.store.open()

    async def start(self, *, sessions_later: bool = False) -> None:
        """Recover the store and make the root channel current; then, unless ``sessions_later``
        (``agent-host serve``, which calls :meth:`start_sessions` once it listens), start what
        runs in sessions. ``sessions_later`` is not taken when the host's own plugins must be
        parsed first (``[plugins] directories``: the agents list them) or in a cluster."""
        loop = asyncio.get_running_loop()
        self._sessions_started = loop.create_future()
        later = sessions_later and not self.config.plugins.directories and not self.config.cluster.url
        if not later:
            self.services()
        self.background.start()
        if self._journal is not None:
            upgrade_journal(self._journal)  # an older build's journal (AHP 0.2.0 states), once
        await self.store.recover()
        if await self.store.follow():  # a cluster's log: what the other processes append, from now on
            await self.store.serve_forwarded()  # and the dispatches they forward to the sessions run here
            self.store.followed_observers.append(self._followed)
            serve_requests = getattr(self.store.log, "serve_requests", None)
            if serve_requests is not None:  # and the requests about them (FORWARDED_REQUESTS)
                await serve_requests(self.take_forwarded_request)
            serve_content = getattr(self.store.log, "serve_content", None)
            if serve_content is not None:  # and their questions for the content stored here
                await serve_content(self.content.lookup)
            await self.store.take_over_lapsed(self.taken_over)  # and the sessions of a process that died
            self.store.watch_log_connection(self._log_connection)  # and whether this one can write
            log = self.store.log
            watch_lost = getattr(log, "watch_lost", None)
            if watch_lost is not None:  # and the sessions this one loses (cut off, or its lease lapsed)
                watch_lost(self.lost)
            serve_presence = getattr(log, "serve_presence", None)
            if serve_presence is not None:  # and whether a client is connected here (``taken_over``)
                await serve_presence(self._connected.__contains__)
            self.store.rejection_observers.append(self._write_refused)  # a turn's write refused: no hole in its answer
            serve_watchers = getattr(log, "serve_watchers", None)
            if serve_watchers is not None:  # and whether a client here watches a session (its MCP servers' idle stop)
                await serve_watchers(self.store.has_subscribers)
            let_go = getattr(log, "let_go_unserved", None)
            if let_go is not None:  # and the sessions of others that no client here follows any more
                let_go(self.store.served)
        root = self.store.state(ROOT) or {}
        config = root_config_state(root.get("config"))
        if root.get("config") != config:  # a journal from before the root config, or another schema
            self.store.replace(ROOT, {**root, "config": config})
        if self.tool_settings is not None:
            publish_remembered(self.store, self.tool_settings)  # the "always allow" choices as they are on disk now
        self.inputs.drop_unanswerable()
        if self._services is not None:
            self.customizations.load()  # the host's plugins (the agents list them) and the Claude Code set-up
        elif self.claude is not None:
            self.claude.load()  # (no plugins of the host's own: later is the same)
        if self.claude is not None and self.claude.user.permissions.default_mode and self.config.tools.permission_mode == "default":
            # The user's Claude Code defaultMode, unless [tools] permission_mode says otherwise.
            self.session_config.permission_mode_default = self.claude.user.permissions.default_mode
        if self.claude_config is not None:
            self.claude_config.publish()
        self._publish_agents()
        self._publish_active_count()
        for uri, state in list(self.store.channels("chat")):
            turn = state.get("activeTurn")
            if turn is not None and not self._run_elsewhere(uri):
                started = parse_timestamp(turn.get("startedAt"))
                duration = max(0, self.clock() - started) if isinstance(started, int) else 0
                self.store.dispatch(uri, builders.chat_error(turn_id=turn["id"], duration=duration,
                                                             part={"kind": "error", "error": INTERRUPTED_ERROR}))
        for uri, state in list(self.store.channels("session")):
            for chat in self.session_chats(uri):
                self.chat_summaries.track(chat, uri)
                if not self._run_elsewhere(uri):
                    self.chat_summaries.sync(chat)  # (a catalogue an older build wrote lacks fields)
            if self._run_elsewhere(uri):
                continue
            for client in state.get("activeClients") or ():
                self.store.dispatch(uri, builders.session_active_client_removed(client_id=client.get("clientId")))
        if not later:
            self.start_sessions()

    def start_sessions(self) -> None:
        """The rest of the start, which needs the session services: recovered resource watches
        dropped, an older build's sub-agent sessions adopted, each recovered session prepared and
        its pending messages started, the terminals started. Once only; :meth:`started` is done
        then."""
        started = self._sessions_started
        if started is None or started.done():
            return
        try:
            self._start_sessions()
        except BaseException as error:
            started.set_exception(error)
            started.exception()  # (retrieved: each request that waits raises it again)
            raise
        self.sessions_started = True
        started.set_result(None)

    async def started(self) -> None:
        """Return once :meth:`start_sessions` has run (raise what it raised)."""
        if self._sessions_started is None:
            raise RuntimeError("the host was not started (AgentHost.start)")
        await asyncio.shield(self._sessions_started)

    def _start_sessions(self) -> None:
        self.watches.drop_recovered()
        # An older build's sub-agents were child sessions: they become their calls' sub-agent chats.
        adopt_child_sessions(self.store, self.open_chat, self.transcripts.copy, self.dispose_session, self.session_uri)
        for uri, state in list(self.store.channels("session")):
            if self._run_elsewhere(uri):
                continue  # its owner runs its servers and hooks; taken_over, should this process take it
            if state.get("lifecycle") == "creating":
                self.runner.prepare(uri)  # (its chats' pending messages start once it is ready)
            else:
                for chat in self.session_chats(uri):
                    # A message queued (or a steering message sent) just before the host was
                    # killed, with no turn running then: it starts now, as it would have then.
                    self.runner.start_pending(chat)
            self.customizations.open_session(uri, restored=True)
        self.terminals.start()

    def _run_elsewhere(self, channel: str) -> bool:
        """Whether another process of a cluster runs ``channel``'s session (its lease, or its
        last owner marker until this process takes it over: ``taken_over``). At start such a
        session is in the store (every process holds every channel) but is not this process's to
        prepare: its customizations opened here would start its MCP servers and hooks a second
        time, on this machine, once a client here subscribed, and every action they wrote would be
        refused by the log."""
        return self.store.owner_elsewhere(channel) is not None

    def _log_connection(self, connected: bool) -> None:
        """The cluster's log (NATS) was lost or is back. Lost: every append is refused (this
        process stops writing rather than diverge; its sessions are taken over by a live process
        once their leases lapse), and its clients are told by their connections being closed with
        the reason, to reconnect to a process that can write (with ``lastSeenServerSeq``: a
        replay); new connections are refused meanwhile."""
        if connected:
            if self.cut_off is not None:
                logger.warning("NATS is reachable again: this process writes again (sessions taken over meanwhile stay "
                               "with their new owners)")
            self.cut_off = None
            if self._interrupted:
                self._end_interrupted_soon()
            return
        if self.cut_off is not None:
            return
        self.cut_off = CUT_OFF_REASON
        logger.error("lost NATS: this process stops writing and closes its clients' connections")
        for listener in tuple(self.cut_off_listeners):
            try:
                listener(self.cut_off)
            except Exception:
                logger.exception("telling clients that this process is cut off failed")

    def lost(self, group: str) -> None:
        """This process stopped running ``group`` (a cluster: its lease was taken or lapsed
        unrenewed, cut off from NATS or held up): the turns running in a session's chats stop at
        once, their provider streams and tool calls cancelled, nothing more dispatched for them
        (what they would write could not be stored); a terminal's shell is ended. The process
        that takes the session over ends those turns with a resumable error (``taken_over``),
        which the clients of every process see; this process's own clients were told already
        when it was cut off (their connections closed, ``_log_connection``), else they get that
        error through the log. The processes this process runs for the session end too: its MCP
        servers and what its hooks left running (``CustomizationService.let_go``, quietly: the new
        owner starts and publishes its own) and the background jobs its shell commands left
        (``BackgroundProcesses.end``); should this process take the session back, it opens them
        again as a takeover does."""
        kind = self.store.kind(group)
        if kind == "terminal" and self._services is not None:  # its shell ends here, quietly
            self.terminals.lost(group)
        if kind != "session":
            return
        logger.warning("lost %s to another process (or its lease lapsed): its running turns, MCP servers and "
                       "background jobs stop here", group)
        self.runner.forget(group)
        for chat in self.session_chats(group):
            self._interrupted.pop(chat, None)  # (ended by the new owner, resumably)
        self.background.end(group)
        if self._services is not None and group in self.customizations.sessions:
            task = asyncio.get_running_loop().create_task(self.customizations.let_go(group))
            self._letting_go.add(task)
            task.add_done_callback(self._letting_go.discard)

    def _write_refused(self, channel: str, action: dict[str, Any], client: str) -> None:
        """The cluster's log refused a write of this process's own (not a client's) to a chat's
        running turn: a brief cut from NATS, a NATS server restarted, while the lease still
        holds. Were the turn to run on, what it wrote after the connection came back would be
        stored after a hole where the refused chunks were; so it stops here at once (``halt``:
        provider stream and tool calls cancelled, nothing more written), its answer ending with
        what the log holds, and ends with a resumable error (``WRITE_REFUSED_ERROR``) once the
        log takes writes again; ``chat/turnResume`` runs it again. Should this process lose the
        session meanwhile, the new owner ends it so instead (``lost``, ``taken_over``)."""
        if client or self.store.kind(channel) != "chat":
            return
        turn = (self.store.state(channel) or {}).get("activeTurn")
        turn_id = action.get("turnId")
        if not isinstance(turn, dict) or turn.get("id") != turn_id or not isinstance(turn_id, str):
            return
        self.runner.halt(channel)
        if self._interrupted.get(channel) != turn_id:
            logger.warning("the cluster's log refused a write of turn %s of %s: the turn stops here, and ends resumably "
                           "once the log takes writes again", turn_id, channel)
        self._interrupted[channel] = turn_id
        self._end_interrupted_soon()

    def _end_interrupted_soon(self) -> None:
        if self._ending is None or self._ending.done():
            self._ending = asyncio.get_running_loop().create_task(self._end_interrupted())

    async def _end_interrupted(self) -> None:
        """End each turn stopped by a refused write with the resumable error, while this process
        can write (cut off: again once NATS is back, ``_log_connection``); an end the log refuses
        too puts its turn back (``_write_refused``) and is tried again ``INTERRUPTED_RETRY``
        seconds later."""
        while self._interrupted and self.cut_off is None:
            ending, self._interrupted = self._interrupted, {}
            for chat, turn_id in ending.items():
                turn = (self.store.state(chat) or {}).get("activeTurn")
                if not isinstance(turn, dict) or turn.get("id") != turn_id or self._run_elsewhere(chat):
                    continue  # ended meanwhile (a client cancelled it), or the session runs elsewhere now
                started = parse_timestamp(turn.get("startedAt"))
                duration = max(0, self.clock() - started) if isinstance(started, int) else 0
                self.store.dispatch(chat, builders.chat_error(turn_id=turn_id, duration=duration, part={
                    "kind": "error", "error": WRITE_REFUSED_ERROR, "resumable": True}))
            await asyncio.sleep(INTERRUPTED_RETRY)

    def taken_over(self, group: str) -> None:
        """This process took over ``group`` from a process whose lease lapsed (a cluster: killed,
        or cut off from NATS), or took back one it lost, and holds everything logged on it. For
        a session: a turn that was running there ends with a resumable error
        (``chat/turnResume`` runs it again here), its chats' queued messages run here, its
        summaries and customizations are kept here from now on, as at start-up for a recovered
        session; and its active clients that no live process has connected are dropped
        (``_drop_absent_clients``): their tools are offered no more. A terminal, whose shell
        died with the process that ran it, is finished and marked exited, saying so. A session a client of
        this process watches is resumed at once (its servers, hooks and trust question come back now)."""
        kind = self.store.kind(group)
        if kind == "terminal":  # its shell died with the process that ran it: finished, saying so
            self.terminals.taken_over(group)
        if kind != "session":
            return  # the host-wide group (the root channel...): nothing runs in it
        chats = self.session_chats(group)
        for chat in chats:
            self.chat_summaries.track(chat, group)
            turn = (self.store.state(chat) or {}).get("activeTurn")
            if turn is not None:
                started = parse_timestamp(turn.get("startedAt"))
                duration = max(0, self.clock() - started) if isinstance(started, int) else 0
                self.store.dispatch(chat, builders.chat_error(turn_id=turn["id"], duration=duration, part={
                    "kind": "error", "error": TAKEN_OVER_ERROR, "resumable": True}))
        if (self.store.state(group) or {}).get("lifecycle") == "creating":
            self.runner.prepare(group)
        else:
            for chat in chats:
                self.runner.start_pending(chat)
        if group not in self.customizations.sessions:  # (a session this process lost and takes back keeps its own)
            self.customizations.open_session(group, restored=True)
            if self.store.has_subscribers(group):  # watched through this process: resumed now, not at its next turn
                self.customizations.resumed(group)
        present = getattr(self.store.log, "present", None)
        if present is not None:
            task = asyncio.get_running_loop().create_task(self._drop_absent_clients(group, present))
            self._takeovers.add(task)
            task.add_done_callback(self._takeovers.discard)

    async def _drop_absent_clients(self, session: str, present: Callable[[str], Awaitable[bool]]) -> None:
        """Give up the active-client role of each client of ``session`` that no live process
        has connected: a client of the dead owner that did not come back, and one that left
        another process while the owner was dead (that process's ``activeClientRemoved`` had no
        one to take it). A client connected anywhere keeps its role."""
        def active() -> list[str]:
            return [client["clientId"] for client in (self.store.state(session) or {}).get("activeClients") or ()
                    if isinstance(client, dict) and isinstance(client.get("clientId"), str)]

        asked = [client for client in active() if client not in self._connected]
        if not asked:
            return
        answers = await asyncio.gather(*(present(client) for client in asked), return_exceptions=True)
        for client, answer in zip(asked, answers):
            if answer is False and client not in self._connected and client in active():
                logger.info("%s is connected to no live process: it is no longer an active client of %s", client, session)
                self.store.dispatch_where_run(session, builders.session_active_client_removed(client_id=client))

    async def stop(self) -> None:
        services = self._services  # (none to stop when no session ever needed them)
        for task in list(self._takeovers):
            task.cancel()
        if self._ending is not None:
            self._ending.cancel()
        await asyncio.gather(*self._letting_go, return_exceptions=True)
        await self.runner.close()
        if services is not None:
            await services.terminals.stop()
        await self.background.stop()
        if services is not None:
            await services.watches.close()
            await services.customizations.stop()
        if self.claude_config is not None:
            await self.claude_config.close()
        for agent in [*self.agents.values(), *self._retired_agents]:
            close = getattr(agent, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception:  # one agent failing to close must not keep the others open
                    logger.exception("closing agent %s failed", agent.provider)
        await self.store.close()
        self.transcripts.close()
        if services is not None and services.tools is not None:
            services.tools.close()  # (and the settings with it)
        elif self.tool_settings is not None:
            self.tool_settings.close()

    # -- sessions ------------------------------------------------------------------------------

    def create_session(self, params: dict[str, Any], client_id: str) -> str:
        """Create a session channel (``<provider>:/<id>``) and its default chat; the internal URI.
        ``channel`` may be a 0.2.0 name (``ahp-session:/<id>``) or the internal one; an ``<id>``
        is unique across providers."""
        provider = params.get("provider")
        if provider is None:
            provider = self.default_provider()
        if provider not in self.agents:
            known = ", ".join(sorted(self.agents)) or "none"
            raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, f"No agent {provider!r} on this host (available: {known}).")
        requested = params.get("channel")
        uri = internal_session_uri(provider, requested) if isinstance(requested, str) else None
        if uri is None:
            raise RpcError(ErrorCode.INVALID_PARAMS, "channel must be a session URI: ahp-session:/ or <provider>:/ followed by a UUID, "
                           "or an id of at most 128 letters, digits, '.', '_' and '-' (e.g. ahp-session:/<uuid>).")
        if uri in self.store or self.session_uri(uri) is not None:
            raise RpcError(ErrorCode.SESSION_ALREADY_EXISTS, f"A session already exists at {requested}; pick a new URI.")
        model = params.get("model")
        if isinstance(model, str):
            model = {"id": model}  # older docs send a bare string
        turns: list[dict[str, Any]] = []
        fork = params.get("fork")
        source_session: dict[str, Any] | None = None
        if fork is not None:
            source_uri = self.session_uri(fork.get("session"))
            source_session = self.store.state(source_uri) if source_uri is not None else None
            default_chat = source_session.get("defaultChat") if source_session else None
            source_chat = self.store.state(default_chat) if isinstance(default_chat, str) else None
            if source_uri is None or not isinstance(default_chat, str) or source_chat is None:
                raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"Cannot fork: no session {fork.get('session')}.")
            copied = forked_turns({"turns": self.store.turns(default_chat)}, fork.get("turnId"))
            if copied is None:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"Cannot fork: {fork.get('session')} has no completed turn {fork.get('turnId')}.")
            turns = copied
            model = model or _selection(source_chat, "model")
            self.transcripts.copy(source_uri, uri, [turn["id"] for turn in copied])
        requested_config = params.get("config") or {}
        directories = params.get("workingDirectories")
        working_directory = params.get("workingDirectory") or (directories[0] if isinstance(directories, list) and directories else None) \
            or requested_config.get(WORKING_DIRECTORY)
        if working_directory is None and source_session is not None:
            working_directory = (source_session.get("workingDirectories") or [None])[0]
        if working_directory is not None:
            try:
                working_directory = check_working_directory(
                    working_directory, allowed_directories(self.config.sessions.allowed_directories, self.default_directory)
                )
            except WorkingDirectoryError as error:
                raise RpcError(ErrorCode.INVALID_PARAMS, str(error)) from None
        active_client = params.get("activeClient")
        if active_client is not None and active_client.get("clientId") != client_id:
            raise RpcError(ErrorCode.INVALID_PARAMS, "activeClient.clientId must be your own clientId.")
        agent = self.agents[provider]
        working_directory = working_directory or self.default_directory.as_uri()
        # The config from resolveSessionConfig: checked again (it may be stale or hand-written), for
        # the working directory the session gets (its project's settings may set the permission mode).
        resolved_config = self.session_config.resolve({"provider": provider, "config": requested_config,
                                                       "workingDirectory": working_directory})
        if model is None and fork is None and MODEL in requested_config:
            model = self.session_config.model_selection(resolved_config["values"], resolved_config["schema"]["properties"])
        model = model or _default_model(agent)
        resolved_config["values"][WORKING_DIRECTORY] = working_directory
        if isinstance(model, dict) and MODEL in resolved_config["values"]:
            resolved_config["values"][MODEL] = model["id"]  # params.model or a fork's model wins
        now = self.clock()
        state = new_session_state(uri, provider=provider, working_directory=working_directory, config=resolved_config)
        state["_meta"] = {"createdAt": iso_timestamp(now)}
        requested_meta = params.get("_meta")
        if isinstance(requested_meta, dict) and requested_meta.get("oneShot") is True:
            state["_meta"]["oneShot"] = True  # a script's run (``agent-host -p``): listed only on request
        if self.config.cluster.url:  # its folder, tools and terminals are on this machine's disk
            state["_meta"]["machine"] = socket.gethostname()
        draft: dict[str, Any] | None = None
        if model is not None or params.get("agent") is not None:
            draft = {"text": "", "origin": {"kind": "user"}}
            if model is not None:
                draft["model"] = model
            if params.get("agent") is not None:
                draft["agent"] = params["agent"]
        chat = new_chat_state(state["defaultChat"], now=now, turns=turns, draft=draft)
        state["chats"] = [summary_of_chat(chat["resource"], chat)]
        self.chat_summaries.track(chat["resource"], uri)
        self.store.create(uri, "session", state)
        self.store.create(chat["resource"], "chat", chat)
        self.store.notify(ROOT, "root/sessionAdded", {"channel": ROOT, "summary": self.session_summary(uri)})
        self._publish_active_count()
        if active_client is not None:
            self.store.dispatch(uri, builders.session_active_client_set(active_client=active_client))
        self.customizations.open_session(uri)
        self.runner.prepare(uri)
        return uri

    def create_chat(self, params: dict[str, Any], client_id: str) -> str:
        """``createChat``: a new chat channel in a session's catalogue (a fork copies a source
        chat's turns up to and including ``source.turnId``); an ``initialMessage`` starts its
        first turn."""
        session = self.session_uri(params.get("channel"))
        if session is None:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"No session {params.get('channel')}.")
        chat = params.get("chat")
        if not isinstance(chat, str) or not chat.startswith("ahp-chat:"):
            raise RpcError(ErrorCode.INVALID_PARAMS, "chat must be an ahp-chat: URI.")
        if chat.startswith(SUBAGENT_CHAT_PREFIX):
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{SUBAGENT_CHAT_PREFIX}… names the chats sub-agents work in, which "
                           "the host opens itself; pick another chat URI.")
        if chat in self.store:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"A chat already exists at {chat}; pick a new URI.")
        turns: list[dict[str, Any]] = []
        source = params.get("source")
        draft: dict[str, Any] | None = None
        title = DEFAULT_TITLE
        if isinstance(source, dict):
            source_chat = source.get("chat")
            if source_chat not in self.session_chats(session):
                raise RpcError(ErrorCode.INVALID_PARAMS, f"The source chat {source_chat} is not a chat of {params.get('channel')}.")
            copied = forked_turns({"turns": self.store.turns(source_chat)}, source.get("turnId"))
            if copied is None:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"{source_chat} has no completed turn {source.get('turnId')}.")
            if source.get("kind") == "fork":
                turns = copied
                title = self._fork_title(session, source_chat)
            model = _selection(self.store.state(source_chat) or {}, "model")
            if model is not None:
                draft = {"text": "", "origin": {"kind": "user"}, "model": model}
        self.open_chat(session, new_chat_state(chat, now=self.clock(), title=title, turns=turns, draft=draft))
        message = params.get("initialMessage")
        if isinstance(message, dict):  # the host names the first turn
            self.store.dispatch(chat, builders.chat_turn_started(
                turn_id=str(uuid.uuid4()), started_at=iso_timestamp(self.clock()) or "1970-01-01T00:00:00.000Z", message=message))
        return chat

    def _fork_title(self, session: str, source_chat: str) -> str:
        """A fork's title, as VS Code's own agent host names one: ``Forked: `` and the source chat's
        title as its session's catalogue lists it (the default chat's is the session's), or
        ``Forked Chat`` while that has none."""
        state = self.store.state(session) or {}
        entry = next((chat for chat in state.get("chats") or () if isinstance(chat, dict) and chat.get("resource") == source_chat), {})
        title = entry.get("title") if entry.get("title") not in (None, "", DEFAULT_TITLE) else state.get("title")
        if not isinstance(title, str) or title in ("", DEFAULT_TITLE):
            return FORKED_CHAT_TITLE
        return title if title.startswith(FORK_TITLE_PREFIX) else FORK_TITLE_PREFIX + title

    def open_chat(self, session: str, state: dict[str, Any]) -> None:
        """Add the chat ``state`` (its ``resource`` a new ``ahp-chat:`` URI) to ``session``'s
        catalogue: the channel, then ``session/chatAdded`` with its summary."""
        chat = state["resource"]
        self.chat_summaries.track(chat, session)
        self.store.create(chat, "chat", state)
        self.store.dispatch(session, builders.session_chat_added(summary=summary_of_chat(chat, state)))

    def dispose_chat(self, chat: Any) -> None:
        """``disposeChat``: the chat leaves its session's catalogue and its channel goes; a
        session's default chat goes only with the session."""
        session = self.chat_summaries.session_of(chat) if isinstance(chat, str) else None
        if session is None or self.store.kind(chat) != "chat":
            raise RpcError(ErrorCode.NOT_FOUND, f"No chat {chat}.")
        if (self.store.state(session) or {}).get("defaultChat") == chat:
            raise RpcError(ErrorCode.INVALID_PARAMS, f"{chat} is the session's default chat; dispose the session instead.")
        turn = (self.store.state(chat) or {}).get("activeTurn")
        if isinstance(turn, dict):
            self.store.dispatch(chat, builders.chat_turn_cancelled(turn_id=turn["id"], duration=0))
        self.store.dispatch(session, builders.session_chat_removed(chat=chat))
        self.store.remove(chat)
        self.chat_summaries.forget(chat)
        self._turn_index.pop(chat, None)

    def session_uri(self, name: Any) -> str | None:
        """The internal URI of a session named by its internal or its 0.2.0 URI; None if none.

        Asked for every action a 0.2.0 client dispatches: a session's internal URI is its agent's
        name and its id (``create_session``), so it is looked up under each configured agent, and
        only a session of none of them (its agent since removed from the config, or another
        process's) is searched for among every channel, which costs in proportion to the sessions
        held (``benchmarks/README.md``, "The ceiling of ``capacity.py --workers``")."""
        if self.store.kind(name) == "session":
            return name
        ident = session_id(name)
        if ident is None:
            return None
        for provider in self.agents:
            uri = f"{provider}:/{ident}"
            if self.store.kind(uri) == "session":
                return uri
        suffix = f":/{ident}"
        return next((uri for uri, _ in self.store.channels("session") if uri.endswith(suffix) and session_id(uri) == ident), None)

    def session_chats(self, uri: str) -> list[str]:
        """The chat channels of a session (its catalogue)."""
        state = self.store.state(uri) or {}
        return [chat["resource"] for chat in state.get("chats") or () if isinstance(chat, dict) and isinstance(chat.get("resource"), str)]

    def session_summary(self, uri: str) -> dict[str, Any]:
        """The 0.9.0 ``SessionSummary`` of a session (its default chat gives ``modifiedAt``)."""
        state = self.store.state(uri) or {}
        default_chat = state.get("defaultChat")
        chat = (self.store.state(default_chat) if isinstance(default_chat, str) else None) or {}
        created = (state.get("_meta") or {}).get("createdAt")
        summary: dict[str, Any] = {"resource": uri}
        for key in ("provider", "origin"):
            if state.get(key) is not None:
                summary[key] = state[key]
        summary.update(_summary_fields(state))
        summary["createdAt"] = created or chat.get("modifiedAt")
        summary["modifiedAt"] = chat.get("modifiedAt") or created
        return summary

    def listing_meta(self, uri: str) -> dict[str, Any]:
        """What ``listSessions`` adds to a session's summary in ``_meta`` so a client can list
        sessions by project: ``firstMessage`` (the text of its first turn, cut at 200 characters)
        and ``oneShot`` (created by a script, ``agent-host -p``); in a cluster ``machine``, the
        machine whose disk its folder is on (docs/cluster.md); each only when it applies.
        (Sub-agents are chats of their session, never sessions of their own.)"""
        state = self.store.state(uri) or {}
        default_chat = state.get("defaultChat")
        chat = (self.store.state(default_chat) if isinstance(default_chat, str) else None) or {}
        meta: dict[str, Any] = {}
        first = next(iter(self.store.turns(default_chat, 0, 1) if isinstance(default_chat, str) else ()), None) or chat.get("activeTurn")
        text = ((first or {}).get("message") or {}).get("text") if isinstance(first, dict) else None
        if isinstance(text, str) and text.strip():
            meta["firstMessage"] = text if len(text) <= _FIRST_MESSAGE else text[:_FIRST_MESSAGE - 1] + "…"
        if (state.get("_meta") or {}).get("oneShot"):
            meta["oneShot"] = True
        machine = (state.get("_meta") or {}).get("machine")
        if isinstance(machine, str):
            meta["machine"] = machine
        return meta

    def default_provider(self) -> str:
        """The agent for a session created without one (``sessions.default_agent``)."""
        if not self.agents:
            raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, "This host has no agents configured.")
        chosen = self.config.sessions.default_agent
        if chosen is not None:
            if chosen not in self.agents:
                known = ", ".join(sorted(self.agents))
                raise RpcError(ErrorCode.PROVIDER_NOT_FOUND, f"sessions.default_agent names {chosen!r}, which is not configured (available: {known}).")
            return chosen
        usable = [name for name, agent in self.agents.items() if getattr(agent, "unavailable", None) is None]
        real = [name for name in usable if name not in ("replay", "offline")]
        for candidates in (real, [n for n in usable if n == "replay"], usable):
            if candidates:
                return candidates[0]
        return next(iter(self.agents))

    def dispose_session(self, name: Any) -> None:
        uri = self.session_uri(name)
        if uri is None:
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"No session {name}.")
        if self.subagents is not None:
            self.subagents.session_disposed(uri)
        self.runner.forget(uri)
        if self.preamble is not None:
            self.preamble.forget(uri)
        self.customizations.session_disposed(uri)
        self.inputs.session_gone(uri)  # whoever waits on its questions gets "cancel"
        self.terminals.session_disposed(uri)
        self.background.end(uri)  # the background jobs its shell commands left running
        self.changesets.session_disposed(uri)
        if self.tools is not None:
            self.tools.session_disposed(uri)  # its "allow in this session" approvals go too
        for chat in self.session_chats(uri):
            self.store.remove(chat)
            self.chat_summaries.forget(chat)
            self._turn_index.pop(chat, None)
        if annotations_uri(uri) in self.store:
            self.store.remove(annotations_uri(uri))
        self.store.remove(uri)
        self.transcripts.forget(uri)
        self.store.notify(ROOT, "root/sessionRemoved", {"channel": ROOT, "session": uri})
        self._publish_active_count()

    def materialize_annotations(self, channel: Any) -> bool:
        """Create a session's annotations channel (``<session>/annotations``, empty) on its first
        subscription; True if made. It goes with its session."""
        session = session_of_annotations(channel)
        if session is None or self.store.kind(session) != "session" or channel in self.store:
            return False
        self.store.create(channel, "annotations", {"annotations": []})
        return True

    def list_sessions(self) -> list[dict[str, Any]]:
        summaries = [self.session_summary(uri) for uri, _ in self.store.channels("session")]
        summaries.sort(key=lambda summary: _epoch(summary.get("modifiedAt")), reverse=True)
        return summaries

    def page_sessions(self, limit: int, after: SessionKey | None = None) -> tuple[list[dict[str, Any]], SessionKey | None]:
        """One page of session summaries, most recently modified first, for ``listSessions`` with
        ``limit``/``cursor``. Ordered by (modifiedAt descending, URI), a total order, so pages never
        overlap: ``after`` is the key of the last summary of the previous page. Returns the page
        and the key to continue after, or None when it is the last page."""
        summaries = [self.session_summary(uri) for uri, _ in self.store.channels("session")]
        keyed = sorted((((-_epoch(s.get("modifiedAt")), str(s.get("resource"))), s) for s in summaries),
                       key=lambda item: item[0])
        start = 0
        if after is not None:
            start = next((index for index, (key, _) in enumerate(keyed) if key > after), len(keyed))
        page = keyed[start:start + limit]
        more = start + limit < len(keyed)
        return [summary for _, summary in page], (page[-1][0] if more and page else None)

    def fetch_turns(self, name: Any, before: Any, limit: Any) -> dict[str, Any]:
        """A page of a chat's turns (a session names its default chat), newest last."""
        uri = name if self.store.kind(name) == "chat" else None
        if uri is None:
            session = self.session_uri(name)
            uri = (self.store.state(session) or {}).get("defaultChat") if session is not None else None
        if uri is None or self.store.kind(uri) != "chat":
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"No session {name}.")
        # Counted over every turn: the chat's older ones (not in its state) are read back from the
        # journal by the store, only those of the page.
        end = self.store.older_turn_count(uri) + len((self.store.state(uri) or {}).get("turns") or ())
        if before is not None:
            index = self._turn_positions(uri).get(before)
            if index is None:
                raise RpcError(ErrorCode.INVALID_PARAMS, f"Session {name} has no turn {before}.")
            end = index
        count = _FETCH_LIMIT_MAX if limit is None else max(0, min(int(limit), _FETCH_LIMIT_MAX))
        start = max(0, end - count)
        return {"turns": self.store.turns(uri, start, end), "hasMore": start > 0}

    def _turn_positions(self, uri: str) -> dict[Any, int]:
        """Turn id → index among every turn of the chat (``Store.turn_ids``), built once per version of the
        chat's turns (states are never mutated, so the same turns list and as many older turns
        mean the same turns): paging a long session with ``before`` costs O(1) per page."""
        turns = (self.store.state(uri) or {}).get("turns")
        version = (turns, self.store.older_turn_count(uri))
        cached = self._turn_index.get(uri)
        if cached is None or cached[0][0] is not version[0] or cached[0][1] != version[1]:
            positions: dict[Any, int] = {}
            for index, turn_id in enumerate(self.store.turn_ids(uri)):
                positions.setdefault(turn_id, index)  # the first turn with an id, as a scan finds it
            cached = (version, positions)
            self._turn_index[uri] = cached
        return cached[1]

    def completions(self, uri: Any, text: str, offset: Any) -> dict[str, Any]:
        """``completions`` for a user message: ``/`` skills, commands, prompts; ``@`` files."""
        if self.store.kind(uri) != "session":
            raise RpcError(ErrorCode.SESSION_NOT_FOUND, f"No session {uri}.")
        return {"items": self.customizations.completions(uri, text, int(offset))}

    # -- content -------------------------------------------------------------------------------

    async def read_resource(self, uri: str, encoding: str | None) -> dict[str, Any]:
        """``resourceRead``: stored content, or a regular file inside the roots (read off the event
        loop; a FIFO, socket or device is refused at once, see ``ResourceService``)."""
        if uri.startswith(CONTENT_SCHEME):
            found = self.content.lookup(uri)
            find_elsewhere = getattr(self.store.log, "find_content", None)
            if found is None and find_elsewhere is not None:  # a cluster: stored by the process that ran the tool
                found = await find_elsewhere(uri)
            if found is None:
                raise RpcError(ErrorCode.NOT_FOUND, f"{uri} is not in this host's content store.")
            return _encoded(found[0], encoding, found[1])
        parsed = urlparse(uri)
        if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
            raise RpcError(ErrorCode.NOT_FOUND, f"{uri} is not a content reference this host serves.")
        # The same sandbox as tools and the other resource* methods (symlinks, attack strings).
        data, content_type = await self.resources.read(uri)
        return _encoded(data, encoding, content_type)

    def subagent_specs(self, session: str) -> list[SubagentSpec]:
        runtime = self.customizations.runtime(session)
        if runtime is None:
            return []
        return [SubagentSpec(name, agent.description or name, uri) for name, agent, uri in runtime.custom_agents()]

    def instruction_files(self, session: str) -> list[str]:
        runtime = self.customizations.runtime(session)
        return runtime.instruction_files() if runtime is not None else []

    def allowed_roots(self) -> list[Path]:
        roots = {self.default_directory, *(Path(os.path.realpath(os.path.expanduser(r))) for r in self.config.tools.extra_roots)}
        for _, state in self.store.channels("session"):
            for directory in state.get("workingDirectories") or ():
                if isinstance(directory, str) and directory.startswith("file:"):
                    roots.add(Path(os.path.realpath(unquote(urlparse(directory).path))))
        return [self.default_directory, *sorted(roots - {self.default_directory})]

    # -- clients -------------------------------------------------------------------------------

    def client_connected(self, client_id: str) -> None:
        self._connected[client_id] = self._connected.get(client_id, 0) + 1

    def client_disconnected(self, client_id: str) -> None:
        remaining = self._connected.get(client_id, 0) - 1
        if remaining > 0:
            self._connected[client_id] = remaining
            return
        self._connected.pop(client_id, None)
        # PROTOCOL.md §4: a departed active client gives up the role, also in a session another
        # process of a cluster runs (only this process knows the client left).
        for uri, state in list(self.store.channels("session")):
            if any(isinstance(active, dict) and active.get("clientId") == client_id for active in state.get("activeClients") or ()):
                self.store.dispatch_where_run(uri, builders.session_active_client_removed(client_id=client_id))
        if self._services is not None:  # (else no session runs customizations yet)
            self.customizations.clients_left()

    # -- a cluster: requests about what another process runs ------------------------------------

    def owner_elsewhere(self, channel: Any) -> str | None:
        """The process that runs ``channel`` (a session, chat, terminal, changeset) when it is
        another process of a cluster this one can forward a request to; None to answer here."""
        if not isinstance(channel, str) or not self.store.answers_later or not hasattr(self.store.log, "forward_request"):
            return None
        return self.store.owner_elsewhere(channel)

    def resumed(self, channel: str, client_id: str) -> None:
        """A client subscribed to ``channel``: a session restored at start is resumed (its
        SessionStart hooks, its trust question, its servers when they start with the session) by
        the process that runs it, told so when that is another process of a cluster."""
        owner = self.owner_elsewhere(channel) if self.store.kind(channel) == "session" else None
        if owner is None:
            services = self.services_built  # (none yet: the handshake's subscription to the root)
            if services is not None:
                services.customizations.resumed(channel)
            return
        task = asyncio.ensure_future(self.forward_request(owner, "sessionResumed", {"channel": channel}, client_id))
        self._forwarded_resumes.add(task)
        task.add_done_callback(self._resume_forwarded)

    def _resume_forwarded(self, task: asyncio.Future[Any]) -> None:
        self._forwarded_resumes.discard(task)
        if not task.cancelled() and task.exception() is not None:  # (the owner gone: whoever takes it over resumes it)
            logger.warning("telling the process that runs a session that a client resumed it failed: %s", task.exception())

    async def forward_request(self, owner: str, method: str, params: dict[str, Any], client_id: str) -> Any:
        """Run a client's request on ``owner`` (``take_forwarded_request`` there): its result, or
        its error raised here as the ``RpcError`` it was there."""
        answer = await self.store.log.forward_request(owner, method, params, client_id)  # type: ignore[attr-defined]
        error = answer.get("error")
        if error is not None:
            code = error.get("code")
            raise RpcError(int(code) if code is not None else ErrorCode.INTERNAL_ERROR, str(error.get("message")))
        return answer.get("result")

    async def take_forwarded_request(self, method: str, params: dict[str, Any], client_id: str) -> dict[str, Any]:
        """A request another process forwarded here, the owner of what it is about: answered as
        if its client were connected here (``{"result": ...}``, or the ``RpcError`` as ``{"error": ...}``)."""
        handle = FORWARDED_REQUESTS.get(method)
        try:
            if handle is None:
                raise RpcError(ErrorCode.METHOD_NOT_FOUND, f"{method} is not forwarded between a cluster's processes.")
            return {"result": await handle(self, params, client_id)}
        except RpcError as error:
            return {"error": {"code": int(error.code), "message": error.message}}
        except Exception as error:  # said to the asker as this host's own failure
            logger.exception("forwarded %s failed", method)
            return {"error": {"code": None, "message": f"{method} failed on the process that runs it: {type(error).__name__}"}}

    def _followed(self, record: LogRecord) -> None:
        """A session another process created or removed: this process's clients hear of it as of one of its own."""
        if record.kind == "created" and (record.body or {}).get("kind") == "session":
            self.store.notify(ROOT, "root/sessionAdded", {"channel": ROOT, "summary": self.session_summary(record.channel)})
        elif record.kind == "removed" and self.chat_summaries.session_of(record.channel) is None \
                and channel_kind(record.channel) == "session":
            self.store.notify(ROOT, "root/sessionRemoved", {"channel": ROOT, "session": record.channel})

    # -- root bookkeeping ----------------------------------------------------------------------

    def _publish_active_count(self) -> None:
        count = sum(1 for _ in self.store.channels("session"))
        if (self.store.state(ROOT) or {}).get("activeSessions") != count:
            self.store.dispatch(ROOT, builders.root_active_sessions_changed(active_sessions=count))

    def _publish_summary_changes(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        """``root/sessionSummaryChanged`` for a session whose summary fields moved (a chat's
        ``modifiedAt`` is its session's)."""
        kind = self.store.kind(channel)
        if kind == "chat":
            session = self.chat_summaries.session_of(channel)
            if session is None or (self.store.state(session) or {}).get("defaultChat") != channel:
                return
            changes = {"modifiedAt": after["modifiedAt"]} if before.get("modifiedAt") != after.get("modifiedAt") and after.get("modifiedAt") else {}
            channel = session
        elif kind == "session":
            changes = _summary_changes(before, after)
        else:
            return
        if changes:
            self.store.notify(ROOT, "root/sessionSummaryChanged", {"channel": ROOT, "session": channel, "changes": changes})


async def _dispose_session(host: AgentHost, params: dict[str, Any], client_id: str) -> None:
    host.dispose_session(params["channel"])


async def _create_chat(host: AgentHost, params: dict[str, Any], client_id: str) -> None:
    host.create_chat(params, client_id)


async def _dispose_chat(host: AgentHost, params: dict[str, Any], client_id: str) -> None:
    host.dispose_chat(params["channel"])


async def _dispose_terminal(host: AgentHost, params: dict[str, Any], client_id: str) -> None:
    host.terminals.dispose(params["channel"])


async def _invoke_changeset_operation(host: AgentHost, params: dict[str, Any], client_id: str) -> Any:
    return host.changesets.invoke(params)


async def _session_resumed(host: AgentHost, params: dict[str, Any], client_id: str) -> None:
    host.resumed(params["channel"], client_id)


FORWARDED_REQUESTS: dict[str, Callable[[AgentHost, dict[str, Any], str], Awaitable[Any]]] = {
    "disposeSession": _dispose_session,
    "createChat": _create_chat,
    "disposeChat": _dispose_chat,
    "disposeTerminal": _dispose_terminal,
    "invokeChangesetOperation": _invoke_changeset_operation,
    "sessionResumed": _session_resumed,  # (not a client's request: a subscription on another process, AgentHost.resumed)
}
"""The requests about one session, chat, terminal or changeset that a process of a cluster hands
to the process running it (``host.transport.connection``), with their params as the store's model
has them; the rest are answered by any process from its own store (``listSessions``,
``fetchTurns``: every process holds every state, loaded whole first where it held a chat without
its streamed text: ``Store.hold``) or act on this machine (``resource*``)."""


def _encoded(data: bytes, encoding: str | None, content_type: str) -> dict[str, Any]:
    """A ``ResourceReadResult``: UTF-8 text when asked for and possible, base64 otherwise."""
    if encoding != "base64":
        try:
            return {"data": data.decode("utf-8"), "encoding": "utf-8", "contentType": content_type}
        except UnicodeDecodeError:
            pass
    return {"data": base64.b64encode(data).decode("ascii"), "encoding": "base64", "contentType": content_type}


_SUMMARY_FIELDS = ("title", "activity", "project", "workingDirectories", "defaultChat")
"""The ``SessionSummary`` fields a session's state holds as they are."""


def _summary_fields(state: dict[str, Any]) -> dict[str, Any]:
    """The ``SessionSummary`` fields that follow a session's state: its own (``_SUMMARY_FIELDS``),
    its ``status`` with the activity of its chats (``refresh_session_status``: the session
    channel's own status is what the reducers compute, which knows nothing of the chats), and
    its catalogue as compact ``SessionChatSummary`` entries."""
    fields = {key: state[key] for key in _SUMMARY_FIELDS if state.get(key) is not None}
    if state.get("status") is not None or state.get("chats"):
        fields["status"] = refresh_session_status(state).get("status")
    if state.get("chats") is not None:
        fields["chats"] = [compact_chat_summary(chat) for chat in state["chats"] if isinstance(chat, dict)]
    return fields


_STATUS_INPUTS = ("status", "chats", "defaultChat", "inputNeeded")
"""What a session's summary ``status`` and ``chats`` are computed from (``refresh_session_status``)."""


def _summary_changes(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The ``SessionSummary`` fields that differ between ``_summary_fields(before)`` and
    ``_summary_fields(after)``, as they are in ``after`` (a field ``after`` lacks is not said).
    The status and the chats are computed only when what they follow is another object: a session
    action that moved none of it (its activity, a customization) costs no status computation."""
    changes = {}
    for key in _SUMMARY_FIELDS:
        value = after.get(key)
        if value is not None and value is not before.get(key) and value != before.get(key):
            changes[key] = value
    if all(before.get(key) is after.get(key) for key in _STATUS_INPUTS):
        return changes  # the status and the chats follow from these alone: unchanged
    if after.get("status") is not None or after.get("chats"):
        status = refresh_session_status(after).get("status")
        was = refresh_session_status(before).get("status") if before.get("status") is not None or before.get("chats") else None
        if was != status:
            changes["status"] = status
    chats = after.get("chats")
    if chats is not None and chats is not before.get("chats"):
        listed = [compact_chat_summary(chat) for chat in chats if isinstance(chat, dict)]
        earlier = before.get("chats")
        if earlier is None or [compact_chat_summary(chat) for chat in earlier if isinstance(chat, dict)] != listed:
            changes["chats"] = listed
    return changes


def _epoch(value: Any) -> int:
    stamp = parse_timestamp(value) if isinstance(value, str) else value
    return int(stamp) if isinstance(stamp, (int, float)) else 0


def _selection(chat: dict[str, Any], key: str) -> Any:
    """The model or agent a chat's next message uses: its draft's, else its latest message's."""
    draft = chat.get("draft")
    if isinstance(draft, dict) and draft.get(key) is not None:
        return draft[key]
    turns = chat.get("turns") or []
    latest = chat.get("activeTurn") or (turns[-1] if turns else None)
    return ((latest or {}).get("message") or {}).get(key)


def _default_model(agent: Agent) -> dict[str, Any] | None:
    models = agent.info().get("models") or []
    return {"id": models[0]["id"]} if models else None
