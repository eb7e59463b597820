"""Fan-out benchmark: one session streaming deltas to 1, 10 and 50 subscribed clients.

    .venv/bin/python benchmarks/fanout.py [--deltas 2000] [--clients 1,10,50] [--repeat 3]

For each client count it measures delivered frames per second (clients × deltas / wall time from
the first delta to the last frame received by the last client) for

* **host**: the real agent host (Starlette on uvicorn, the store with its reducers, SQLite journal
  and per-connection outboxes) with one session whose active turn receives ``session/delta``
  actions as fast as the event loop takes them;
* **baseline**: a bare ``websockets`` server that sends the same number of pre-serialised frames of
  the same size through the same per-connection queue-and-writer design, with no reducer, no
  journal and no ASGI layer.

The clients run in a separate process (plain ``websockets`` connections that count frames), so
the server side gets its own core. The figure to read is the ratio host/baseline measured in the
same run; absolute numbers depend on the machine. Best of ``--repeat`` runs is reported.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SESSION = "ahp-session:/bench"
TOKEN = "bench-token"
DELTA_TEXT = "token "


# -- the client process ----------------------------------------------------------------------------


async def _client_main(url: str, clients: int, expected: int, mode: str) -> None:
    from websockets.asyncio.client import connect

    connections = [await connect(url, max_size=None, compression=None) for _ in range(clients)]
    if mode == "host":
        for index, ws in enumerate(connections):
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": f"bench-{index}",
                "initialSubscriptions": [SESSION]}}))
            while "id" not in json.loads(await ws.recv()):
                pass
    print("ready", flush=True)

    async def drain(ws) -> None:
        count = 0
        while count < expected:
            frame = await ws.recv()
            if '"session/delta"' in frame or mode == "baseline":
                count += 1

    await asyncio.gather(*(drain(ws) for ws in connections))
    print("done", flush=True)
    for ws in connections:
        await ws.close()


# -- the server side -------------------------------------------------------------------------------


def _spawn_clients(url: str, clients: int, deltas: int, mode: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, "--client", url, str(clients), str(deltas), mode],
        stdout=subprocess.PIPE, text=True,
    )


async def _await_line(process: subprocess.Popen[str], wanted: str) -> None:
    line = await asyncio.to_thread(process.stdout.readline)  # type: ignore[union-attr]
    if line.strip() != wanted:
        raise RuntimeError(f"client process said {line!r}, expected {wanted!r}")


async def run_host(clients: int, deltas: int) -> float:
    from host.config import load_config
    from host.server import start_host
    from host.service import AgentHost

    with tempfile.TemporaryDirectory() as data:
        config = load_config(None, overrides={"server": {"port": 0, "data_dir": data, "token": TOKEN}}, environ={})
        host = AgentHost(config)
        running = await start_host(host, token=TOKEN)
        try:
            store = host.store
            host.create_session({"channel": SESSION}, "bench")
            turn = "bench-turn"
            store.dispatch(SESSION, {"type": "session/turnStarted", "turnId": turn, "userMessage": {"text": "go"}})
            host.runner.forget(SESSION)  # no agent: the benchmark itself produces the deltas
            store.dispatch(SESSION, {"type": "session/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "p", "content": ""}})
            process = _spawn_clients(running.url, clients, deltas, "host")
            await _await_line(process, "ready")
            started = time.perf_counter()
            for index in range(deltas):
                store.dispatch(SESSION, {"type": "session/delta", "turnId": turn, "partId": "p", "content": DELTA_TEXT})
                if index % 64 == 0:
                    await asyncio.sleep(0)  # let the writers run, as a real provider stream would
            await _await_line(process, "done")
            elapsed = time.perf_counter() - started
            await asyncio.to_thread(process.wait, 10)
        finally:
            await running.stop()
    return clients * deltas / elapsed


async def run_baseline(clients: int, deltas: int) -> float:
    from websockets.asyncio.server import serve

    frame = json.dumps({"jsonrpc": "2.0", "method": "action", "params": {"channel": SESSION, "action": {
        "type": "session/delta", "turnId": "bench-turn", "partId": "p", "content": DELTA_TEXT}, "serverSeq": 123456}},
        separators=(",", ":"))
    outboxes: list[asyncio.Queue[str | None]] = []
    connected = asyncio.Event()

    async def handler(ws) -> None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        outboxes.append(queue)
        if len(outboxes) == clients:
            connected.set()
        while (item := await queue.get()) is not None:
            await ws.send(item)

    async with serve(handler, "127.0.0.1", 0, max_size=None, compression=None) as server:
        port = server.sockets[0].getsockname()[1]
        process = _spawn_clients(f"ws://127.0.0.1:{port}/", clients, deltas, "baseline")
        await _await_line(process, "ready")
        await connected.wait()
        started = time.perf_counter()
        for index in range(deltas):
            for queue in outboxes:
                queue.put_nowait(frame)
            if index % 64 == 0:
                await asyncio.sleep(0)
        await _await_line(process, "done")
        elapsed = time.perf_counter() - started
        for queue in outboxes:
            queue.put_nowait(None)
        await asyncio.to_thread(process.wait, 10)
    return clients * deltas / elapsed


async def main(client_counts: list[int], deltas: int, repeat: int) -> None:
    print(f"deltas per run: {deltas}; best of {repeat}; machine: {os.cpu_count()} cores")
    print(f"{'clients':>7} | {'host frames/s':>13} | {'baseline frames/s':>17} | {'host/baseline':>13}")
    for clients in client_counts:
        host = max([await run_host(clients, deltas) for _ in range(repeat)])
        base = max([await run_baseline(clients, deltas) for _ in range(repeat)])
        print(f"{clients:>7} | {host:>13,.0f} | {base:>17,.0f} | {host / base:>13.2f}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--client":
        url, clients, deltas, mode = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        asyncio.run(_client_main(url, clients, deltas, mode))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=2000)
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main([int(c) for c in args.clients.split(",")], args.deltas, args.repeat))
