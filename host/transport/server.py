"""The network edge: one port serving the AHP WebSocket and plain HTTP, on Starlette + uvicorn.

Why an ASGI app rather than the ``websockets`` server alone: the same port must later serve HTTP
endpoints that stream (the AG-UI event stream) besides a health check, which the ``websockets``
server's ``process_request`` hook cannot do. uvicorn's WebSocket protocol is itself built on the
``websockets`` package (its Sans-I/O implementation); ``host.transport.ws_protocol`` extends it so the
store's frames skip the per-message ASGI path and each connection's frames of one tick go out in one
write after the journal commit. ``benchmarks/fanout.py`` measures the result against a bare
server on the same Sans-I/O stack writing pre-encoded frames once per connection per tick (the
figures are in the README).
HTTP requests go through uvicorn's httptools protocol extended by ``host.transport.http_protocol``,
so that the AG-UI stream of a client cut off for not reading can drop its connection; that stream
reports to the same outbound budget as the WebSocket connections.

Safety at the edge, before any JSON-RPC is read:

* a connection token is required, as ``Authorization: Bearer <token>``, ``?token=<token>`` or
  ``?tkn=<token>`` (what VS Code's agent-host bridge appends), compared in constant time; a missing
  or wrong one gets HTTP 403 on the upgrade. It is the host's own token (level ``full``) or one
  of the named tokens of the data directory's ``tokens.json`` (``host.transport.tokens``, each with
  its level: ``host.transport.access``); the token file is watched while the host runs
  (``TOKEN_FILE_CHECK`` seconds apart), and the connections of a token revoked meanwhile are closed
  with 1008;
* a WebSocket upgrade whose ``Origin`` header is present and not in ``server.allowed_origins`` is
  refused with 403, so a web page cannot drive a host that runs commands on this machine;
* inbound messages larger than ``server.max_frame_bytes`` close the connection (1009).

The host is started without its session services (``AgentHost.start(sessions_later=True)``,
``host.session_services``). Once listening, what the first requests need is loaded in a worker
thread (``_load_soon``), so a client that connects a moment later finds it ready instead of waiting
for it on the event loop; one that asks sooner waits only for what is left of that import. The
thread starts once the first handshake has been answered, or ``LOAD_AFTER`` seconds after listening
if none was sooner: a client that connects at once gets its answer without sharing the interpreter
(the GIL) with those imports, and what it asks next waits for them as it would have anyway. First
the session services, which the event loop then builds and starts (``AgentHost.start_sessions``:
until then a connection holds every request but the handshake); then the wire models every request
is validated with (``ahp.dialects.v0_2.wire._generated``), the newer dialects, and the plugin loader
the first session reads its working directory's customizations with (``plugins``). The first
``initialize`` waits for none of them: its params are validated with their model alone
(``ahp.dialects.v0_2.wire._handshake``), and its answer needs only the store and the root channel.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import signal
import socket
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from ahp.dialects.negotiation import SERVED_VERSIONS
from ahp.dialects.v0_2.wire._models import generated_module
from host import startup
from host.runtime import memory
from host.service import AgentHost
from host.transport import quiet_server
from host.transport.connection import ClientConnection
from host.transport.dialects import load_newer
from host.transport.http_protocol import AbortableHttpProtocol
from host.transport.outbound import OutboundBudget
from host.transport.tokens import HOST_GRANT, Grant, TokenFile
from host.transport.ws_protocol import FRAMES_EXTENSION, TickBatchingWebSocketProtocol

__all__ = ["build_app", "listening_socket", "serve", "RunningHost", "start_host"]

logger = logging.getLogger(__name__)

AGUI_PATH = "/agui"
"""Where the AG-UI endpoint (``host.transport.agui``) is mounted, loaded on its first request."""

_TRY_AGAIN_LATER = 1013
_POLICY_VIOLATION = 1008

TOKEN_FILE_CHECK = 1.0
"""Seconds between two looks at the token file for revoked tokens (a connection's next message
looks at once)."""


def _presented_token(headers: Any, query: Any) -> str | None:
    authorization = headers.get("authorization")
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip()
    token = query.get("token")
    return token if token is not None else query.get("tkn")


def _grant(expected: str | None, tokens: TokenFile, presented: str | None) -> Grant | None:
    """The grant ``presented`` earns: a named token's, the host's own (``full``), or None (refused).
    A host started without a token takes every client as its own, but a named token still has its
    level there."""
    if presented is not None:
        named = tokens.match(presented)
        if named is not None:
            return named
        if expected is not None and hmac.compare_digest(presented.encode(), expected.encode()):
            return HOST_GRANT
    return HOST_GRANT if expected is None else None


def _connection_refusal(config: Any, open_connections: dict[str, int], presented: str) -> str | None:
    """Why one more connection is refused (a close reason, at most 123 bytes), or None."""
    if sum(open_connections.values()) >= config.max_connections:
        return f"host is at its limit of {config.max_connections} connections; try again later"
    if open_connections.get(presented, 0) >= config.max_connections_per_token:
        return f"this token has {config.max_connections_per_token} connections open, its limit; close one"
    return None


def build_app(host: AgentHost, *, token: str | None, on_connection: Callable[[], None] | None = None,
              tokens: TokenFile | None = None) -> Starlette:
    """The app; ``on_connection`` runs for each AHP connection accepted, before its first message.
    ``tokens``: the named tokens (by default the data directory's)."""
    allowed_origins = set(host.config.server.allowed_origins)
    token_file = tokens if tokens is not None else TokenFile(host.config.data_path())
    live: set[ClientConnection] = set()
    """The open AHP connections, for closing those of a revoked token."""
    open_connections: dict[str, int] = {}
    """Open AHP connections by the token they presented."""
    budget = OutboundBudget(total=host.config.server.max_queued_bytes,
                            per_client=host.config.server.max_queued_bytes_per_client)
    """What all connections may hold unread, together and each (``host.transport.outbound``)."""

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "protocolVersions": list(SERVED_VERSIONS)})

    async def ahp(websocket: WebSocket) -> None:
        origin = websocket.headers.get("origin")
        if origin is not None and origin not in allowed_origins:
            logger.warning("refused a WebSocket from origin %s", origin)
            await websocket.close(code=_POLICY_VIOLATION, reason="origin not allowed")
            return
        presented = _presented_token(websocket.headers, websocket.query_params) or ""
        grant = _grant(token, token_file, presented or None)
        if grant is None:
            logger.warning("refused a WebSocket with a missing or wrong token")
            await websocket.close(code=_POLICY_VIOLATION, reason="missing or wrong token")
            return
        refusal = host.cut_off or _connection_refusal(host.config.server, open_connections, presented)
        await websocket.accept()
        if refusal is not None:
            logger.warning("refused a WebSocket: %s", refusal)
            await websocket.close(code=_TRY_AGAIN_LATER, reason=refusal)
            return
        open_connections[presented] = open_connections.get(presented, 0) + 1
        try:
            if on_connection is not None:
                on_connection()
            await _serve_connection(host, websocket, budget, grant, token_file, live, app.state.answered)
        finally:
            open_connections[presented] -= 1
            if not open_connections[presented]:
                del open_connections[presented]

    def cut_off(reason: str) -> None:  # a cluster's process that lost NATS: its clients reconnect elsewhere
        for connection in tuple(live):
            connection.cut_off(_TRY_AGAIN_LATER, reason)

    host.cut_off_listeners.append(cut_off)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await host.start(sessions_later=True)  # the rest once listening (start_host)
        watch = asyncio.create_task(_watch_tokens(token_file, live))
        try:
            yield
        finally:
            watch.cancel()
            await host.stop()

    def agui_token_check(request: Request) -> Grant | bool | None:
        presented = _presented_token(request.headers, request.query_params)
        if presented is None:
            return HOST_GRANT if token is None else None
        return _grant(token, token_file, presented) or False

    agui_handler: Any = None

    async def agui(request: Request) -> Any:
        # Built on the first request: importing AG-UI is not worth its start-up time until then.
        nonlocal agui_handler
        if not host.sessions_started:
            await host.started()
        if agui_handler is None:
            agui_endpoint = startup.load("host.transport.agui.endpoint").agui_endpoint
            agui_handler = agui_endpoint(host, token=token, allowed_origins=allowed_origins, token_check=agui_token_check,
                                         budget=budget)
        return await agui_handler(request)

    app = Starlette(
        routes=[
            Route("/health", health),
            Route(AGUI_PATH, agui, methods=["POST", "OPTIONS"]),
            WebSocketRoute("/", ahp),
            WebSocketRoute("/ahp", ahp),
        ],
        lifespan=lifespan,
    )
    app.state.open_connections = open_connections
    app.state.answered = _nothing
    """Called when a connection's handshake has been answered (``start_host`` sets it)."""
    return app


def _nothing() -> None:
    pass


_NOTHING: Callable[[], None] = _nothing


async def _watch_tokens(tokens: TokenFile, live: set[ClientConnection]) -> None:
    """Close the connections of tokens revoked while they are open (their next message would
    find out too, but a client that only watches sends none)."""
    seen = -1
    while True:
        await asyncio.sleep(TOKEN_FILE_CHECK)
        tokens.refresh()
        if tokens.generation == seen:  # (a connection's own check may have read the change first)
            continue
        seen = tokens.generation
        for connection in [c for c in live if not tokens.still_valid(c.grant)]:
            connection.revoked()


async def _serve_connection(host: AgentHost, websocket: WebSocket, budget: OutboundBudget, grant: Grant,
                            tokens: TokenFile, live: set[ClientConnection], answered: Callable[[], None]) -> None:
    """Serve one AHP WebSocket until it closes; ``answered()`` once its handshake has been answered."""
    reader_done = asyncio.Event()
    frames = websocket.scope.get("extensions", {}).get(FRAMES_EXTENSION)

    def cut_off(code: int, reason: str) -> None:
        if frames is not None:
            frames.cut_off(code, reason)  # drops what waits and sends the close frame now
        reader_done.set()

    connection = ClientConnection(host, on_cut_off=cut_off, budget=budget, grant=grant, still_valid=tokens.still_valid)
    live.add(connection)
    writer: asyncio.Task[None] | None = None
    if frames is not None:
        # uvicorn with host.ws_protocol: frames go straight into the protocol's buffer, written once
        # per tick after the journal commit.
        frames.before_write = host.store.flush  # nothing leaves the process before it is durable
        frames.when_durable = host.store.when_durable
        frames.at_end_of_tick = host.store.at_end_of_tick  # one end-of-tick callback for the commit and every write
        connection.direct = frames.queue_text
        connection.direct_backlog = frames.backlog
    else:
        async def write() -> None:
            while True:
                frame = await connection.outbox.get()
                if frame is None:
                    return
                connection.outbox_chars -= len(frame)
                host.store.flush()  # nothing leaves the process before it is durable
                await websocket.send_text(frame)
                if connection.close_requested and connection.outbox.empty():
                    reader_done.set()
                    return

        writer = asyncio.create_task(write())
    try:
        while not reader_done.is_set():
            receive = asyncio.create_task(websocket.receive())
            stop = asyncio.create_task(reader_done.wait())
            finished, _ = await asyncio.wait({receive, stop}, return_when=asyncio.FIRST_COMPLETED)
            if receive not in finished:
                receive.cancel()
                stop.cancel()
                break
            stop.cancel()
            message = receive.result()
            if message["type"] == "websocket.disconnect":
                break
            text = message.get("text")
            if text is None and message.get("bytes") is not None:
                text = message["bytes"]
            if text is not None:
                await connection.receive(text)
                if answered is not _NOTHING and connection.client_id is not None:
                    answered()
                    answered = _NOTHING
                if connection.close_requested:
                    if writer is not None:
                        connection.outbox.put_nowait(None)
                        await writer
                    break  # (direct: the close below writes the pending frames first)
    except WebSocketDisconnect:
        pass
    finally:
        live.discard(connection)
        connection.closed()
        if writer is not None:
            writer.cancel()
        code, reason = connection.cut_off_reason or (1000, "")
        try:
            await websocket.close(code=code, reason=reason)
        except Exception:
            pass


class RunningHost:
    """A host serving on a bound socket (used by the CLI and by tests on port 0)."""

    def __init__(self, server: Any, task: asyncio.Task[None], sock: socket.socket, host: AgentHost, token: str | None) -> None:
        self.server = server
        self.task = task
        self.socket = sock
        self.host = host
        self.token = token
        address = sock.getsockname()
        self.address = address[0]
        self.port = address[1]
        self.open_connections: dict[str, int] = {}
        """Open AHP connections by the token they presented (set by ``start_host``)."""

    @property
    def connections(self) -> int:
        """How many AHP connections are open now."""
        return sum(self.open_connections.values())

    @property
    def url(self) -> str:
        bracketed = f"[{self.address}]" if ":" in self.address else self.address
        base = f"ws://{bracketed}:{self.port}/"
        return f"{base}?token={self.token}" if self.token else base

    @property
    def http_url(self) -> str:
        bracketed = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{bracketed}:{self.port}"

    def stop_soon(self) -> None:
        """Ask the server to close its connections and stop (``serve`` returns once it has)."""
        self.server.should_exit = True

    async def stop(self) -> None:
        self.stop_soon()
        await self.task


def listening_socket(address: str, port: int) -> socket.socket:
    """A TCP socket bound to ``address:port`` and listening, as the host serves on (``serve
    --workers`` binds one and hands it to its workers: ``cli.workers``)."""
    return _bind(address, port)


def _bind(address: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    # IPPROTO_TCP, not 0: accepted sockets inherit it, and asyncio turns Nagle's algorithm off
    # (TCP_NODELAY) only on sockets that say they are TCP. With it on, a small frame written while
    # an earlier one was unacknowledged waited for the client's delayed ACK: 10-40 ms per frame
    # once several sessions streamed to one client.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((address, port))
    sock.listen(128)
    sock.setblocking(False)
    return sock


async def start_host(host: AgentHost, *, token: str | None, on_connection: Callable[[], None] | None = None,
                     sock: socket.socket | None = None, tokens: TokenFile | None = None) -> RunningHost:
    """Bind (or take ``sock``, a listening socket: a worker of ``serve --workers``), start serving
    in a task, and return once the host accepts connections. ``tokens``: the named tokens (by
    default the data directory's; a worker's are its parent's)."""
    config = host.config.server
    if sock is None:
        sock = _bind(config.host, config.port)
    app = build_app(host, token=token, on_connection=on_connection, tokens=tokens)
    uv_config = uvicorn.Config(
        app,
        ws=TickBatchingWebSocketProtocol,  # uvicorn's websockets-sansio, one write per tick
        http=AbortableHttpProtocol,  # uvicorn's httptools, able to drop a client cut off for not reading
        ws_max_size=config.max_frame_bytes,
        ws_per_message_deflate=False,
        log_level="warning",
        lifespan="on",
        access_log=False,
    )
    server = quiet_server.server(uv_config)  # uvicorn's, waking once a second, not ten times
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the host stopped while starting")
        await asyncio.sleep(0.001)
    running = RunningHost(server, task, sock, host, token)
    running.open_connections = app.state.open_connections
    loop = asyncio.get_running_loop()

    def imported() -> None:  # (in the worker thread)
        loop.call_soon_threadsafe(_start_sessions, running)

    # The worker thread's imports start once the first handshake has been answered (a client that
    # connects at once has its answer without sharing the interpreter with them), or LOAD_AFTER
    # seconds after listening, whichever comes first.
    answered = threading.Event()
    app.state.answered = answered.set
    loop.run_in_executor(None, _load_soon, answered, imported)
    return running


LOAD_AFTER = 0.05
"""Seconds after listening when the worker thread starts its imports if no handshake was answered
sooner."""


def _load_soon(answered: threading.Event, imported: Callable[[], None]) -> None:
    """In a worker thread once listening: the imports the first requests need (module docstring),
    from when ``answered`` is set or ``LOAD_AFTER`` seconds have passed; ``imported`` is called once
    the session services' are in."""
    answered.wait(LOAD_AFTER)
    memory.import_ahead(_import_session_services, "the session services")
    try:
        imported()
    except RuntimeError:  # the event loop is closed: the host stopped meanwhile
        return
    memory.import_ahead(generated_module, "the wire models")
    memory.import_ahead(load_newer, "the newer dialects")
    memory.import_ahead(_import_plugins, "the plugin loader")


def _import_session_services() -> None:
    startup.load("host.session_services")


def _start_sessions(running: RunningHost) -> None:
    """On the event loop, once the session services are imported: build them and start what runs
    in sessions (``AgentHost.start_sessions``); the requests held until then go on. A failure
    stops the host (its requests get the error)."""
    if running.server.should_exit:
        return
    try:
        running.host.start_sessions()
    except Exception:
        logger.exception("the host could not start its sessions; it stops")
        running.stop_soon()


def _import_plugins() -> None:
    # The package exports lazily; these are the loader's modules the first session reads with.
    for module in ("plugins.customizations", "plugins.directories", "plugins.loader"):
        startup.load(module)


async def serve(
    host: AgentHost, *, token: str | None, announce: Any = print, listening: Any = None,
    on_connection: Callable[[], None] | None = None, sock: socket.socket | None = None, tokens: TokenFile | None = None,
) -> None:
    """Run until interrupted (SIGINT/SIGTERM), printing the URL once listening. ``listening``,
    when given, is awaited with the ``RunningHost`` alongside (it may stop it: ``stop_soon``)."""
    running = await start_host(host, token=token, on_connection=on_connection, sock=sock, tokens=tokens)
    memory.settle()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(signum, lambda: setattr(running.server, "should_exit", True))
        except (NotImplementedError, RuntimeError):
            pass
    announce(f"agent-host listening on {running.url}")
    if listening is None:
        await running.task
        return
    watcher = asyncio.create_task(listening(running))
    try:
        await running.task
    finally:
        watcher.cancel()
