"""A long turn's cost per streamed token, which should not grow with the turn's length.

    .venv/bin/python benchmarks/long_turn.py [--short 10000] [--long 150000] [--repeat 3]

Host path: the store with the SQLite journal on disk and one subscriber, each ``chat/delta``
(4 characters) first checked against the chat's active turn as ``TurnContext.emit`` does, and
the journal flushed every 8 deltas as transports do before frames leave (in an event loop, as in
``agent-host serve``); after the last delta the
state is read once (as a late subscriber would). A turn of ``--short`` and one of ``--long``
deltas: µs per delta over the whole turn and over its last 10,000 deltas, and the ratio long /
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


async def host_turn(deltas: int) -> tuple[float, float]:
    """µs per delta over the whole turn and over its last ``TAIL`` deltas."""
    with tempfile.TemporaryDirectory() as data:
        store = Store({"agents": []}, clock=lambda: 1, journal=Journal(Path(data) / "journal.sqlite3"))
        store.recover()
        store.create(URI, "chat", new_chat_state(URI, now=1))
        store.subscribe(URI, _Socket())
        for action in _OPENING:
            store.dispatch(URI, action)
        tail_from = max(0, deltas - TAIL)
        started = tail_started = time.perf_counter()
        for index in range(deltas):
            if index == tail_from:
                tail_started = time.perf_counter()
            if store.active_turn_id(URI) != "t":
                raise RuntimeError("the turn ended")
            store.dispatch(URI, _delta())
            if index % 8 == 7:
                store.flush()
                await asyncio.sleep(0)
        store.flush()
        text = store.state(URI)["activeTurn"]["responseParts"][0]["content"]
        ended = time.perf_counter()
        if len(text) != deltas * len(TOKEN):
            raise RuntimeError("the streamed text is not whole")
        store.close()
    return (ended - started) / deltas * 1e6, (ended - tail_started) / (deltas - tail_from) * 1e6


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
    args = parser.parse_args()
    runs: dict[str, list[float]] = {}
    for _ in range(args.repeat):
        for length in (args.short, args.long):
            whole, tail = asyncio.run(host_turn(length))
            runs.setdefault(f"host whole {length}", []).append(whole)
            runs.setdefault(f"host tail {length}", []).append(tail)
            whole, tail = client_turn(length)
            runs.setdefault(f"client whole {length}", []).append(whole)
            runs.setdefault(f"client tail {length}", []).append(tail)
            runs.setdefault(f"pure {length}", []).append(pure_reducer(length))
    m = {key: median(values) for key, values in runs.items()}
    short, long = args.short, args.long
    print(f"# {machine_note()}; median of {args.repeat}")
    print(f"# command: {command_line()}")
    print(f"| µs per delta | {short:,}-delta turn | {long:,}-delta turn | ratio |")
    print("| --- | ---: | ---: | ---: |")
    for label, key in (("host path (store, journal, subscriber), whole turn", "host whole"),
                       (f"host path, last {TAIL:,} deltas", "host tail"),
                       ("client mirror, whole turn", "client whole"),
                       (f"client mirror, last {TAIL:,} deltas", "client tail"),
                       ("pure reducer one delta at a time (before), at that length", "pure")):
        a, b = m[f"{key} {short}"], m[f"{key} {long}"]
        print(f"| {label} | {a:.2f} | {b:.2f} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
