"""The guardian: the process that ends what a dead server process left running (Linux, ``/proc``).

Run as a script, ``python -I -S _guardian.py HOST GRACE``, by ``child_processes``, with the lifeline
(a pipe) as its standard input; it imports nothing but the standard library.

Contract: ``main(host, grace)`` reads environment entries' starts (``NAME=prefix``), one a line,
from standard input until end of file, and looks once a second whether its parent is still
``host``. Once ``host`` is gone (its input ended, which happens as ``host`` exits, and the
guardian was re-parented, which follows), it ends ``carrying(entries)``: SIGTERM and SIGCONT,
then, after ``grace`` seconds or as soon as none is left, SIGKILL in rounds (a process forking while it is ended is found by the next round)
until none is left or ``_ROUNDS`` rounds have passed. SIGINT and SIGHUP are ignored: a Ctrl-C
meant for the server must not take its guardian with it.

``carrying(entries)``: the live processes (not zombies, never the caller) whose environment holds
an entry starting with one of ``entries``, and every descendant of those; only this user's
processes can be read.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Collection

__all__ = ["carrying", "main"]

_ROUNDS = 50
_POLL = 0.02
_LOOK_EVERY = 1.0
"""Seconds between looks at the parent when the lifeline stays open (a forked child holds it)."""


def main(host: int, grace: float) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    entries: list[str] = []
    pending = b""
    while True:
        ready, _, _ = select.select([0], [], [], _LOOK_EVERY)
        if ready:
            chunk = os.read(0, 4096)
            if not chunk:
                break  # the host is exiting: its files are closed before its children are re-parented
            *lines, pending = (pending + chunk).split(b"\n")
            entries += [line.decode() for line in lines if line]
        elif os.getppid() != host:
            break  # dead, while something it forked still holds the lifeline
    wait = _POLL
    while os.getppid() == host:  # not gone yet (or a lifeline closed by mistake: then never)
        time.sleep(wait)
        wait = min(wait * 2, _LOOK_EVERY)
    if entries:
        end(entries, grace)


def end(entries: Collection[str], grace: float) -> None:
    found = carrying(entries)
    _signal(found, signal.SIGTERM, signal.SIGCONT)
    deadline = time.monotonic() + grace
    while found and time.monotonic() < deadline:
        time.sleep(_POLL)
        found = carrying(entries)
    for _ in range(_ROUNDS):
        if not found:
            return
        _signal(found, signal.SIGKILL)
        time.sleep(_POLL)
        found = carrying(entries)


def carrying(entries: Collection[str]) -> set[int]:
    needles = [b"\0" + entry.encode() for entry in entries]
    me = os.getpid()
    parents: dict[int, int] = {}
    dead: set[int] = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(name)
        parents[pid] = int(fields[1])
        if fields[0] in (b"Z", b"X"):
            dead.add(pid)
    children: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children.setdefault(parent, []).append(pid)
    found = {pid for pid in parents if pid != me and carries(pid, *needles)}
    stack = list(found)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found - dead - {me}


def carries(pid: int, *needles: bytes) -> bool:
    """Whether ``pid``'s environment holds any of ``needles`` (each ``\\0NAME=value...``)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            environment = b"\0" + handle.read()
    except OSError:
        return False
    return any(needle in environment for needle in needles)


def _signal(pids: set[int], *numbers: int) -> None:
    for number in numbers:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, number)


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
