"""One MCP server, owned by one long-lived task.

Contract:
* `McpServerConnection(spec, ...)`; `start()` spawns the owner task and returns at once;
  `wait_ready(timeout)` waits until the server is `running` or `failed`; `wait_tried(timeout)`
  only until its first start attempt is over (`running`, or `restarting`/`failed` after a
  crash: a turn does not wait through the restarts). `stop()` ends it within a few seconds,
  even in the middle of a start (a server that never answers `initialize` is not waited
  for): no process of it is left. The owner task is the only task that enters and leaves the SDK's transport and
  session contexts (their anyio cancel scopes must be entered and exited in one task);
  everything else talks to it through a queue.
* The owner: opens the transport (stdio child process, streamable HTTP or SSE), runs the
  `initialize` handshake, lists the tools (all pages), reports `running`, then serves
  queued calls concurrently until it is stopped or the connection ends.
* Status (`ServerStatus`): `starting` → `running`; on a crash `restarting` (the message
  says what happened and when the next attempt is) → `running` again; `failed` when the
  server cannot be started at all (missing command, bad working directory) or kept
  crashing past `RestartPolicy.max_restarts`; `stopped` after `stop()`. Restarts back
  off exponentially (`initial_delay` × `factor`ⁿ, capped at `max_delay`); a server that
  stayed up `stable_after` seconds starts counting afresh.
* `call(tool, arguments, ctx, past_tense)` always returns an AHP `ToolCallResult`:
  a call in flight when the server dies fails with a message naming the server and how
  it ended (it is not retried: the tool may have had side effects); a call queued while
  the server restarts waits for it; a call to a failed or stopped server fails at once.
  Every call has a deadline, the spec's `timeout` or else the connection's `call_timeout`
  (queueing included): past it the MCP request is cancelled and the result is an error
  with code `timeout` saying how long the server was given and how to give it more.
  Setting `ctx.cancellation` (or cancelling the calling task) cancels the MCP request.
* Progress notifications for a call go to `ctx.emit` (`toolCallContentChanged`).
  Elicitation requests go to the `ask` of the call's `ToolContext` when exactly one call
  is in flight (the usual case, so the question joins that tool call's turn), otherwise
  to the connection's `ask` callback; with neither, or if asking fails, the server gets
  `cancel`. `notifications/tools/list_changed` re-lists the tools and then calls
  `on_tools_changed(connection)`; `on_status(status)` is called on every status change.
  Both callbacks may be plain or async; their exceptions are logged, never propagated.
* The handshake is the `initialize` one (protocol revisions up to 2025-11-25), which
  every MCP server in the wild speaks and which delivers list_changed notifications
  without a subscription.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import math
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.shared.exceptions import MCPError

from ..base import AskUser, ToolContext, failure_result
from ._stdio import ServerProcess, SpawnError, stdio_transport
from .elicitation import elicit_result, input_request
from .results import progress_content, tool_call_result
from .specs import McpServerSpec

__all__ = ["McpServerConnection", "ServerStatus", "ServerState", "RestartPolicy", "DEFAULT_CALL_TIMEOUT"]

logger = logging.getLogger(__name__)

ServerState = Literal["starting", "running", "restarting", "failed", "stopped"]

_CLIENT_INFO = types.Implementation(name="agent-host", version="0.1.0")
_MAX_TOOL_PAGES = 100

DEFAULT_CALL_TIMEOUT = 300.0
"""Seconds a tool call may take when neither the host nor the server's declaration says."""
STOP_GRACE_SECONDS = 6.0
"""How long `stop()` lets a server end (its session, then the shielded process-group shutdown of
`_stdio`, at most about 3 s) before its owner task is cancelled."""


@dataclass(frozen=True)
class ServerStatus:
    """What a person (and the host) can see about one server."""

    name: str
    state: ServerState
    message: str | None = None
    """Why it is restarting or failed, written to be acted on; None while healthy."""
    restarts: int = 0
    """How many times it has been restarted since it was started."""
    tool_names: tuple[str, ...] = ()
    """The MCP names of the tools it currently offers."""


@dataclass(frozen=True)
class RestartPolicy:
    """How a crashed server is brought back."""

    initial_delay: float = 0.5
    """Seconds before the first restart."""
    factor: float = 2.0
    """Each further delay is the previous one times this."""
    max_delay: float = 30.0
    """Upper bound of any delay."""
    max_restarts: int = 5
    """Consecutive failed runs after which the server is marked failed."""
    stable_after: float = 60.0
    """A run this long resets the consecutive-failure count."""
    startup_timeout: float = 30.0
    """Seconds allowed for start, handshake and the first tool listing."""

    def delay(self, failures: int) -> float:
        """The wait before restart number `failures` (1-based)."""
        return min(self.max_delay, self.initial_delay * self.factor ** max(0, failures - 1))


Callback = Callable[..., Awaitable[None] | None]


async def _notify(callback: Callback | None, *args: Any) -> None:
    if callback is None:
        return
    try:
        outcome = callback(*args)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:  # a host callback bug must not take the server down
        logger.exception("MCP callback %r failed", callback)


@dataclass(eq=False)
class _Call:
    """A queued tools/call and how its caller is told the outcome."""

    tool: str
    arguments: dict
    ctx: ToolContext
    past_tense: str
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    scope: anyio.CancelScope | None = None
    cancelled: bool = False

    def resolve(self, result: dict) -> None:
        if not self.future.done():
            self.future.set_result(result)

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()


_RELIST = object()
"""Queue marker: the server said its tool list changed."""


@asynccontextmanager
async def _opened(read: Any, write: Any) -> AsyncIterator[tuple[Any, Any]]:
    # Client wants a transport context; ours is already entered by the owner's exit stack.
    yield read, write


class McpServerConnection:
    """Owns one MCP server: process/connection, session, tool list, restarts."""

    def __init__(
        self,
        spec: McpServerSpec,
        *,
        policy: RestartPolicy | None = None,
        inherit_env: bool = False,
        ask: AskUser | None = None,
        on_status: Callable[[ServerStatus], Awaitable[None] | None] | None = None,
        on_tools_changed: Callable[[McpServerConnection], Awaitable[None] | None] | None = None,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.spec = spec
        self.policy = policy or RestartPolicy()
        self.call_timeout = spec.timeout or call_timeout
        """Seconds one tool call may take: the server's declared ``timeout``, else the host's."""
        self._inherit_env = inherit_env
        self._ask = ask
        self._on_status = on_status
        self._on_tools_changed = on_tools_changed
        self._status = ServerStatus(spec.name, "starting")
        self._tools: tuple[types.Tool, ...] = ()
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._in_flight: set[_Call] = set()
        # tools/list_changed bookkeeping: a call whose server changed its tool list while it ran
        # resolves only after the re-list, so the model's next request already sees the new tools.
        self._list_changes = 0
        self._listed_changes = 0
        self._relisted = asyncio.Event()
        self._stopping = asyncio.Event()
        self._settled = asyncio.Event()
        self._tried = asyncio.Event()
        self._starting_up: anyio.CancelScope | None = None
        self.launched_at: float | None = None
        """Event-loop time of `start()`, so a waiter can bound its wait from the launch."""
        self._owner: asyncio.Task | None = None
        self._process: ServerProcess | None = None
        self._elicit_counter = itertools.count(1)
        self._broken = asyncio.Event()

    # ----------------------------------------------------------------- public surface

    @property
    def name(self) -> str:
        """The server name from its spec."""
        return self.spec.name

    @property
    def status(self) -> ServerStatus:
        """The current status."""
        return self._status

    @property
    def tools(self) -> tuple[types.Tool, ...]:
        """The MCP tools from the latest listing (empty until running)."""
        return self._tools

    @property
    def pid(self) -> int | None:
        """The pid (= process group) of the current stdio server process, if any."""
        return self._process.pid if self._process is not None else None

    def start(self) -> None:
        """Spawn the owner task (idempotent)."""
        if self._owner is None:
            self.launched_at = asyncio.get_running_loop().time()
            self._owner = asyncio.get_running_loop().create_task(self._own(), name=f"mcp-server-{self.name}")

    async def wait_ready(self, timeout: float | None = None) -> ServerStatus:
        """Wait until the server is running, failed or stopped; returns the status then."""
        try:
            await asyncio.wait_for(self._settled.wait(), timeout)
        except TimeoutError:
            pass
        return self._status

    async def wait_tried(self, timeout: float | None = None) -> ServerStatus:
        """Wait until the first start attempt is over (see the module contract), or `timeout`."""
        if not self._tried.is_set():
            try:
                await asyncio.wait_for(self._tried.wait(), timeout)
            except TimeoutError:
                pass
        return self._status

    async def stop(self) -> None:
        """Stop the server and wait for its processes to be gone (bounded)."""
        self._stopping.set()
        if self._starting_up is not None:
            self._starting_up.cancel()  # nothing to wind down politely before the handshake ended
        if self._owner is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._owner), timeout=STOP_GRACE_SECONDS)
            except TimeoutError:
                logger.warning("MCP server %r did not shut down in time; cancelling its owner task", self.name)
                self._owner.cancel()
                await asyncio.gather(self._owner, return_exceptions=True)
        self._drain(f"The MCP server '{self.name}' was stopped before the call could run.")
        if self._status.state != "failed":
            await self._set_status("stopped", None)

    async def call(self, tool: str, arguments: dict, ctx: ToolContext, past_tense: str) -> dict:
        """Run `tool` on the server; always a `ToolCallResult` (see the module contract)."""
        if self._status.state in ("failed", "stopped") or self._stopping.is_set():
            detail = f": {self._status.message}" if self._status.message else "."
            return failure_result(past_tense, f"The MCP server '{self.name}' is not running{detail}", "mcp_unavailable")
        job = _Call(tool, arguments, ctx, past_tense)
        self._queue.put_nowait(job)
        cancel_wait = asyncio.ensure_future(ctx.cancellation.wait())
        try:
            await asyncio.wait({job.future, cancel_wait}, timeout=self.call_timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            job.cancel()
            raise
        finally:
            cancel_wait.cancel()
        if not job.future.done():
            job.cancel()
            if ctx.cancellation.is_set():
                job.resolve(failure_result(past_tense, "The call was cancelled.", "cancelled"))
            else:
                job.resolve(failure_result(past_tense, self._timed_out(), "timeout"))
        return job.future.result()

    def _timed_out(self) -> str:
        where = ("its `timeout` in the server's declaration" if self.spec.timeout
                 else "`[mcp] call_timeout` in the host config, or `timeout` in the server's declaration")
        return (f"The MCP server '{self.name}' did not answer within {self.call_timeout:g} s, so the call was cancelled. "
                f"A tool that needs longer can be given more time with {where} (milliseconds there).")

    # ----------------------------------------------------------------- owner task

    async def _set_status(self, state: ServerState, message: str | None, restarts: int | None = None) -> None:
        self._status = replace(
            self._status, state=state, message=message,
            restarts=self._status.restarts if restarts is None else restarts,
            tool_names=tuple(tool.name for tool in self._tools),
        )
        if state in ("running", "failed", "stopped"):
            self._settled.set()
        else:
            self._settled.clear()
        if state != "starting":
            self._tried.set()
        await _notify(self._on_status, self._status)

    def _drain(self, message: str) -> None:
        while not self._queue.empty():
            job = self._queue.get_nowait()
            if isinstance(job, _Call):
                job.resolve(failure_result(job.past_tense, message, "mcp_unavailable"))

    async def _own(self) -> None:
        failures = 0
        restarts = 0
        await self._set_status("starting", None)
        while not self._stopping.is_set():
            started = None
            try:
                reason, started = await self._run_once()
            except SpawnError as exc:
                await self._fail(f"MCP server '{self.name}' cannot start: {exc}")
                return
            except Exception as exc:  # the boundary of one server run: report, then maybe restart
                logger.debug("MCP server %r run ended with %r", self.name, exc, exc_info=True)
                reason = self._describe_failure(exc)
            if self._stopping.is_set():
                break
            loop = asyncio.get_running_loop()
            if started is not None and loop.time() - started >= self.policy.stable_after:
                failures = 0
            failures += 1
            if failures > self.policy.max_restarts:
                gave_up = (f"; gave up after {self.policy.max_restarts} restarts"
                           if self.policy.max_restarts else "")
                await self._fail(
                    f"MCP server '{self.name}' {reason}{gave_up}. "
                    f"Check the server ({self.spec.describe()}) and restart it."
                )
                return
            delay = self.policy.delay(failures)
            restarts += 1
            await self._set_status(
                "restarting", f"MCP server '{self.name}' {reason}; restarting in {delay:g} s "
                f"(attempt {failures} of {self.policy.max_restarts})", restarts,
            )
            try:
                await asyncio.wait_for(self._stopping.wait(), delay)
            except TimeoutError:
                pass

    async def _fail(self, message: str) -> None:
        self._tools = ()
        await self._set_status("failed", message)
        self._drain(message)
        await _notify(self._on_tools_changed, self)

    def _describe_failure(self, exc: BaseException) -> str:
        if isinstance(exc, TimeoutError) and str(exc):
            return str(exc)  # our startup deadline; the process exit that followed is our own kill
        if self._process is not None and self._process.returncode is not None:
            return self._process.describe_exit()
        if isinstance(exc, BaseExceptionGroup):
            leaves = [e for e in _leaves(exc) if not isinstance(e, anyio.get_cancelled_exc_class())]
            if leaves:
                exc = leaves[0]
        if isinstance(exc, MCPError):
            return f"returned an error: {exc.error.message}"
        text = str(exc).strip()
        return f"could not be reached ({type(exc).__name__}{': ' + text if text else ''})"

    async def _run_once(self) -> tuple[str, float | None]:
        """One server run, from spawn/connect to the end of the connection."""
        self._process = None
        started: float | None = None
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.policy.startup_timeout) as startup:
                # stop() cancels this scope while the server is starting: one that never answers
                # `initialize` is not waited for. Once it runs, _serve ends it politely instead.
                self._starting_up = startup
                if self._stopping.is_set():
                    startup.cancel()
                async with AsyncExitStack() as stack:
                    read, write = await self._open_transport(stack)
                    client = Client(
                        _opened(read, write), mode="legacy", cache=None, client_info=_CLIENT_INFO,
                        elicitation_callback=self._elicit, message_handler=self._on_message,
                    )
                    await stack.enter_async_context(client)
                    await self._list_tools(client)
                    startup.deadline = math.inf
                    self._starting_up = None
                    started = asyncio.get_running_loop().time()
                    await self._set_status("running", None)
                    await _notify(self._on_tools_changed, self)
                    reason = await self._serve(client)
                if self._process is not None:
                    # Leaving the stack stopped the process, so the exit code is known now.
                    reason = self._process.describe_exit(with_stderr=False) if reason == "ended" else reason
        finally:
            self._starting_up = None
        if startup.cancelled_caught and not self._stopping.is_set():
            raise TimeoutError(f"did not finish starting within {self.policy.startup_timeout:g} s")
        if startup.cancelled_caught:
            return "stopped", started
        if reason == "ended":
            reason = "closed its connection"
        return reason, started

    async def _open_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.transport == "stdio":
            read, write, process = await stack.enter_async_context(
                stdio_transport(spec, inherit_env=self._inherit_env))
            self._process = process
            return read, write
        if spec.transport == "sse":
            from mcp.client.sse import sse_client

            return await stack.enter_async_context(sse_client(spec.url or "", headers=dict(spec.headers)))
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        http = await stack.enter_async_context(create_mcp_http_client(headers=dict(spec.headers)))
        return await stack.enter_async_context(streamable_http_client(spec.url or "", http_client=http))

    async def _list_tools(self, client: Client) -> None:
        tools: list[types.Tool] = []
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        self._tools = tuple(tools)
        self._status = replace(self._status, tool_names=tuple(tool.name for tool in tools))

    async def _serve(self, client: Client) -> str:
        """Serve queued work until stopped or the connection ends; returns why it ended."""
        outcome = "stopped"
        broken = asyncio.Event()
        self._broken = broken
        async with anyio.create_task_group() as group:

            async def watch(event: asyncio.Event, label: str) -> None:
                nonlocal outcome
                await event.wait()
                outcome = label
                group.cancel_scope.cancel()

            async def pump() -> None:
                while True:
                    job = await self._queue.get()
                    if job is _RELIST:
                        group.start_soon(self._relist, client)
                    else:
                        group.start_soon(self._run_call, client, job)

            group.start_soon(watch, self._stopping, "stopped")
            group.start_soon(watch, broken, "ended")
            if self._process is not None:
                group.start_soon(watch, self._process.ended, "ended")
            group.start_soon(pump)
        return outcome

    async def _relist(self, client: Client) -> None:
        changes = self._list_changes
        try:
            await self._list_tools(client)
        except Exception as exc:
            logger.warning("MCP server %r: re-listing tools failed: %s", self.name, exc)
            return
        finally:
            self._listed_changes = max(self._listed_changes, changes)
            self._relisted.set()
            self._relisted = asyncio.Event()
        await self._set_status(self._status.state, self._status.message)
        await _notify(self._on_tools_changed, self)

    async def _until_relisted(self, changes: int, timeout: float = 10.0) -> None:
        """Wait (bounded) until the tool list reflects every list_changed up to ``changes``."""
        with anyio.move_on_after(timeout):
            while self._listed_changes < changes:
                await self._relisted.wait()

    async def _ended_message(self) -> str:
        if self._stopping.is_set():
            return f"The MCP server '{self.name}' was shut down while the call was running."
        if self._process is None:
            return (f"The connection to the MCP server '{self.name}' was lost while the call was running; "
                    "the call was not retried. Reconnecting.")
        await self._process.wait_exit(1.0)
        return (f"The MCP server '{self.name}' {self._process.describe_exit(with_stderr=False)} while the call "
                "was running; the call was not retried. The server is being restarted.")

    async def _run_call(self, client: Client, call: _Call) -> None:
        self._in_flight.add(call)

        async def progress(progress: float, total: float | None, message: str | None) -> None:  # mcp's ProgressFnT
            await call.ctx.emit(progress_content(progress, total, message))

        connection_ended = False
        try:
            with anyio.CancelScope() as scope:
                call.scope = scope
                if call.cancelled:
                    scope.cancel()
                result = await client.call_tool(call.tool, call.arguments, read_timeout_seconds=self.call_timeout,
                                                progress_callback=progress)
                if self._list_changes > self._listed_changes:
                    await self._until_relisted(self._list_changes)
                call.resolve(tool_call_result(result, call.past_tense))
            if scope.cancelled_caught:
                call.resolve(failure_result(call.past_tense, "The call was cancelled.", "cancelled"))
        except anyio.get_cancelled_exc_class():
            # The whole connection is going away (crash or stop) under this call.
            connection_ended = True
            raise
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                connection_ended = True
                self._broken.set()
            elif exc.error.code == types.REQUEST_TIMEOUT:
                call.resolve(failure_result(call.past_tense, self._timed_out(), "timeout"))
            else:
                call.resolve(failure_result(
                    call.past_tense, f"The MCP server '{self.name}' refused the call: {exc.error.message}", "mcp_error"))
        except Exception as exc:  # transport failures (HTTP errors, invalid results) become results
            logger.debug("MCP call %s on %r failed", call.tool, self.name, exc_info=True)
            if self.spec.transport != "stdio":
                self._broken.set()
            call.resolve(failure_result(
                call.past_tense, f"The call to MCP server '{self.name}' failed ({type(exc).__name__}).", "mcp_error"))
        finally:
            self._in_flight.discard(call)
            if connection_ended and not call.future.done():
                with anyio.CancelScope(shield=True):
                    message = await self._ended_message()
                call.resolve(failure_result(call.past_tense, message, "mcp_server_exited"))

    # ----------------------------------------------------------------- server → client

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._list_changes += 1
            self._queue.put_nowait(_RELIST)
        elif isinstance(message, Exception):
            logger.warning("MCP server %r: transport problem: %s", self.name, message)

    async def _elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        calls = [call for call in self._in_flight if not call.future.done()]
        ask: AskUser | None = calls[0].ctx.ask if len(calls) == 1 else self._ask
        if ask is None:
            logger.info("MCP server %r asked for input but nobody can answer; cancelling", self.name)
            return types.ElicitResult(action="cancel")
        owner = calls[0].ctx.tool_call_id if len(calls) == 1 else None
        request_id = (f"mcp-elicit-{owner}-{next(self._elicit_counter)}" if owner
                      else f"mcp-elicit-{uuid.uuid4().hex}")
        request = input_request(request_id, params)
        request.setdefault("message", f"The MCP server '{self.name}' asks for input.")
        try:
            reply = await ask(request)
        except Exception as exc:  # no client that can answer, or the host failed: the server sees cancel
            logger.info("MCP server %r: elicitation could not be asked: %s", self.name, exc)
            return types.ElicitResult(action="cancel")
        return elicit_result(reply, params)


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    found: list[BaseException] = []
    for exc in group.exceptions:
        found.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return found
