"""What a long chat holds in the host's memory, watched by a client the whole time or by nobody.

    .venv/bin/python benchmarks/chat_memory.py [--turns 500] [--recent 50] [--chars 2000]

The store with its journal on disk and ``recent_turns`` as ``agent-host serve`` sets it
(``[sessions] recent_turns``), one chat, ``--turns`` turns one after another: a user message of
200 characters, an answer of ``--chars`` characters streamed in deltas of 40, the turn completed.
Either one subscriber stays subscribed from the first turn to the last (a client that keeps the
chat open for days), or nobody subscribes (the chat's older turns then leave its state after each
snapshot, ``host.state.store`` "Older turns"). Printed: the memory the store holds afterwards
(``tracemalloc``, after a full collection, less what it held before the chat was made), the
turns in the chat's state, and its state's JSON size; then the same for the unwatched chat once
its client unsubscribes. Most of what every row holds besides the chat is the store's replay window
(the newest 10,000 envelopes, at most 4 million characters of them), the same in each.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ahp.jsonrpc import encode
from benchmarks._runs import command_line, machine_note
from host.state.embedded_log import at_once
from host.state.journal import Journal
from host.state.sessions import new_chat_state
from host.state.store import Store

URI = "ahp-chat://bench/memory"


class _Socket:
    """A subscriber that takes frames as a connection's buffer does (and drops them)."""

    def send(self, text: str) -> None:
        pass


def _turn(store: Store, index: int, chars: int) -> None:
    turn = f"turn-{index}"
    store.dispatch(URI, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-11-29T00:00:00.000Z",
                         "message": {"text": f"question {index} " + "q" * 186, "origin": {"kind": "user"}}})
    store.dispatch(URI, {"type": "chat/responsePart", "turnId": turn,
                         "part": {"kind": "markdown", "id": f"m{index}", "content": ""}})
    for _ in range(chars // 40):
        store.dispatch(URI, {"type": "chat/delta", "turnId": turn, "partId": f"m{index}", "content": "a" * 39 + " "})
    store.dispatch(URI, {"type": "chat/turnComplete", "turnId": turn})
    store.flush()


def _held_mb(before: int) -> float:
    gc.collect()
    return (tracemalloc.get_traced_memory()[0] - before) / 1e6


def measure(turns: int, recent: int, chars: int, watched: bool) -> list[str]:
    lines = []
    with tempfile.TemporaryDirectory() as data:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        store = Store({"agents": []}, clock=lambda: 1, journal=Journal(Path(data) / "journal.sqlite3"),
                      recent_turns=recent)
        at_once(store.recover())
        store.create(URI, "chat", new_chat_state(URI, now=1))
        socket = _Socket()
        if watched:
            store.subscribe(URI, socket)
        for index in range(turns):
            _turn(store, index, chars)
        at_once(store.snapshot_now())
        state = store.state(URI) or {}
        who = "one client subscribed throughout" if watched else "nobody subscribed"
        lines.append(f"| {turns} turns, {who} | {_held_mb(before):.1f} | {len(state.get('turns') or ())} | "
                     f"{len(encode(state)) / 1e6:.2f} |")
        if watched:
            store.unsubscribe(URI, socket)
            at_once(store.snapshot_now())
            state = store.state(URI) or {}
            lines.append(f"| the same, once the client unsubscribed | {_held_mb(before):.1f} | "
                         f"{len(state.get('turns') or ())} | {len(encode(state)) / 1e6:.2f} |")
        at_once(store.close())
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--recent", type=int, default=50, help="[sessions] recent_turns (the host's default: 50)")
    parser.add_argument("--chars", type=int, default=2_000, help="characters of each answer")
    args = parser.parse_args()
    tracemalloc.start()
    print(f"# {machine_note()}; recent_turns {args.recent}, answers of {args.chars} characters")
    print(f"# command: {command_line()}")
    print("| chat | MB the store holds | turns in its state | its state's JSON, MB |")
    print("| --- | ---: | ---: | ---: |")
    for watched in (True, False):
        for line in measure(args.turns, args.recent, args.chars, watched):
            print(line, flush=True)


if __name__ == "__main__":
    main()
