"""The host's uvicorn server (``host.transport.quiet_server``): it serves, wakes once a second
rather than ten times, stops within uvicorn's tick when asked (by ``stop_soon`` or a signal's handler), and the
plain uvicorn server it falls back to does the same but for the wake-ups."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
import uvicorn

from host.transport import quiet_server
from host.transport.quiet_server import QuietServer


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})


async def _serving(quiet: bool) -> tuple[Any, asyncio.Task[None]]:
    config = uvicorn.Config(_app, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = quiet_server.server(config, quiet=quiet)
    task = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.005)
    return server, task


async def _get(server: Any) -> bytes:
    port = server.servers[0].sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    answer = await asyncio.wait_for(reader.read(4096), 5)
    writer.close()
    return answer


def test_the_host_gets_the_quiet_server_with_this_uvicorn() -> None:
    config = uvicorn.Config(_app)
    assert isinstance(quiet_server.server(config), QuietServer)
    assert type(quiet_server.server(config, quiet=False)) is uvicorn.Server


@pytest.mark.parametrize("quiet", [True, False])
async def test_it_serves_and_stops_within_uvicorn_s_tick_when_asked(quiet: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    ticks: list[int] = []
    on_tick = uvicorn.Server.on_tick

    async def counted(self: Any, counter: int) -> bool:
        ticks.append(counter)
        return await on_tick(self, counter)

    monkeypatch.setattr(uvicorn.Server, "on_tick", counted)
    server, task = await _serving(quiet)
    answer = await _get(server)
    assert answer.startswith(b"HTTP/1.1 200") and b"\r\ndate: " in answer.lower()
    await asyncio.sleep(0.35)
    # uvicorn's own ticks ten times a second; the quiet one once (its first tick: at the start).
    assert (len(ticks) <= 1) if quiet else (len(ticks) >= 3)
    started = time.monotonic()
    server.should_exit = True  # as ``RunningHost.stop_soon`` and the signal handlers do
    await asyncio.wait_for(task, 5)
    assert time.monotonic() - started < (0.5 if quiet else 1.0)  # (uvicorn's tick, not the quiet one's)
