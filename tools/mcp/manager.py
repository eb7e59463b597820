"""The set of MCP servers a host (or one session) uses.

Contract:
* `McpManager(policy=..., inherit_env=..., ask=..., on_tools_changed=..., on_status=...,
  call_timeout=...)`. `await start(specs)` starts one `McpServerConnection` per spec (names
  must be unique) and returns without waiting for them; `await wait_ready(timeout)` waits
  until every server is running or failed; `await wait_started(grace, skip=...)` only until
  each server's first start attempt is over, and for none longer than `grace` seconds after
  it was launched (what a turn waits for: a slow or crashing server is not waited for), and
  not at all once the server's event in `released` is set (a client backgrounded its start).
  `await set_specs(specs)` reconciles: servers whose spec changed are restarted, removed ones
  stopped, new ones started. `await stop()` stops them all concurrently, within a few
  seconds; afterwards no server process is left. `call_timeout` is the deadline of a tool
  call on a server whose declaration sets no `timeout`.
* `tools()` is the current list of `McpTool`s over all running servers, named by
  `naming.allocate_names` (deterministic, unique, provider-safe), ordered by server then
  MCP tool order. `tool(name)` finds one. `statuses()` maps server name → `ServerStatus`.
* `on_tools_changed(tools)` receives the full new `tools()` list whenever any server's
  list changes (started, re-listed after `tools/list_changed`, failed, stopped); the host
  turns it into `session/serverToolsChanged`. `on_status(status)` sees every status
  change. `ask` answers elicitations that cannot be tied to a single running tool call.
* `roots`, `on_log`, `on_catalog_changed` and `oauth_dir` are passed to every connection (see
  `tools.mcp.connection`); `roots_changed()` tells every running server that the folders changed.
  `connection(name)` is the server of that name, if any (prompts, resources and logs are read
  from it).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path

from ..base import AskUser
from .connection import DEFAULT_CALL_TIMEOUT, McpServerConnection, RestartPolicy, ServerStatus
from .errors import McpConfigError
from .naming import allocate_names
from .specs import McpServerSpec
from .tool import McpTool

__all__ = ["McpManager"]

logger = logging.getLogger(__name__)


class McpManager:
    """Starts, tracks and stops MCP servers; exposes their tools under unique names."""

    def __init__(
        self,
        *,
        policy: RestartPolicy | None = None,
        inherit_env: bool = False,
        ask: AskUser | None = None,
        on_tools_changed: Callable[[list[McpTool]], Awaitable[None] | None] | None = None,
        on_status: Callable[[ServerStatus], Awaitable[None] | None] | None = None,
        reserved_names: Iterable[str] = (),
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        roots: Callable[[], Sequence[str | Path]] | None = None,
        on_log: Callable[[McpServerConnection], None] | None = None,
        on_catalog_changed: Callable[[McpServerConnection], Awaitable[None] | None] | None = None,
        oauth_dir: Path | None = None,
    ) -> None:
        self._policy = policy
        self._oauth_dir = oauth_dir
        self._roots = roots
        self._on_log = on_log
        self._on_catalog_changed = on_catalog_changed
        self._call_timeout = call_timeout
        self._inherit_env = inherit_env
        self._ask = ask
        self._on_tools_changed = on_tools_changed
        self._on_status = on_status
        self._reserved = tuple(reserved_names)
        self._connections: dict[str, McpServerConnection] = {}
        self._tools: list[McpTool] = []

    @property
    def connections(self) -> dict[str, McpServerConnection]:
        """Server name → connection (read-only view by convention)."""
        return dict(self._connections)

    def statuses(self) -> dict[str, ServerStatus]:
        """Server name → current status."""
        return {name: connection.status for name, connection in self._connections.items()}

    def connection(self, name: str) -> McpServerConnection | None:
        """The server called ``name``, if it is in the set."""
        return self._connections.get(name)

    def roots_changed(self) -> None:
        """Send ``notifications/roots/list_changed`` to every running server."""
        for connection in self._connections.values():
            connection.roots_changed()

    def tools(self) -> list[McpTool]:
        """Every tool of every running server, uniquely named."""
        return list(self._tools)

    def tool(self, name: str) -> McpTool | None:
        """The tool offered under `name`, if any."""
        return next((tool for tool in self._tools if tool.name == name), None)

    async def start(self, specs: Iterable[McpServerSpec]) -> None:
        """Start a server for each spec (see `set_specs` for changing the set later)."""
        specs = list(specs)
        names = [spec.name for spec in specs]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise McpConfigError(f"MCP server names must be unique; declared more than once: {', '.join(duplicates)}")
        for spec in specs:
            if spec.name in self._connections:
                raise McpConfigError(f"MCP server {spec.name!r} is already started")
            self._launch(spec)

    async def set_specs(self, specs: Iterable[McpServerSpec]) -> None:
        """Make the running set match `specs`: stop removed/changed, start new/changed."""
        wanted = {spec.name: spec for spec in specs}
        stale = [c for name, c in self._connections.items() if wanted.get(name) != c.spec]
        await asyncio.gather(*(self._stop_one(c) for c in stale))
        for spec in wanted.values():
            if spec.name not in self._connections:
                self._launch(spec)
        await self._rebuild_tools()

    async def wait_ready(self, timeout: float | None = None) -> dict[str, ServerStatus]:
        """Wait until each server is running or failed (or `timeout`); returns the statuses."""
        await asyncio.gather(*(c.wait_ready(timeout) for c in self._connections.values()))
        return self.statuses()

    async def wait_started(self, grace: float, *, skip: Iterable[str] = (),
                           released: Mapping[str, asyncio.Event] | None = None) -> dict[str, ServerStatus]:
        """Wait until each server's first start attempt is over, for none longer than ``grace``
        seconds after its launch; servers named in ``skip`` are not waited for, nor any longer a
        server whose event in ``released`` is set (its start goes on). Returns the statuses."""
        loop = asyncio.get_running_loop()
        skipped = set(skip)
        waits = []
        for name, connection in self._connections.items():
            left = (connection.launched_at or loop.time()) + grace - loop.time()
            if name not in skipped and left > 0:
                release = (released or {}).get(name)
                waits.append(connection.wait_tried(left) if release is None else _tried_or_released(connection, left, release))
        await asyncio.gather(*waits)
        return self.statuses()

    async def stop(self) -> None:
        """Stop every server; returns when their processes are gone."""
        connections = list(self._connections.values())
        await asyncio.gather(*(self._stop_one(c, rebuild=False) for c in connections))
        await self._rebuild_tools()

    async def __aenter__(self) -> McpManager:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def _launch(self, spec: McpServerSpec) -> None:
        connection = McpServerConnection(
            spec, policy=self._policy, inherit_env=self._inherit_env, ask=self._ask,
            on_status=self._on_status, on_tools_changed=self._server_tools_changed, call_timeout=self._call_timeout,
            roots=self._roots, on_log=self._on_log, on_catalog_changed=self._on_catalog_changed, oauth_dir=self._oauth_dir,
        )
        self._connections[spec.name] = connection
        connection.start()

    async def _stop_one(self, connection: McpServerConnection, rebuild: bool = True) -> None:
        self._connections.pop(connection.name, None)
        await connection.stop()
        if rebuild:
            await self._rebuild_tools()

    async def _server_tools_changed(self, connection: McpServerConnection) -> None:
        if self._connections.get(connection.name) is connection:
            await self._rebuild_tools()

    async def _rebuild_tools(self) -> None:
        live = [c for c in self._connections.values() if c.status.state not in ("failed", "stopped")]
        pairs = [(c.name, tool.name) for c in live for tool in c.tools]
        names = allocate_names(pairs, taken=self._reserved)
        tools = [McpTool(c, tool, names[(c.name, tool.name)]) for c in live for tool in c.tools]
        before = [t.definition() for t in self._tools]
        self._tools = tools
        if [t.definition() for t in tools] == before:
            return
        if self._on_tools_changed is not None:
            try:
                outcome = self._on_tools_changed(list(tools))
                if inspect.isawaitable(outcome):
                    await outcome
            except Exception:  # a host callback bug must not break the server set
                logger.exception("on_tools_changed callback failed")


async def _tried_or_released(connection: McpServerConnection, timeout: float, release: asyncio.Event) -> None:
    """Until ``connection``'s first start attempt is over, ``timeout`` passed or ``release`` is set."""
    if release.is_set():
        return
    tried = asyncio.ensure_future(connection.wait_tried(timeout))
    released = asyncio.ensure_future(release.wait())
    try:
        await asyncio.wait((tried, released), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in (tried, released):
            waiting.cancel()
