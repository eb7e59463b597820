"""Counting a benchmark child's instructions with valgrind's callgrind, the way every benchmark here does.

The child is the benchmark's own script started again as ``python SCRIPT --child ARGS...`` under
``valgrind --tool=callgrind --instr-atstart=no`` (no profile file written): nothing is counted
until the child turns the instrumentation on itself (``instrument(True)``, once its start-up and
an untimed warm-up are done) and off again. ``count`` returns the total callgrind reports (its
``Collected :`` line), user-space instructions of all the child's threads. A benchmark runs two
lengths of the same work and divides the difference of the totals by the difference of the
lengths, so that what happens once (start-up, the instrumentation's own calls) cancels out.

``require_valgrind`` stops a benchmark at once, saying what to install, where valgrind is missing.
``host_against_relay`` prints each side's instructions per unit (the difference of two lengths'
counts) and, with both sides, their ratio: the shape of every host-against-relay benchmark here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable

from benchmarks._runs import REPO


def require_valgrind() -> None:
    """Exit with what to install unless ``valgrind`` and ``callgrind_control`` are on the path."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")


def control(*command: str) -> None:
    """``callgrind_control COMMAND... <this process>`` (this process runs under callgrind)."""
    subprocess.run(["callgrind_control", *command, str(os.getpid())], stdout=subprocess.DEVNULL, check=True)


def instrument(on: bool) -> None:
    """Callgrind's instrumentation of this process on or off."""
    control("-i", "on" if on else "off")


def count(script: str, *args: object, what: str) -> int:
    """Run ``python SCRIPT --child ARGS...`` under callgrind; the instructions it counted. ``what``
    names the run in the error that stops the benchmark if the child fails or nothing was counted."""
    result = subprocess.run(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=/dev/null",
         sys.executable, script, "--child", *map(str, args)],
        capture_output=True, text=True, cwd=REPO,
    )
    found = re.search(r"Collected : ([\d,]+)", result.stderr)
    if result.returncode != 0 or found is None:
        raise SystemExit(f"{what} failed under callgrind (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return int(found.group(1).replace(",", ""))


def host_against_relay(sides: tuple[str, ...], counted: Callable[[str, int], int], short: int, long: int,
                       labels: dict[str, str], width: int) -> dict[str, float]:
    """For each of ``sides`` (``"relay"``, ``"host"``), ``counted(side, length)`` at ``short`` and
    ``long``; print the instructions per unit with ``labels[side]`` padded to ``width``, then the
    ratio host / relay when both ran. Returns the figures per side."""
    figures: dict[str, float] = {}
    for side in sides:
        counts = [counted(side, n) for n in (short, long)]
        figures[side] = (counts[1] - counts[0]) / (long - short)
        print(f"{labels[side]:<{width}}{figures[side]:>12,.0f}   (totals {counts[0]:,} / {counts[1]:,})", flush=True)
    if len(figures) == 2:
        print(f"{'ratio host / relay':<{width}}{figures['host'] / figures['relay']:>12.2f}")
    return figures
