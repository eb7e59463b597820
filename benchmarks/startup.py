"""Start-up: ``agent-host serve`` until its first accepted WebSocket, against a bare server.

    .venv/bin/python benchmarks/startup.py [--repeat 5]

Host: spawn ``agent-host serve --port 0`` (a fresh data directory each time), read the URL it
prints, complete a WebSocket handshake. Baseline: the same for a bare ``websockets`` server in a
fresh interpreter (``python -c``: import websockets, listen, print the URL). Both are wall time from
spawn to handshake; median of ``--repeat`` alternating runs, and their ratio.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import REPO, machine_note, median  # noqa: E402

TOKEN = "bench-token-0123456789"

_BARE = """
import asyncio
from websockets.asyncio.server import serve

async def main():
    async def handler(ws):
        await ws.wait_closed()
    async with serve(handler, "127.0.0.1", 0) as server:
        print("listening on ws://127.0.0.1:%d/" % server.sockets[0].getsockname()[1], flush=True)
        await asyncio.Event().wait()

asyncio.run(main())
"""


def _time_to_handshake(command: list[str]) -> float:
    from websockets.sync.client import connect

    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=REPO,
                               env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip().split(" ")[-1]
        with connect(url, additional_headers={"Authorization": f"Bearer {TOKEN}"}):
            elapsed = time.perf_counter() - start
    finally:
        process.terminate()
        process.wait(10)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    host_runs, bare_runs = [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as data_dir:
            host_runs.append(_time_to_handshake(
                [str(REPO / ".venv" / "bin" / "agent-host"), "serve", "--port", "0", "--data-dir", data_dir, "--token", TOKEN]))
        bare_runs.append(_time_to_handshake([sys.executable, "-c", _BARE]))
    host, bare = median(host_runs), median(bare_runs)
    print(f"start-up to first WebSocket, median of {args.repeat}; {machine_note()}")
    print(f"{'agent-host serve':<28}{host:>8.3f} s")
    print(f"{'bare websockets server':<28}{bare:>8.3f} s")
    print(f"{'ratio host / bare':<28}{host / bare:>8.2f}")


if __name__ == "__main__":
    main()
