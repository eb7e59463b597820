"""How many concurrently streaming sessions one core holds with the p99 of chunk → frame ≤ 10 ms.

    .venv/bin/python benchmarks/capacity.py [--rate 20] [--seconds 4] [--limit-ms 10] [--start 25] [--max 800] [--repeat 3]
    .venv/bin/python benchmarks/capacity.py --workers 1,2,3 [the same options]
    .venv/bin/python benchmarks/capacity.py --start 100 --max 100 --stalls [MS]
    .venv/bin/python benchmarks/capacity.py --start 275 --max 275 --repeat 1 --tail [--starts-per-second 50]

The setting of ``benchmarks/provider_stream.py``'s latency runs, on loopback: a fake OpenAI Chat
Completions server (its own process) streams ``--rate`` chunks a second per session, the host
(this process, pinned to one CPU; the fake provider and the client process on the others) runs an
``openai-chat`` agent per session and writes every ``session/delta`` to one ``AhpClient`` process
subscribed to all of them. The figure is chunk written by the provider → frame written to the
client's socket (after the journal commit), p99 over every chunk of a run, the median of
``--repeat`` runs. Turns start spread over ``max(1, N / 200)`` seconds (at most 200 turn starts a
second; ``--starts-per-second`` sets it, for the relay of ``capacity_relay.py`` alike) and each
session then streams for ``--seconds``. The streams are not in phase: each one's first chunk comes
at a random point of its first interval, and its next ones on that schedule. What the turn starts
cost weighs on the figure: at 300 sessions on one core about 3 ms of the host's CPU each (start
and end), so 200 a second take some 60 % of the core while the first sessions already stream,
and the chunks written then are the most often late (``--tail``). ``--starts-per-second 50``
spreads them four times as far, each session streaming as much longer (every session streams at
once for ``--seconds`` less one, as by default); the steady p99 (chunks written once every session
streams) leaves them out.

The search stops by itself: session counts double from ``--start`` until a count misses the limit
(or ``--max`` is reached), then the gap between the last count that held and the first that did
not is halved until it is at most ``--resolution`` of the lower one. A count whose streams
lasted over 5 % longer than planned (chunks read late: the host, or on a machine whose other CPUs
are too slow the load generators, fell behind), or lost chunks, is a miss whatever its p99, and
says so. The host's CPU per chunk is printed for
every count (this process's CPU from the first chunk to the last, turn starts included, and
while every session streamed).

``--stalls [MS]`` (one process only) puts ``benchmarks/_stalls.py``'s probe on the host's event
loop and prints, under each count, the loop's iterations longer than MS (2 by default) while
chunks streamed, in the run whose p99 is the median: how many, their causes by count and time
(the collector, a named callback, or the loop's thread off its CPU: preempted by other work, or
blocked in the kernel), the collector's pauses by generation, and the longest ones in full.

``--tail`` (one process only) puts the same probe on the loop without naming callbacks (six clock
readings an iteration and a note of each socket write, against the 20-35 % that naming costs:
three alternating pairs at 250 sessions, steady CPU a chunk 113.9-135.6 µs without it and
115.8-137.4 with it, within the spread) and prints, under each count, what the chunks later than
``--limit-ms`` waited through in the run whose p99 is the median: the loop's own work, the
collector's pauses, the loop polling (the chunk not read yet, or its frame waiting for a timer),
the process's other threads and the rest of the machine (the loop's thread off its CPU); how many
of each phase's chunks were late (the turns starting, every session streaming, the turns ending);
the collector's pauses by generation; and the distribution of every iteration's wall and CPU
time. With ``--stalls`` as well, the stalls' report comes first.

``--workers 1,2,3`` measures ``agent-host serve --workers N`` instead, for each N in turn (N
processes on one port, the embedded NATS server, nothing pinned; each run on a host started for it
on a new data directory and warmed up by a first turn per worker, as the one-process mode runs
each on a new ``AgentHost``: a host kept from run to run would hold every earlier run's sessions,
thousands by the end of a search, and a turn's start cost more with each; the figure is chunk written →
frame received by the client process, which holds a connection to each worker and creates the
sessions round robin through them (beside it, the p99 of the *steady* chunks alone: those written
once every session was streaming, without the turn starts): ``benchmarks/_workers.py``. A count is a miss there also when
its streams lasted over 5 % + 0.5 s longer than planned (a turn's start goes through the
processes' log before its first chunk). Beside the p99 it prints where the CPU went, per chunk,
from the first message sent to the last turn's end (``/proc``, the median of the runs): the
workers (each one's share in the brackets), the NATS server, the fake provider, the client process
and the rest of the machine (``other``: other people's work), and how busy the machine's CPUs were
(``busy``); CPU per chunk is moved less by other work than a p99, and says which process a count
ran out of. In the brackets, counts the machine's load does not move, per chunk: the workers' and
the NATS server's wake-ups (voluntary context switches of all their threads) and the messages and
bytes the NATS server took in from the workers (records, lease renewals, questions) and sent out
to them (acknowledgements, the followers' records, the lease watches' events, answers), from its
``/connz``. The load generators are made cheap, as they stand for machines of their own: the
fake provider writes each chunk from a timer's callback, the client process reads each worker's
frames on a bare Sans-I/O WebSocket, keeping the bytes until the run is over. On a machine too
loaded for a 10 ms p99, ``--limit-ms 1000`` finds where the host falls behind instead.
``--cross`` reads each worker's sessions through the next worker instead (a client connected to a
worker that does not run its sessions: that worker follows their streamed text; with one worker
or plain ``serve`` it changes nothing). ``--workers 0,1,2`` adds plain ``agent-host serve`` (one process, no NATS) measured the same way,
nothing pinned: the control, under the same load as the cluster's counts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import ChildProcess, command_line, machine_note, median, pin_measured_process
from benchmarks._stalls import StallProbe
from benchmarks._workers import WorkersHost, machine_cpu, process_cpu, spread_clients
from benchmarks.provider_stream import _through_host

STREAM = str(Path(__file__).resolve().parent / "provider_stream.py")


async def _one_count(base_url: str, sessions: int, args: argparse.Namespace, serve: Any = _through_host) -> tuple[bool, str]:
    """Run ``sessions`` sessions ``--repeat`` times; whether the median p99 held, and a report line.
    ``serve``: what serves them (the host; ``capacity_relay.py`` passes its relay)."""
    stagger = _stagger(sessions, args)
    count = _chunks(stagger, args)
    if serve is _through_host and (getattr(args, "stalls", None) is not None or getattr(args, "tail", False)):
        serve = _probed(args.stalls, args.limit_ms if args.tail else None)
    runs = [await serve(base_url, f"paced-{count}-{args.rate:g}", sessions, stagger) for _ in range(args.repeat)]
    p99 = median([run["written_p99"] for run in runs])
    steady = median([run["written_steady_p99"] for run in runs])
    cpu = median([run["cpu_us"] for run in runs])
    steady_cpu = median([run.get("steady_cpu_us", run["cpu_us"]) for run in runs])
    # Every chunk arrives in the end; when the host (or a load generator) falls behind, the
    # streaming lasts longer than planned and the count is a miss whatever its p99.
    planned_s = count / args.rate + stagger  # the last session starts ``stagger`` after the first
    lasted = median([run["seconds"] for run in runs])
    fell_behind = lasted > 1.05 * planned_s + 0.1 or min(run["chunks"] for run in runs) < count * sessions
    held = p99 <= args.limit_ms and not fell_behind
    each = ", ".join(f"{run['written_p99']:.2f}" for run in runs)
    line = (f"{sessions:>8} | {p99:>9.2f} | {steady:>10.2f} | {cpu:>7.1f} {steady_cpu:>7.1f} | {lasted:>8.2f} / {planned_s:>5.2f} | "
            f"{'held' if held else 'missed'}{' (chunks were read late: the streams lasted longer than planned)' if fell_behind else ''}  [p99 of each run: {each}]")
    if "stalls" in runs[0]:  # the probe's report of the run whose p99 is the median
        middle = sorted(runs, key=lambda run: run["written_p99"])[len(runs) // 2]
        line += "\n" + "\n".join(f"{'':>9}{text}" for text in middle["stalls"])
    return held, line


def _stagger(sessions: int, args: argparse.Namespace) -> float:
    """Seconds over which a run's turns start: ``--starts-per-second`` (200 by default) at most,
    over one second at least."""
    return max(1.0, sessions / (getattr(args, "starts_per_second", None) or 200))


def _chunks(stagger: float, args: argparse.Namespace) -> int:
    """Chunks each session streams: ``--seconds`` of them; with ``--starts-per-second``, as many
    more as the turns' start lasts beyond its first second, so that every session still streams
    at once for ``--seconds`` less one (as 200 sessions do by default) whatever the start rate."""
    extra = stagger - 1 if getattr(args, "starts_per_second", None) else 0.0
    return round(args.rate * (args.seconds + extra))


def _probed(threshold_ms: float | None, late_ms: float | None = None) -> Any:
    """``_through_host`` with a ``StallProbe`` on the host's loop; each run's figures get the
    probe's report (``stalls``) of the stalls over ``threshold_ms`` that began while chunks
    streamed (None: no stalls, the light probe: iterations and the collector only) and, with
    ``late_ms``, what the chunks later than it waited through (``StallProbe.late_report``)."""

    async def serve(base_url: str, model: str, sessions: int, stagger: float) -> dict[str, Any]:
        from host.transport.ws_protocol import TickBatchingWebSocketProtocol

        probe = StallProbe(threshold_ms or 1e9, callbacks=threshold_ms is not None)
        written_at: list[int] = []  # flat (ints and strings): nothing more for the collector to walk
        written_count: list[int] = []
        written_texts: list[str] = []
        write_buffered = TickBatchingWebSocketProtocol._write_buffered

        def noted(protocol: Any, force: bool = False, durable: bool = False) -> None:
            if pending := protocol._pending:
                written_at.append(time.perf_counter_ns())
                written_count.append(len(pending))
                written_texts.extend(pending)
            write_buffered(protocol, force, durable)

        if late_ms is not None:
            TickBatchingWebSocketProtocol._write_buffered = noted  # type: ignore[method-assign]  # (``_through_host`` wraps it again)
        probe.install()
        try:
            run = await _through_host(base_url, model, sessions, stagger)
        finally:
            probe.uninstall()
            TickBatchingWebSocketProtocol._write_buffered = write_buffered  # type: ignore[method-assign]
        run["stalls"] = probe.report(*run["window"]) if threshold_ms is not None else []
        if late_ms is not None:
            # A frame the transport had no room for stays waiting and is noted again at a later
            # write: its last one is when it left.
            texts = iter(written_texts)
            sent = {int(stamp): now for now, count in zip(written_at, written_count) for _, text in zip(range(count), texts)
                    for found in _STAMPS.finditer(text) for stamp in found.group(1).split(";") if stamp}
            pairs = [(stamp / 1e9, now / 1e9) for stamp, now in sent.items()]
            began = run["window"][0]  # the first chunk
            phases = {"turns starting": began, "steady": began + stagger + 0.1,  # (the last turn's first chunk)
                      "turns ending": began + int(model.split("-")[1]) / float(model.split("-")[2])}  # (the first turn's last)
            run["stalls"] += probe.late_report(pairs, late_ms, *run["window"], phases=phases)
        return run

    return serve


_STAMPS = re.compile(r'"content":"([0-9;]+)"')
"""The provider's clock readings in a frame's text (``provider_stream.latency_figures`` reads them so)."""


async def _search(measure: Any, args: argparse.Namespace) -> tuple[int, int | None]:
    """Double the session count from ``--start`` until one misses, then halve the gap: (the
    largest count that held, the smallest that missed or None)."""
    held_at, missed_at = 0, None
    sessions = args.start
    while sessions <= args.max:  # doubling
        held, line = await measure(sessions)
        print(line, flush=True)
        if not held:
            missed_at = sessions
            break
        held_at = sessions
        sessions *= 2
    while missed_at is not None and held_at and missed_at - held_at > max(1, args.resolution * held_at):  # halving the gap
        sessions = (held_at + missed_at) // 2
        held, line = await measure(sessions)
        print(line, flush=True)
        if held:
            held_at = sessions
        else:
            missed_at = sessions
    return held_at, missed_at


def _verdict(what: str, held_at: int, missed_at: int | None, args: argparse.Namespace) -> str:
    if missed_at is None:
        return f"{what} held every count tried, up to {held_at} sessions (--max)"
    if not held_at:
        return f"{what} did not hold {missed_at} sessions, the smallest count tried (--start)"
    return f"{what} holds {held_at} concurrently streaming sessions at p99 ≤ {args.limit_ms:g} ms; {missed_at} missed"


class CpuWindow:
    """The CPU each process of a run used between two moments (``/proc``): the host's (each worker,
    the NATS server), the load generators' (the fake provider, the client process) and the
    machine's as a whole; ``other`` is what the rest of the machine used meanwhile."""

    def __init__(self, host: WorkersHost, provider: int, client: int) -> None:
        self.host, self.provider, self.client = host, provider, client
        self.start = self._now()
        self.traffic = host.nats_traffic()
        self.wakeups = host.wakeups()
        self.seconds = -time.perf_counter()

    def _now(self) -> dict[str, float]:
        return {**self.host.cpu_seconds(), "provider": process_cpu(self.provider), "client": process_cpu(self.client),
                "machine": machine_cpu()}

    def per_chunk(self, chunks: int) -> dict[str, float]:
        """µs of CPU per chunk since the window opened: each process's, ``workers`` (their sum),
        ``other``, and ``busy`` (the machine's CPUs' share in use, 0-1)."""
        self.seconds += time.perf_counter()
        end = self._now()
        used = {name: end[name] - self.start.get(name, 0.0) for name in end}
        used["workers"] = sum(value for name, value in used.items() if name.startswith(("worker ", "serve ")))
        used["other"] = used["machine"] - used["workers"] - used.get("nats", 0.0) - used["provider"] - used["client"]
        shares = {name: value * 1e6 / max(1, chunks) for name, value in used.items()}
        shares["busy"] = used["machine"] / max(1e-9, self.seconds * (os.cpu_count() or 1))
        for key, value in self.host.wakeups().items():
            shares[f"wakeups {key}"] = (value - self.wakeups.get(key, 0)) / max(1, chunks)
        traffic = self.host.nats_traffic()
        if traffic and self.traffic:  # messages through NATS per chunk (not µs: no "µs" columns)
            for key, value in traffic.items():
                shares[f"nats {key}"] = (value - self.traffic.get(key, 0)) / max(1, chunks)
        return shares


CPU_COLUMNS = ("workers", "nats", "provider", "client", "other")
CPU_HEADER = f"{'CPU µs/chunk: workers  NATS provider client other':>49} | {'busy':>4}"


def _cpu_cells(cpu: dict[str, float]) -> str:
    return (f"{cpu['workers']:>22.0f} {cpu.get('nats', 0.0):>5.0f} {cpu['provider']:>8.0f} {cpu['client']:>6.0f} "
            f"{cpu['other']:>5.0f} | {cpu['busy']:>4.0%}")


async def _fresh_host(workers: int, base_url: str, provider: int, args: argparse.Namespace) -> WorkersHost:
    """A new ``serve --workers N`` (plain ``serve`` for 0) on a new data directory, its first turns
    run (unmeasured: a process's first turn imports the SDK and the turn loop)."""
    host = WorkersHost(workers, base_url, f"paced-{round(args.rate * args.seconds)}-{args.rate:g}")
    try:
        await host.start()
        await _spread_run(host, provider, max(2, 2 * workers), args)
    except BaseException:
        host.stop()
        raise
    return host


async def _spread_run(host: WorkersHost, provider: int, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run of ``sessions`` sessions on ``host`` (``benchmarks/_workers.py``'s client process):
    its figures, with ``cpu``, each process's CPU per chunk from the first message to the last
    turn's end."""
    stagger = _stagger(sessions, args)
    count = _chunks(stagger, args)
    child = ChildProcess(__file__, "spread", host.address, f"paced-{count}-{args.rate:g}", sessions, stagger,
                         ",".join(map(str, host.workers())), "cross" if args.cross else "own", "root" if args.root else "sessions")
    try:
        await child.expect("streaming", timeout=900)
        # From the first message sent to the last turn's end (the sessions' creation left out).
        window = CpuWindow(host, provider, child.process.pid)
        await child.expect("ended", timeout=900)
        run: dict[str, Any] = json.loads(await child.expect("result", timeout=900))
        # Each run's workers are new processes: named by their place (worker 1, 2...), not pid.
        places = {f"worker {pid}": f"worker {index}" for index, pid in enumerate(host.workers(), 1)}
        run["cpu"] = {places.get(name, name): value for name, value in window.per_chunk(run["count"]).items()}
        await child.wait()
    finally:
        child.kill()
    return run


async def _one_count_of_workers(workers: int, provider: int, base_url: str, sessions: int,
                                args: argparse.Namespace) -> tuple[bool, str]:
    """Run ``sessions`` sessions on ``serve --workers`` ``--repeat`` times, each run on a fresh host
    (as the one-process mode's): whether the median p99 held. A host kept from run to run would
    hold every earlier run's sessions, and a host's turn start costs more with every session it
    holds (``benchmarks/README.md``, "The ceiling of ``capacity.py --workers``")."""
    stagger = _stagger(sessions, args)
    count = _chunks(stagger, args)
    runs = []
    for _ in range(args.repeat):
        host = await _fresh_host(workers, base_url, provider, args)
        try:
            runs.append(await _spread_run(host, provider, sessions, args))
        finally:
            host.stop()
    p99 = median([run["p99"] for run in runs])
    planned_s = count / args.rate + stagger
    lasted = median([run["seconds"] for run in runs])
    fell_behind = lasted > 1.05 * planned_s + 0.5 or min(run["count"] for run in runs) < count * sessions
    held = p99 <= args.limit_ms and not fell_behind
    each = ", ".join(f"{run['p99']:.2f}" for run in runs)
    cpu = {name: median([run["cpu"].get(name, 0.0) for run in runs]) for name in {*runs[0]["cpu"], *CPU_COLUMNS}}
    each_worker = " + ".join(f"{cpu[name]:.0f}" for name in sorted(cpu) if name.startswith("worker "))
    steady = median([run.get("steady_p99", run["p99"]) for run in runs])
    line = (f"{sessions:>8} | {p99:>9.2f} | {steady:>10.2f} | {median([run['median'] for run in runs]):>9.2f} | {_cpu_cells(cpu)} | "
            f"{lasted:>8.2f} / {planned_s:>5.2f} | "
            f"{'held' if held else 'missed'}{' (chunks were read late: the streams lasted longer than planned)' if fell_behind else ''}  "
            f"[p99 of each run: {each}{f'; µs/chunk of each worker: {each_worker}' if workers > 1 else ''}{_traffic_note(cpu)}]")
    return held, line


def _traffic_note(cpu: dict[str, float]) -> str:
    """The NATS server's messages (and bytes) per chunk, in from the workers and out to them
    (``WorkersHost.nats_traffic``): how many records, acknowledgements, followed records and
    answers a chunk costs, whatever the machine's load."""
    woken = f"; wake-ups per chunk: workers {cpu.get('wakeups workers', 0.0):.2f}, NATS {cpu.get('wakeups nats', 0.0):.2f}"
    if not cpu.get("nats in_msgs"):
        return woken
    return (f"{woken}; NATS per chunk: in {cpu['nats in_msgs']:.2f} msgs {cpu['nats in_bytes']:.0f} B, "
            f"out {cpu['nats out_msgs']:.2f} msgs {cpu['nats out_bytes']:.0f} B")


async def _workers(base_url: str, provider: int, args: argparse.Namespace) -> None:
    counts = [int(n) for n in args.workers.split(",")]
    read = "; each worker's sessions read through the next worker (--cross)" if args.cross else ""
    print(f"capacity of agent-host serve --workers N at p99 chunk → frame received ≤ {args.limit_ms:g} ms, {args.rate:g} chunks/s "
          f"per session, median of {args.repeat}, each run on a fresh host; {machine_note()}; nothing pinned{read}")
    print(f"command: {command_line()}")
    held: dict[int, int] = {}
    for workers in counts:
        print(f"--workers {workers}" if workers else "--workers 0: plain serve, no NATS")
        print(f"{'sessions':>8} | {'p99 ms':>9} | {'steady p99':>10} | {'median ms':>9} | {CPU_HEADER} | {'streamed s / planned':>19} |")
        held_at, missed_at = await _search(lambda n, w=workers: _one_count_of_workers(w, provider, base_url, n, args), args)
        held[workers] = held_at
        print(_verdict(f"--workers {workers}", held_at, missed_at, args), f"(load average now {machine_note().split('average ')[1]})", flush=True)
    if counts and held.get(counts[0]):
        print("relative to --workers {}: {}".format(counts[0], ", ".join(
            f"{f'{n} workers' if n else 'plain serve'} {held[n] / held[counts[0]]:.2f}x" for n in counts)))
    print(f"load average after the run: {machine_note()}")


def search_arguments(description: str, *, most: int) -> argparse.ArgumentParser:
    """The options of a capacity search (this script's, ``capacity_relay.py``'s), ``--max``
    defaulting to ``most``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--rate", type=float, default=20, help="chunks per second per session")
    parser.add_argument("--seconds", type=float, default=4, help="how long each session streams")
    parser.add_argument("--limit-ms", type=float, default=10)
    parser.add_argument("--start", type=int, default=25)
    parser.add_argument("--max", type=int, default=most)
    parser.add_argument("--resolution", type=float, default=0.1, help="stop when the gap is at most this share of the count that held")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--starts-per-second", type=float,
                        help="turns (the relay's streams) started a second at most, over one second at least, each "
                             "session streaming that much longer, so that all stream at once as long as by default "
                             "(unset: 200, the figure's setting, a run of N sessions starting them over max(1, N / 200) s)")
    return parser


async def main() -> None:
    parser = search_arguments(__doc__.splitlines()[0], most=800)
    parser.add_argument("--workers", help="comma-separated worker counts: measure 'agent-host serve --workers N' for each")
    parser.add_argument("--stalls", type=float, nargs="?", const=2.0, metavar="MS",
                        help="probe the host's event loop (one process only): after each count, the stalls over MS "
                             "(default 2) while chunks streamed, with their causes (benchmarks/_stalls.py; costs the "
                             "host 20-35 %% more CPU a chunk, so compare p99s only between runs without it)")
    parser.add_argument("--tail", action="store_true",
                        help="one process only: after each count, what the chunks later than --limit-ms waited through "
                             "(the loop's work, the collector, polling, its own threads, the machine) and every loop "
                             "iteration's wall and CPU time (benchmarks/_stalls.py's probe without naming callbacks: "
                             "six clock readings an iteration)")
    parser.add_argument("--cross", action="store_true", help="with --workers: the client reads each worker's sessions "
                                                             "through another worker (what following a session run elsewhere costs)")
    parser.add_argument("--root", action="store_true", help="with --workers: each reading client also follows the root channel, "
                                                            "as a real client does (one process writes it: the others' frames "
                                                            "then wait for their log's follower, ClusterLog.caught_up)")
    args = parser.parse_args()
    placement = pin_measured_process() if not args.workers else "not pinned"
    server = ChildProcess(STREAM, "sse")
    try:
        base_url = await server.expect("url")
        if args.workers:
            await _workers(base_url, server.process.pid, args)
            return
        print(f"capacity at p99 chunk → frame written ≤ {args.limit_ms:g} ms, {args.rate:g} chunks/s per session, "
              f"median of {args.repeat}; {machine_note()}; {placement}")
        print(f"command: {command_line()}")
        # Untimed: the first turns of a process import the SDK and the turn loop.
        await _through_host(base_url, f"paced-{round(args.rate)}-{args.rate:g}", 5, 0.1)
        print(f"{'sessions':>8} | {'p99 ms':>9} | {'steady p99':>10} | {'CPU µs/chunk':>7} {'steady':>7} | {'streamed s / planned':>19} |")
        held_at, missed_at = await _search(lambda n: _one_count(base_url, n, args), args)
        print(_verdict("one core", held_at, missed_at, args))
        print(f"load average after the run: {machine_note()}")
    finally:
        server.kill()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child" and sys.argv[2] == "spread":
        asyncio.run(spread_clients(sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6]),
                                   [int(pid) for pid in sys.argv[7].split(",")], cross=sys.argv[8] == "cross",
                                   root=sys.argv[9] == "root"))
        sys.exit(0)
    asyncio.run(main())
