"""What every benchmark here shares: child processes that talk in lines, medians, a load note.

Each benchmark measures the host and a baseline in the same run, alternating them, and reports
the median of ``--repeat`` runs of each and their ratio: the machines these run on are shared, so
absolute figures move a lot between runs and only same-run ratios are comparable.

Child processes are this repository's benchmark scripts started again with ``--child NAME ARGS``;
they announce progress by printing one word per line (``ready``, ``done``...), which
``ChildProcess.expect`` waits for without blocking the event loop.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


class ChildProcess:
    """``python SCRIPT --child ARGS...`` with line-based progress on its stdout."""

    cpus: set[int] | None = None
    """The CPUs children started from now on run on (``pin_measured_process``); None: any."""

    def __init__(self, script: str, *args: object, stdin: bool = False) -> None:
        self.process = subprocess.Popen(
            [sys.executable, script, "--child", *map(str, args)],
            stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        if self.cpus is not None:
            os.sched_setaffinity(self.process.pid, self.cpus)

    async def expect(self, wanted: str, timeout: float = 300) -> str:
        """Wait for the next line, which must start with ``wanted``; return the rest of it."""
        assert self.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), timeout)
        if not line.startswith(wanted):
            raise RuntimeError(f"child process said {line!r}, expected {wanted!r}")
        return line[len(wanted):].strip()

    def send(self, line: str) -> None:
        """Write ``line`` to the child's stdin (started with ``stdin=True``)."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    async def wait(self) -> None:
        await asyncio.to_thread(self.process.wait, 60)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def pin_measured_process() -> str:
    """Run this process (what is measured, and its baseline) on the first CPU, and the child
    processes started from now on (load generators, clients) on the others, so that neither waits
    for the other's time slice on a shared core. Returns a note saying what was done."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cpus) < 2:
        return "not pinned (one CPU)"
    os.sched_setaffinity(0, {cpus[0]})
    ChildProcess.cpus = set(cpus[1:])
    return f"this process on CPU {cpus[0]}, the other processes on CPU {','.join(map(str, cpus[1:]))}"


def split(total: int, parts: int) -> list[int]:
    """``total`` items spread over at most ``parts`` non-empty groups."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * fraction))]


def machine_note() -> str:
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def command_line() -> str:
    """The command that ran this benchmark, as the README writes it (to print beside its figures)."""
    script = Path(sys.argv[0]).resolve()
    shown = script.relative_to(REPO) if script.is_relative_to(REPO) else script
    return " ".join([".venv/bin/python", str(shown), *sys.argv[1:]])
