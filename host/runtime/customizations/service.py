"""Per-host plugin loading and per-session customization state.

``CustomizationService`` is created by the ``AgentHost`` and registered as a store observer. It is
a composition of rooms, each in its own module: ``host_catalogue.HostCatalogue`` (host-wide: the host's
plugins and the Claude Code user set-up, loaded once and re-read when they change),
``mcp_supervisor.McpSupervisor`` (every session's MCP servers, started and stopped as the pure
table of ``mcp_lifetime`` says) and ``tree.SessionTree`` (how a session's containers are listed and
published); this module keeps what ties them to a session: opening and closing it, its hooks,
workspace trust, client plugins, and what it observes. The contract of the whole:

Contract:
- ``load()`` (host start) parses the configured plugin directories once; ``agent_customizations()``
  is the host's plugin list for ``AgentInfo.customizations``.
- ``open_session(uri)`` (createSession, or a session recovered at start) publishes the session's
  containers with ``session/customizationsChanged`` (each ``loading``), then one
  ``session/customizationUpdated`` per container with its parsed tree and load state; enabled
  flags of a recovered session are kept. It then runs the ``SessionStart`` hooks in the
  background (a new session only, see below); the session's MCP servers start with its first turn (``wait_started``), or at once
  with ``[mcp] start = "session"``, and stop ``[mcp] idle_stop`` seconds after its last turn ended,
  or ``[mcp] unwatched_stop`` seconds after it ended with no client connected to the session (the
  next turn starts them again). A restarted host spawns no server for a session until it is
  used. A turn waits for servers still starting at most ``[mcp] start_wait`` seconds from their
  launch, and not for a server that crashed or hung before in this host: a slow or broken server
  never holds a turn up; its tools join the session's model requests once it runs. Servers from the host config and ``.mcp.json`` are listed in an "MCP servers" container,
  which a failing server degrades with its error, as a plugin's failing server degrades the plugin. Publishing is synchronous (host plugins were parsed
  at ``load()``; workspace folders are small), so the ``loading`` -> final pair is in the action
  log in that order but every subscriber's snapshot, even a ``subscribe`` pipelined behind
  ``createSession``, already holds the final load states. Runtime trouble (a server failing)
  later re-publishes the container as ``degraded``.
- ``session/customizationToggled`` (observed; its ``enablement`` decision list, AHP 0.8.0+) re-applies
  the container's effects: its MCP servers stop or start; its rules, skills, agents and hooks stop
  or start counting at the next model request. Disabling the container of the agent selected in
  the session's default chat draft clears that selection from the draft (``chat/draftChanged``).
- ``session/mcpServerStartRequested`` / ``session/mcpServerStopRequested`` (observed, dispatched by
  clients) start or stop the session's MCP servers (the reducer already shows ``starting`` /
  ``stopped``; ``SessionMcp`` reports each server's state with ``session/mcpServerStateChanged``);
  ``session/mcpServerBackgroundRequested`` (observed) lets a turn waiting for that server's start
  go on without it (``SessionMcp.background``).
- ``session/workingDirectorySet`` / ``Removed`` / ``Replaced`` (observed) tell the session's running
  MCP servers that their roots changed; a server's log, prompts and resources re-publish its
  container with that server's ``_meta`` (the published server states are kept).
- ``session/activeClientSet`` / ``session/activeClientRemoved`` (observed) resolve the published
  plugins of every active client (AHP 0.9.0 ``activeClients``): a
  ``file://`` plugin readable here is parsed (again only when its ``nonce`` changed); any other
  URI (``virtual://``) is published as ``loading``, copied from the client with host→client
  ``resourceList`` / ``resourceRead`` (``host.resources.client_resources``) into the host's data directory,
  parsed from there like a ``file://`` plugin (children keep the client's URIs) and re-published;
  a fetch that fails is published as ``error`` naming the client, the URI and the reason. A
  departing client's plugins are removed.
- The session's turns run in its chats: a chat's turn ending (observed on the chat channel)
  starts the idle-stop countdown of its session's MCP servers.
- Workspace trust (``host.runtime.trust``): in a session whose folder is not trusted, the folder's hook
  containers and the client plugins that lie inside it are ``held`` (published ``degraded``
  "Waiting for trust ...", contributing nothing), its ``.mcp.json`` servers are listed in the "MCP
  servers" container as waiting and not started. When something is held, ``open_session`` asks once
  (``InputRequests.ask_now``: the question is in the session before ``createSession`` answers);
  "Trust this folder" adds it to the root config's ``trustedFolders`` and every session in it
  releases what it held (their SessionStart hooks run for what was released, servers start as
  ``[mcp] start`` says), "for this session" does so for the session, no leaves it held and is not
  asked again in that session. A change of the trusted folders by anyone (a client revoking one
  with ``root/configChanged``) re-holds or releases at once, stopping a revoked folder's servers.
- Claude Code (``host.runtime.customizations.claude_code``, when ``[claude_code] enabled``): every
  session also lists the "Claude Code user settings" container (their hooks, run without trust) and
  one container per Claude Code plugin its layered settings switch on (id
  ``claude-plugin:name@marketplace``), after the host plugins; one only the project's settings switch
  on is ``held`` until the folder is trusted. The settings' ``env``, permission rules and
  ``additionalDirectories`` are kept on the session's runtime (``permission_settings`` feeds the tool
  policy) and re-read when trust changes. ``claude_changed`` (a client's root config change, or the
  record or user settings changed on disk, noticed at a turn) re-lists every open session's Claude
  Code plugins, adding and removing containers, and calls ``claude_listeners``.
- A session restored at host start (``open_session(restored=True)``) runs no SessionStart hook,
  starts no server and asks nothing until a client resumes it (``resumed``: a subscription, or a
  turn); its SessionStart hooks then get ``source: "resume"``.
- ``let_go(uri)`` (a cluster's process that lost the session to another) ends its MCP servers and
  hooks' processes here quietly: no ``SessionEnd`` hook, nothing dispatched.
- ``close_session(uri)`` (disposeSession) runs ``SessionEnd`` hooks (``reason: "other"``), cancels
  its background hooks, stops the session's MCP servers and deletes its hooks' transcript;
  ``stop()`` does that for every session but for their ``SessionEnd`` hooks (host shutdown, keeping
  the transcripts: the sessions go on after the restart): no server process survives. A script's
  session (``agent-host -p``) ends when its client leaves (``clients_left``): its ``SessionEnd``
  hooks run then, once.
- Claude Code hook events from what is observed: each session gets its hooks' transcript
  (``<data>/transcripts/<session id>.jsonl``, ``HookTranscript``) and permission mode; a cleared
  default chat (``chat/truncated`` without ``turnId``) runs ``SessionEnd`` with ``clear``, then
  ``SessionStart`` with ``source: "clear"``; a tool call waiting for confirmation or a question to
  the user (not the trust question) runs ``Notification`` hooks (``permission_prompt``,
  ``elicitation_dialog``).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import plugins
from ahp.protocol import builders
from ahp.state import default_chat_uri
from ahp.workspace_trust import (
    REQUEST_PREFIX,
    SOURCE_WORDS,
    TRUST_FOLDER,
    TRUST_SESSION,
    WAITING,
    covers,
    trust_choice,
    trust_request,
)
from host.config import HostConfig
from host.resources.client_resources import ClientResourceError, ClientResources
from host.resources.workdirs import session_directory
from host.runtime.customizations._containers import (
    MCP_SERVERS_ID,
    Container,
    enablement_enabled,
    entry_enabled,
)
from host.runtime.customizations.claude_code import ClaudeCode
from host.runtime.customizations.completions import complete_user_message
from host.runtime.customizations.host_catalogue import HostCatalogue
from host.runtime.customizations.mcp_lifetime import Effect, Event
from host.runtime.customizations.mcp_supervisor import McpSupervisor
from host.runtime.customizations.session import SessionCustomizations
from host.runtime.customizations.transcript import HookTranscript
from host.runtime.customizations.tree import ALWAYS_LISTED_DIRECTORIES, SessionTree, dir_uri, folder_stamp
from host.runtime.inputs import InputRequests
from host.runtime.tools.session_config import permission_mode_of
from host.runtime.trust import WorkspaceTrust
from host.state.store import Store
from plugins.claude_code_tools import claude_name
from tools import processes
from tools.mcp import McpServerSpec

if TYPE_CHECKING:
    from tools.mcp import RestartPolicy

__all__ = ["CustomizationService", "ALWAYS_LISTED_DIRECTORIES"]

logger = logging.getLogger(__name__)

HOOK_GRACE = 2.0
"""Seconds what a session's hooks left running has to end after SIGTERM (then SIGKILL)."""


_MCP_START_WAIT = 30.0
"""Seconds a turn waits for the session's MCP servers to be launched and its SessionStart hooks to
run (the servers themselves are waited for ``[mcp] start_wait`` at most)."""
_INSTALL_WAIT = 120.0
"""Seconds a turn waits for the background install of the plugins its settings switch on."""


class CustomizationService:
    """Host plugins, and the customizations of every open session."""

    def __init__(
        self, config: HostConfig, store: Store, *, inputs: InputRequests, mcp_policy: RestartPolicy | None = None,
        client_files: ClientResources | None = None, trust: WorkspaceTrust | None = None,
        claude: ClaudeCode | None = None, session_of: Callable[[str], str | None],
    ) -> None:
        self.config = config
        self._session_of = session_of
        """The session a chat channel belongs to (``ChatSummaries.session_of``)."""
        self.catalogue = HostCatalogue(config, claude, spawn=self._spawn, changed=self.claude_changed)
        """The host's plugins and the Claude Code user set-up (``host_catalogue``), shared by the sessions."""
        self.trust = trust or WorkspaceTrust(store, configured=config.trust.folders, required=config.trust.require,
                                             client_trust=config.trust.client_trust)
        """Which folders the user trusts (the root config's list, ``[trust]``)."""
        self.trust.listeners.append(self._trust_changed)
        self.client_files = client_files
        """Host→client resource requests: how a client's ``virtual://`` plugin is fetched."""
        self.store = store
        self.sessions: dict[str, SessionCustomizations] = {}
        self.inputs = inputs
        """The host's input requests (MCP elicitation asks the user through them)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._locks: dict[str, asyncio.Lock] = {}
        """One per client plugin being mirrored from its client."""
        self.tree = SessionTree(config, store)
        """How each session's containers are listed and published (``tree``)."""
        self.servers = McpSupervisor(config, store, inputs=inputs, policy=mcp_policy, publish=self.tree.publish,
                                     spawn=self._spawn, live=lambda runtime: self.sessions.get(runtime.session) is runtime)
        """Every session's MCP servers (``mcp_supervisor``, following ``mcp_lifetime``'s table)."""
        store.change_observers.append(self._observe)

    # -- host ----------------------------------------------------------------------------------

    @property
    def claude(self) -> ClaudeCode | None:
        """A Claude Code user's set-up (settings, marketplaces, plugins), or None when off."""
        return self.catalogue.claude

    @property
    def plugins(self) -> list[plugins.LoadedPlugin]:
        """The host's plugins (``[plugins] directories``), parsed by ``load()``."""
        return self.catalogue.plugins

    @property
    def claude_listeners(self) -> list[Any]:
        """Called after the Claude Code set-up changed (the root config's plugin keys follow it)."""
        return self.catalogue.listeners

    def load(self) -> None:
        """Parse the configured plugin directories and read the Claude Code user set-up (never
        raises for bad plugin or settings content)."""
        self.catalogue.load()

    def agent_customizations(self) -> list[dict[str, Any]]:
        """``AgentInfo.customizations``: the host's plugins, ids = their root URIs."""
        return self.catalogue.agent_customizations()

    async def _end(self, runtime: SessionCustomizations) -> None:
        """The session's ``SessionEnd`` hooks, once."""
        runtime.session_ended = True
        try:
            await runtime.fire(plugins.HookEvent.SESSION_END, "other", reason="other")
        except Exception:  # a hook failing must not keep the servers running
            logger.exception("SessionEnd hooks of %s failed", runtime.session)

    async def stop(self) -> None:
        runtimes = list(self.sessions.values())
        await asyncio.gather(*(self.close_session(uri, end_hooks=False) for uri in list(self.sessions)), return_exceptions=True)
        # What the sessions' hooks left running, ended together (one look through /proc per round).
        await processes.end_families([runtime.family for runtime in runtimes if runtime.hooks_ran], HOOK_GRACE)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- sessions ------------------------------------------------------------------------------

    def runtime(self, session: str) -> SessionCustomizations | None:
        return self.sessions.get(session)

    def open_session(self, uri: str, *, restored: bool = False) -> None:
        """Publish the session's containers and start its servers and SessionStart hooks; ask the
        user to trust its folder when it brings something that runs. A ``restored`` session (host start) runs no
        SessionStart hook and asks nothing until a client resumes it (``resumed``)."""
        state = self.store.state(uri) or {}
        previous = {item.get("id"): item for item in state.get("customizations") or []}
        runtime = SessionCustomizations(uri, session_directory(state))
        self._attach_transcript(runtime)
        runtime.trusted = self.trust.is_trusted(runtime.folder)
        runtime.resume_pending = restored
        self.sessions[uri] = runtime
        pending = [Container(id=p.root.as_uri(), loaded=None, name=p.name, uri=p.root.as_uri()) for p in self.plugins]
        claude = self._claude_containers(runtime)
        pending += claude
        pending += [Container(id=dir_uri(runtime, spec.relative), loaded=None, name=spec.display_name,
                              uri=dir_uri(runtime, spec.relative), directory=spec) for spec in self.tree.directory_specs(runtime)]
        for container in pending:
            if container.id in previous:
                container.enabled = entry_enabled(previous[container.id])
        self.store.dispatch(uri, builders.session_customizations_changed(customizations=[c.wire() for c in pending]))
        by_id = {c.id: c for c in pending}
        for plugin in self.plugins:
            container = by_id[plugin.root.as_uri()]
            container.loaded = plugin
            runtime.containers.append(container)
            self.tree.publish(runtime, container)
        for container in claude:
            container.held = self._held(runtime, container)
            runtime.containers.append(container)
            self.tree.publish(runtime, container)
        for spec in self.tree.directory_specs(runtime):
            container = by_id[dir_uri(runtime, spec.relative)]
            assert runtime.working_directory is not None
            extra = runtime.settings_notes if spec.format == "settings" else ()
            runtime.directory_stamps[container.id] = folder_stamp(runtime.working_directory, spec)
            container.loaded = plugins.load_directory(runtime.working_directory, spec, extra_diagnostics=extra)
            container.held = self._held(runtime, container)
            runtime.containers.append(container)
            self.tree.publish(runtime, container)
        if any(isinstance(client, dict) and client.get("customizations") for client in state.get("activeClients") or ()):
            self._resolve_client_plugins(runtime, state.get("activeClients") or [])
        self._spawn(self._start_session(runtime, fire=not restored))
        self._maybe_ask(runtime)

    def resumed(self, uri: str) -> None:
        """A client subscribed to the session (or started a turn in it): a session restored at
        host start now runs its SessionStart hooks with ``source: "resume"`` and asks for trust."""
        runtime = self.sessions.get(uri)
        if runtime is None or not runtime.resume_pending:
            return
        runtime.resume_pending = False
        runtime.start_source = "resume"
        runtime.hooks_started.clear()  # its first turn waits for their context
        self._spawn(self._session_start(runtime, "resume"))
        if Effect.RECONCILE in self.servers.step(runtime, Event.RESUMED_EAGER if self.servers.eager else Event.RESUMED).effects:
            self._reconcile_soon(runtime)
        self._maybe_ask(runtime)

    def session_disposed(self, uri: str) -> None:
        """disposeSession: end the session's customizations in the background."""
        if uri in self.sessions:
            self._spawn(self.close_session(uri, disposed=True))

    def _attach_transcript(self, runtime: SessionCustomizations) -> None:
        """The session's Claude Code-shaped transcript for hooks (``transcript_path``) and its
        permission mode as hooks are told it; the file is written only when a hook runs."""
        chat = default_chat_uri(runtime.session)
        path = self.config.data_path() / "transcripts" / f"{_file_name(runtime.session_id)}.jsonl"
        cwd = str(runtime.working_directory) if runtime.working_directory is not None else None
        runtime.transcript = HookTranscript(path, runtime.session_id, cwd,
                                            turns_from=lambda start: self.store.turns(chat, start),
                                            active=lambda: (self.store.state(chat) or {}).get("activeTurn"),
                                            turn_ids=lambda: self.store.turn_ids(chat))
        session = runtime.session  # not the runtime: a closure it keeps must not hold it (a cycle)
        runtime.permission_mode = lambda: permission_mode_of(self.store.state(session) or {})

    async def close_session(self, uri: str, *, end_hooks: bool = True, disposed: bool = False) -> None:
        """End the session's customizations: its ``SessionEnd`` hooks (when the session ends: not
        for a stopping host, whose sessions go on after its restart), its MCP servers and, unless
        the caller ends them with others (``stop``), what its hooks left running; the hooks'
        transcript of a ``disposed`` session is deleted (a stopping host keeps it for the restart)."""
        runtime = self.sessions.pop(uri, None)
        if runtime is None:
            return
        transition = self.servers.step(runtime, Event.CLOSED)
        if Effect.CANCEL_IDLE in transition.effects:
            self.servers.cancel_idle_stop(runtime)
        if end_hooks and not runtime.session_ended:
            await self._end(runtime)
        await runtime.end_background()
        if runtime.transcript is not None and disposed:
            runtime.transcript.remove()
        if Effect.STOP in transition.effects and runtime.mcp is not None:
            await runtime.mcp.stop()
        if end_hooks and runtime.hooks_ran:
            await processes.end(runtime.family, None, HOOK_GRACE)

    async def let_go(self, uri: str) -> None:
        """Another process of a cluster runs the session now (this one lost its lease: cut off,
        held up, or its lease taken): what this process runs for it ends here, its MCP servers,
        its background hooks and what its hooks left running, without a ``SessionEnd`` hook (the
        session goes on) and without dispatching anything (the log would refuse it; the new owner
        publishes its own servers). The hooks' transcript is kept. Should this process take the
        session back, ``open_session`` opens it again."""
        runtime = self.sessions.pop(uri, None)
        if runtime is None:
            return
        self.servers.cancel_idle_stop(runtime)
        self.servers.step(runtime, Event.CLOSED)
        await runtime.end_background()
        await self.servers.stop_quietly(runtime)
        if runtime.hooks_ran:
            await processes.end(runtime.family, None, HOOK_GRACE)

    async def _start_session(self, runtime: SessionCustomizations, *, fire: bool) -> None:
        # (A restored session's start comes when a client resumes it.)
        event = Event.RESTORED if runtime.resume_pending else Event.OPENED_EAGER if self.servers.eager else Event.OPENED
        transition = self.servers.step(runtime, event)
        try:
            if Effect.RECONCILE in transition.effects:
                await self.servers.apply(runtime)
        finally:
            runtime.mcp_started.set()
        if fire:
            await self._session_start(runtime, "startup")
        elif runtime.resume_pending:
            runtime.hooks_started.set()  # nothing to wait for until a client resumes it

    async def _session_start(self, runtime: SessionCustomizations, source: str, only: set[str] | None = None) -> None:
        """Run SessionStart hooks (``only`` of those containers: a folder trusted later) and keep
        the context they add; a first turn waits for them (``hooks_started``)."""
        runtime.hooks_started.clear()
        try:
            results = await runtime.fire(plugins.HookEvent.SESSION_START, source, only=only, source=source)
            added = [r.additional_context for r in results if r.additional_context]
            runtime.session_context = added if only is None else [*runtime.session_context, *added]
        finally:
            runtime.hooks_started.set()

    # -- workspace trust -----------------------------------------------------------------------

    def _held(self, runtime: SessionCustomizations, container: Container) -> str | None:
        """Why ``container`` waits for its folder to be trusted: a workspace folder with hooks, or
        a client's plugin that lies inside the folder (it may run anything). None: it may act."""
        if runtime.folder_trusted or runtime.folder is None:
            return None
        where = runtime.folder
        if container.directory is not None and isinstance(container.loaded, plugins.LoadedDirectory) \
                and any(hook_file.hooks for hook_file in container.loaded.hook_files):
            return f"{WAITING}: its hooks run once you trust {where}"
        if container.client_id is not None and _inside(container.uri, where):
            return f"{WAITING}: this plugin lies in {where} and runs once you trust that folder"
        if container.enabled_by is not None:
            return f"{WAITING}: {_relative(Path(container.enabled_by), where)} switches it on; it runs once you trust {where}"
        return None

    def _waiting(self, runtime: SessionCustomizations) -> list[str]:
        """What the folder brings that waits for trust, one line each (the trust question lists them)."""
        lines: list[str] = []
        for container in runtime.containers:
            if container.held is None or container.id == MCP_SERVERS_ID:
                continue
            if isinstance(container.loaded, plugins.LoadedDirectory):
                for hook_file in container.loaded.hook_files:
                    for hook in hook_file.hooks:
                        lines.append(f"hook ({hook.event.value}, {_relative(hook_file.path, runtime.folder)}): {_short(hook.command)}")
            elif container.enabled_by is not None:
                lines.append(f"plugin {container.claude_id} (switched on by {_relative(Path(container.enabled_by), runtime.folder)})")
            else:
                lines.append(f"plugin {container.name or container.id} ({_relative_uri(container.uri, runtime.folder)})")
        for spec in self.servers.workspace_specs(runtime):
            lines.append(f"MCP server {spec.name} (.mcp.json): {_short(_command_line(spec))}")
        return lines

    def _maybe_ask(self, runtime: SessionCustomizations) -> None:
        """Ask the trust question, once, when the folder brings something that waits for it."""
        if (runtime.folder_trusted or runtime.declined or runtime.question is not None or runtime.resume_pending
                or runtime.folder is None or self.sessions.get(runtime.session) is not runtime):
            return
        extras = self._waiting(runtime)
        if not extras:
            return
        # A client that forwarded its own workspace trust (VS Code) can trust the folder there instead.
        note = ("The workspace trust a client forwarded (VS Code's trusted folders) does not cover this folder; "
                "trusting it there trusts it here too.") if self.trust.forwarded() is not None else None
        request = trust_request(f"{REQUEST_PREFIX}{uuid.uuid4()}", runtime.folder, extras, note=note)
        logger.info("session %s: asking whether to trust %s (%d things wait)", runtime.session, runtime.folder, len(extras))
        question = runtime.question = self.inputs.ask_now(runtime.session, request)
        question.add_done_callback(lambda done: self._answered(runtime, done))

    async def trust_for(self, session: str, why: str) -> bool:
        """Whether the session's folder is trusted, asking the user first when it is not and the
        question was neither asked nor declined: ``why`` says what waits for it (a command's
        ``allowed-tools``, which pre-approve nothing in a folder not trusted). Waits for the answer."""
        runtime = self.sessions.get(session)
        if runtime is None or runtime.folder is None:
            return False
        if runtime.folder_trusted or runtime.declined:
            return runtime.folder_trusted
        if runtime.question is None:
            request = trust_request(f"{REQUEST_PREFIX}{uuid.uuid4()}", runtime.folder, [why])
            question = runtime.question = self.inputs.ask_now(runtime.session, request)
            question.add_done_callback(lambda done: self._answered(runtime, done))
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(runtime.question)
        return runtime.folder_trusted

    def _answered(self, runtime: SessionCustomizations, question: asyncio.Future[dict[str, Any]]) -> None:
        if runtime.question is question:
            runtime.question = None
        if question.cancelled() or self.sessions.get(runtime.session) is not runtime or runtime.folder_trusted:
            return
        answer = question.result()
        choice = trust_choice(answer.get("response"), answer.get("answers"))
        if choice == TRUST_FOLDER and runtime.folder is not None:
            logger.info("session %s: the user trusts %s", runtime.session, runtime.folder)
            self.trust.trust(runtime.folder)
            self._trust_changed()  # at once: a message sent right after the answer finds the folder trusted
        elif choice == TRUST_SESSION:
            logger.info("session %s: the user trusts %s for this session", runtime.session, runtime.folder)
            runtime.trusted_here = True
            self._apply_trust(runtime)
        else:
            runtime.declined = True

    def _trust_changed(self) -> None:
        """The trusted folders changed (an answer, or a client's ``root/configChanged``)."""
        for runtime in list(self.sessions.values()):
            trusted = self.trust.is_trusted(runtime.folder)
            if trusted == runtime.trusted:
                continue
            was = runtime.folder_trusted
            runtime.trusted = trusted
            if runtime.folder_trusted != was:
                source = self.trust.source(runtime.folder)
                logger.info("session %s: %s is %s", runtime.session, runtime.folder,
                            f"trusted (by {SOURCE_WORDS[source]})" if source else "no longer trusted")
                self._apply_trust(runtime)

    def _apply_trust(self, runtime: SessionCustomizations) -> None:
        """Re-hold or release the folder's containers and servers after trust changed; a folder
        trusted now runs the SessionStart hooks of what it released (unless the session waits to
        be resumed, when they run then)."""
        if runtime.folder_trusted and runtime.question is not None:
            runtime.question.cancel()  # answered elsewhere (another session, a client's config change)
        self._settings_view(runtime)  # project permissions and env count only in a trusted folder
        released: set[str] = set()
        for container in runtime.containers:
            if container.id == MCP_SERVERS_ID:
                continue  # its .mcp.json servers: reconciled below
            held = self._held(runtime, container)
            if held != container.held:
                if container.held is not None and held is None:
                    released.add(container.id)
                container.held = held
                self.tree.publish(runtime, container)
        if released and not runtime.resume_pending:
            runtime.hooks_started.clear()
            self._spawn(self._session_start(runtime, runtime.start_source, only=released))
        if self.claude is not None and runtime.folder_trusted:
            self._sync_claude(runtime)  # a trusted project's plugins that are not installed yet get installed
        self._reconcile_soon(runtime)

    async def wait_started(self, runtime: SessionCustomizations) -> None:
        """Until the Claude Code plugins being installed in the background are (``_INSTALL_WAIT``
        at most) and the session's MCP servers made their first start attempt, bounded by ``[mcp]
        start_wait`` (see the module contract): a turn uses it. The servers of a session that did
        not need them yet (or stopped them when idle) start here."""
        self.servers.cancel_idle_stop(runtime)
        self.resumed(runtime.session)
        if self.catalogue.refresh():
            self.claude_changed()  # edited settings, or plugins changed from the command line, count from this turn
        self.tree.refresh_directories(runtime, self._held)
        # The plugins the settings switch on may be being installed: the turn has them, as the
        # first turn of a fresh Claude Code has its plugins (bounded: a hung fetch does not hold it).
        await self.catalogue.wait_installed(_INSTALL_WAIT)
        if Effect.RECONCILE in self.servers.step(runtime, Event.TURN_STARTED).effects:
            # (The idle countdown was cancelled above, before anything else: a turn has begun.)
            await asyncio.wait_for(runtime.mcp_started.wait(), _MCP_START_WAIT)
            await self.servers.reconcile(runtime)
        elif runtime.reconciles_queued:
            # E.g. the folder trusted just before this message (its answer and the message sent
            # together, as `agent-host chat -c -p --trust` does): its servers join this turn,
            # waited for as any starting server, rather than after its first model request.
            await self.servers.reconcile(runtime)
        try:
            # (Checked first: ``wait_for`` makes a task and a timer even for an event already set,
            # and after the first turn they always are.)
            if not runtime.mcp_started.is_set():
                await asyncio.wait_for(runtime.mcp_started.wait(), _MCP_START_WAIT)
            if runtime.mcp is not None:
                await runtime.mcp.wait_started(self.config.mcp.start_wait)
            if not runtime.hooks_started.is_set():
                await asyncio.wait_for(runtime.hooks_started.wait(), _MCP_START_WAIT)
        except TimeoutError:
            pass

    def completions(self, session: str, text: str, offset: int) -> list[dict[str, Any]]:
        """``completions`` items for a message being typed in ``session`` (UTF-16 offsets)."""
        runtime = self.sessions.get(session)
        if runtime is None:
            return []
        resources = ([(name, str(resource.uri), resource.name) for name, connection in runtime.mcp.resource_servers().items()
                      for resource in connection.resources] if runtime.mcp is not None else [])
        return complete_user_message(text, offset, entries=runtime.slash_entries(),
                                     working_directory=runtime.working_directory, resources=resources)

    # -- MCP -----------------------------------------------------------------------------------

    def clients_left(self) -> None:
        """A client disconnected: a script's session (``agent-host -p``: ``_meta.oneShot``) nobody
        watches any more has ended, and its ``SessionEnd`` hooks run, as when a ``claude -p`` run
        ends; sessions nobody is connected to any more stop their MCP servers ``[mcp]
        unwatched_stop`` seconds after their last turn (or now, if that is longer ago)."""
        for runtime in list(self.sessions.values()):
            state = self.store.state(runtime.session) or {}
            if (not runtime.session_ended and (state.get("_meta") or {}).get("oneShot")
                    and not self.store.has_subscribers(runtime.session)):
                runtime.session_ended = True
                self._spawn(self._end(runtime))
        if not self.config.mcp.unwatched_stop:
            return
        for runtime in self.sessions.values():
            if not self.store.has_subscribers(runtime.session):
                self.servers.unwatched(runtime)

    def mcp_specs(self, runtime: SessionCustomizations) -> tuple[list[McpServerSpec], dict[str, str]]:
        """Config, then workspace ``.mcp.json``, then enabled plugins (later wins on a name)."""
        return self.servers.mcp_specs(runtime)

    def turn_ended(self, session: str) -> None:
        """Start the idle clock of the session's MCP servers (``McpSupervisor.turn_ended``)."""
        runtime = self.sessions.get(session)
        if runtime is not None:
            self.servers.turn_ended(runtime)

    # -- observing -----------------------------------------------------------------------------

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        session = self._session_of(channel) if channel not in self.sessions else None
        if session is not None:
            runtime = self.sessions.get(session)
            if runtime is not None and before.get("activeTurn") is not None and after.get("activeTurn") is None:
                self.turn_ended(session)
            action = envelope.get("action") or {}
            if runtime is not None and action.get("type") == "chat/truncated" and action.get("turnId") is None \
                    and channel == default_chat_uri(runtime.session):
                self._spawn(self._cleared(runtime))  # the conversation was cleared (Claude Code's /clear)
            notice = _notification(action, after) if runtime is not None else None
            if runtime is not None and notice is not None:
                self._spawn(self._notification_hooks(runtime, *notice))
            return
        runtime = self.sessions.get(channel)
        if runtime is None:
            return
        action = envelope.get("action") or {}
        kind = action.get("type")
        if kind == "session/customizationToggled":
            container = runtime.container(action.get("id"))
            enabled = enablement_enabled(action.get("enablement"))
            if container is None or container.enabled == enabled:
                return
            draft = (self.store.state(default_chat_uri(channel)) or {}).get("draft") or {}
            held_agent = runtime.agent_container(draft.get("agent")) is container
            container.enabled = enabled
            if not container.enabled and held_agent:
                asyncio.get_running_loop().call_soon(self._clear_agent, channel)
            self._reconcile_soon(runtime)
        elif kind in ("session/activeClientSet", "session/activeClientRemoved"):
            self._resolve_client_plugins(runtime, after.get("activeClients") or [])
            self._reconcile_soon(runtime)
        elif kind in ("session/workingDirectorySet", "session/workingDirectoryRemoved", "session/workingDirectoryReplaced"):
            if runtime.mcp is not None and before.get("workingDirectories") != after.get("workingDirectories"):
                runtime.mcp.roots_changed()
        elif kind == "session/mcpServerStartRequested":
            if Effect.RECONCILE in self.servers.step(runtime, Event.START_REQUESTED).effects:
                self._reconcile_soon(runtime)
        elif kind == "session/mcpServerStopRequested":
            self._spawn(self.servers.stop_requested(runtime, action.get("id")))
        elif kind == "session/mcpServerBackgroundRequested" and runtime.mcp is not None:
            runtime.mcp.background(action.get("id"))

    async def _cleared(self, runtime: SessionCustomizations) -> None:
        """The session's conversation was cleared: ``SessionEnd`` (``clear``), then ``SessionStart``
        hooks with ``source: "clear"``, whose context replaces what the earlier ones added."""
        await runtime.fire(plugins.HookEvent.SESSION_END, "clear", reason="clear")
        await self._session_start(runtime, "clear")

    async def _notification_hooks(self, runtime: SessionCustomizations, message: str, kind: str) -> None:
        """``Notification`` hooks: the user is asked something (what they say is shown at the next turn)."""
        await runtime.fire(plugins.HookEvent.NOTIFICATION, kind, message=message, notification_type=kind)

    def _clear_agent(self, session: str) -> None:
        chat = default_chat_uri(session)
        draft = (self.store.state(chat) or {}).get("draft")
        if isinstance(draft, dict) and "agent" in draft:
            self.store.dispatch(chat, builders.chat_draft_changed(draft={k: v for k, v in draft.items() if k != "agent"}))

    # -- Claude Code settings and plugins ------------------------------------------------------

    def _settings_view(self, runtime: SessionCustomizations) -> Any:
        """Read the session's Claude Code settings layers and keep their env, rules and folders."""
        if self.claude is None:
            return None
        view = self.claude.session_view(runtime.working_directory, runtime.folder_trusted)
        runtime.settings_env = view.env
        runtime.settings_rules = view.rules
        runtime.settings_directories = view.additional_directories
        runtime.settings_notes = tuple(view.diagnostics)
        return view

    def _claude_containers(self, runtime: SessionCustomizations) -> list[Container]:
        """The user settings' hooks, the user's CLAUDE.md and the Claude Code plugins the session's settings switch on;
        those not installed whose marketplace is known are installed in the background (a
        project's once its folder is trusted), and the sessions re-listed."""
        view = self._settings_view(runtime)
        if view is None or self.claude is None:
            return []
        runnable = [plugin for plugin in view.plugins if plugin.missing and (plugin.held_by is None or runtime.folder_trusted)]
        self.catalogue.install(runnable)
        containers = self.catalogue.user_containers()
        for plugin in view.plugins:
            uri = plugin.loaded.root.as_uri()
            containers.append(Container(id=f"claude-plugin:{plugin.plugin_id}", loaded=plugin.loaded, name=plugin.plugin_id,
                                        uri=uri, enabled=plugin.enabled, claude_id=plugin.plugin_id,
                                        enabled_by=str(plugin.held_by) if plugin.held_by is not None else None))
        return containers

    def claude_changed(self) -> None:
        """The Claude Code set-up changed (a plugin switched, installed or removed; settings
        edited): every open session lists what it now switches on, from its next turn on."""
        if self.claude is None:
            return
        self.claude.refresh()
        for runtime in list(self.sessions.values()):
            self._sync_claude(runtime)
        for listener in list(self.claude_listeners):
            listener()

    def _sync_claude(self, runtime: SessionCustomizations) -> None:
        wanted = {c.id: c for c in self._claude_containers(runtime)}
        current = [c for c in runtime.containers if c.claude_id is not None or c.id in wanted]
        for container in current:
            if container.id not in wanted:
                self.tree.remove(runtime, container)
        position = max((i + 1 for i, c in enumerate(runtime.containers)
                        if c.client_id is None and c.directory is None and c.id != MCP_SERVERS_ID), default=0)
        for container in wanted.values():
            container.held = self._held(runtime, container)
            existing = runtime.container(container.id)
            if existing is not None:
                if existing.loaded is container.loaded and existing.enabled_by == container.enabled_by:
                    if existing.held == container.held:
                        continue  # unchanged (a switch the session made on it stays)
                    container.enabled = existing.enabled
            position = self.tree.put(runtime, container, existing, position)
        self._maybe_ask(runtime)
        self._reconcile_soon(runtime)

    def permission_settings(self, session: str) -> tuple[tuple[Any, ...], tuple[str, ...]]:
        """The session's Claude Code permission rules and additional directories (for the tool policy)."""
        runtime = self.sessions.get(session)
        if runtime is None:
            return (), ()
        return runtime.settings_rules, runtime.settings_directories

    # -- client plugins ------------------------------------------------------------------------

    def _resolve_client_plugins(self, runtime: SessionCustomizations, active_clients: list[Any]) -> None:
        if not self.config.plugins.client_plugins:
            return
        wanted: dict[Any, tuple[str, dict[str, Any]]] = {}
        for active in active_clients:
            if not isinstance(active, dict) or not isinstance(active.get("clientId"), str):
                continue
            for item in active.get("customizations") or []:
                if isinstance(item, dict) and item.get("id") and item["id"] not in wanted:
                    wanted[item["id"]] = (active["clientId"], item)  # the first client to publish an id keeps it
        for container in [c for c in runtime.containers if c.client_id is not None]:
            if container.id not in wanted or wanted[container.id][0] != container.client_id:
                self.tree.remove(runtime, container)
        position = sum(1 for c in runtime.containers if c.client_id is None and isinstance(c.loaded, plugins.LoadedPlugin))
        for client_id, item in wanted.values():
            existing = runtime.container(item["id"])
            if existing is not None and existing.client_id == client_id and item.get("nonce") is not None \
                    and existing.nonce == item.get("nonce") and existing.uri == item.get("uri"):
                continue  # unchanged: the client said so with the same nonce
            container = Container(id=item["id"], loaded=None, client_id=client_id, uri=str(item.get("uri") or ""),
                                  nonce=item.get("nonce"), name=str(item.get("name") or item["id"]),
                                  enabled=entry_enabled(item) if existing is None else existing.enabled)
            fetch = self._load_client_plugin(container)
            container.held = self._held(runtime, container)
            if fetch is not None:
                self._spawn(self._fetch_client_plugin(runtime, container))
            position = self.tree.put(runtime, container, existing, position)
        self._maybe_ask(runtime)

    def _load_client_plugin(self, container: Container) -> bool | None:
        """Parse a ``file://`` client plugin now; True when it must be fetched from the client first."""
        parsed = urlparse(container.uri or "")
        if parsed.scheme == "file" and parsed.netloc in ("", "localhost"):
            root = Path(unquote(parsed.path))
            if not root.is_dir():
                container.failure = f"Cannot load the client plugin {container.uri}: {root} is not a folder on the host's machine."
                return None
            container.loaded = plugins.load_plugin(root, name=container.name, data_root=self.config.data_path() / "plugins")
            return None
        if self.client_files is None or not parsed.scheme:
            container.failure = (f"Cannot load the client plugin {container.uri}: this host reads client plugins from "
                                 "file:// URIs or from the publishing client over its connection.")
            return None
        return True  # stays "loading" until the fetch ends

    async def _fetch_client_plugin(self, runtime: SessionCustomizations, container: Container) -> None:
        assert self.client_files is not None and container.client_id is not None and container.uri
        key = hashlib.sha256(f"{container.client_id}\n{container.uri}".encode()).hexdigest()[:24]
        mirror = self.config.data_path() / "client-plugins" / key
        async with self._locks.setdefault(f"mirror:{key}", asyncio.Lock()):  # one fetch per tree at a time
            try:
                await self.client_files.mirror(container.client_id, container.uri, mirror)
            except ClientResourceError as error:
                container.failure = f"Cannot load the client plugin {container.uri}: {error}."
            except OSError as error:
                container.failure = f"Cannot load the client plugin {container.uri}: the host could not store it ({error.strerror})."
            else:
                container.loaded = plugins.load_plugin(mirror, name=container.name, data_root=self.config.data_path() / "plugins")
        if runtime.container(container.id) is not container or self.sessions.get(runtime.session) is not runtime:
            return  # replaced or removed meanwhile (a newer nonce, the client left)
        self.tree.publish(runtime, container)
        await self.servers.reconcile(runtime)

    # -- helpers -------------------------------------------------------------------------------

    def _reconcile_soon(self, runtime: SessionCustomizations) -> None:
        """Reconcile the session's MCP servers in the background (``wait_started`` runs it at once
        for a turn that starts before it did)."""
        runtime.reconciles_queued += 1
        self._spawn(self._queued_reconcile(runtime))

    async def _queued_reconcile(self, runtime: SessionCustomizations) -> None:
        try:
            await self.servers.reconcile(runtime)
        finally:
            runtime.reconciles_queued -= 1

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("customization task failed", exc_info=task.exception())



def _inside(uri: str | None, folder: str) -> bool:
    """Whether a ``file:`` URI names a path in ``folder``, as written or with symlinks resolved
    (a link in the folder to a plugin elsewhere is still something the folder brings)."""
    parsed = urlparse(uri or "")
    if parsed.scheme != "file" or parsed.netloc not in ("", "localhost"):
        return False
    path = unquote(parsed.path)
    return covers(folder, os.path.realpath(path)) or covers(folder, os.path.abspath(path))


def _relative(path: Path, folder: str | None) -> str:
    try:
        return str(path.resolve().relative_to(folder)) if folder else str(path)
    except ValueError:
        return str(path)


def _relative_uri(uri: str | None, folder: str | None) -> str:
    parsed = urlparse(uri or "")
    return _relative(Path(unquote(parsed.path)), folder) if parsed.scheme == "file" else str(uri)


def _command_line(spec: McpServerSpec) -> str:
    return spec.url or " ".join([spec.command or "", *spec.args]).strip()


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _file_name(ident: str) -> str:
    """A session id as a file name (ids are safe already; anything else is hashed)."""
    safe = all(c.isalnum() or c in "._-" for c in ident) and not ident.startswith(".") and len(ident) <= 128
    return ident if safe else hashlib.sha256(ident.encode("utf-8")).hexdigest()[:32]


def _notification(action: dict[str, Any], chat: dict[str, Any]) -> tuple[str, str] | None:
    """``(message, notification_type)`` of Claude Code's ``Notification`` event for a chat action
    that asks the user something: a tool call's confirmation (``permission_prompt``) or a question
    (``elicitation_dialog``; not the workspace trust question, which holds the folder's hooks)."""
    kind = action.get("type")
    if kind == "chat/toolCallReady" and action.get("confirmed") is None and action.get("options"):
        parts = ((chat.get("activeTurn") or {}).get("responseParts")) or ()
        call: dict[str, Any] = next((p["toolCall"] for p in parts if p.get("kind") == "toolCall"
                     and p["toolCall"].get("toolCallId") == action.get("toolCallId")), {})
        name = claude_name(str(call.get("toolName") or "a tool"))
        return f"The agent needs your permission to use {name}", "permission_prompt"
    if kind == "chat/inputRequested":
        request = action.get("request") or {}
        if str(request.get("id", "")).startswith(REQUEST_PREFIX):
            return None
        return str(request.get("message") or "The agent is asking for your input"), "elicitation_dialog"
    return None
