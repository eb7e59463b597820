"""The MCP servers of one session: one ``McpManager`` per session, reconciled with the specs the
session's enabled containers, the host config and the workspace ``.mcp.json`` declare.

Contract:
- ``SessionMcp.apply(specs, owners)`` makes the running set equal ``specs`` (changed ones restart,
  removed ones stop); ``owners`` maps a server name to the container id that declared it, so a
  server that fails degrades *that* container (naming the server and the cause) and recovering
  restores it.
- Whenever the tool list changes, ``session/serverToolsChanged`` is dispatched with the tools
  others published left as they were and this session's MCP tools replaced: the host's
  built-in tools and the MCP tools share ``serverTools`` without clobbering each other. Every
  listed tool marked ``_meta.mcpServer`` counts as this session's, so the MCP tools a previous
  host process left in a recovered session (it died without unpublishing them) are replaced too.
- A server that fails (to start, or for good after its restarts) is logged once and reported to its
  owner: the plugin that declared it, or the session's "MCP servers" container for servers from the
  host config and ``.mcp.json``, so it is visible in the session's customizations with its error.
  So is one that is restarting after a crash (the message says when it tries again), and one a turn
  stopped waiting for while it was still starting; the problem clears when the server is running
  (or stopped).
- ``wait_started(grace)`` is what a turn waits for: each server's first start attempt, for none
  longer than ``grace`` seconds after its launch, and not at all for a server whose start crashed,
  failed or hung before in this host (``unready``, shared by the host's sessions, keyed by name
  and command line; a server seen running is taken out of it). ``unavailable()`` describes, for
  the model, the servers that are not running and why.
- While a turn waits for a server, its entry shows ``{kind: "starting", blocking: true}`` (AHP
  0.9.0/1.0.0 ``McpServerStartingState.blocking``: its start holds back the turn). A client's
  ``session/mcpServerBackgroundRequested`` naming that entry (``background(entry id)``) lets the
  turn go on without it; the server keeps starting, and its tools come when it is up. Once the
  wait is over, a server still starting shows ``{kind: "starting"}`` (nothing waits for it).
- Each server's lifecycle is published on its ``mcpServer`` customization entry (the entry named
  like the server inside the container that declared it) with ``session/mcpServerStateChanged``:
  ``starting``, ``ready``, ``error`` (with the failure), ``stopped``; a state already shown is not
  sent again.
- Every MCP tool offered to a turn carries its ``contributor`` (``{kind: "mcp", customizationId}``,
  that entry's id), which ``chat/toolCallStart`` names.
- Elicitations that cannot be tied to one running call go to ``ask`` (a session input request),
  and so does the sign-in of a remote server that asks for OAuth (a question with the
  authorization ``url``; the URL is also the server's problem while it waits). Tokens are kept
  in ``oauth_dir`` (the host's data directory, ``mcp-oauth/``).
- Each server's prompts are slash entries (``prompt_entries()``, see ``mcp_prompts``) and the
  servers with resources or resource templates are ``resource_servers()`` (mentions and the
  resource tools, see ``mcp_resources``).
- Roots: every server is told the session's folders (its ``workingDirectories``, read from the
  store when asked) on ``roots/list``; ``roots_changed()`` notifies the running servers.
- What each server logged and how it is doing beyond its state (its last ``PUBLISHED_LOG`` log
  entries, each cut at ``PUBLISHED_TEXT`` characters, its prompts, resource counts, the tools not offered and why) is published as the
  ``_meta`` of its ``mcpServer`` entry through ``on_meta(container id, server, meta)``, at most
  once per ``META_INTERVAL`` seconds per session, so a chatty server cannot flood the clients.
- ``stop()`` returns when every server process is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ahp.protocol import builders
from host import startup
from host.resources.workdirs import directory_of
from host.runtime.customizations.mcp_prompts import McpPrompt, argument_hint
from host.state.store import Store
from tools.base import AskUser
from tools.mcp.errors import McpRequestError
from tools.mcp.naming import allocate_names, namespaced_name

if TYPE_CHECKING:
    from tools.mcp import McpManager, McpServerConnection, McpServerSpec, McpTool, RestartPolicy, ServerStatus

__all__ = ["SessionMcp"]

logger = logging.getLogger(__name__)

ProblemSink = Callable[[str, str, "str | None"], None]
"""``(container id, key, message or None when healed)``."""
MetaSink = Callable[[str, str, "dict[str, Any]"], None]
"""``(container id, server name, the _meta of its mcpServer entry)``."""

PUBLISHED_LOG = 20
"""Log entries of a server published in its entry's ``_meta`` (the connection keeps more)."""
PUBLISHED_TEXT = 300
"""Characters of one published log entry (the connection keeps up to 1000)."""
META_INTERVAL = 1.0
"""Seconds between two publications of the servers' ``_meta`` in one session, at least."""


class SessionMcp:
    """MCP servers started for one session."""

    def __init__(self, session: str, store: Store, *, ask: AskUser, on_problem: ProblemSink,
                 policy: RestartPolicy | None = None, call_timeout: float | None = None,
                 unready: set[str] | None = None, on_meta: MetaSink | None = None, oauth_dir: Path | None = None) -> None:
        self.session = session
        self._oauth_dir = oauth_dir
        self._on_meta = on_meta
        self._meta_dirty: set[str] = set()
        self._meta_timer: asyncio.TimerHandle | None = None
        self._meta_last = float("-inf")
        self._store = store
        self._on_problem = on_problem
        self._owners: dict[str, str] = {}
        self._published: set[str] = set()
        self._reported: set[str] = set()
        self._policy = policy
        self._call_timeout = call_timeout
        self._unready = unready if unready is not None else set()
        self._ask = ask
        self._waited: dict[str, asyncio.Event] = {}
        """The servers a turn waits for now → set once a client backgrounded their start."""
        self._waiters = 0
        """Turns of this session waiting in ``wait_started`` now."""
        self._quiet = False
        """Set by ``stop(publish=False)``: nothing more is dispatched for the session (another
        process of a cluster runs it now, and the log would refuse it)."""
        self.manager: McpManager | None = None
        """Created when the session first has an MCP server: the MCP SDK is imported then, in a
        thread (about half a second), so hosts and sessions without MCP servers never pay it."""

    def tools(self) -> list[McpTool]:
        tools = self.manager.tools() if self.manager is not None else []
        for tool in tools:
            entry = self._entry_id(tool.server_name)
            tool.contributor = {"kind": "mcp", "customizationId": entry} if entry is not None else None
        return tools

    def _entry_id(self, server: str) -> str | None:
        """The id of the ``mcpServer`` customization entry of ``server`` in its owner's container."""
        owner = self._owners.get(server)
        for container in (self._store.state(self.session) or {}).get("customizations") or ():
            if not isinstance(container, dict) or (owner is not None and container.get("id") != owner):
                continue
            for child in container.get("children") or ():
                if isinstance(child, dict) and child.get("type") == "mcpServer" and child.get("name") == server:
                    return child.get("id")
        return None

    def _publish_state(self, server: str, state: dict[str, Any]) -> None:
        entry = self._entry_id(server)
        if entry is None or self._quiet or self.session not in self._store:
            return
        for container in (self._store.state(self.session) or {}).get("customizations") or ():
            for child in (container.get("children") or ()) if isinstance(container, dict) else ():
                if isinstance(child, dict) and child.get("id") == entry and child.get("state") == state:
                    return
        self._store.dispatch(self.session, builders.session_mcp_server_state_changed(id=entry, state=state))

    # -- prompts, resources, roots, logs --------------------------------------------------------

    def _running(self) -> list[McpServerConnection]:
        if self.manager is None:
            return []
        return [c for c in self.manager.connections.values() if c.status.state == "running"]

    def prompt_entries(self) -> list[McpPrompt]:
        """Every prompt of every running server, as a slash target (``mcp__<server>__<prompt>``)."""
        connections = self._running()
        names = allocate_names([(c.name, p.name) for c in connections for p in c.prompts])
        entries = []
        for connection in connections:
            for prompt in connection.prompts:
                arguments = tuple((a.name, bool(a.required)) for a in prompt.arguments or ())
                entries.append(McpPrompt(server=connection.name, mcp_name=prompt.name, name=names[(connection.name, prompt.name)],
                                         description=prompt.description or prompt.title, arguments=arguments,
                                         argument_hint=argument_hint(arguments)))
        return entries

    async def get_prompt(self, prompt: McpPrompt, arguments: dict[str, str]) -> Any:
        """``prompts/get`` on the prompt's server; raises ``McpRequestError``."""
        connection = self.manager.connection(prompt.server) if self.manager is not None else None
        if connection is None:
            raise McpRequestError(f"The MCP server '{prompt.server}' is not part of this session any more.")
        return await connection.get_prompt(prompt.mcp_name, arguments)

    def resource_servers(self) -> dict[str, McpServerConnection]:
        """The running servers that list resources or resource templates, by name."""
        return {c.name: c for c in self._running() if c.resources or c.resource_templates}

    def roots(self) -> list[Path]:
        """The session's folders: its working directories, first the primary one."""
        folders: list[Path] = []
        for uri in (self._store.state(self.session) or {}).get("workingDirectories") or ():
            path = directory_of(uri) if isinstance(uri, str) else None
            if path is not None and path not in folders:
                folders.append(path)
        return folders

    def roots_changed(self) -> None:
        if self.manager is not None:
            self.manager.roots_changed()

    def _meta_changed(self, server: str) -> None:
        if self._on_meta is None:
            return
        self._meta_dirty.add(server)
        if self._meta_timer is not None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, self._meta_last + META_INTERVAL - loop.time())
        self._meta_timer = loop.call_later(delay, self._publish_meta)

    def _publish_meta(self) -> None:
        self._meta_timer = None
        self._meta_last = asyncio.get_running_loop().time()
        dirty, self._meta_dirty = self._meta_dirty, set()
        if self.manager is None or self._on_meta is None:
            return
        for server in sorted(dirty):
            connection = self.manager.connection(server)
            owner = self._owners.get(server)
            if connection is not None and owner is not None:
                self._on_meta(owner, server, server_meta(connection))

    def statuses(self) -> dict[str, ServerStatus]:
        return self.manager.statuses() if self.manager is not None else {}

    async def apply(self, specs: list[McpServerSpec], owners: dict[str, str]) -> None:
        healed = [name for name in self._owners if name not in {spec.name for spec in specs}]
        for name in healed:
            self._on_problem(self._owners[name], f"mcp:{name}", None)
        self._owners = dict(owners)
        if self.manager is None:
            if not specs:
                return
            manager_module = await asyncio.to_thread(startup.load, "tools.mcp.manager")
            if self.manager is None:  # another apply may have created it meanwhile
                timeout = {} if self._call_timeout is None else {"call_timeout": self._call_timeout}
                self.manager = manager_module.McpManager(
                    policy=self._policy, ask=self._ask, on_tools_changed=self._tools_changed, on_status=self._status,
                    roots=self.roots, on_log=lambda c: self._meta_changed(c.name),
                    on_catalog_changed=lambda c: self._meta_changed(c.name), oauth_dir=self._oauth_dir, **timeout,
                )
        await self.manager.set_specs(specs)

    async def wait_ready(self, timeout: float | None = None) -> dict[str, ServerStatus]:
        return await self.manager.wait_ready(timeout) if self.manager is not None else {}

    async def wait_started(self, grace: float) -> None:
        """What a turn waits for (see the module contract); servers still starting afterwards are
        reported as such to their owners and remembered as slow to start."""
        if self.manager is None:
            return
        connections = self.manager.connections
        skip = [name for name, connection in connections.items() if _key(connection.spec) in self._unready]
        # (Two chats' turns may wait at once: they share a server's event, so backgrounding it frees both.)
        waited = {name: self._waited.get(name) or asyncio.Event() for name, connection in connections.items()
                  if name not in skip and connection.status.state == "starting"}
        self._waited.update(waited)
        self._waiters += 1
        for name in waited:
            self._publish_state(name, {"kind": "starting", "blocking": True})
        try:
            statuses = await self.manager.wait_started(grace, skip=skip, released=waited)
        finally:
            self._waiters -= 1
            if not self._waiters:
                self._waited = {}
                for name in waited:  # nothing waits for them now
                    status = self.manager.statuses().get(name) if self.manager is not None else None
                    if status is not None:
                        self._publish_state(name, _server_state(status))
        for name, status in statuses.items():
            if status.state != "starting":
                continue
            connection = self.manager.connections.get(name)
            if connection is not None:
                self._unready.add(_key(connection.spec))
            owner = self._owners.get(name)
            if owner is not None:  # (one waiting for a sign-in keeps saying so, with its link)
                self._on_problem(owner, f"mcp:{name}", status.message or f"MCP server {name!r} is still starting; "
                                 "its tools are added once it is up.")

    def background(self, entry_id: Any) -> bool:
        """A client asked to stop holding the turn on the server of customization entry
        ``entry_id`` (``session/mcpServerBackgroundRequested``); False when no wait holds on it."""
        for name, released in self._waited.items():
            if self._entry_id(name) == entry_id and not released.is_set():
                released.set()
                return True
        return False

    def unavailable(self) -> list[str]:
        """A sentence per server of this session that is starting, restarting or failed."""
        lines = []
        for name, status in self.statuses().items():
            if status.state == "starting":
                lines.append(f"MCP server {name!r} is still starting" + (" (waiting for the user to sign in)."
                                                                          if status.message else "."))
            elif status.state in ("restarting", "failed"):
                lines.append(status.message or f"MCP server {name!r} is {status.state}.")
        return lines

    async def stop(self, *, publish: bool = True) -> None:
        """Stop the servers (their processes end) and publish them ``stopped``; with ``publish``
        false, dispatch nothing for the session from now on (a cluster's process that lost it:
        the process that runs it now publishes its own servers)."""
        if not publish:
            self._quiet = True
        if self._meta_timer is not None:
            self._meta_timer.cancel()
            self._meta_timer = None
        if self.manager is not None:
            await self.manager.stop()
            for server in self._owners:
                self._publish_state(server, {"kind": "stopped"})

    def unpublish(self) -> None:
        """Take this session's MCP tools out of ``serverTools`` (its servers were stopped)."""
        self._tools_changed([])

    def _status(self, status: ServerStatus) -> None:
        self._meta_changed(status.name)
        connection = self.manager.connections.get(status.name) if self.manager is not None else None
        if connection is not None:
            if status.state in ("failed", "restarting"):
                self._unready.add(_key(connection.spec))
            elif status.state == "running":
                self._unready.discard(_key(connection.spec))
        owner = self._owners.get(status.name)
        if owner is None:
            return
        state = _server_state(status)
        released = self._waited.get(status.name)
        if state["kind"] == "starting" and released is not None and not released.is_set():
            state["blocking"] = True  # a turn still waits for it
        self._publish_state(status.name, state)
        if status.state == "starting" and status.message:  # waiting for the user to sign in
            self._on_problem(owner, f"mcp:{status.name}", status.message)
        elif status.state == "restarting":
            self._on_problem(owner, f"mcp:{status.name}", status.message or f"MCP server {status.name!r} is restarting.")
        elif status.state == "stopped":
            self._on_problem(owner, f"mcp:{status.name}", None)
        elif status.state == "failed":
            cause = (status.message or "").removeprefix(f"MCP server {status.name!r} ")  # named once, not twice
            message = f"MCP server {status.name!r} failed: {cause or 'unknown cause'}"
            if status.name not in self._reported:  # once per failure, not once per retry or turn
                self._reported.add(status.name)
                logger.warning("session %s: %s", self.session, message)
            self._on_problem(owner, f"mcp:{status.name}", message)
        elif status.state == "running":
            self._reported.discard(status.name)
            self._on_problem(owner, f"mcp:{status.name}", None)

    def _tools_changed(self, tools: list[McpTool]) -> None:
        state = self._store.state(self.session)
        if state is None or self._quiet:
            return
        # Any MCP tool already listed is this session's (only this object publishes them), including
        # tools a previous host process left in the recovered state: replace them all, keep the rest.
        others = [tool for tool in state.get("serverTools") or []
                  if tool.get("name") not in self._published and not _is_mcp(tool)]
        mine = [tool.definition() for tool in tools]
        self._published = {tool["name"] for tool in mine}
        merged = others + [tool for tool in mine if tool["name"] not in {o.get("name") for o in others}]
        self._store.dispatch(self.session, builders.session_server_tools_changed(tools=merged))


def server_meta(connection: McpServerConnection) -> dict[str, Any]:
    """The ``_meta`` of a server's ``mcpServer`` entry: its recent log, prompts, resources and the
    tools it lists that are not offered (and why)."""
    entries = connection.log.entries()
    published = []
    for entry in entries[-PUBLISHED_LOG:]:
        wire = entry.wire()
        if len(wire["text"]) > PUBLISHED_TEXT:
            wire["text"] = wire["text"][: PUBLISHED_TEXT - 1] + "…"
        published.append(wire)
    meta: dict[str, Any] = {"log": published, "logKept": len(entries)}
    if connection.prompts:
        meta["prompts"] = [namespaced_name(connection.name, prompt.name) for prompt in connection.prompts]
    if connection.resources or connection.resource_templates:
        meta["resources"] = len(connection.resources)
        meta["resourceTemplates"] = len(connection.resource_templates)
    if connection.status.not_offered:
        meta["notOffered"] = [{"tool": name, "reason": reason} for name, reason in connection.status.not_offered]
    return meta


def _key(spec: McpServerSpec) -> str:
    """Which server a spec starts, for remembering across sessions that it is slow or broken."""
    return f"{spec.name}\0{spec.describe()}\0{spec.cwd}"


def _server_state(status: ServerStatus) -> dict[str, Any]:
    """An ``McpServerState`` for a server's status."""
    if status.state == "running":
        return {"kind": "ready"}
    if status.state == "failed":
        return {"kind": "error", "error": {"errorType": "mcpServerFailed", "message": status.message or "The MCP server failed."}}
    if status.state == "stopped":
        return {"kind": "stopped"}
    return {"kind": "starting"}


def _is_mcp(tool: dict[str, Any]) -> bool:
    meta = tool.get("_meta")
    return isinstance(meta, dict) and "mcpServer" in meta
