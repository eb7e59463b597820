"""``benchmarks/capacity.py --workers 1,2,3``: the host as ``agent-host serve --workers N`` runs it.

The host is N worker processes on one port with the embedded ``nats-server`` (``cli.workers``),
started once per N and measured from outside: the figure is chunk written by the fake provider →
``session/delta`` frame received by the client process (``perf_counter_ns``, one clock for the
processes of one machine), p99 over every chunk of a run. Nothing is pinned: the workers, the NATS
server, the fake provider and the client process share the machine's cores, as they would on a
machine that runs the host (the in-process default of ``capacity.py`` pins the host to one core).

The client process opens connections until each worker serves one (which worker holds a
connection is read from ``/proc``: Linux), then creates the sessions round robin through them, so
each worker runs (owns) an equal share; each connection subscribes to its own sessions only.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._fake_chat import agent_toml
from benchmarks._runs import median, percentile
from cli.serve_process import ServeProcess, serving_pid

TOKEN = "bench-token-0123456789"
_TURN_ENDS = frozenset({"session/turnComplete", "session/turnCancelled", "session/error"})


class WorkersHost(ServeProcess):
    """``agent-host serve --workers N`` on port 0 with an ``openai-chat`` agent on the fake provider
    (its output discarded: the host's logging is not what is measured). ``N = 0`` is plain
    ``agent-host serve``, the single-process default without NATS, measured the same way: the
    control for the cluster's figures on a machine whose load moves them."""

    def __init__(self, workers: int, base_url: str, model: str) -> None:
        self._folder = tempfile.TemporaryDirectory()
        data = Path(self._folder.name)
        config = data / "bench.toml"
        config.write_text(agent_toml(base_url, model) + "[sessions]\noffline_agent = false\n")
        self.count = workers
        super().__init__([*(["--workers", str(workers)] if workers else []), "--data-dir", str(data / "data"),
                          "--config", str(config)], token=TOKEN, output="discard")

    def workers(self) -> list[int]:
        """The pids of the processes that serve clients (the one ``serve`` process for ``N = 0``)."""
        if not self.count:
            assert self.process is not None
            return [self.process.pid]
        return super().workers()

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU time (user + system) used so far by the workers, and by the NATS server."""
        workers = nats = 0.0
        tick = os.sysconf("SC_CLK_TCK")
        assert self.process is not None
        measured = self.children() if self.count else {self.process.pid: "serve"}
        for pid, command in measured.items():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            used = (int(fields[11]) + int(fields[12])) / tick  # utime, stime
            if "nats-server" in command:
                nats += used
            else:
                workers += used
        return workers, nats

    def stop(self, grace: float = 60) -> str:
        """The parent this benchmark started stops its workers and NATS; then its folder goes."""
        try:
            return super().stop(grace)
        finally:
            self._folder.cleanup()


async def spread_clients(url: str, model: str, sessions: int, stagger: float, pids: list[int]) -> None:
    """The client process: one connection per worker, ``sessions`` sessions round robin over them,
    each sent one message; prints ``result {p99, steady_p99, median, count, seconds}`` (steady: the
chunks written once every session was streaming)."""
    from client import AhpClient

    arrivals: list[tuple[int, str, str]] = []
    ended: set[str] = set()

    def hook(frame: dict[str, Any], answered: str | None) -> None:
        if frame.get("method") == "action":
            action = frame["params"]["action"]
            kind = action.get("type")
            if kind == "session/delta":
                arrivals.append((time.perf_counter_ns(), action["content"], frame["params"]["channel"]))
            elif kind in _TURN_ENDS:
                ended.add(frame["params"]["channel"])

    port = int(url.rsplit(":", 1)[1].strip("/"))
    chosen: dict[int, AhpClient] = {}
    spare: list[AhpClient] = []
    for _ in range(200):
        client = await AhpClient.connect(url, token=TOKEN, frame_hook=hook)
        client.request_timeout = 120
        await client.initialize(protocol_versions=("0.2.0",))  # its 0.2.0 session/delta frames are what it times
        pid = serving_pid(client._conn._ws.local_address[1], port, pids)  # type: ignore[union-attr]
        if pid is None or pid in chosen:
            spare.append(client)
        else:
            chosen[pid] = client
        if len(chosen) == len(pids):
            break
    for client in spare:
        await client.close()
    if len(chosen) < len(pids):
        raise SystemExit(f"200 connections reached only workers {sorted(chosen)} of {pids}")
    clients = list(chosen.values())
    channels: list[tuple[AhpClient, str]] = []
    for index in range(sessions):
        client = clients[index % len(clients)]
        channels.append((client, await client.create_session(provider="bench", model=model)))
    for client, channel in channels:
        await client.wait_for(lambda m, e, c=client, ch=channel: (c.state(ch) or {}).get("lifecycle") == "ready", timeout=120)
    started = time.perf_counter()
    for client, channel in channels:
        client.send_message(channel, "go")
        await asyncio.sleep(stagger / len(channels))
    deadline = time.monotonic() + 600
    while len(ended) < len(channels) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    elapsed = time.perf_counter() - started
    incomplete = [channel for client, channel in channels if (client.state(channel)["turns"] or [{}])[0].get("state") != "complete"]
    for client in clients:
        await client.close()
    if incomplete:
        raise SystemExit(f"{len(incomplete)} turns did not complete")
    stamped = [(arrived, int(stamp), channel) for arrived, content, channel in arrivals for stamp in content.split(";") if stamp]
    samples = sorted((arrived - stamp) / 1e6 for arrived, stamp, _ in stamped)
    # "Steady": the chunks written once every session was streaming (as provider_stream.py's),
    # without the turn starts, whose first records go through the log together.
    first: dict[str, int] = {}
    for _, stamp, channel in stamped:
        first[channel] = min(stamp, first.get(channel, stamp))
    steady_from = max(first.values(), default=0)
    steady = sorted((arrived - stamp) / 1e6 for arrived, stamp, _ in stamped if stamp >= steady_from) or [0.0]
    print(f"result {json.dumps({'p99': percentile(samples, 0.99), 'steady_p99': percentile(steady, 0.99), 'median': median(samples), 'count': len(samples), 'seconds': elapsed})}",
          flush=True)
