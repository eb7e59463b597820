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
* Prompts and resources: after the tools, the owner lists the server's prompts, resources and
  resource templates (all pages; only what its capabilities announce; a listing that fails
  leaves that list empty and is logged, the server still runs) and lists them again on
  `notifications/prompts/list_changed` / `resources/list_changed`, then calls
  `on_catalog_changed(connection)`. `get_prompt(name, arguments)` and `read_resource(uri)` go
  through the owner like tool calls (queued while it restarts, the same deadline) and return
  the SDK's result or raise `McpRequestError` with a sentence for a person.
* Roots: given `roots` (a callable returning the session's folders), the client announces the
  roots capability and answers `roots/list` with them as `file://` URIs; `roots_changed()`
  sends `notifications/roots/list_changed` to a running server.
* Logging: a server that announces logging is asked for level `info` and above
  (`logging/setLevel`, once running); its `notifications/message` and (stdio) stderr lines go to
  `log` (a bounded `ServerLog` that survives restarts); `on_log(connection)` is called (plainly)
  after each.
* MCP tasks: a tool whose `execution.taskSupport` is `"required"` cannot be called without the
  tasks protocol, which this client does not speak: it is not offered, and
  `ServerStatus.not_offered` names it with the reason.
* OAuth (streamable HTTP and SSE servers, given `oauth_dir` and no `Authorization` header of
  their own): a server that answers 401 gets the SDK's OAuth flow (`tools.mcp.oauth`); when the
  user must sign in, the status message says so with the authorization URL (state `starting`),
  the user is asked through `ask` (an input request with that `url`; declining it ends the
  attempt; a question cancelled unanswered, as at the end of the turn it was asked in, is asked
  once more) and the browser's redirect comes back to a loopback listener. The startup deadline
  waits `AUTH_WAIT` seconds for a person instead. A sign-in that was declined or never done
  fails the server at once (no restarts; starting it again asks again). Tokens are kept per
  server in `oauth_dir` (0600) and refreshed by the SDK.
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
import socket
import uuid
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client import Client, ClientRequestContext
from mcp.client.auth import OAuthFlowError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from pydantic import FileUrl

from ..base import AskUser, ToolContext, failure_result
from ._stdio import ServerProcess, SpawnError, stdio_transport
from .elicitation import elicit_result, input_request
from .errors import McpRequestError
from .logs import ServerLog
from .oauth import LoopbackCallback, OAuthDeclined, TokenFile, oauth_provider, token_path
from .results import progress_content, tool_call_result
from .specs import McpServerSpec

__all__ = ["McpServerConnection", "ServerStatus", "ServerState", "RestartPolicy", "DEFAULT_CALL_TIMEOUT"]

logger = logging.getLogger(__name__)

ServerState = Literal["starting", "running", "restarting", "failed", "stopped"]

_CLIENT_INFO = types.Implementation(name="agent-host", version="0.1.0")
_MAX_TOOL_PAGES = 100

DEFAULT_CALL_TIMEOUT = 300.0
"""Seconds a tool call may take when neither the host nor the server's declaration says."""
AUTH_WAIT = 600.0
"""Seconds a server start waits for the user to sign in (OAuth) before it fails."""
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
    not_offered: tuple[tuple[str, str], ...] = ()
    """``(MCP tool name, why)`` for each tool the server lists that the host does not offer."""


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
_RELIST_PROMPTS = object()
"""Queue marker: the server said its prompt list changed."""
_RELIST_RESOURCES = object()
"""Queue marker: the server said its resource list changed."""
_ROOTS_CHANGED = object()
"""Queue marker: tell the server the session's folders changed."""
_LOG_LEVEL = object()
"""Queue marker: ask a server that logs for messages of level info and above."""

TASKS_REQUIRED = ("it can only run as an MCP task (execution.taskSupport \"required\"), "
                  "which this host does not support yet")
"""Why a tool that requires MCP tasks is not offered."""


@dataclass(eq=False)
class _Request:
    """A queued prompt or resource request: what to ask the SDK client, and who waits for it."""

    what: str
    """What is asked, for messages: "the prompt 'x'", "the resource <uri>"."""
    run: Callable[[Client], Awaitable[Any]]
    future: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    scope: anyio.CancelScope | None = None

    def fail(self, message: str) -> None:
        if not self.future.done():
            self.future.set_exception(McpRequestError(message))


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
        roots: Callable[[], Sequence[str | Path]] | None = None,
        on_log: Callable[[McpServerConnection], None] | None = None,
        on_catalog_changed: Callable[[McpServerConnection], Awaitable[None] | None] | None = None,
        oauth_dir: Path | None = None,
    ) -> None:
        self.spec = spec
        self._oauth_dir = oauth_dir
        self._listening: Any = None
        """The loopback listener of a sign-in in progress (closed once the handshake is done)."""
        self._sign_in: tuple[str, asyncio.Task | None] | None = None
        """The authorization URL the user is asked to open, and the question's task, while waiting."""
        self.policy = policy or RestartPolicy()
        self.call_timeout = spec.timeout or call_timeout
        """Seconds one tool call may take: the server's declared ``timeout``, else the host's."""
        self._inherit_env = inherit_env
        self._ask = ask
        self._on_status = on_status
        self._on_tools_changed = on_tools_changed
        self._status = ServerStatus(spec.name, "starting")
        self._tools: tuple[types.Tool, ...] = ()
        self._prompts: tuple[types.Prompt, ...] = ()
        self._resources: tuple[types.Resource, ...] = ()
        self._templates: tuple[types.ResourceTemplate, ...] = ()
        self._roots = roots
        self._on_log = on_log
        self._on_catalog_changed = on_catalog_changed
        self.log = ServerLog()
        """What the server logged (``notifications/message``) and wrote on stderr, across restarts."""
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
    def prompts(self) -> tuple[types.Prompt, ...]:
        """The server's prompts from the latest listing."""
        return self._prompts

    @property
    def resources(self) -> tuple[types.Resource, ...]:
        """The server's resources from the latest listing."""
        return self._resources

    @property
    def resource_templates(self) -> tuple[types.ResourceTemplate, ...]:
        """The server's resource templates from the latest listing."""
        return self._templates

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

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> types.GetPromptResult:
        """``prompts/get``; raises `McpRequestError` (see the module contract)."""
        return await self._request(f"the prompt '{name}'", lambda client: client.get_prompt(name, arguments or None))

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """``resources/read``; raises `McpRequestError` (see the module contract)."""
        return await self._request(f"the resource {uri}", lambda client: client.read_resource(uri))

    def roots_changed(self) -> None:
        """Tell a running server that the session's folders changed (when it was given ``roots``)."""
        if self._roots is not None and self._status.state == "running" and not self._stopping.is_set():
            self._queue.put_nowait(_ROOTS_CHANGED)

    async def _request(self, what: str, run: Callable[[Client], Awaitable[Any]]) -> Any:
        if self._status.state in ("failed", "stopped") or self._stopping.is_set():
            detail = f": {self._status.message}" if self._status.message else "."
            raise McpRequestError(f"The MCP server '{self.name}' is not running{detail}")
        job = _Request(what, run)
        self._queue.put_nowait(job)
        try:
            return await asyncio.wait_for(asyncio.shield(job.future), self.call_timeout)
        except TimeoutError:
            if job.scope is not None:
                job.scope.cancel()
            raise McpRequestError(f"The MCP server '{self.name}' did not answer {what} within {self.call_timeout:g} s.") from None
        except asyncio.CancelledError:
            if job.scope is not None:
                job.scope.cancel()
            raise

    async def _run_request(self, client: Client, job: _Request) -> None:
        try:
            with anyio.CancelScope() as scope:
                job.scope = scope
                result = await job.run(client)
                if not job.future.done():
                    job.future.set_result(result)
        except anyio.get_cancelled_exc_class():
            job.fail(f"The connection to the MCP server '{self.name}' ended before it answered {job.what}.")
            raise
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                self._broken.set()
                job.fail(f"The connection to the MCP server '{self.name}' ended before it answered {job.what}.")
            else:
                job.fail(f"The MCP server '{self.name}' refused {job.what}: {exc.error.message}")
        except Exception as exc:  # transport failures, invalid results
            logger.debug("MCP request for %s on %r failed", job.what, self.name, exc_info=True)
            job.fail(f"The MCP server '{self.name}' could not give {job.what} ({type(exc).__name__}).")
        finally:
            job.fail(f"The MCP server '{self.name}' gave no answer for {job.what}.")

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
            elif isinstance(job, _Request):
                job.fail(message)

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
                declined = _declined(exc)
                if declined is not None and not self._stopping.is_set():
                    await self._fail(f"MCP server '{self.name}' needs you to sign in, and the sign-in did not complete "
                                     f"({declined}). It asks again when it is started again (with the next turn).")
                    return
                reason = self._describe_failure(exc)
            finally:
                self._end_sign_in()
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
        self._prompts, self._resources, self._templates = (), (), ()
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
                        logging_callback=self._on_log_message,
                        list_roots_callback=self._list_roots if self._roots is not None else None,
                    )
                    await stack.enter_async_context(client)
                    self._end_sign_in()
                    if self._listening is not None:
                        await self._listening.close()
                        self._listening = None
                    await self._list_tools(client)
                    await self._list_prompts(client)
                    await self._list_resources(client)
                    startup.deadline = math.inf
                    self._starting_up = None
                    started = asyncio.get_running_loop().time()
                    await self._set_status("running", None)
                    if client.server_capabilities.logging is not None:
                        self._queue.put_nowait(_LOG_LEVEL)
                    await _notify(self._on_tools_changed, self)
                    await _notify(self._on_catalog_changed, self)
                    reason = await self._serve(client)
                if self._process is not None:
                    # Leaving the stack stopped the process, so the exit code is known now.
                    reason = self._process.describe_exit(with_stderr=False) if reason == "ended" else reason
        finally:
            self._starting_up = None
        if startup.cancelled_caught and not self._stopping.is_set() and self._sign_in is not None:
            raise OAuthDeclined(f"nobody signed in within {AUTH_WAIT:g} s")
        if startup.cancelled_caught and not self._stopping.is_set():
            raise TimeoutError(f"did not finish starting within {self.policy.startup_timeout:g} s")
        if startup.cancelled_caught:
            return "stopped", started
        if reason == "ended":
            reason = "closed its connection"
        return reason, started

    def _oauth(self, stack: AsyncExitStack) -> Any:
        """The SDK's OAuth provider for this attempt, or None (see the module contract)."""
        if self._oauth_dir is None or any(key.lower() == "authorization" for key in self.spec.headers):
            return None
        tokens = TokenFile(token_path(self._oauth_dir, self.spec))
        # The redirect URI is fixed before the flow starts (the client registers with it): the
        # remembered port, or a free one now (remembered only once a sign-in uses it, so a server
        # that never asks for OAuth leaves no file behind).
        planned = tokens.port
        if planned is None:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                planned = sock.getsockname()[1]
        callback = LoopbackCallback(planned)
        callback.port = planned

        async def authorize(url: str) -> None:
            # The listener exists only while the user signs in.
            await callback.start()
            stack.push_async_callback(callback.close)
            if callback.port != planned:  # the port was taken meanwhile: the next attempt registers anew
                tokens.use_port(callback.port)
                callback.decline(f"the sign-in's callback port {planned} was in use; start the server again")
                return
            tokens.remember_port(planned)
            self._listening = callback
            await self._ask_sign_in(url, callback)

        return oauth_provider(self.spec, tokens, callback, authorize)

    async def _ask_sign_in(self, url: str, callback: Any) -> None:
        """Show the authorization URL (status and a question) and wait no longer than AUTH_WAIT."""
        if self._starting_up is not None:
            self._starting_up.deadline = anyio.current_time() + AUTH_WAIT  # a person's pace, bounded
        question: asyncio.Task | None = None
        if self._ask is not None:
            question = asyncio.get_running_loop().create_task(self._sign_in_question(url, callback))
            done = callback.done
            if done is not None:
                done.add_done_callback(lambda _: question.cancel())
        self._sign_in = (url, question)
        await self._set_status("starting", f"MCP server '{self.name}' needs you to sign in: open {url}")

    async def _sign_in_question(self, url: str, callback: Any) -> None:
        assert self._ask is not None
        # A question asked during a turn is cancelled when that turn ends unanswered: it is asked
        # once more (then outside the turn). Only "decline" gives up; after a second "cancel" the
        # link in the status still works until the start gives up waiting.
        for _ in range(2):
            request = {"id": f"mcp-sign-in-{uuid.uuid4().hex}", "url": url,
                       "message": f"The MCP server '{self.name}' needs you to sign in. Open the link, sign in, and come back."}
            try:
                reply = await self._ask(request)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # nobody can be asked: the status still shows the URL
                logger.info("MCP server %r: the sign-in could not be asked: %s", self.name, exc)
                return
            if reply.get("response") == "decline":
                callback.decline("you declined")
                return
            if reply.get("response") != "cancel":
                return

    def _end_sign_in(self) -> None:
        if self._sign_in is not None:
            _, question = self._sign_in
            if question is not None:
                question.cancel()
            self._sign_in = None

    async def _open_transport(self, stack: AsyncExitStack) -> tuple[Any, Any]:
        spec = self.spec
        if spec.transport == "stdio":
            read, write, process = await stack.enter_async_context(
                stdio_transport(spec, inherit_env=self._inherit_env, on_stderr=self._on_stderr))
            self._process = process
            return read, write
        if spec.transport == "sse":
            return await stack.enter_async_context(sse_client(spec.url or "", headers=dict(spec.headers), auth=self._oauth(stack)))
        http = await stack.enter_async_context(create_mcp_http_client(headers=dict(spec.headers), auth=self._oauth(stack)))
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
        offered = [tool for tool in tools if not _needs_tasks(tool)]
        self._tools = tuple(offered)
        self._status = replace(self._status, tool_names=tuple(tool.name for tool in offered),
                               not_offered=tuple((tool.name, TASKS_REQUIRED) for tool in tools if _needs_tasks(tool)))

    async def _list_prompts(self, client: Client) -> None:
        if client.server_capabilities.prompts is None:
            self._prompts = ()
            return
        self._prompts = tuple(await self._all_pages(client, "prompts", lambda cursor: client.list_prompts(cursor=cursor)))

    async def _list_resources(self, client: Client) -> None:
        if client.server_capabilities.resources is None:
            self._resources, self._templates = (), ()
            return
        self._resources = tuple(await self._all_pages(
            client, "resources", lambda cursor: client.list_resources(cursor=cursor)))
        self._templates = tuple(await self._all_pages(
            client, "resource_templates", lambda cursor: client.list_resource_templates(cursor=cursor)))

    async def _all_pages(self, client: Client, field_name: str, page_of: Callable[[str | None], Awaitable[Any]]) -> list[Any]:
        """Every item of a paginated listing; a listing the server fails is logged and empty."""
        items: list[Any] = []
        cursor: str | None = None
        try:
            for _ in range(_MAX_TOOL_PAGES):
                page = await page_of(cursor)
                items.extend(getattr(page, field_name))
                cursor = page.next_cursor
                if cursor is None:
                    break
        except MCPError as exc:
            if exc.error.code == types.CONNECTION_CLOSED:
                raise
            logger.warning("MCP server %r: listing its %s failed: %s", self.name, field_name.replace("_", " "), exc.error.message)
            self.log.add_stderr(f"(host) listing the server's {field_name.replace('_', ' ')} failed: {exc.error.message}")
            return []
        return items

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
                    elif job is _RELIST_PROMPTS or job is _RELIST_RESOURCES:
                        group.start_soon(self._relist_catalog, client, job)
                    elif job is _ROOTS_CHANGED:
                        group.start_soon(self._send_roots_changed, client)
                    elif job is _LOG_LEVEL:
                        group.start_soon(self._set_log_level, client)
                    elif isinstance(job, _Request):
                        group.start_soon(self._run_request, client, job)
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

    async def _relist_catalog(self, client: Client, which: object) -> None:
        try:
            if which is _RELIST_PROMPTS:
                await self._list_prompts(client)
            else:
                await self._list_resources(client)
        except Exception as exc:
            logger.warning("MCP server %r: re-listing its prompts or resources failed: %s", self.name, exc)
            return
        await _notify(self._on_catalog_changed, self)

    async def _set_log_level(self, client: Client) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in protocol 2026-07-28; this is a handshake-era session
                await client.set_logging_level("info")
        except Exception as exc:  # a server that refuses keeps logging at its own level
            logger.debug("MCP server %r: logging/setLevel failed: %s", self.name, exc)

    async def _send_roots_changed(self, client: Client) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated in protocol 2026-07-28; this is a handshake-era session
                await client.send_roots_list_changed()
        except Exception as exc:
            logger.info("MCP server %r: could not be told that the roots changed: %s", self.name, exc)

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
        elif isinstance(message, types.PromptListChangedNotification):
            self._queue.put_nowait(_RELIST_PROMPTS)
        elif isinstance(message, types.ResourceListChangedNotification):
            self._queue.put_nowait(_RELIST_RESOURCES)
        elif isinstance(message, Exception):
            logger.warning("MCP server %r: transport problem: %s", self.name, message)

    async def _on_log_message(self, params: types.LoggingMessageNotificationParams) -> None:
        self.log.add_message(params)
        self._logged()

    def _on_stderr(self, line: str) -> None:
        if self.log.add_stderr(line) is not None:
            self._logged()

    def _logged(self) -> None:
        if self._on_log is not None:
            try:
                self._on_log(self)
            except Exception:  # a host callback bug must not take the server down
                logger.exception("MCP log callback failed")

    async def _list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        folders = list(self._roots()) if self._roots is not None else []
        roots = []
        for folder in folders:
            path = Path(folder)
            roots.append(types.Root(uri=FileUrl(path.absolute().as_uri()), name=path.name or str(path)))
        return types.ListRootsResult(roots=roots)

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


def _declined(exc: BaseException) -> str | None:
    """Why the sign-in did not complete, when that is what ended a run (else None)."""
    leaves = _leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc]
    for leaf in leaves:
        seen: BaseException | None = leaf
        while seen is not None:
            if isinstance(seen, OAuthDeclined):
                return str(seen)
            if isinstance(seen, OAuthFlowError):
                return f"the sign-in failed: {seen}"
            seen = seen.__cause__ or seen.__context__
    return None


def _needs_tasks(tool: types.Tool) -> bool:
    """Whether the tool can only be called as an MCP task (spec 2025-11-25, ``execution.taskSupport``)."""
    return tool.execution is not None and tool.execution.task_support == "required"
