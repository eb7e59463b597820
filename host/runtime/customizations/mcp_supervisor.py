"""The supervisor of every session's MCP servers: it carries out the lifetime table.

``McpSupervisor`` owns what runs: the servers each session declares (the host config's, then the
workspace ``.mcp.json``'s in a trusted folder, then its enabled plugins'), their ``SessionMcp``,
the per-session lock their starts and stops take, and the idle countdown. When they start and
stop is ``host.runtime.customizations.mcp_lifetime``'s table (``step`` moves a session along it and
the caller carries out the effects it returns; the supervisor carries out its own). It publishes
nothing by itself: the "MCP servers" container and a server's problems and ``_meta`` go through the
``publish`` it is given, and its background work through ``spawn``; ``live`` says whether a
session is still open (a session closed meanwhile is left alone).

Contract (see ``CustomizationService`` for the whole): a session's servers start with its first
turn (``TURN_STARTED``), or at open with ``[mcp] start = "session"``, and stop ``[mcp] idle_stop``
seconds after its last turn ended (``turn_ended``), or ``[mcp] unwatched_stop`` seconds after it
with no client connected (``unwatched``; in a cluster, no client of any process: ``watched`` on
the log, asked again every ``unwatched_stop`` seconds while one is), when a client asks (``stop_requested``), or when the
session closes. A server that crashed or hung at start in this host (``unready``, shared by the
sessions) is not waited for by a turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import plugins
from ahp.state import default_chat_uri
from ahp.workspace_trust import WAITING
from host.config import HostConfig
from host.errors import ConfigError
from host.runtime.customizations._containers import MCP_SERVERS_ID, Container, McpServersContainer
from host.runtime.customizations.mcp import SessionMcp
from host.runtime.customizations.mcp_declarations import spec_from_plugin, specs_from_config, specs_from_mcp_json
from host.runtime.customizations.mcp_lifetime import (
    IDLE_SLACK,
    Effect,
    Event,
    Phase,
    Transition,
    idle_due,
    idle_limit,
    step,
)
from host.runtime.customizations.session import SessionCustomizations
from host.runtime.inputs import InputRequests
from host.state.store import Store
from tools.mcp import McpConfigError, McpServerSpec, merge_specs

if TYPE_CHECKING:
    from tools.mcp import RestartPolicy

__all__ = ["McpSupervisor"]

logger = logging.getLogger("host.runtime.customizations.service")
"""(The service's logger: what it logs about servers reads as it did before the split.)"""


class McpSupervisor:
    """The MCP servers of every open session, started and stopped as the lifetime table says."""

    def __init__(
        self, config: HostConfig, store: Store, *, inputs: InputRequests, policy: RestartPolicy | None,
        publish: Callable[[SessionCustomizations, Container], None],
        spawn: Callable[[Coroutine[Any, Any, Any]], None],
        live: Callable[[SessionCustomizations], bool],
    ) -> None:
        self.config = config
        self.store = store
        self.inputs = inputs
        """The host's input requests (MCP elicitation asks the user through them)."""
        self.mcp_policy = policy
        self._publish = publish
        self._spawn = spawn
        self._live = live
        self._locks: dict[str, asyncio.Lock] = {}
        """One per session: its servers' starts and stops one at a time."""
        self._mcp_unready: set[str] = set()
        """MCP servers (by name and command line) that crashed, failed or hung at start in this host:
        a turn does not wait for them (shared by the sessions)."""
        try:
            self.config_specs: list[McpServerSpec] = specs_from_config(config.mcp.servers, base_dir=config_dir(config))
        except McpConfigError as error:
            raise ConfigError(f"invalid configuration ({config.source}): mcp.servers: {error}") from None

    def mcp_specs(self, runtime: SessionCustomizations) -> tuple[list[McpServerSpec], dict[str, str]]:
        """Config, then workspace ``.mcp.json``, then enabled plugins (later wins on a name)."""
        workspace = self.workspace_specs(runtime) if runtime.folder_trusted else []
        owners: dict[str, str] = {}
        plugin_specs = []
        for container in runtime.containers:
            loaded = container.usable
            if not isinstance(loaded, plugins.LoadedPlugin):
                continue
            for server in loaded.mcp_servers:
                try:
                    plugin_specs.append(spec_from_plugin(server, loaded.name))
                except McpConfigError as error:
                    container.problems[f"mcp:{server.name}"] = str(error)
                    continue
                owners[server.name] = container.id
        specs = merge_specs(self.config_specs, workspace, plugin_specs)
        return specs, {spec.name: owners[spec.name] if spec.source.startswith("plugin") else MCP_SERVERS_ID
                       for spec in specs if spec.name in owners or not spec.source.startswith("plugin")}

    def workspace_specs(self, runtime: SessionCustomizations) -> list[McpServerSpec]:
        """The servers of the workspace ``.mcp.json`` (they run only in a trusted folder)."""
        if not self.config.plugins.workspace or runtime.working_directory is None:
            return []
        try:
            return specs_from_mcp_json(runtime.working_directory / ".mcp.json")
        except McpConfigError as error:
            logger.warning("%s", error)
            return []

    def turn_ended(self, runtime: SessionCustomizations) -> None:
        """Start the idle clock of the session's MCP servers (``[mcp] idle_stop``, or
        ``unwatched_stop`` when no client is connected to the session)."""
        self._idle_effects(runtime, self.step(runtime, Event.TURN_ENDED))

    def unwatched(self, runtime: SessionCustomizations) -> None:
        """No client is connected to the session any more: its servers stop ``[mcp] unwatched_stop``
        seconds after its last turn (or now, if that is longer ago)."""
        self._idle_effects(runtime, self.step(runtime, Event.UNWATCHED))

    @property
    def eager(self) -> bool:
        """Whether sessions want their servers from the start (``[mcp] start = "session"``)."""
        return self.config.mcp.start == "session"

    def step(self, runtime: SessionCustomizations, event: Event) -> Transition:
        """Move the session's servers along the lifetime table (``mcp_lifetime``); the caller
        carries out the effects it returns."""
        phase = Phase.RUNNING if runtime.mcp is not None else Phase.WANTED if runtime.mcp_wanted else Phase.DORMANT
        transition = step(phase, event)
        runtime.mcp_wanted = transition.phase in (Phase.WANTED, Phase.RUNNING)
        return transition

    def _idle_effects(self, runtime: SessionCustomizations, transition: Transition) -> None:
        if Effect.MARK_IDLE in transition.effects or (Effect.MARK_IDLE_IF_UNSET in transition.effects and runtime.idle_since is None):
            runtime.idle_since = asyncio.get_running_loop().time()
        if Effect.ARM_IDLE in transition.effects:
            self._arm_idle_stop(runtime)

    def _idle_limit(self, runtime: SessionCustomizations) -> float | None:
        """Seconds of idleness after which the session's servers stop; None: never."""
        return idle_limit(self.config.mcp.idle_stop, self.config.mcp.unwatched_stop,
                          watched=self.store.has_subscribers(runtime.session))

    def _arm_idle_stop(self, runtime: SessionCustomizations) -> None:
        self.cancel_idle_stop(runtime)
        loop = asyncio.get_running_loop()
        delay = idle_due(runtime.idle_since, self._idle_limit(runtime), loop.time())
        if delay is not None:
            runtime.idle_stop = loop.call_later(delay, lambda: self._spawn(self._stop_idle(runtime)))

    def cancel_idle_stop(self, runtime: SessionCustomizations) -> None:
        if runtime.idle_stop is not None:
            runtime.idle_stop.cancel()
            runtime.idle_stop = None

    async def _stop_idle(self, runtime: SessionCustomizations) -> None:
        lock = self._locks.setdefault(runtime.session, asyncio.Lock())
        async with lock:
            state = self.store.state(default_chat_uri(runtime.session)) or {}
            if not self._live(runtime) or runtime.mcp is None or state.get("activeTurn"):
                return
            limit = self._idle_limit(runtime)
            idle_for = asyncio.get_running_loop().time() - (runtime.idle_since or 0.0)
            if limit is None or idle_for < limit - IDLE_SLACK:  # a client came back meanwhile: the longer limit applies
                self._arm_idle_stop(runtime)
                return
            if await self._watched_elsewhere(runtime, idle_for):
                return
            logger.info("session %s: stopping its MCP servers after %g s without a turn%s", runtime.session, idle_for,
                        "" if self.store.has_subscribers(runtime.session) else " or a client")
            await self.stop_servers(runtime, self.step(runtime, Event.IDLE_ELAPSED))

    async def _watched_elsewhere(self, runtime: SessionCustomizations, idle_for: float) -> bool:
        """Whether a client of another process of a cluster watches the session, which no client
        here watches (its turns may run here, forwarded): if so, and ``[mcp] idle_stop`` is not
        due either, the servers keep running and the question is asked again ``unwatched_stop``
        seconds later (another process does not say when its last client left), so they stop
        at most that long after the last watcher anywhere left."""
        watched = getattr(self.store.log, "watched", None)
        unwatched_stop = self.config.mcp.unwatched_stop
        if watched is None or not unwatched_stop or self.store.has_subscribers(runtime.session):
            return False
        if not await watched(runtime.session):
            return False
        if not self._live(runtime) or runtime.mcp is None:
            return True  # (closed or stopped meanwhile: nothing to keep running)
        limit = idle_limit(self.config.mcp.idle_stop, unwatched_stop, watched=True)
        if limit is not None and idle_for >= limit - IDLE_SLACK:
            return False  # idle for longer than a watched session's servers are kept
        delay = unwatched_stop if limit is None else min(unwatched_stop, limit - idle_for)
        self.cancel_idle_stop(runtime)
        runtime.idle_stop = asyncio.get_running_loop().call_later(delay, lambda: self._spawn(self._stop_idle(runtime)))
        return True

    async def stop_servers(self, runtime: SessionCustomizations, transition: Transition) -> None:
        """Carry out a transition's ``STOP``: the servers end and their published state is withdrawn."""
        if Effect.STOP in transition.effects and runtime.mcp is not None:
            mcp, runtime.mcp = runtime.mcp, None
            await mcp.stop()
            mcp.unpublish()

    async def stop_quietly(self, runtime: SessionCustomizations) -> None:
        """End the session's servers (after a start or stop under way) without publishing them
        stopped: another process of a cluster runs the session now (``CustomizationService.let_go``;
        the session is closed here already, so nothing starts them again)."""
        lock = self._locks.setdefault(runtime.session, asyncio.Lock())
        async with lock:
            if runtime.mcp is not None:
                mcp, runtime.mcp = runtime.mcp, None
                await mcp.stop(publish=False)

    async def apply(self, runtime: SessionCustomizations) -> None:
        specs, owners = self.mcp_specs(runtime)
        if runtime.settings_env:
            specs = [replace(spec, env={**runtime.settings_env, **spec.env}) for spec in specs]
        held = [] if runtime.folder_trusted else self.workspace_specs(runtime)
        self._publish_mcp_servers(runtime, [spec for spec in specs if owners.get(spec.name) == MCP_SERVERS_ID], held)
        if not runtime.mcp_wanted:
            return
        if runtime.mcp is None:
            if not specs:
                return
            runtime.mcp = SessionMcp(
                runtime.session, self.store, policy=self.mcp_policy, call_timeout=self.config.mcp.call_timeout,
                unready=self._mcp_unready,
                ask=lambda request: self.inputs.ask(runtime.session, request),
                on_problem=lambda container_id, key, message: self._problem(runtime, container_id, key, message),
                on_meta=lambda container_id, server, meta: self._server_meta(runtime, container_id, server, meta),
                oauth_dir=self.config.data_path() / "mcp-oauth",
            )
            self.step(runtime, Event.LAUNCHED)
        await runtime.mcp.apply(specs, owners)

    def _publish_mcp_servers(self, runtime: SessionCustomizations, specs: list[McpServerSpec],
                             held: list[McpServerSpec]) -> None:
        """List the config and ``.mcp.json`` servers as a container, so their failures show, and
        the ``.mcp.json`` servers that wait for the folder to be trusted (``held``)."""
        found = runtime.container(MCP_SERVERS_ID)
        container = found if isinstance(found, McpServersContainer) else None  # the one container with that id
        if not specs and not held and container is None:
            return
        declared = []
        for spec in [*specs, *held]:
            where = spec.source if spec.source not in ("config", "") else (self.config.source or "").split(" + ")[0]
            path = Path(where) if where and not where.startswith("<") else None
            declared.append((spec.name, path.resolve().as_uri() if path is not None and path.is_absolute() else (
                runtime.working_directory.as_uri() if runtime.working_directory is not None else "file:///")))
        if container is None:
            home = runtime.working_directory.as_uri() if runtime.working_directory is not None else "file:///"
            container = McpServersContainer(id=MCP_SERVERS_ID, loaded=None, name="MCP servers", uri=home)
            runtime.containers.append(container)
        container.servers = declared
        container.held = (f"{WAITING}: the .mcp.json servers {', '.join(repr(spec.name) for spec in held)} start once you "
                          f"trust {runtime.folder}") if held else None
        self._publish(runtime, container)

    def _problem(self, runtime: SessionCustomizations, container_id: str, key: str, message: str | None) -> None:
        container = runtime.container(container_id)
        if container is None or not self._live(runtime):
            return
        before = dict(container.problems)
        if message is None:
            container.problems.pop(key, None)
        else:
            container.problems[key] = message
        if container.problems != before:
            self._publish(runtime, container)

    def _server_meta(self, runtime: SessionCustomizations, container_id: str, server: str, meta: dict[str, Any]) -> None:
        """A server's log, prompts and resources changed: re-publish its entry's ``_meta``."""
        container = runtime.container(container_id)
        if container is None or not self._live(runtime) or container.server_meta.get(server) == meta:
            return
        container.server_meta[server] = meta
        self._publish(runtime, container)

    async def stop_requested(self, runtime: SessionCustomizations, customization_id: Any) -> None:
        """A client asked to stop one MCP server: stop the session's servers (they start again
        with the next turn, or a start request)."""
        lock = self._locks.setdefault(runtime.session, asyncio.Lock())
        async with lock:
            if not self._live(runtime) or runtime.mcp is None:
                return
            logger.info("session %s: stopping its MCP servers as a client asked (%s)", runtime.session, customization_id)
            await self.stop_servers(runtime, self.step(runtime, Event.STOP_REQUESTED))

    async def reconcile(self, runtime: SessionCustomizations) -> None:
        lock = self._locks.setdefault(runtime.session, asyncio.Lock())
        async with lock:
            if self._live(runtime):
                await self.apply(runtime)


def config_dir(config: HostConfig) -> Path | None:
    """The folder of the host's config file (relative server paths are resolved from it)."""
    source = (config.source or "").split(" + ")[0]
    path = Path(source)
    return path.parent.resolve() if source and not source.startswith("<") and path.is_file() else None
