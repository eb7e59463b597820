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
import http.client
import json
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from websockets.client import ClientProtocol
from websockets.frames import Frame, Opcode
from websockets.uri import parse_uri

from benchmarks._fake_chat import agent_toml
from benchmarks._runs import median, percentile
from cli.serve_process import ServeProcess, serving_pid

TOKEN = "bench-token-0123456789"
_TICK = os.sysconf("SC_CLK_TCK")
_TURN_ENDS = frozenset({"session/turnComplete", "session/turnCancelled", "session/error"})


def process_cpu(pid: int) -> float:
    """CPU time (user + system, every thread) process ``pid`` has used so far, in seconds (Linux;
    0 for a process that is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime, stime


def process_wakeups(pid: int) -> int:
    """How many times the threads of process ``pid`` gave up their CPU so far, waiting for
    something (voluntary context switches, ``/proc``: Linux; 0 for a process that is gone): each is
    a wake-up, the part of a loop turn's cost no batching of chunks shares out."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0
    for task in tasks:
        try:
            for line in (task / "status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    total += int(line.split()[1])
        except OSError:
            pass  # a thread that ended in between
    return total


def machine_cpu() -> float:
    """CPU time every process of the machine has used so far (all CPUs, ``/proc/stat``: busy =
    everything but idle and I/O wait), in seconds: with the processes measured, it tells how
    much other work shared the cores during a run."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:8]]
    return (sum(fields) - fields[3] - fields[4]) / _TICK


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

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time (user + system) used so far by each process of the host: ``worker <pid>`` for
        each worker (``serve <pid>`` for ``N = 0``), ``nats`` for the NATS server; the parent of
        ``--workers`` (which only supervises) is left out."""
        assert self.process is not None
        measured = self.children() if self.count else {self.process.pid: " serve "}
        used: dict[str, float] = {}
        for pid, command in measured.items():
            name = "nats" if "nats-server" in command else f"{'worker' if self.count else 'serve'} {pid}"
            used[name] = used.get(name, 0.0) + process_cpu(pid)
        return used

    def nats_traffic(self) -> dict[str, int]:
        """What the embedded NATS server has taken from its clients (``in``: the workers'
        publishes and requests) and sent to them (``out``: acknowledgements, the followers'
        records, answers) so far, in messages and bytes, summed over its open client connections
        (its monitoring endpoint's ``/connz``); {} for plain ``serve`` or when it cannot be read.
        Counts, not times: the load of the machine does not move them."""
        if not self.count:
            return {}
        try:
            ports = json.loads(next(Path(self._folder.name, "data", "nats-run").glob("*.ports")).read_text())
            monitoring = ports["monitoring"][0].rsplit(":", 1)[-1]
            connection = http.client.HTTPConnection("127.0.0.1", int(monitoring), timeout=5)
            connection.request("GET", "/connz?limit=4096")
            listed = json.loads(connection.getresponse().read())
            connection.close()
        except (OSError, StopIteration, ValueError, KeyError, IndexError):
            return {}
        totals = {"in_msgs": 0, "out_msgs": 0, "in_bytes": 0, "out_bytes": 0}
        for client in listed.get("connections") or []:
            for key in totals:
                totals[key] += int(client.get(key, 0))
        return totals

    def wakeups(self) -> dict[str, int]:
        """Voluntary context switches so far (``process_wakeups``): ``workers`` (all of them) and
        ``nats``."""
        assert self.process is not None
        measured = self.children() if self.count else {self.process.pid: " serve "}
        counts = {"workers": 0, "nats": 0}
        for pid, command in measured.items():
            counts["nats" if "nats-server" in command else "workers"] += process_wakeups(pid)
        return counts

    def stop(self, grace: float = 60) -> str:
        """The parent this benchmark started stops its workers and NATS; then its folder goes."""
        try:
            return super().stop(grace)
        finally:
            self._folder.cleanup()


class _Listener(asyncio.Protocol):
    """The client process's measuring connection to one worker, as cheap as a reader can be (the
    load generator shares the host's cores): ``websockets``' Sans-I/O protocol on an asyncio
    transport, every text frame kept as its bytes with the time its read returned, nothing parsed
    until the run is over; the few frames it sends are built by hand."""

    def __init__(self, url: str) -> None:
        self.frames: list[tuple[int, bytes]] = []
        self.ends: dict[str, str] = {}
        """channel → the type of the action that ended its turn (read as they come: how the run ends)."""
        self.answered: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.closed = asyncio.get_running_loop().create_future()
        self._protocol = ClientProtocol(parse_uri(url), max_size=None)
        self._transport: asyncio.Transport | None = None
        self._open = asyncio.get_running_loop().create_future()
        self._seq = 0

    @classmethod
    async def connect(cls, url: str) -> tuple[_Listener, int]:
        """An open connection to ``url`` and the local port it is on."""
        host, port = url.split("//", 1)[1].strip("/").rsplit(":", 1)
        transport, listener = await asyncio.get_running_loop().create_connection(lambda: cls(url), host, int(port))
        await listener._open
        return listener, transport.get_extra_info("sockname")[1]

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        request = self._protocol.connect()
        request.headers["Authorization"] = f"Bearer {TOKEN}"
        self._protocol.send_request(request)
        self._write()

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter_ns()
        self._protocol.receive_data(data)
        for event in self._protocol.events_received():
            if isinstance(event, Frame):
                if event.opcode is Opcode.TEXT:
                    self._frame(now, bytes(event.data))
            elif not self._open.done():  # the handshake's response
                if self._protocol.handshake_exc is not None:
                    self._open.set_exception(self._protocol.handshake_exc)
                else:
                    self._open.set_result(None)
        self._write()  # pongs, a close

    def _frame(self, now: int, data: bytes) -> None:
        if b'"session/delta"' in data:
            self.frames.append((now, data))
            return
        frame = json.loads(data)  # the few others: an answer, a turn's start and end, a title
        if frame.get("id") == 1 and not self.answered.done():
            self.answered.set_result(frame)
        elif frame.get("method") == "action" and frame["params"]["action"].get("type") in _TURN_ENDS:
            self.ends[frame["params"]["channel"]] = frame["params"]["action"]["type"]

    def _write(self) -> None:
        if self._transport is not None and (data := self._protocol.data_to_send()):
            self._transport.write(b"".join(data))

    def send(self, frame: dict[str, Any]) -> None:
        self._protocol.send_text(json.dumps(frame, separators=(",", ":")).encode())
        self._write()

    async def initialize(self, subscriptions: list[str]) -> None:
        """Speak 0.2.0 (its ``session/delta`` frames are what it times), subscribed to ``subscriptions``."""
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": f"bench-{os.getpid()}-{id(self)}",
            "initialSubscriptions": subscriptions}})
        answer = await asyncio.wait_for(self.answered, 120)
        if "error" in answer:
            raise SystemExit(f"initialize failed: {answer['error']}")

    def send_message(self, channel: str, text: str) -> None:
        """Start a turn (0.2.0's ``session/turnStarted``, as ``AhpClient.send_message`` sends it)."""
        self._seq += 1
        self.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {"channel": channel, "clientSeq": self._seq, "action": {
            "type": "session/turnStarted", "turnId": str(uuid.uuid4()), "userMessage": {"text": text}}}})

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._open.done():
            self._open.set_exception(exc or ConnectionError("closed before the handshake"))
        if not self.closed.done():
            self.closed.set_result(None)


async def _connection_per_worker(connect: Any, port: int, pids: list[int]) -> dict[int, Any]:
    """``connect()`` (a connection and its local port) until each of ``pids`` serves one: pid → it."""
    chosen: dict[int, Any] = {}
    spare: list[Any] = []
    for _ in range(200):
        connection, local_port = await connect()
        pid = serving_pid(local_port, port, pids)
        if pid is None or pid in chosen:
            spare.append(connection)
        else:
            chosen[pid] = connection
        if len(chosen) == len(pids):
            break
    for connection in spare:
        result = connection.close()
        if asyncio.iscoroutine(result):
            await result
    if len(chosen) < len(pids):
        raise SystemExit(f"200 connections reached only workers {sorted(chosen)} of {pids}")
    return chosen


async def spread_clients(url: str, model: str, sessions: int, stagger: float, pids: list[int], cross: bool = False,
                         root: bool = False) -> None:
    """The client process: ``sessions`` sessions round robin over the workers, each sent one message;
    prints ``streaming`` once every session is ready, just before the first message, ``ended`` once
    every turn ended, then ``result {p99, steady_p99, median, count, seconds}`` (steady: the chunks
    written once every session was streaming).

    The sessions are made with an ``AhpClient`` per worker (each runs the sessions made through
    it), which then goes; the streaming is read by a :class:`_Listener` per worker, on the same
    worker, subscribed to that worker's sessions only; with ``cross``, to the next worker's
    sessions (a client on a worker that does not run its sessions: that worker follows their
    streamed text, and the turns' first messages are forwarded to their owners); with ``root``,
    to the root channel too, as a real client is (one worker writes the root: the others' frames
    to such a client wait for their log's follower, ``ClusterLog.caught_up``)."""
    from client import AhpClient

    port = int(url.rsplit(":", 1)[1].strip("/"))

    async def ahp_client() -> tuple[AhpClient, int]:
        client = await AhpClient.connect(url, token=TOKEN)
        client.request_timeout = 120
        await client.initialize(protocol_versions=("0.2.0",))
        return client, client._conn._ws.local_address[1]  # type: ignore[union-attr]

    makers = await _connection_per_worker(ahp_client, port, pids)
    owned: dict[int, list[str]] = {pid: [] for pid in makers}
    order = list(makers)
    for index in range(sessions):
        pid = order[index % len(order)]
        owned[pid].append(await makers[pid].create_session(provider="bench", model=model))
    for pid, client in makers.items():
        for channel in owned[pid]:
            await client.wait_for(lambda m, e, c=client, ch=channel: (c.state(ch) or {}).get("lifecycle") == "ready", timeout=120)
    listeners: dict[int, _Listener] = await _connection_per_worker(lambda: _Listener.connect(url), port, pids)
    reader = {pid: order[(index + 1) % len(order)] if cross else pid for index, pid in enumerate(order)}
    """owner → the worker whose listener reads (and starts) the owner's sessions."""
    for pid in order:
        await listeners[reader[pid]].initialize([*(["ahp-root://"] if root else []), *owned[pid]])
    for client in makers.values():
        await client.close()
    turns = [(listeners[reader[pid]], channel) for index in range(sessions) for pid in [order[index % len(order)]]
             for channel in [owned[pid][index // len(order)]]]
    print("streaming", flush=True)  # the parent measures every process's CPU from here to "ended"
    started = time.perf_counter()
    for index, (listener, channel) in enumerate(turns):
        listener.send_message(channel, "go")
        # On a schedule from the first message (a sleep of its own per message would add each
        # wake-up's lateness to the next: 13-44 % longer than ``stagger`` at 170 sessions).
        await asyncio.sleep(max(0.0, started + (index + 1) * stagger / len(turns) - time.perf_counter()))
    deadline = time.monotonic() + 600
    while sum(len(listener.ends) for listener in listeners.values()) < len(turns) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    elapsed = time.perf_counter() - started
    print("ended", flush=True)
    for listener in listeners.values():
        listener.close()
    incomplete = [channel for listener, channel in turns if listener.ends.get(channel) != "session/turnComplete"]
    if incomplete:
        raise SystemExit(f"{len(incomplete)} turns did not complete")
    stamped = [(arrived, int(stamp), params["channel"]) for listener in listeners.values() for arrived, data in listener.frames
               for params in [json.loads(data)["params"]] for stamp in params["action"]["content"].split(";") if stamp]
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
