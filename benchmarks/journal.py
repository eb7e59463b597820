"""The journal's cost: per delta, rows per turn, and event-loop stalls with a large stored state.

    .venv/bin/python benchmarks/journal.py [--deltas 20000] [--state-mb 50] [--repeat 3]

1. Per-delta cost. A session streams ``--deltas`` ``session/delta`` actions into the store with the
   SQLite journal on disk, flushing every 8 deltas as transports do before frames leave; baseline:
   the same store with no journal, in the same run. Microseconds per delta, median of ``--repeat``.
2. Rows. How many journal rows a 10,000-delta turn leaves.
3. Stalls. A store holding ``--state-mb`` MB of session state, spread over 250 sessions, and again
   in one session, snapshots every 500 rows while 20 sessions stream; a ticker measures the longest
   gap of the event loop. Baseline: the same stream with no journal.
"""

from __future__ import annotations

import argparse
import asyncio
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import machine_note, median  # noqa: E402
from host.journal import Journal  # noqa: E402
from host.store import Store  # noqa: E402


def _session(uri: str, text: str = "") -> dict:
    turns = [{"id": "old", "userMessage": {"text": "before"}, "responseParts": [{"kind": "markdown", "id": "m", "content": text}],
              "state": "complete"}] if text else []
    return {"summary": {"resource": uri, "provider": "p", "title": "t", "status": 1, "createdAt": 1, "modifiedAt": 1},
            "lifecycle": "ready", "turns": turns}


def _store(data: str | None, **kwargs) -> Store:
    journal = Journal(Path(data) / "journal.sqlite3") if data else None
    store = Store({"agents": []}, clock=lambda: 1, journal=journal, **kwargs)
    store.recover()
    return store


def _start(store: Store, uri: str, text: str = "") -> None:
    store.create(uri, "session", _session(uri, text))
    store.dispatch(uri, {"type": "session/turnStarted", "turnId": "t", "userMessage": {"text": "go"}})
    store.dispatch(uri, {"type": "session/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}})


async def per_delta(deltas: int, journaled: bool) -> float:
    with tempfile.TemporaryDirectory() as data:
        store = _store(data if journaled else None)
        _start(store, "ahp-session:/a")
        started = time.perf_counter()
        for index in range(deltas):
            store.dispatch("ahp-session:/a", {"type": "session/delta", "turnId": "t", "partId": "m", "content": "tok "})
            if index % 8 == 0:
                store.flush()
                await asyncio.sleep(0)
        store.flush()
        elapsed = time.perf_counter() - started
        store.close()
    return elapsed / deltas * 1e6


async def rows_for_a_turn(deltas: int) -> int:
    with tempfile.TemporaryDirectory() as data:
        store = _store(data)
        _start(store, "ahp-session:/a")
        for index in range(deltas):
            store.dispatch("ahp-session:/a", {"type": "session/delta", "turnId": "t", "partId": "m", "content": f"{index} "})
            store.flush()  # the worst case: every delta committed on its own
        with sqlite3.connect(Path(data) / "journal.sqlite3") as db:
            count = db.execute("SELECT COUNT(*) FROM entries WHERE seq > 2").fetchone()[0]
        store.close()
    return count


async def longest_stall(state_mb: int, sessions: int, journaled: bool) -> float:
    with tempfile.TemporaryDirectory() as data:
        store = _store(data if journaled else None, snapshot_every=500)
        text = "x" * (state_mb * 1_000_000 // sessions)
        for index in range(sessions):
            _start(store, f"ahp-session:/big{index}", text)
        streaming = [f"ahp-session:/s{index}" for index in range(20)]
        for uri in streaming:
            _start(store, uri)
        store.snapshot_now()  # start from a snapshot holding the large state, as a running host would
        longest = 0.0
        running = True

        async def ticker() -> None:
            nonlocal longest
            last = time.perf_counter()
            while running:
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                longest = max(longest, now - last)
                last = now

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        big = [f"ahp-session:/big{index}" for index in range(sessions)]
        for index in range(20_000):
            target = streaming[index % len(streaming)]
            store.dispatch(target, {"type": "session/delta", "turnId": "t", "partId": "m", "content": "tok "})
            if index % 2000 == 0:  # now and then a large session changes too, so snapshots rewrite it
                store.dispatch(big[index // 2000 % sessions], {"type": "session/titleChanged", "title": f"t{index}"})
            if index % 20 == 0:
                store.flush()
                await asyncio.sleep(0)
        while store._snapshot_task is not None and not store._snapshot_task.done():
            await asyncio.sleep(0.005)
        running = False
        await tick
        store._journal and store._journal.close()
    return longest * 1000


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--state-mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"journal, median of {args.repeat}; {machine_note()}")
    journaled, memory = [], []
    for _ in range(args.repeat):
        journaled.append(await per_delta(args.deltas, True))
        memory.append(await per_delta(args.deltas, False))
    j, m = median(journaled), median(memory)
    print(f"us per delta: journal {j:.1f}, in memory {m:.1f}, ratio {j / m:.2f} (+{j - m:.1f} us)")
    print(f"rows for a 10,000-delta turn committed delta by delta: {await rows_for_a_turn(10_000)}")
    for sessions in (250, 1):
        stalls = [await longest_stall(args.state_mb, sessions, True) for _ in range(args.repeat)]
        bases = [await longest_stall(args.state_mb, sessions, False) for _ in range(args.repeat)]
        print(f"longest event-loop stall, {args.state_mb} MB stored in {sessions} session(s), snapshots every 500 rows: "
              f"{median(stalls):.1f} ms (no journal: {median(bases):.1f} ms)")
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    asyncio.run(main())
