"""A long turn's cost per streamed token, which should not grow with the turn's length.

    .venv/bin/python benchmarks/long_turn.py [--short 10000] [--long 150000] [--repeat 3]

Host path: the store with the SQLite journal on disk and one subscriber, each ``chat/delta``
(4 characters) first checked against the chat's active turn as ``TurnContext.emit`` does, 8
deltas per event-loop tick, and at the end of each tick the frames waiting for the journal's
commit as a connection's are (``Store.when_durable``, what ``host.transport.ws_protocol`` calls:
a commit at most every millisecond, the WAL checkpointed in a worker thread); after the last
delta the state is read once (as a late subscriber would). ``--commit-every-tick`` commits at the
end of every tick instead (``Store.flush``, what a forced write does; the benchmark before
2026-11-29). A turn of ``--short`` and one of ``--long`` deltas: µs per delta over the whole
turn and over its last 10,000 deltas, of wall-clock time and of the event loop's own CPU time
(its thread's, which other processes on a shared machine do not inflate), and the ratio long /
short (1.0 means flat).

Client path: the client's mirror (``client.mirror.Mirror``, what ``AhpClient`` keeps for every
subscribed channel; it speaks AHP 0.2.0, as the terminal client does) fed each ``session/delta``
envelope as a connection does, the state read once at the end; same figures.

Baseline, same run: the pure chat reducer (``ahp.state``) applying one delta at a time, which copies the part's text
each time (what the store did before text runs): µs per delta for 2,000 deltas appended to a part
already holding the text of a ``--short`` and a ``--long`` turn.

Medians of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ahp.state import reduce
from benchmarks._runs import command_line, machine_note, median
from client.mirror import Mirror
from host.state.journal import Journal
from host.state.sessions import new_chat_state
from host.state.store import Store

URI = "bench:/long/chat"
"""The host's chat channel."""
CLIENT_URI = "ahp-session:/long"
"""The session a 0.2.0 client mirrors."""
TOKEN = "tok "
TAIL = 10_000


class _Socket:
    """A subscriber that takes frames as a connection's buffer does."""

    def __init__(self) -> None:
        self.frames = 0

    def send(self, text: str) -> None:
        self.frames += 1


def _session() -> dict:
    return {"summary": {"resource": CLIENT_URI, "provider": "p", "title": "t", "status": 1, "createdAt": 1, "modifiedAt": 1},
            "lifecycle": "ready", "turns": []}


def _delta() -> dict:
    return {"type": "chat/delta", "turnId": "t", "partId": "m", "content": TOKEN}


def _client_delta() -> dict:
    return {"type": "session/delta", "turnId": "t", "partId": "m", "content": TOKEN}


_OPENING = ({"type": "chat/turnStarted", "turnId": "t", "startedAt": "2026-11-29T00:00:00.000Z",
             "message": {"text": "go", "origin": {"kind": "user"}}},
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}})


async def host_turn(deltas: int, commit_every_tick: bool = False) -> tuple[float, float, float, float]:
    """µs per delta over the whole turn and over its last ``TAIL`` deltas, of wall-clock time and
    of the event loop thread's CPU time."""
    with tempfile.TemporaryDirectory() as data:
        store = Store({"agents": []}, clock=lambda: 1, journal=Journal(Path(data) / "journal.sqlite3"))
        await store.recover()
        store.create(URI, "chat", new_chat_state(URI, now=1))
        store.subscribe(URI, _Socket())
        for action in _OPENING:
            store.dispatch(URI, action)
        written = []
        tail_from = max(0, deltas - TAIL)
        started = tail_started = time.perf_counter()
        cpu_started = cpu_tail_started = time.thread_time()
        for index in range(deltas):
            if index == tail_from:
                tail_started, cpu_tail_started = time.perf_counter(), time.thread_time()
            if store.active_turn_id(URI) != "t":
                raise RuntimeError("the turn ended")
            store.dispatch(URI, _delta())
            if index % 8 == 7:
                if commit_every_tick:
                    store.flush()
                else:
                    store.when_durable(lambda index=index: written.append(index))
                await asyncio.sleep(0)
        store.flush()
        text = store.state(URI)["activeTurn"]["responseParts"][0]["content"]
        ended, cpu_ended = time.perf_counter(), time.thread_time()
        if len(text) != deltas * len(TOKEN):
            raise RuntimeError("the streamed text is not whole")
        if not commit_every_tick and (not written or written[-1] != deltas - deltas % 8 - 1):
            raise RuntimeError("frames waiting for a commit were never released")
        await store.close()
    tail = deltas - tail_from
    return ((ended - started) / deltas * 1e6, (ended - tail_started) / tail * 1e6,
            (cpu_ended - cpu_started) / deltas * 1e6, (cpu_ended - cpu_tail_started) / tail * 1e6)


def client_turn(deltas: int) -> tuple[float, float]:
    """µs per delta applied by the client's mirror, over the whole turn and its last ``TAIL``."""
    mirror = Mirror("bench")
    mirror.install_snapshot(CLIENT_URI, _session(), 0)
    opening = [{"type": "session/turnStarted", "turnId": "t", "userMessage": {"text": "go"}},
               {"type": "session/responsePart", "turnId": "t", "part": {"kind": "markdown", "id": "m", "content": ""}}]
    for seq, action in enumerate(opening, start=1):
        mirror.apply_envelope({"channel": CLIENT_URI, "action": action, "serverSeq": seq}, 1)
    tail_from = max(0, deltas - TAIL)
    started = tail_started = time.perf_counter()
    for index in range(deltas):
        if index == tail_from:
            tail_started = time.perf_counter()
        mirror.apply_envelope({"channel": CLIENT_URI, "action": _client_delta(), "serverSeq": index + 3}, 1)
    text = mirror.state(CLIENT_URI)["activeTurn"]["responseParts"][0]["content"]
    ended = time.perf_counter()
    if len(text) != deltas * len(TOKEN):
        raise RuntimeError("the mirrored text is not whole")
    return (ended - started) / deltas * 1e6, (ended - tail_started) / (deltas - tail_from) * 1e6


def pure_reducer(deltas_before: int, timed: int = 2_000) -> float:
    """µs per delta applied by the pure reducer to a part holding ``deltas_before`` deltas' text."""
    state = reduce("chat", new_chat_state(URI, now=1), _OPENING[0], 1)
    state = reduce("chat", state, {**_OPENING[1], "part": {"kind": "markdown", "id": "m", "content": TOKEN * deltas_before}}, 1)
    started = time.perf_counter()
    for _ in range(timed):
        state = reduce("chat", state, _delta(), 1)
    return (time.perf_counter() - started) / timed * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", type=int, default=10_000)
    parser.add_argument("--long", type=int, default=150_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commit-every-tick", action="store_true",
                        help="commit at the end of every tick (Store.flush) instead of as connections wait for commits")
    args = parser.parse_args()
    note = machine_note()
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for length in (args.short, args.long):
            whole, tail, cpu_whole, cpu_tail = asyncio.run(host_turn(length, args.commit_every_tick))
            runs.setdefault(f"host whole {length}", []).append(whole)
            runs.setdefault(f"host tail {length}", []).append(tail)
            runs.setdefault(f"host cpu whole {length}", []).append(cpu_whole)
            runs.setdefault(f"host cpu tail {length}", []).append(cpu_tail)
            whole, tail = client_turn(length)
            runs.setdefault(f"client whole {length}", []).append(whole)
            runs.setdefault(f"client tail {length}", []).append(tail)
            runs.setdefault(f"pure {length}", []).append(pure_reducer(length))
    m = {key: median(values) for key, values in runs.items()}
    short, long = args.short, args.long
    commits = "a commit at the end of every tick" if args.commit_every_tick else "commits as connections wait for them"
    print(f"# {note}; median of {args.repeat}; {commits}")
    print(f"# command: {command_line()}")
    print(f"| µs per delta | {short:,}-delta turn | {long:,}-delta turn | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for label, key in (("host path (store, journal, subscriber), whole turn", "host whole"),
                       (f"host path, last {TAIL:,} deltas", "host tail"),
                       ("host path, event loop CPU, whole turn", "host cpu whole"),
                       (f"host path, event loop CPU, last {TAIL:,} deltas", "host cpu tail"),
                       ("client mirror, whole turn", "client whole"),
                       (f"client mirror, last {TAIL:,} deltas", "client tail"),
                       ("pure reducer one delta at a time (before), at that length", "pure")):
        a, b = m[f"{key} {short}"], m[f"{key} {long}"]
        print(f"| {label} | {a:.2f} | {b:.2f} | {b / a:.2f} |", flush=True)
    print(f"# load average after the run: {machine_note()}")


if __name__ == "__main__":
    main()
