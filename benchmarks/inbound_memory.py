"""What large inbound frames cost the host in memory, and whether the limits hold.

    .venv/bin/python benchmarks/inbound_memory.py [--connections 8] [--mib 15]

Starts a real host (``agent-host serve --port 0``, its own data directory) as a child process,
then opens ``--connections`` WebSocket connections at once from this process and sends one
``--mib`` MiB frame on each (a JSON-RPC ``ping`` with a large parameter, under the frame limit).
It samples the host's resident memory (VmRSS from ``/proc``) every 5 ms and reports it before,
at the peak, and once the frames were answered; then the same with a frame over
``max_frame_bytes`` (refused by the WebSocket layer before it is buffered whole). Linux only.

The figure to watch is *peak minus before*, divided by connections: the memory one large frame in
flight costs. Each connection holds at most one inbound message (uvicorn's sans-I/O WebSocket
protocol stops reading until the message is handled), so the worst case is about that figure times
``[server] max_connections``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
import time

from websockets.asyncio.client import connect

from cli.serve_process import ServeProcess


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as handle:
        match = re.search(r"VmRSS:\s+(\d+) kB", handle.read())
    return int(match.group(1)) / 1024 if match else 0.0


async def sample(pid: int, stop: asyncio.Event, peak: list[float]) -> None:
    while not stop.is_set():
        peak[0] = max(peak[0], rss_mib(pid))
        await asyncio.sleep(0.005)


async def one(url: str, token: str, size: int, index: int) -> str:
    payload = json.dumps({"jsonrpc": "2.0", "id": index, "method": "ping", "params": {"pad": "x" * size}})
    try:
        async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}, max_size=None) as ws:
            await ws.send(payload)
            answer = json.loads(await asyncio.wait_for(ws.recv(), 60))
            return "answered" if "result" in answer or "error" in answer else "?"
    except Exception as exc:  # a refusal closes the connection: report how
        return type(exc).__name__


async def measure(pid: int, url: str, token: str, connections: int, size: int) -> tuple[float, float, float, list[str]]:
    before = rss_mib(pid)
    peak = [before]
    stop = asyncio.Event()
    sampler = asyncio.create_task(sample(pid, stop, peak))
    outcomes = await asyncio.gather(*(one(url, token, size, i) for i in range(connections)))
    await asyncio.sleep(0.5)
    stop.set()
    await sampler
    return before, peak[0], rss_mib(pid), outcomes


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--mib", type=float, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        token = "inbound-memory-benchmark"
        host = ServeProcess(["--data-dir", data], token=token, output="discard")
        try:
            await host.start()
            url = host.address
            time.sleep(0.5)
            size = int(args.mib * 1024 * 1024)
            before, peak, after, outcomes = await measure(host.process.pid, url, token, args.connections, size)
            print(f"{args.connections} connections x {args.mib:g} MiB frame (under the limit)")
            print(f"  host RSS before {before:.0f} MiB, peak {peak:.0f} MiB, after {after:.0f} MiB")
            print(f"  per frame in flight: {(peak - before) / args.connections:.0f} MiB; outcomes: {sorted(set(outcomes))}")
            before, peak, after, outcomes = await measure(host.process.pid, url, token, args.connections, 17 * 1024 * 1024)
            print(f"{args.connections} connections x 17 MiB frame (over the default 16 MiB limit)")
            print(f"  host RSS before {before:.0f} MiB, peak {peak:.0f} MiB, after {after:.0f} MiB; outcomes: {sorted(set(outcomes))}")
        finally:
            host.stop(grace=10)


if __name__ == "__main__":
    asyncio.run(main())
