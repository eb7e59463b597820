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
- Each server's lifecycle is published on its ``mcpServer`` customization entry (the entry named
  like the server inside the container that declared it) with ``session/mcpServerStateChanged``:
  ``starting``, ``ready``, ``error`` (with the failure), ``stopped``; a state already shown is not
  sent again.
- Every MCP tool offered to a turn carries its ``contributor`` (``{kind: "mcp", customizationId}``,
  that entry's id), which ``chat/toolCallStart`` names.
- Elicitations that cannot be tied to one running call go to ``ask`` (a session input request).
- ``stop()`` returns when every server process is gone.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ahp.protocol import builders
from host.state.store import Store
from tools.base import AskUser

if TYPE_CHECKING:
    from tools.mcp import McpManager, McpServerSpec, McpTool, RestartPolicy, ServerStatus

__all__ = ["SessionMcp"]

logger = logging.getLogger(__name__)

ProblemSink = Callable[[str, str, "str | None"], None]
"""``(container id, key, message or None when healed)``."""


class SessionMcp:
    """MCP servers started for one session."""

    def __init__(self, session: str, store: Store, *, ask: AskUser, on_problem: ProblemSink,
                 policy: RestartPolicy | None = None, call_timeout: float | None = None,
                 unready: set[str] | None = None) -> None:
        self.session = session
        self._store = store
        self._on_problem = on_problem
        self._owners: dict[str, str] = {}
        self._published: set[str] = set()
        self._reported: set[str] = set()
        self._policy = policy
        self._call_timeout = call_timeout
        self._unready = unready if unready is not None else set()
        self._ask = ask
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
        if entry is None or self.session not in self._store:
            return
        for container in (self._store.state(self.session) or {}).get("customizations") or ():
            for child in (container.get("children") or ()) if isinstance(container, dict) else ():
                if isinstance(child, dict) and child.get("id") == entry and child.get("state") == state:
                    return
        self._store.dispatch(self.session, builders.session_mcp_server_state_changed(id=entry, state=state))

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
            manager_module = await asyncio.to_thread(importlib.import_module, "tools.mcp.manager")
            if self.manager is None:  # another apply may have created it meanwhile
                timeout = {} if self._call_timeout is None else {"call_timeout": self._call_timeout}
                self.manager = manager_module.McpManager(
                    policy=self._policy, ask=self._ask, on_tools_changed=self._tools_changed, on_status=self._status,
                    **timeout,
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
        statuses = await self.manager.wait_started(grace, skip=skip)
        for name, status in statuses.items():
            if status.state != "starting":
                continue
            connection = self.manager.connections.get(name)
            if connection is not None:
                self._unready.add(_key(connection.spec))
            owner = self._owners.get(name)
            if owner is not None:
                self._on_problem(owner, f"mcp:{name}", f"MCP server {name!r} is still starting; "
                                 "its tools are added once it is up.")

    def unavailable(self) -> list[str]:
        """A sentence per server of this session that is starting, restarting or failed."""
        lines = []
        for name, status in self.statuses().items():
            if status.state == "starting":
                lines.append(f"MCP server {name!r} is still starting.")
            elif status.state in ("restarting", "failed"):
                lines.append(status.message or f"MCP server {name!r} is {status.state}.")
        return lines

    async def stop(self) -> None:
        if self.manager is not None:
            await self.manager.stop()
            for server in self._owners:
                self._publish_state(server, {"kind": "stopped"})

    def unpublish(self) -> None:
        """Take this session's MCP tools out of ``serverTools`` (its servers were stopped)."""
        self._tools_changed([])

    def _status(self, status: ServerStatus) -> None:
        connection = self.manager.connections.get(status.name) if self.manager is not None else None
        if connection is not None:
            if status.state in ("failed", "restarting"):
                self._unready.add(_key(connection.spec))
            elif status.state == "running":
                self._unready.discard(_key(connection.spec))
        owner = self._owners.get(status.name)
        if owner is None:
            return
        self._publish_state(status.name, _server_state(status))
        if status.state == "restarting":
            self._on_problem(owner, f"mcp:{status.name}", status.message or f"MCP server {status.name!r} is restarting.")
        elif status.state == "stopped":
            self._on_problem(owner, f"mcp:{status.name}", None)
        elif status.state == "failed":
            message = f"MCP server {status.name!r} failed: {status.message or 'unknown cause'}"
            if status.name not in self._reported:  # once per failure, not once per retry or turn
                self._reported.add(status.name)
                logger.warning("session %s: %s", self.session, message)
            self._on_problem(owner, f"mcp:{status.name}", message)
        elif status.state == "running":
            self._reported.discard(status.name)
            self._on_problem(owner, f"mcp:{status.name}", None)

    def _tools_changed(self, tools: list[McpTool]) -> None:
        state = self._store.state(self.session)
        if state is None:
            return
        # Any MCP tool already listed is this session's (only this object publishes them), including
        # tools a previous host process left in the recovered state: replace them all, keep the rest.
        others = [tool for tool in state.get("serverTools") or []
                  if tool.get("name") not in self._published and not _is_mcp(tool)]
        mine = [tool.definition() for tool in tools]
        self._published = {tool["name"] for tool in mine}
        merged = others + [tool for tool in mine if tool["name"] not in {o.get("name") for o in others}]
        self._store.dispatch(self.session, builders.session_server_tools_changed(tools=merged))


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
