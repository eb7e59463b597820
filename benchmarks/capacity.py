"""How many concurrently streaming sessions one core holds with the p99 of chunk → frame ≤ 10 ms.

    .venv/bin/python benchmarks/capacity.py [--rate 20] [--seconds 4] [--limit-ms 10] [--start 25] [--max 800] [--repeat 3]

The setting of ``benchmarks/provider_stream.py``'s latency runs, on loopback: a fake OpenAI Chat
Completions server (its own process) streams ``--rate`` chunks a second per session, the host
(this process, pinned to one CPU; the fake provider and the client process on the others) runs an
``openai-chat`` agent per session and writes every ``session/delta`` to one ``AhpClient`` process
subscribed to all of them. The figure is chunk written by the provider → frame written to the
client's socket (after the journal commit), p99 over every chunk of a run, the median of
``--repeat`` runs. Turns start spread over ``max(1, N / 200)`` seconds (at most 200 turn starts a
second) and each session then streams for ``--seconds``.

The search stops by itself: session counts double from ``--start`` until a count misses the limit
(or ``--max`` is reached), then the gap between the last count that held and the first that did
not is halved until it is at most ``--resolution`` of the lower one. A count whose streams
lasted over 5 % longer than planned (chunks read late: the host, or on a machine whose other CPUs
are too slow the load generators, fell behind), or lost chunks, is a miss whatever its p99, and
says so. The host's CPU per chunk is printed for
every count (this process's CPU from the first chunk to the last, turn starts included, and
while every session streamed).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import ChildProcess, command_line, machine_note, median, pin_measured_process
from benchmarks.provider_stream import _through_host

STREAM = str(Path(__file__).resolve().parent / "provider_stream.py")


async def _one_count(base_url: str, sessions: int, args: argparse.Namespace) -> tuple[bool, str]:
    """Run ``sessions`` sessions ``--repeat`` times; whether the median p99 held, and a report line."""
    count = round(args.rate * args.seconds)
    stagger = max(1.0, sessions / 200)
    runs = [await _through_host(base_url, f"paced-{count}-{args.rate:g}", sessions, stagger) for _ in range(args.repeat)]
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
    return held, line


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20, help="chunks per second per session")
    parser.add_argument("--seconds", type=float, default=4, help="how long each session streams")
    parser.add_argument("--limit-ms", type=float, default=10)
    parser.add_argument("--start", type=int, default=25)
    parser.add_argument("--max", type=int, default=800)
    parser.add_argument("--resolution", type=float, default=0.1, help="stop when the gap is at most this share of the count that held")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    placement = pin_measured_process()
    server = ChildProcess(STREAM, "sse")
    try:
        base_url = await server.expect("url")
        print(f"capacity at p99 chunk → frame written ≤ {args.limit_ms:g} ms, {args.rate:g} chunks/s per session, "
              f"median of {args.repeat}; {machine_note()}; {placement}")
        print(f"command: {command_line()}")
        # Untimed: the first turns of a process import the SDK and the turn loop.
        await _through_host(base_url, f"paced-{round(args.rate)}-{args.rate:g}", 5, 0.1)
        print(f"{'sessions':>8} | {'p99 ms':>9} | {'steady p99':>10} | {'CPU µs/chunk':>7} {'steady':>7} | {'streamed s / planned':>19} |")
        held_at, missed_at = 0, None
        sessions = args.start
        while sessions <= args.max:  # doubling
            held, line = await _one_count(base_url, sessions, args)
            print(line, flush=True)
            if not held:
                missed_at = sessions
                break
            held_at = sessions
            sessions *= 2
        while missed_at is not None and held_at and missed_at - held_at > max(1, args.resolution * held_at):  # halving the gap
            sessions = (held_at + missed_at) // 2
            held, line = await _one_count(base_url, sessions, args)
            print(line, flush=True)
            if held:
                held_at = sessions
            else:
                missed_at = sessions
        if missed_at is None:
            print(f"one core held every count tried, up to {held_at} sessions (--max)")
        elif not held_at:
            print(f"one core did not hold {missed_at} sessions, the smallest count tried (--start)")
        else:
            print(f"one core holds {held_at} concurrently streaming sessions at p99 ≤ {args.limit_ms:g} ms; {missed_at} missed")
        print(f"load average after the run: {machine_note()}")
    finally:
        server.kill()


if __name__ == "__main__":
    asyncio.run(main())
