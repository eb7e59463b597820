"""Instructions of one settle of the journal's tail by a worker (``Journal.settle_rows``), alone.

    .venv/bin/python benchmarks/journal_settle.py [--rows 511] [--settles 1,5] [--source DIR]

What the embedded log's worker thread does when a text run's next head row makes a SQLite commit
due behind a tail of a run's streamed pieces (``RUN_LIMIT`` pieces a run: 511 of them in the tail,
one a model-paced commit): ``rows_to_settle``, ``settle_rows`` and ``rows_settled``, counted with
valgrind's callgrind (``benchmarks/_callgrind.py``) and nothing else. The child opens a journal in
a temporary directory, and for each settle streams a new run: its head row committed to SQLite
(which settles the tail before it), then ``--rows`` pieces of some ten characters, each committed
to the tail on its own, as at a model's pace; only the worker's three calls are counted. Run for
the two ``--settles`` counts, the difference of the totals divided by the difference of the
counts is one settle in a journal that has settled before (what a long-lived host pays), less the
same difference for runs that count nothing between the instrumentation's on and off (the
``callgrind_control`` subprocess it runs is partly counted); the first count's total, less its
empty run's, divided by it, is printed too (all settles after the journal's untimed first one). ``--source DIR``: import ``host`` from another checkout (a baseline, e.g. ``main``'s),
whose ``settle_rows`` is then counted instead. Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._callgrind import count, instrument, require_valgrind
from benchmarks._runs import command_line, machine_note


def child(source: str, settles: int, rows: int, work: bool) -> None:
    if source != "-":
        sys.path.insert(0, source)
        for name in [name for name in sys.modules if name == "host" or name.startswith(("host.", "ahp"))]:
            del sys.modules[name]  # (none imported yet; a guard should that change)
    from host.state.journal import Journal

    with tempfile.TemporaryDirectory() as directory:
        journal = Journal(Path(directory) / "journal.sqlite3")
        seq = 0
        for run in range(settles + 1):  # the first run warms up: its settle is not counted
            delta = {"type": "chat/delta", "turnId": "t", "partId": f"m{run}"}
            for piece in range(rows + 1):  # the first piece is the run's head, a SQLite row
                seq += 1
                journal.append_action("bench:/chat", seq, 0, "{}", {**delta, "content": f" token{piece:04d}"})
                journal.flush()
            assert journal.unsettled == rows
            if run:
                instrument(True)
            if work or not run:
                generation, values = journal.rows_to_settle()
                journal.settle_rows(values)
                journal.rows_settled(generation, len(values))
            if run:
                instrument(False)
            journal.flush(settle=True)  # (the next run's head does it anyway)
        journal.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=511, help="rows a settle writes (511: a run of RUN_LIMIT pieces)")
    parser.add_argument("--settles", default="1,5", help="the two numbers of settles counted")
    parser.add_argument("--source", default="-", help="import host from this checkout instead")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]), args.child[3] == "1")
        return
    require_valgrind()
    short, long = (int(n) for n in args.settles.split(","))
    source = str(Path(args.source).resolve()) if args.source != "-" else "-"
    print(f"instructions of a worker's settle of {args.rows} tail rows (callgrind, user space); {machine_note()}")
    print(f"command: {command_line()}")
    totals = [count(__file__, source, n, args.rows, 1, what=f"{n} settles") for n in (short, long)]
    empty = [count(__file__, source, n, args.rows, 0, what=f"{n} empty") for n in (short, long)]
    toggle = (empty[1] - empty[0]) / (long - short)
    each = (totals[1] - totals[0]) / (long - short) - toggle
    print(f"a settle, {long} minus {short}             {each:>12,.0f}   ({each / args.rows:,.0f} a row; totals {totals[0]:,} / {totals[1]:,})")
    print(f"the first {short} settle(s), each        {(totals[0] - empty[0]) / short:>12,.0f}")
    print(f"(taken off: the instrumentation's toggle {toggle:>12,.0f}   (totals {empty[0]:,} / {empty[1]:,}))")


if __name__ == "__main__":
    main()
