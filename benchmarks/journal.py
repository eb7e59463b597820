"""The journal's cost: per delta, rows per turn, and event-loop stalls with a large stored state.

    .venv/bin/python benchmarks/journal.py [--deltas 20000] [--state-mb 50] [--repeat 3]

1. Per-delta cost. A chat streams ``--deltas`` ``chat/delta`` actions into the store with the
   SQLite journal on disk, flushing every 8 deltas as transports do before frames leave; baseline:
   the same store with no journal, in the same run. Microseconds per delta, median of ``--repeat``.
2. Rows. How many journal rows a 10,000-delta turn leaves.
3. Stalls. A store holding ``--state-mb`` MB of chat state, spread over 250 chats, and again
   in one long chat (turns of ~100 kB), snapshots every 100 rows while 20 chats stream and the large chats change
   now and then (so snapshots rewrite them); a ticker measures the longest gap of the event loop.
   Baseline: the same stream with no journal. Both first settle memory as ``agent-host serve``
   does once started (``gc.freeze()``, fewer young collections).
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

from benchmarks._runs import command_line, machine_note, median
from host.runtime.memory import settle
from host.state.journal import Journal
from host.state.sessions import new_chat_state
from host.state.store import Store

_SNAPSHOT_EVERY = 100
"""Rows between snapshots in the stall runs (the host's default is 5,000): several per run."""


def _chat(uri: str, text: str = "", turns_count: int = 1) -> dict:
    size = len(text) // max(1, turns_count)
    turns = [{"id": f"old{index}", "startedAt": "2026-11-29T00:00:00.000Z", "message": {"text": "before", "origin": {"kind": "user"}},
              "state": "complete", "responseParts": [{"kind": "markdown", "id": "m", "content": text[:size]}]}
             for index in range(turns_count)] if text else []
    return new_chat_state(uri, now=1, turns=turns)


def _store(data: str | None, **kwargs) -> Store:
    journal = Journal(Path(data) / "journal.sqlite3") if data else None
    store = Store({"agents": []}, clock=lambda: 1, journal=journal, **kwargs)
    store.recover()
    return store


def _start(store: Store, uri: str, text: str = "", turns_count: int = 1) -> None:
    store.create(uri, "chat", _chat(uri, text, turns_count))
    store.dispatch(uri, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-11-29T00:00:00.000Z",
                         "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(uri, {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}})


async def per_delta(deltas: int, journaled: bool) -> float:
    with tempfile.TemporaryDirectory() as data:
        store = _store(data if journaled else None)
        _start(store, "bench:/a")
        started = time.perf_counter()
        for index in range(deltas):
            store.dispatch("bench:/a", {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "tok "})
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
        _start(store, "bench:/a")
        for index in range(deltas):
            store.dispatch("bench:/a", {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f"{index} "})
            store.flush()  # the worst case: every delta committed on its own
        with sqlite3.connect(Path(data) / "journal.sqlite3") as db:
            count = db.execute("SELECT COUNT(*) FROM entries WHERE seq > 2").fetchone()[0]
        store.close()
    return count


async def longest_stall(state_mb: int, sessions: int, journaled: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as data:
        store = _store(data if journaled else None, snapshot_every=_SNAPSHOT_EVERY)
        text = "x" * (state_mb * 1_000_000 // sessions)
        for index in range(sessions):  # a long chat: its state is many turns of ~100 kB
            _start(store, f"bench:/big{index}", text, turns_count=max(1, len(text) // 100_000))
        streaming = [f"bench:/s{index}" for index in range(20)]
        for uri in streaming:
            _start(store, uri)
        store.snapshot_now()  # start from a snapshot holding the large state, as a running host would
        settle()  # what `agent-host serve` does once started with its recovered state
        snapshots = 0
        background = store._snapshot_in_background

        async def counted() -> None:
            nonlocal snapshots
            snapshots += 1
            await background()

        store._snapshot_in_background = counted  # type: ignore[method-assign]  # counted for the run
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
        big = [f"bench:/big{index}" for index in range(sessions)]
        for index in range(20_000):
            target = streaming[index % len(streaming)]
            store.dispatch(target, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "tok "})
            if index % 500 == 0:  # now and then a large chat changes too, so snapshots rewrite it
                store.dispatch(big[index // 500 % sessions], {"type": "chat/activityChanged", "activity": f"step {index}"})
            if index % 20 == 0:
                store.flush()
                await asyncio.sleep(0)
        while store._snapshot_task is not None and not store._snapshot_task.done():
            await asyncio.sleep(0.005)
        running = False
        await tick
        store._journal and store._journal.close()
    return longest * 1000, snapshots


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--state-mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"journal, median of {args.repeat}; {machine_note()}")
    print(f"command: {command_line()}")
    journaled, memory = [], []
    for _ in range(args.repeat):
        journaled.append(await per_delta(args.deltas, True))
        memory.append(await per_delta(args.deltas, False))
    j, m = median(journaled), median(memory)
    print(f"us per delta: journal {j:.1f}, in memory {m:.1f}, ratio {j / m:.2f} (+{j - m:.1f} us)")
    print(f"rows for a 10,000-delta turn committed delta by delta: {await rows_for_a_turn(10_000)}")
    for sessions in (250, 1):
        runs = [await longest_stall(args.state_mb, sessions, True) for _ in range(args.repeat)]
        bases = [(await longest_stall(args.state_mb, sessions, False))[0] for _ in range(args.repeat)]
        print(f"longest event-loop stall, {args.state_mb} MB stored in {sessions} chat(s), "
              f"{median([count for _, count in runs]):.0f} snapshots during the stream: "
              f"{median([stall for stall, _ in runs]):.1f} ms (no journal: {median(bases):.1f} ms)")
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    asyncio.run(main())
