"""A recording WebSocket proxy between VS Code's agent-host bridge and a host.

It forwards every frame unchanged in both directions and the upgrade request's path and query
verbatim (so the host sees exactly the URL VS Code dialled, token parameter included), and appends
one JSON object per line to a log, in the format of the recordings in
``/work/shared/ahp/vscode-1.139.1``: ``t`` (seconds since the proxy started), ``conn`` (1, 2, ...),
``dir`` (``c2s``, ``s2c`` or ``event``) and ``data`` (the frame text, or for an event an object:
the accepted request, the upstream's refusal, or how each side closed).

It runs on its own thread with its own event loop, so a synchronous test can start it, read what
went by (``frames()``) and stop it. Run as ``python -m tests.e2e.wire_proxy UPSTREAM_PORT LOG`` it
prints ``wire proxy on 127.0.0.1:<port>`` and serves until interrupted.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed, InvalidStatus

_HOP_HEADERS = {
    "host", "upgrade", "connection", "sec-websocket-key", "sec-websocket-version",
    "sec-websocket-extensions", "sec-websocket-protocol", "content-length",
}


def _sendable(code: int) -> int:
    """A close code that may go on the wire (1005, 1006 and 1015 only describe a close)."""
    return 1000 if code in (1005, 1006, 1015) else code


class WireProxy:
    """Listens on 127.0.0.1 (a free port) and relays each connection to ``upstream_port``."""

    def __init__(self, upstream_port: int, log_path: Path, upstream_host: str = "127.0.0.1") -> None:
        self.upstream = f"ws://{upstream_host}:{upstream_port}"
        self.log_path = log_path
        self.port = 0
        self._started = time.monotonic()
        self._connections = 0
        self._lock = threading.Lock()
        self._entries: list[dict[str, Any]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None

    # -- reading what went by ------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._entries)

    def frames(self, direction: str) -> list[dict[str, Any]]:
        """The JSON messages sent in one direction (``c2s`` or ``s2c``), parsed, in order."""
        out = []
        for entry in self.entries():
            if entry["dir"] == direction:
                try:
                    out.append(json.loads(entry["data"]))
                except (TypeError, ValueError):
                    out.append({"unparsed": entry["data"]})
        return out

    def events(self) -> list[dict[str, Any]]:
        return [entry["data"] for entry in self.entries() if entry["dir"] == "event"]

    # -- running -------------------------------------------------------------------------------

    def start(self) -> int:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            try:
                asyncio.run(self._serve(ready))
            except BaseException as error:  # reported to start() below
                failure.append(error)
                ready.set()

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.write_text("")
        self._thread = threading.Thread(target=run, name="wire-proxy", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        if not self.port:
            raise RuntimeError("the wire proxy did not start listening within 10 s")
        return self.port

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(10)

    async def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self._relay, "127.0.0.1", 0, max_size=None, compression=None) as server:
            self.port = server.sockets[0].getsockname()[1]
            ready.set()
            await self._stop.wait()

    def _record(self, conn: int, direction: str, data: Any) -> None:
        entry = {"t": round(time.monotonic() - self._started, 3), "conn": conn, "dir": direction, "data": data}
        with self._lock:
            self._entries.append(entry)
            with self.log_path.open("a") as log:
                log.write(json.dumps(entry) + "\n")

    async def _relay(self, client: ServerConnection) -> None:
        with self._lock:
            self._connections += 1
            conn = self._connections
        request = client.request
        assert request is not None
        headers = {name: value for name, value in request.headers.raw_items() if name.lower() not in _HOP_HEADERS}
        self._record(conn, "event", {"accepted": request.path, "headers": dict(request.headers.raw_items())})
        try:
            upstream = await connect(
                self.upstream + request.path, additional_headers=headers, max_size=None,
                compression=None, open_timeout=10, user_agent_header=None,
            )
        except InvalidStatus as error:
            self._record(conn, "event", {"upstream_refused": error.response.status_code})
            await client.close(1011, f"upstream refused the upgrade: HTTP {error.response.status_code}")
            return
        except OSError as error:
            self._record(conn, "event", {"upstream_unreachable": str(error)})
            await client.close(1011, "upstream unreachable")
            return

        async def pump(source: Any, sink: Any, direction: str) -> None:
            try:
                async for message in source:
                    text = message if isinstance(message, str) else message.decode("utf-8", "replace")
                    self._record(conn, direction, text)
                    await sink.send(message)
            except ConnectionClosed:
                pass

        tasks = [
            asyncio.create_task(pump(client, upstream, "c2s")),
            asyncio.create_task(pump(upstream, client, "s2c")),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        # Mirror a close from either side onto the other, with its code and reason.
        if upstream.close_code is not None and client.close_code is None:
            await client.close(_sendable(upstream.close_code), upstream.close_reason or "")
        elif client.close_code is not None and upstream.close_code is None:
            await upstream.close(_sendable(client.close_code), client.close_reason or "")
        await asyncio.gather(*tasks, return_exceptions=True)
        self._record(conn, "event", {"closed": {
            "client": [client.close_code, client.close_reason],
            "upstream": [upstream.close_code, upstream.close_reason],
        }})


def main(argv: list[str]) -> None:
    proxy = WireProxy(int(argv[0]), Path(argv[1]))
    print(f"wire proxy on 127.0.0.1:{proxy.start()}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        proxy.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
