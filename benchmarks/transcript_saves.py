"""What ``TranscriptStore.save`` costs the thread that calls it (the event loop's, when a turn ends),
or with ``--content`` what ``ContentStore.put`` does (a tool's output, as its call ends).

    .venv/bin/python benchmarks/transcript_saves.py [--turns 4000] [--chars 1500] [--content]

``--turns`` saves of a turn (a question and an answer of ``--chars`` characters) over 300
sessions into a new store, half a millisecond apart (turns end apart), each timed on the calling
thread: the median, p99, p99.9 and the longest, and the saves over 2 ms with their total. A save
that ran SQLite's automatic WAL checkpoint (with its ``fsync``) took 12-33 ms on this machine's
disk every 300 or so turns; the store now checkpoints from a worker thread
(``host/state/wal.py``). With ``--content`` each save is a put of ``--chars`` bytes of distinct
content instead (the content store waited for an ``fsync`` at every put before it took the
journal's ``synchronous=NORMAL``). Wall-clock figures: compare only against a run of the other build
in the same minutes.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from host.state.content import ContentStore
from host.state.transcripts import TranscriptStore
from providers import AssistantMessage, TextPart, UserMessage


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=4000)
    parser.add_argument("--chars", type=int, default=1500)
    parser.add_argument("--content", action="store_true", help="time the content store's puts instead")
    args = parser.parse_args()
    answer = "x" * args.chars
    with tempfile.TemporaryDirectory() as directory:
        store: TranscriptStore | ContentStore
        walls = []
        if args.content:
            store = ContentStore(Path(directory) / "content.sqlite3")
            for index in range(args.turns):
                data = f"{index:08d}".encode() + answer.encode()
                started = time.perf_counter()
                store.put(data, "text/plain; charset=utf-8")
                walls.append((time.perf_counter() - started) * 1000)
                time.sleep(0.0005)
        else:
            store = TranscriptStore(Path(directory) / "transcripts.sqlite3")
            for index in range(args.turns):
                turn = [UserMessage.of(f"q{index}"), AssistantMessage(parts=(TextPart(text=answer),))]
                started = time.perf_counter()
                store.save(f"s{index % 300}", f"t{index}", turn)
                walls.append((time.perf_counter() - started) * 1000)
                time.sleep(0.0005)
        store.close()
    ordered = sorted(walls)
    over = [wall for wall in walls if wall > 2]

    def at(fraction: float) -> float:
        return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]

    print(f"saves {len(ordered)}: median {at(0.5):.3f} ms, p99 {at(0.99):.3f}, p99.9 {at(0.999):.2f}, "
          f"max {ordered[-1]:.2f}; over 2 ms: {len(over)}, {sum(over):.0f} ms in all")


if __name__ == "__main__":
    main()
