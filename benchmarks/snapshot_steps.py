"""The steps of the first snapshot after a restart: CPU each one holds the event loop for.

    .venv/bin/python benchmarks/snapshot_steps.py [--sessions 3000] [--big-mb 50]

A journal on disk holds ``--sessions`` small sessions and one of ``--big-mb`` turns of 1 MB, with a
snapshot of them all. A new store recovers it (as a restart does), changes every channel, and takes
a snapshot the way the background snapshot does: ``EmbeddedLog.write_snapshot`` (``host.state.embedded_log``) yields between steps,
where the event loop runs. Nothing else runs between the steps here, so each step's CPU time
(``time.process_time``) is what that step would hold the loop for. The first snapshot after a
restart writes every session again (the store has not seen which turns are unchanged), so all the
old state parts are pruned: the worst case for pruning. Printed per kind of step (writing parts,
switching the manifests, pruning): how many, the median and the largest.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import machine_note, median


def _chat(uri: str) -> dict[str, Any]:
    return {"resource": uri, "title": "t", "status": 1, "modifiedAt": "1970-01-01T00:00:00.001Z", "turns": []}


def _turn(store: Any, channel: str, turn: str, text: str) -> None:
    store.dispatch(channel, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "1970-01-01T00:00:00.002Z",
                             "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(channel, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": text}})
    store.dispatch(channel, {"type": "chat/turnComplete", "turnId": turn, "duration": 5})


def main() -> None:
    from host.runtime.memory import settle
    from host.state.embedded_log import EmbeddedLog, at_once
    from host.state.journal import Journal, encode_plans
    from host.state.store import Store

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3_000)
    parser.add_argument("--big-mb", type=int, default=50)
    args = parser.parse_args()
    print(f"# {args.sessions} small sessions and one of {args.big_mb} MB; {machine_note()}", flush=True)
    unbounded = {"snapshot_every": 10**9, "snapshot_chars": 10**12}  # only the snapshots taken here
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "journal.sqlite3"
        first = Store({"agents": []}, clock=lambda: 7, journal=Journal(path), **unbounded)
        at_once(first.recover())
        channels = [f"ahp-chat://bench/{index}" for index in range(args.sessions)]
        for channel in channels:
            first.create(channel, "chat", _chat(channel))
            _turn(first, channel, "t0", "hello " * 20)
        big = "ahp-chat://bench/big"
        first.create(big, "chat", _chat(big))
        for index in range(args.big_mb):
            _turn(first, big, f"t{index}", str(index % 10) * 1_000_000)
        at_once(first.close())
        del first
        gc.collect()

        store = Store({"agents": []}, clock=lambda: 7, journal=Journal(path), **unbounded)
        started = time.process_time()
        at_once(store.recover())
        print(f"recovery: {time.process_time() - started:.2f} s of CPU", flush=True)
        settle()  # as `agent-host serve` does once started
        for channel in [*channels, big]:
            store.dispatch(channel, {"type": "chat/activityChanged", "activity": "changed"})
        store.flush()
        journal = store._journal
        assert journal is not None
        switched: list[bool] = []
        write_snapshot = journal.write_snapshot

        def noting_the_switch(*args: Any, **kwargs: Any) -> None:
            switched.append(True)
            write_snapshot(*args, **kwargs)

        journal.write_snapshot = noting_the_switch  # type: ignore[method-assign]  # observed for the run
        log = cast(EmbeddedLog, store.log)
        upto, seq, plans, removed = log.begin_snapshot()
        steps = log.write_snapshot(journal, upto, seq, encode_plans(plans), removed)
        kinds: dict[str, list[float]] = {"writing parts": [], "switching manifests": [], "pruning": []}
        while True:
            before = len(switched)
            started = time.process_time()
            try:
                next(steps)
            except StopIteration:
                break
            finally:
                spent = (time.process_time() - started) * 1000
            kind = "switching manifests" if len(switched) > before else "pruning" if switched else "writing parts"
            kinds[kind].append(spent)
        at_once(store.close())
    print(f"{'step':<20} {'count':>6} {'median ms':>10} {'largest ms':>11}")
    for kind, spent in kinds.items():
        print(f"{kind:<20} {len(spent):6d} {median(spent) if spent else 0:10.2f} {max(spent, default=0):11.2f}")


if __name__ == "__main__":
    main()
