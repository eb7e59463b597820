"""Fan-out benchmark: one session streaming deltas to 1, 10 and 50 subscribed clients.

    .venv/bin/python benchmarks/fanout.py [--deltas 5000] [--clients 1,10,50] [--repeat 3]

For each client count it measures delivered frames per second (clients × deltas / wall time from
the first delta to the last frame received by the last client) for

* **host**: the real agent host (Starlette on uvicorn, the store with its reducers, the SQLite
  journal on disk, the per-connection outboxes) with one session whose active turn receives
  ``session/delta`` actions as fast as the event loop takes them;
* **baseline**: a raw ``websockets`` server at its best: every frame pre-serialised once and handed
  to ``websockets.broadcast()`` for all connections (no per-frame drain, no queue, no reducer, no
  journal, no ASGI layer).

Both producers yield to the event loop every 64 deltas, as a streaming provider would. The clients
are plain ``websockets`` connections spread over up to ``--client-processes`` processes, so that the
server side, not one client process, is what is measured. Host and baseline runs alternate;
the median of ``--repeat`` runs of each is printed with their ratio (the figure to read).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import ChildProcess, machine_note, median, split  # noqa: E402

SESSION = "ahp-session:/bench"
TOKEN = "bench-token"
DELTA_TEXT = "token "
_YIELD_EVERY = 64


# -- the client processes --------------------------------------------------------------------------


async def _client_main(url: str, clients: int, expected: int, mode: str) -> None:
    from websockets.asyncio.client import connect

    connections = [await connect(url, max_size=None, compression=None) for _ in range(clients)]
    if mode == "host":
        for index, ws in enumerate(connections):
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": f"bench-{index}",
                "initialSubscriptions": [SESSION]}}))
            while '"id"' not in await ws.recv():
                pass
    print("ready", flush=True)

    async def drain(ws) -> None:
        count = 0
        while count < expected:
            frame = await ws.recv()
            if mode == "baseline" or '"session/delta"' in frame:
                count += 1

    await asyncio.gather(*(drain(ws) for ws in connections))
    print("done", flush=True)
    for ws in connections:
        await ws.close()


# -- the server side -------------------------------------------------------------------------------


async def _measure(url: str, clients: int, deltas: int, processes: int, mode: str, produce) -> float:
    children = [ChildProcess(__file__, url, share, deltas, mode) for share in split(clients, processes)]
    try:
        for child in children:
            await child.expect("ready")
        await asyncio.sleep(0.2)  # every connection registered server-side
        started = time.perf_counter()
        await produce()
        for child in children:
            await child.expect("done")
        elapsed = time.perf_counter() - started
        for child in children:
            await child.wait()
    finally:
        for child in children:
            child.kill()
    return clients * deltas / elapsed


async def run_host(clients: int, deltas: int, processes: int) -> float:
    from host.config import load_config
    from host.transport.server import start_host
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

            async def produce() -> None:
                for index in range(deltas):
                    store.dispatch(SESSION, {"type": "session/delta", "turnId": turn, "partId": "p", "content": DELTA_TEXT})
                    if index % _YIELD_EVERY == 0:
                        await asyncio.sleep(0)

            return await _measure(running.url, clients, deltas, processes, "host", produce)
        finally:
            await running.stop()


async def run_baseline(clients: int, deltas: int, processes: int) -> float:
    from websockets.asyncio.server import broadcast, serve

    connections: set = set()

    async def handler(ws) -> None:
        connections.add(ws)
        try:
            await ws.wait_closed()
        finally:
            connections.discard(ws)

    async with serve(handler, "127.0.0.1", 0, max_size=None, compression=None) as server:
        port = server.sockets[0].getsockname()[1]

        async def produce() -> None:
            targets = tuple(connections)
            assert len(targets) == clients, (len(targets), clients)
            for index in range(deltas):
                # What the host sends: one envelope per delta, serialised once, same size.
                frame = json.dumps({"jsonrpc": "2.0", "method": "action", "params": {"channel": SESSION, "action": {
                    "type": "session/delta", "turnId": "bench-turn", "partId": "p", "content": DELTA_TEXT},
                    "serverSeq": 100_000 + index}}, separators=(",", ":"))
                broadcast(targets, frame)
                if index % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)

        return await _measure(f"ws://127.0.0.1:{port}/", clients, deltas, processes, "baseline", produce)


async def main(client_counts: list[int], deltas: int, repeat: int, processes: int) -> None:
    print(f"fan-out, {deltas} deltas per run, median of {repeat}; {machine_note()}")
    print(f"{'clients':>7} | {'host frames/s':>13} | {'raw broadcast frames/s':>22} | {'host/baseline':>13}")
    for clients in client_counts:
        host_runs: list[float] = []
        base_runs: list[float] = []
        for _ in range(repeat):
            host_runs.append(await run_host(clients, deltas, processes))
            base_runs.append(await run_baseline(clients, deltas, processes))
        host, base = median(host_runs), median(base_runs)
        print(f"{clients:>7} | {host:>13,.0f} | {base:>22,.0f} | {host / base:>13.2f}", flush=True)
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        url, clients, deltas, mode = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
        asyncio.run(_client_main(url, clients, deltas, mode))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--client-processes", type=int, default=4)
    args = parser.parse_args()
    asyncio.run(main([int(c) for c in args.clients.split(",")], args.deltas, args.repeat, args.client_processes))
