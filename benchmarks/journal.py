"""The journal's cost: per delta, rows per turn, and event-loop stalls with a large stored state.

    .venv/bin/python benchmarks/journal.py [--deltas 20000] [--state-mb 50] [--repeat 3]

1. Per-delta cost. A chat streams ``--deltas`` ``chat/delta`` actions into the store with the
   SQLite journal on disk, 8 deltas per event-loop tick, each tick's frames waiting for the
   journal's commit as a connection's do (``Store.when_durable``, what
   ``host.transport.ws_protocol`` calls: a commit at most every millisecond, the WAL
   checkpointed in a worker thread; ``--commit-every-tick``: ``Store.flush`` at the end of every
   tick instead, what a forced write does and what this benchmark did before 2026-11-29); baseline:
   the same store with no journal, in the same run. Microseconds per delta, median of ``--repeat``.
2. Rows. How many journal rows a 10,000-delta turn leaves.
   Bytes. What the journal writes per delta of a ``--bytes-deltas`` turn at a model's pace: each
   delta committed on its own (at 20 chunks/s a frame waits at most ``MIN_COMMIT_INTERVAL`` for
   its commit, so every chunk has a commit of its own), then everything settled into SQLite and
   the WAL copied into the database (what its checkpoints would copy). Counted by the kernel for this process (``/proc/self/io``):
   ``wchar``, the bytes handed to ``write``/``pwrite`` (the journal's files are all this process
   writes), and ``write_bytes``, the page-cache pages those writes dirtied (a page dirtied again
   before writeback counts once, so it depends on the pace; given for information). Again with 8
   deltas per commit (a fast stream).
3. Stalls. A store holding ``--state-mb`` MB of chat state, spread over 250 chats, and again
   in one long chat (turns of ~100 kB), snapshots every 100 rows while 20 chats stream (20 deltas
   per tick, committed as in 1) and the large chats change now and then (so snapshots rewrite
   them); a ticker measures the longest gap of the event loop.
   Baseline: the same stream with no journal. Both first settle memory as ``agent-host serve``
   does once started (``gc.freeze()``, fewer young collections). Each stall is given with the
   event loop thread's own CPU time during it: a stall much longer than its CPU time is the
   thread waiting (for the machine's other processes, the disk, the GIL), not the loop's work.
   ``--trace-stalls MS`` prints, for each stall of the journaled runs longer than ``MS``, where the
   event loop's thread was when a watcher thread first saw the loop late (its innermost frames of
   this repository) and the garbage collector's pauses during it.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import REPO, command_line, machine_note, median
from host.runtime.memory import settle
from host.state.embedded_log import EmbeddedLog, at_once
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
    at_once(store.recover())
    return store


def _start(store: Store, uri: str, text: str = "", turns_count: int = 1) -> None:
    store.create(uri, "chat", _chat(uri, text, turns_count))
    store.dispatch(uri, {"type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-11-29T00:00:00.000Z",
                         "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(uri, {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}})


def _end_of_tick(store: Store, every_tick: bool) -> None:
    """What a connection does at the end of a tick with frames to send: wait for their commit
    (``when_durable``), or, with ``every_tick``, commit at once (``flush``)."""
    if every_tick:
        store.flush()
    else:
        store.when_durable(lambda: None)


async def per_delta(deltas: int, journaled: bool, every_tick: bool = False) -> float:
    with tempfile.TemporaryDirectory() as data:
        store = _store(data if journaled else None)
        _start(store, "bench:/a")
        started = time.perf_counter()
        for index in range(deltas):
            store.dispatch("bench:/a", {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "tok "})
            if index % 8 == 0:
                _end_of_tick(store, every_tick)
                await asyncio.sleep(0)
        store.flush()
        elapsed = time.perf_counter() - started
        await store.close()
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
        await store.close()
    return count


def _io() -> tuple[int, int]:
    """``(wchar, write_bytes)`` of this process so far."""
    fields = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(fields["wchar"]), int(fields["write_bytes"])


def bytes_per_delta(deltas: int, per_commit: int) -> tuple[float, float]:
    """Bytes written per delta (``wchar``, ``write_bytes``), ``per_commit`` deltas per commit."""
    with tempfile.TemporaryDirectory() as data:
        store = _store(data)
        _start(store, "bench:/a")
        store.flush()
        before = _io()
        for index in range(deltas):
            store.dispatch("bench:/a", {"type": "chat/delta", "turnId": "t", "partId": "m", "content": f" tok{index % 10}"})
            if index % per_commit == per_commit - 1:
                store.flush()
        store.flush()
        journal = store._journal
        assert journal is not None
        if "settle" in journal.flush.__code__.co_varnames:  # this build's tail: what it holds goes to SQLite too
            journal.flush(settle=True)
        journal.checkpoint_here()
        after = _io()
        at_once(store.close())
    return (after[0] - before[0]) / deltas, (after[1] - before[1]) / deltas


@dataclass
class Stall:
    """An event-loop tick that came late: its wall-clock and CPU milliseconds, where the loop's
    thread was (when traced) and the collector's pauses during it."""

    wall_ms: float
    cpu_ms: float
    where: list[str] = field(default_factory=list)
    gc_ms: list[float] = field(default_factory=list)


class StallWatch:
    """A ticker on the event loop (``tick`` every millisecond) and, when tracing, a watcher thread
    that notes where the loop's thread is once a tick is ``threshold_ms`` late."""

    def __init__(self, threshold_ms: float | None) -> None:
        self.threshold = threshold_ms / 1000 if threshold_ms is not None else None
        self.last = time.perf_counter()
        self.last_cpu = time.thread_time()
        self.longest = Stall(0.0, 0.0)
        self.busiest = Stall(0.0, 0.0)
        """The tick with the most CPU time of the loop's thread: the loop's own longest piece of work."""
        self.traced: list[Stall] = []
        self._where: list[str] = []
        self._gc: list[float] = []
        self._gc_started = 0.0
        self._running = True
        self._loop_thread = threading.get_ident()
        self._watcher: threading.Thread | None = None

    def start(self) -> None:
        if self.threshold is not None:
            gc.callbacks.append(self._on_gc)
            self._watcher = threading.Thread(target=self._watch, daemon=True)
            self._watcher.start()

    def stop(self) -> None:
        self._running = False
        if self._watcher is not None:
            gc.callbacks.remove(self._on_gc)
            self._watcher.join()

    def tick(self) -> None:
        now, cpu = time.perf_counter(), time.thread_time()
        gap = now - self.last
        if gap > self.longest.wall_ms / 1000:
            self.longest = Stall(gap * 1000, (cpu - self.last_cpu) * 1000, list(self._where), list(self._gc))
        if cpu - self.last_cpu > self.busiest.cpu_ms / 1000:
            self.busiest = Stall(gap * 1000, (cpu - self.last_cpu) * 1000, list(self._where), list(self._gc))
        if self.threshold is not None and gap > self.threshold:
            self.traced.append(Stall(gap * 1000, (cpu - self.last_cpu) * 1000, list(self._where), list(self._gc)))
        self._where, self._gc = [], []
        self.last, self.last_cpu = now, cpu

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self._gc.append((time.perf_counter() - self._gc_started) * 1000)

    def _watch(self) -> None:
        assert self.threshold is not None
        seen = 0.0
        while self._running:
            time.sleep(0.001)
            last = self.last
            if time.perf_counter() - last > self.threshold and last != seen:
                seen = last
                frame = sys._current_frames().get(self._loop_thread)
                stack = traceback.extract_stack(frame) if frame is not None else []
                ours = [f"{Path(item.filename).relative_to(REPO)}:{item.lineno} {item.name}" for item in stack
                        if Path(item.filename).is_relative_to(REPO) and "/.venv/" not in item.filename]
                self._where = ours[-4:] or [f"{Path(item.filename).name}:{item.lineno} {item.name}" for item in stack[-2:]]


async def longest_stall(state_mb: int, sessions: int, journaled: bool, trace_ms: float | None = None,
                        every_tick: bool = False) -> tuple[Stall, Stall, int, list[Stall]]:
    """The longest gap between two ticks, the gap with the most CPU time of the loop's thread, the
    snapshots taken, and the stalls traced."""
    with tempfile.TemporaryDirectory() as data:
        store = _store(data if journaled else None, snapshot_every=_SNAPSHOT_EVERY)
        text = "x" * (state_mb * 1_000_000 // sessions)
        for index in range(sessions):  # a long chat: its state is many turns of ~100 kB
            _start(store, f"bench:/big{index}", text, turns_count=max(1, len(text) // 100_000))
        streaming = [f"bench:/s{index}" for index in range(20)]
        for uri in streaming:
            _start(store, uri)
        await store.snapshot_now()  # start from a snapshot holding the large state, as a running host would
        settle()  # what `agent-host serve` does once started with its recovered state
        snapshots = 0
        log = cast(EmbeddedLog, store.log)
        background = log.snapshot_in_background

        async def counted() -> None:
            nonlocal snapshots
            snapshots += 1
            await background()

        log.snapshot_in_background = counted  # type: ignore[method-assign]  # counted for the run
        watch = StallWatch(trace_ms)
        running = True

        async def ticker() -> None:
            watch.tick()
            watch.start()
            while running:
                await asyncio.sleep(0.001)
                watch.tick()

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0.01)
        big = [f"bench:/big{index}" for index in range(sessions)]
        for index in range(20_000):
            target = streaming[index % len(streaming)]
            store.dispatch(target, {"type": "chat/delta", "turnId": "t", "partId": "m", "content": "tok "})
            if index % 500 == 0:  # now and then a large chat changes too, so snapshots rewrite it
                store.dispatch(big[index // 500 % sessions], {"type": "chat/activityChanged", "activity": f"step {index}"})
            if index % 20 == 0:
                _end_of_tick(store, every_tick)
                await asyncio.sleep(0)
        while log.snapshot_task is not None and not log.snapshot_task.done():
            await asyncio.sleep(0.005)
        running = False
        await tick
        watch.stop()
        store._journal and store._journal.close()
    return watch.longest, watch.busiest, snapshots, watch.traced


def _described(stall: Stall) -> str:
    return f"{stall.wall_ms:.1f} ms ({stall.cpu_ms:.1f} ms CPU)"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--state-mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trace-stalls", type=float, metavar="MS",
                        help="print where the event loop was during each journaled run's stall longer than MS")
    parser.add_argument("--bytes-deltas", type=int, default=2_000, help="deltas of the turn whose bytes are counted")
    parser.add_argument("--bytes-only", action="store_true", help="count the bytes written per delta only")
    parser.add_argument("--stalls-only", action="store_true", help="measure the stalls only (part 3)")
    parser.add_argument("--commit-every-tick", action="store_true",
                        help="commit at the end of every tick (Store.flush) instead of as connections wait for commits")
    args = parser.parse_args()
    commits = "a commit at the end of every tick" if args.commit_every_tick else "commits as connections wait for them"
    print(f"journal, median of {args.repeat}; {commits}; {machine_note()}")
    print(f"command: {command_line()}")
    if not args.stalls_only:
        for per_commit, pace in ((1, "a model's pace, every delta committed on its own"), (8, "a fast stream, 8 deltas per commit")):
            counts = [bytes_per_delta(args.bytes_deltas, per_commit) for _ in range(args.repeat)]
            print(f"bytes written per delta, {args.bytes_deltas}-delta turn at {pace}: "
                  f"{median([c[0] for c in counts]):.0f} (write syscalls, runs {', '.join(f'{c[0]:.0f}' for c in counts)}); "
                  f"page cache dirtied {median([c[1] for c in counts]):.0f}", flush=True)
    if args.bytes_only:
        print(f"load average after the run: {machine_note()}")
        return
    if not args.stalls_only:
        journaled, memory = [], []
        for _ in range(args.repeat):
            journaled.append(await per_delta(args.deltas, True, args.commit_every_tick))
            memory.append(await per_delta(args.deltas, False, args.commit_every_tick))
        j, m = median(journaled), median(memory)
        print(f"us per delta: journal {j:.1f}, in memory {m:.1f}, ratio {j / m:.2f} (+{j - m:.1f} us)")
        print(f"rows for a 10,000-delta turn committed delta by delta: {await rows_for_a_turn(10_000)}")
    for sessions in (250, 1):
        runs, bases = [], []
        for _ in range(args.repeat):  # alternating, so that both see the same machine
            runs.append(await longest_stall(args.state_mb, sessions, True, args.trace_stalls, args.commit_every_tick))
            bases.append((await longest_stall(args.state_mb, sessions, False, every_tick=args.commit_every_tick))[:2])
        print(f"longest event-loop stall, {args.state_mb} MB stored in {sessions} chat(s), "
              f"{median([count for _, _, count, _ in runs]):.0f} snapshots during the stream: "
              f"{median([stall.wall_ms for stall, _, _, _ in runs]):.1f} ms (no journal: {median([b[0].wall_ms for b in bases]):.1f} ms); "
              f"each run: {', '.join(_described(stall) for stall, _, _, _ in runs)} "
              f"(no journal: {', '.join(_described(b[0]) for b in bases)})", flush=True)
        print(f"  the loop's longest piece of work (most CPU between two ticks): "
              f"{median([busiest.cpu_ms for _, busiest, _, _ in runs]):.1f} ms of CPU "
              f"(no journal: {median([b[1].cpu_ms for b in bases]):.1f}); each run: "
              f"{', '.join(f'{busiest.cpu_ms:.1f}' for _, busiest, _, _ in runs)} "
              f"(no journal: {', '.join(f'{b[1].cpu_ms:.1f}' for b in bases)})", flush=True)
        for index, (_, _, _, traced) in enumerate(runs):
            for stall in traced:
                collected = f"; collector {'+'.join(f'{ms:.1f}' for ms in stall.gc_ms)} ms" if stall.gc_ms else ""
                print(f"  run {index + 1}: {_described(stall)}{collected}: {' < '.join(reversed(stall.where)) or '?'}")
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    asyncio.run(main())
