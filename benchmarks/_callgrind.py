"""Counting a benchmark child's instructions with valgrind's callgrind, the way every benchmark here does.

The child is the benchmark's own script started again as ``python SCRIPT --child ARGS...`` under
``valgrind --tool=callgrind --instr-atstart=no`` (no profile file written): nothing is counted
until the child turns the instrumentation on itself (``instrument(True)``, once its start-up and
an untimed warm-up are done) and off again. ``count`` returns the total callgrind reports (its
``Collected :`` line), user-space instructions of all the child's threads. A benchmark runs two
lengths of the same work and divides the difference of the totals by the difference of the
lengths, so that what happens once (start-up, the instrumentation's own calls) cancels out.

``require_valgrind`` stops a benchmark at once, saying what to install, where valgrind is missing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

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
