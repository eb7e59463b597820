"""Fan-out benchmark: one chat streaming deltas to 1, 10 and 50 subscribed clients.

    .venv/bin/python benchmarks/fanout.py [--deltas 20000] [--clients 1,10,50] [--repeat 3] [--protocol 0.9.0] [--side both]

For each client count it measures delivered frames per second (clients × deltas / wall time from
the first delta to the last frame received by the last client) for

* **host**: the real agent host (Starlette on uvicorn, the store with its reducers, the SQLite
  journal on disk, the per-connection frame buffers) with one session whose chat's active turn
  receives ``chat/delta`` actions as fast as the event loop takes them; the clients speak
  ``--protocol`` (0.9.0, VS Code's, receives the chat's own frames; 0.2.0, the terminal client's,
  receives ``session/delta`` frames through the host's projection);
* **baseline**: a bare server at its best on the same WebSocket stack (the ``websockets``
  package's Sans-I/O protocol, which uvicorn's ``websockets-sansio`` implementation, and so the
  host, is built on) on a plain asyncio transport: every frame encoded with orjson before the
  timed loop; in the loop each frame is only added to the tick's list, and at the end of the
  event-loop tick each connection frames the tick's messages and writes them with one
  ``transport.write`` (no reducer, no journal, no ASGI layer, no encoding in the loop).

Both producers yield to the event loop every 64 deltas, as a streaming provider would. The clients
are plain ``websockets`` connections spread over up to ``--client-processes`` processes, so that the
server side, not one client process, is what is measured. Host and baseline runs alternate;
the median of ``--repeat`` runs of each is printed with their ratio (the figure to read) and the
range of the ratios of the individual pairs.

``--side host`` or ``--side baseline`` runs one side only (no ratio is printed): for counting the
instructions of one extra subscriber under ``valgrind --tool=callgrind`` (the clients' processes
are not traced), run one side with two client counts and two delta counts; the difference of the
totals, divided by the extra clients × the extra deltas, is what each extra subscriber costs the
server per frame, with start-up and each connection's handshake cancelled out.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import ChildProcess, command_line, machine_note, median, split

TOKEN = "bench-token"
DELTA_TEXT = "token "
_YIELD_EVERY = 64


# -- the client processes --------------------------------------------------------------------------


async def _client_main(url: str, clients: int, expected: int, mode: str, protocol: str, channel: str) -> None:
    from websockets.asyncio.client import connect

    connections = [await connect(url, max_size=None, compression=None) for _ in range(clients)]
    marker = '"session/delta"' if protocol == "0.2.0" else '"chat/delta"'
    if mode == "host":
        for index, ws in enumerate(connections):
            await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "channel": "ahp-root://", "protocolVersions": [protocol], "clientId": f"bench-{index}",
                "initialSubscriptions": [channel]}}))
            while True:
                reply = json.loads(await ws.recv())
                if reply.get("id") == 1:
                    if "error" in reply:
                        raise SystemExit(f"initialize failed: {reply['error']}")
                    break
    print("ready", flush=True)

    async def drain(ws) -> None:
        count = 0
        while count < expected:
            frame = await ws.recv()
            if mode == "baseline" or marker in frame:
                count += 1

    await asyncio.gather(*(drain(ws) for ws in connections))
    print("done", flush=True)
    for ws in connections:
        await ws.close()


# -- the server side -------------------------------------------------------------------------------


async def _measure(url: str, clients: int, deltas: int, processes: int, mode: str, protocol: str,
                   channel: str, produce) -> tuple[float, float]:
    """Delivered frames per second, and this process's CPU µs per delivered frame."""
    children = [ChildProcess(__file__, url, share, deltas, mode, protocol, channel) for share in split(clients, processes)]
    try:
        for child in children:
            await child.expect("ready")
        await asyncio.sleep(0.2)  # every connection registered server-side
        started, cpu = time.perf_counter(), time.process_time()
        await produce()
        for child in children:
            await child.expect("done")
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        for child in children:
            await child.wait()
    finally:
        for child in children:
            child.kill()
    return clients * deltas / elapsed, cpu * 1e6 / (clients * deltas)


PUBLIC_SESSION = "ahp-session:/bench"


def open_turn(host: Any) -> tuple[str, str, str]:
    """A session on ``host`` with a turn open and an empty markdown part ``p`` that the benchmark
    itself streams into: ``(the session's public channel, its chat, the turn's id)``.

    No agent: the turn's task (started by the ``turnStarted`` dispatched here, not run yet) is
    cancelled before it runs, so no agent streams into the turn, or ends it, while deltas are
    measured."""
    store = host.store
    internal = host.create_session({"channel": PUBLIC_SESSION}, "bench")
    chat = store.state(internal)["defaultChat"]
    turn = "bench-turn"
    store.dispatch(chat, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-11-29T00:00:00.000Z",
                          "message": {"text": "go", "origin": {"kind": "user"}}})
    host.runner.forget(internal)
    store.dispatch(chat, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "p", "content": ""}})
    return PUBLIC_SESSION, chat, turn


async def run_host(clients: int, deltas: int, processes: int, protocol: str) -> tuple[float, float]:
    from host.config import load_config
    from host.service import AgentHost
    from host.transport.server import start_host

    with tempfile.TemporaryDirectory() as data:
        config = load_config(None, overrides={"server": {"port": 0, "data_dir": data, "token": TOKEN}}, environ={})
        host = AgentHost(config)
        running = await start_host(host, token=TOKEN)
        try:
            store = host.store
            public, chat, turn = open_turn(host)

            async def produce() -> None:
                for index in range(deltas):
                    store.dispatch(chat, {"type": "chat/delta", "turnId": turn, "partId": "p", "content": DELTA_TEXT})
                    if index % _YIELD_EVERY == 0:
                        await asyncio.sleep(0)

            channel = public if protocol == "0.2.0" else chat
            return await _measure(running.url, clients, deltas, processes, "host", protocol, channel, produce)
        finally:
            await running.stop()


class _BareServer:
    """WebSocket connections on the ``websockets`` Sans-I/O protocol; ``send`` adds a pre-encoded
    message to this tick's list, written to every connection at the end of the tick."""

    def __init__(self) -> None:
        self.connections: set[_BareConnection] = set()
        self._tick: list[bytes] | None = None

    def send(self, message: bytes) -> None:
        tick = self._tick
        if tick is None:
            tick = self._tick = []
            asyncio.get_running_loop().call_soon(self._end_of_tick)
        tick.append(message)

    def _end_of_tick(self) -> None:
        tick, self._tick = self._tick or [], None
        for connection in tuple(self.connections):
            connection.write(tick)


class _BareConnection(asyncio.Protocol):
    def __init__(self, server: _BareServer) -> None:
        from websockets.server import ServerProtocol

        self.server = server
        self.conn = ServerProtocol(max_size=None)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]  # asyncio passes its Transport
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        from websockets.http11 import Request

        self.conn.receive_data(data)
        for event in self.conn.events_received():
            if isinstance(event, Request):
                response = self.conn.accept(event)
                self.conn.send_response(response)
                if response.status_code == 101:
                    self.server.connections.add(self)
        self._flush()

    def eof_received(self) -> bool:
        self.conn.receive_eof()
        self._flush()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.connections.discard(self)

    def write(self, messages: list[bytes]) -> None:
        for message in messages:
            self.conn.send_text(message)
        self._flush()

    def _flush(self) -> None:
        assert self.transport is not None
        data = self.conn.data_to_send()
        if data:
            self.transport.write(b"".join(data))
        if self.conn.close_expected():
            self.transport.close()


async def run_baseline(clients: int, deltas: int, processes: int, protocol: str) -> tuple[float, float]:
    import orjson

    bare = _BareServer()
    server = await asyncio.get_running_loop().create_server(lambda: _BareConnection(bare), "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        chat = "bench:/bench/chat"
        # What the host sends a 0.9.0 client: one envelope per delta, each its own serverSeq;
        # encoded before the timed loop.
        frames = [orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": {"channel": chat, "action": {
            "type": "chat/delta", "turnId": "bench-turn", "partId": "p", "content": DELTA_TEXT},
            "serverSeq": 100_000 + index}}) for index in range(deltas)]

        async def produce() -> None:
            assert len(bare.connections) == clients, (len(bare.connections), clients)
            for index in range(deltas):
                bare.send(frames[index])
                if index % _YIELD_EVERY == 0:
                    await asyncio.sleep(0)

        return await _measure(f"ws://127.0.0.1:{port}/", clients, deltas, processes, "baseline", protocol, chat, produce)
    finally:
        server.close()
        await server.wait_closed()


async def one_side(side: str, client_counts: list[int], deltas: int, repeat: int, processes: int, protocol: str) -> None:
    print(f"fan-out, {side} only, {deltas} deltas per run, clients speaking {protocol}, median of {repeat}; {machine_note()}")
    print(f"command: {command_line()}")
    run = run_host if side == "host" else run_baseline
    print(f"{'clients':>7} | {'frames/s':>13} | {'CPU µs':>7}")
    for clients in client_counts:
        runs = [await run(clients, deltas, processes, protocol) for _ in range(repeat)]
        print(f"{clients:>7} | {median([r[0] for r in runs]):>13,.0f} | {median([r[1] for r in runs]):>7.2f}", flush=True)


async def main(client_counts: list[int], deltas: int, repeat: int, processes: int, protocol: str) -> None:
    print(f"fan-out, {deltas} deltas per run, clients speaking {protocol}, median of {repeat}; {machine_note()}")
    print(f"command: {command_line()}")
    print("frames/s delivered; the ratio host / baseline (median, and the range over the run's pairs);")
    print("CPU µs of the server's process per delivered frame (clients excluded)")
    print(f"{'clients':>7} | {'host frames/s':>13} | {'bare frames/s':>13} | {'ratio':>5} | {'pairs':>9} | {'host CPU µs':>11} | {'bare CPU µs':>11}")
    for clients in client_counts:
        host_runs: list[tuple[float, float]] = []
        base_runs: list[tuple[float, float]] = []
        for _ in range(repeat):
            host_runs.append(await run_host(clients, deltas, processes, protocol))
            base_runs.append(await run_baseline(clients, deltas, processes, protocol))
        host, base = median([r[0] for r in host_runs]), median([r[0] for r in base_runs])
        pairs = [h[0] / b[0] for h, b in zip(host_runs, base_runs)]
        host_cpu, base_cpu = median([r[1] for r in host_runs]), median([r[1] for r in base_runs])
        print(f"{clients:>7} | {host:>13,.0f} | {base:>13,.0f} | {host / base:>5.2f} | {min(pairs):.2f}-{max(pairs):.2f} | "
              f"{host_cpu:>11.2f} | {base_cpu:>11.2f}", flush=True)
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        url, clients, deltas, mode, protocol, channel = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), *sys.argv[5:8]
        asyncio.run(_client_main(url, clients, deltas, mode, protocol, channel))
        sys.exit(0)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--clients", default="1,10,50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--client-processes", type=int, default=4)
    parser.add_argument("--protocol", default="0.9.0", choices=("0.9.0", "0.2.0"))
    parser.add_argument("--side", default="both", choices=("both", "host", "baseline"))
    args = parser.parse_args()
    if args.side != "both":
        asyncio.run(one_side(args.side, [int(c) for c in args.clients.split(",")], args.deltas, args.repeat,
                             args.client_processes, args.protocol))
        sys.exit(0)
    asyncio.run(main([int(c) for c in args.clients.split(",")], args.deltas, args.repeat, args.client_processes, args.protocol))
