"""A tiny scriptable AHP host for the client tests (WebSocket on 127.0.0.1, port 0).

It speaks just enough JSON-RPC: requests are answered by per-method handlers (each in
its own task, so tests can answer out of order), notifications are recorded in order,
and every message received is queued so tests can await it. Default handlers answer
``initialize`` (in the first version the client offers), ``subscribe``, ``ping`` and echo every
``dispatchAction``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

from websockets.asyncio.server import ServerConnection, serve

Handler = Callable[["FakeConn", dict], Awaitable[Any]]

NO_REPLY = object()
"""Return this from a request handler that sent its own response."""


class RpcError(Exception):
    """Raise from a handler to answer with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class FakeConn:
    """The host's side of one client connection."""

    def __init__(self, host: FakeHost, ws: ServerConnection) -> None:
        self.host = host
        self.ws = ws
        self.messages: list[dict] = []
        self.next_id = 1000

    @property
    def headers(self):
        return self.ws.request.headers

    async def send(self, message: dict | str) -> None:
        await self.ws.send(message if isinstance(message, str) else json.dumps(message))

    async def notify(self, method: str, params: dict) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def envelope(self, channel: str, action: dict, *, origin: dict | None = None, reason: str | None = None) -> dict:
        """Send an ``action`` notification; accepted ones take the next serverSeq."""
        if reason is None:
            self.host.seq += 1
        env: dict[str, Any] = {"channel": channel, "action": action, "serverSeq": self.host.seq}
        if origin is not None:
            env["origin"] = origin
        if reason is not None:
            env["rejectionReason"] = reason
        await self.notify("action", env)
        return env

    async def request(self, method: str, params: dict) -> int:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id


class FakeHost:
    """Start with ``async with FakeHost() as host``; connect clients to ``host.url``."""

    def __init__(self) -> None:
        self.states: dict[str, dict] = {}
        self.seq = 0
        self.version: str | None = None
        """The version ``initialize`` answers in; None: the client's first choice."""
        self.handlers: dict[str, Handler] = {
            "initialize": self._initialize,
            "subscribe": self._subscribe,
            "ping": self._ping,
            "dispatchAction": self._echo,
        }
        self.connections: list[FakeConn] = []
        self.inbox: asyncio.Queue[tuple[FakeConn, dict]] = asyncio.Queue()
        self._connected: asyncio.Queue[FakeConn] = asyncio.Queue()
        self._server = None
        self.url = ""

    async def __aenter__(self) -> FakeHost:
        self._server = await serve(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}/ahp"
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._server.close()
        await self._server.wait_closed()

    async def next_connection(self, timeout: float = 5) -> FakeConn:
        return await asyncio.wait_for(self._connected.get(), timeout)

    async def next_message(self, method: str | None = None, timeout: float = 5) -> tuple[FakeConn, dict]:
        """The next received message (skipping others when ``method`` is given)."""
        while True:
            conn, message = await asyncio.wait_for(self.inbox.get(), timeout)
            if method is None or message.get("method") == method:
                return conn, message

    async def next_reply(self, request_id: int, timeout: float = 5) -> dict:
        """The client's response to one of our host-to-client requests."""
        while True:
            _, message = await asyncio.wait_for(self.inbox.get(), timeout)
            if "method" not in message and message.get("id") == request_id:
                return message

    async def _serve(self, ws: ServerConnection) -> None:
        conn = FakeConn(self, ws)
        self.connections.append(conn)
        self._connected.put_nowait(conn)
        tasks: set[asyncio.Task] = set()
        async for raw in ws:
            message = json.loads(raw)
            conn.messages.append(message)
            self.inbox.put_nowait((conn, message))
            if "method" not in message:
                continue  # a response to one of our requests; tests read it from the inbox
            handler = self.handlers.get(message["method"])
            if "id" not in message:
                if handler is not None:
                    await handler(conn, message)  # notifications in order, like a real host
                continue
            task = asyncio.create_task(self._answer(conn, message, handler))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def _answer(self, conn: FakeConn, message: dict, handler: Handler | None) -> None:
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if handler is None:
            reply["error"] = {"code": -32601, "message": f"Method not found: {message['method']}"}
        else:
            try:
                reply["result"] = await handler(conn, message)
                if reply["result"] is NO_REPLY:
                    return
            except RpcError as exc:
                reply["error"] = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    reply["error"]["data"] = exc.data
        try:
            await conn.send(reply)
        except Exception:
            pass  # the client went away; nothing to answer

    # -- default handlers -----------------------------------------------------------

    def snapshot(self, channel: str) -> dict:
        return {"resource": channel, "state": self.states[channel], "fromSeq": self.seq}

    async def _initialize(self, conn: FakeConn, message: dict) -> dict:
        subs = message["params"].get("initialSubscriptions", [])
        return {
            "protocolVersion": self.version or message["params"]["protocolVersions"][0],
            "serverSeq": self.seq,
            "snapshots": [self.snapshot(c) for c in subs if c in self.states],
        }

    async def _subscribe(self, conn: FakeConn, message: dict) -> dict:
        channel = message["params"]["channel"]
        if channel not in self.states:
            raise RpcError(-32001, f"Session not found: {channel}")
        return {"snapshot": self.snapshot(channel)}

    async def _ping(self, conn: FakeConn, message: dict) -> None:
        return None

    async def _echo(self, conn: FakeConn, message: dict) -> None:
        params = message["params"]
        client_id = next(
            (m["params"]["clientId"] for m in conn.messages if m.get("method") in ("initialize", "reconnect")),
            "unknown",
        )
        await conn.envelope(
            params["channel"], params["action"], origin={"clientId": client_id, "clientSeq": params["clientSeq"]}
        )
