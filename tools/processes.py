"""Process families: every process one command started, found and ended together, and the
orphans a subreaper adopts, reaped.

A *family* is what one spawned command (a ``shell`` tool call, a terminal's shell) set going: the
command itself (the *leader*, started in a session of its own), its jobs, and whatever those
daemonised with ``nohup``, ``setsid`` or a double fork. Contract:

* ``new_family()`` returns a fresh token; ``PtyProcess.spawn`` puts it in the command's
  environment as ``FAMILY_VARIABLE``, which every descendant inherits unless it clears its
  environment.
* ``members(token, leader)`` (Linux, ``/proc``): the live processes of the family: those whose
  environment carries the token, those in the leader's session or descended from the leader
  (only while the ``leader`` pid is given, i.e. not yet reaped: a reaped pid may be reused), and
  every descendant of those. Zombies and the calling process are never members. Elsewhere (no
  ``/proc``): the empty set; the caller then signals the leader's process group.
* ``end(token, leader, grace)``: SIGHUP, SIGCONT and SIGTERM to every member (an interactive
  shell ignores SIGTERM, not SIGHUP), then SIGKILL rounds after ``grace`` seconds until no member
  is left (a process forking while it is killed is found by the next round; at most
  ``_KILL_ROUNDS``), then ``reap_orphans()``.
* ``become_subreaper()`` / ``stop_being_subreaper()`` (counted: several hosts may run in one
  process): ``prctl(PR_SET_CHILD_SUBREAPER)`` through ctypes on Linux, so a family's orphans
  (the parent of a ``nohup`` job or of a double fork exited) are re-parented to this process
  instead of ``init``: they stay findable as its descendants and are ended with the family.
  Elsewhere it does nothing and returns False; orphans then go to ``init`` and are found by their
  token alone.
* ``end_families(tokens, grace)`` ends several families together, one look through ``/proc`` per
  round for them all.
* ``ISSUER`` starts every token this process issues. ``left_by(issuer)``: the live processes
  (this user's, with their descendants) carrying a token another process issued; ``end_left_by
  (issuer, grace)`` ends them as ``end`` ends a family. A host killed without stopping (``kill
  -9``) has its guardian end its families (``child_processes``: the prefix of every token this
  process issues is registered with ``sweep_on_death`` at the first); what is left when the guardian could not (killed with
  it) the next host on the same data directory ends this way (``host.runtime.processes``).
* ``started(pid)``: when ``pid`` started (boot id and clock ticks since boot), to tell a live
  process from a later one given the same pid.
* ``reap_orphans()`` collects the zombies among this process's children that nobody else will
  wait for, and only those (a ``subprocess``/``asyncio`` child's status belongs to its owner):
  a zombie whose session is neither its own nor this process's (a job of a family: leaders and
  every other spawn of this process lead their own session or share this process's); one seen
  alive as an adopted family member (a child of this process, not a leader, whose token this
  process issued: ``members`` and every ``reap_orphans`` pass look); and, while this process is
  a subreaper, one left unreaped for ``_PATIENCE`` seconds (a daemon that left the session and
  died before it was seen; the host's own spawns are waited for at once, and leaders, registered
  with ``register_leader``, never count). A zombie holds no memory but a process table slot.

Limits: a process that clears its environment *and* leaves the family's session *and* whose
parent exited is not found (nor is one started through another service, e.g. ``systemd-run``).
Reading another user's ``/proc/<pid>/environ`` is not allowed, so only this user's processes
are examined.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import secrets
import signal
import sys
import time
from collections.abc import Callable, Collection
from typing import NamedTuple

import child_processes

__all__ = [
    "FAMILY_VARIABLE", "ISSUER", "become_subreaper", "end", "end_families", "end_left_by", "is_subreaper", "left_by", "members",
    "new_family", "reap_orphans", "register_leader", "started", "stop_being_subreaper", "unregister_leader",
]

FAMILY_VARIABLE = "AGENT_HOST_FAMILY"
"""The environment variable that marks a family's processes."""

_PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 50
_POLL = 0.02
_MAX_POLL = 0.2
_PATIENCE = 30.0
"""Seconds an unattributed zombie child is left to its owner before a subreaper reaps it."""
_ISSUER = secrets.token_hex(6)
"""Starts every token this process issues: another host's families (a host started from a
terminal of another) are not this one's to reap."""
_ISSUED = f"\0{FAMILY_VARIABLE}={_ISSUER}.".encode()
ISSUER = _ISSUER

_swept_on_death = False
"""Whether this process's families are registered with its guardian (at the first token)."""
_leaders: set[int] = set()
_adopted: set[int] = set()
_zombie_since: dict[int, float] = {}
_subreaper_users = 0
_PROC = sys.platform.startswith("linux") and os.path.isdir("/proc/self")


class _Stat(NamedTuple):
    state: str
    ppid: int
    pgrp: int
    sid: int


def new_family() -> str:
    if not _swept_on_death:
        _sweep_on_death()
    return f"{_ISSUER}.{secrets.token_hex(12)}"


def _sweep_on_death() -> None:
    global _swept_on_death
    child_processes.sweep_on_death(f"{FAMILY_VARIABLE}={_ISSUER}.")  # should this process be killed
    _swept_on_death = True


def register_leader(pid: int) -> None:
    """``pid`` is a leader this process waits for itself: never reap it here."""
    _leaders.add(pid)


def unregister_leader(pid: int) -> None:
    _leaders.discard(pid)


# -- subreaper -----------------------------------------------------------------------------------


def become_subreaper() -> bool:
    """Make this process the reaper of its descendants' orphans (Linux); False where unsupported."""
    global _subreaper_users
    if not sys.platform.startswith("linux"):
        return False
    if _subreaper_users == 0 and not _prctl_subreaper(1):
        return False
    _subreaper_users += 1
    return True


def stop_being_subreaper() -> None:
    global _subreaper_users
    if _subreaper_users == 0:
        return
    _subreaper_users -= 1
    if _subreaper_users == 0:
        _prctl_subreaper(0)


def is_subreaper() -> bool:
    return _subreaper_users > 0


def _prctl_subreaper(value: int) -> bool:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# -- finding a family ----------------------------------------------------------------------------


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return _Stat(fields[0].decode(), int(fields[1]), int(fields[2]), int(fields[3]))
    except (OSError, IndexError, ValueError):
        return None


def _table() -> dict[int, _Stat]:
    table: dict[int, _Stat] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                table[int(entry)] = found
    return table


def _descendants(roots: set[int], children: dict[int, list[int]]) -> set[int]:
    found, stack = set(roots), list(roots)
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found


def members(token: str, leader: int | None = None) -> set[int]:
    """The family's live processes (see the module contract); empty where ``/proc`` is missing."""
    return _members([token], leader)


def _members(tokens: Collection[str], leader: int | None) -> set[int]:
    """The live processes of the families of ``tokens`` (one look through ``/proc`` for them all)."""
    table = _table()
    if not table:
        return set()
    me = os.getpid()
    children: dict[int, list[int]] = {}
    for pid, info in table.items():
        children.setdefault(info.ppid, []).append(pid)
    seeds: set[int] = set()
    if leader is not None:
        seeds.update(pid for pid, info in table.items() if pid == leader or info.sid == leader)
    # A subreaper's family never leaves its tree; without one, orphans went to init.
    candidates = _descendants({me}, children) if is_subreaper() else set(table)
    needles = [b"\0" + f"{FAMILY_VARIABLE}={token}".encode() + b"\0" for token in tokens]
    seeds.update(pid for pid in candidates - seeds if pid != me and child_processes.carries(pid, *needles))
    found = {pid for pid in _descendants(seeds, children) if pid != me and table[pid].state not in ("Z", "X")}
    for pid in found:
        if table[pid].ppid == me and pid not in _leaders:
            _adopted.add(pid)  # an orphan this subreaper adopted: its zombie is ours to reap
    return found


# -- ending a family -----------------------------------------------------------------------------


def _signal(pids: set[int], *numbers: int) -> None:
    for number in numbers:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, number)


async def end(token: str, leader: int | None, grace: float) -> None:
    """End every member of the family (see the module contract)."""
    await _end_found(lambda: _remaining(token, leader), leader, grace)


async def _end_found(find: Callable[[], set[int]], leader: int | None, grace: float) -> None:
    """SIGHUP, SIGCONT and SIGTERM to what ``find`` finds (and ``leader``'s group), SIGKILL rounds
    after ``grace`` until it finds nothing."""
    found = find()
    _signal(found, signal.SIGHUP, signal.SIGCONT, signal.SIGTERM)
    _signal_group(_alive(leader), signal.SIGHUP, signal.SIGCONT, signal.SIGTERM)
    deadline, delay = time.monotonic() + grace, _POLL
    while found and time.monotonic() < deadline:
        # Each look reads /proc: soon at first (most end at once), then less often.
        await asyncio.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, _MAX_POLL)
        found = find()
    for _ in range(_KILL_ROUNDS):
        _signal_group(_alive(leader), signal.SIGKILL)
        found = find()
        if not found:
            break
        _signal(found, signal.SIGKILL)
        await asyncio.sleep(_POLL)
    reap_orphans()


async def end_families(tokens: Collection[str], grace: float) -> None:
    """End every member of the families of ``tokens`` together, as ``end`` ends one (one look
    through ``/proc`` per round for them all: a host stopping ends many at once)."""
    tokens = list(tokens)
    if tokens and _PROC:
        await _end_found(lambda: _members(tokens, None), None, grace)


def left_by(issuer: str) -> set[int]:
    """The live processes carrying a token ``issuer`` issued, and their descendants (never this
    process, nor anything while ``issuer`` is this process's own); empty without ``/proc``."""
    if issuer == _ISSUER or not issuer or not _PROC:
        return set()
    return child_processes.carrying([f"{FAMILY_VARIABLE}={issuer}."])


async def end_left_by(issuer: str, grace: float) -> int:
    """End what ``left_by(issuer)`` finds; how many processes there were at first."""
    first = await asyncio.to_thread(left_by, issuer)  # a look through every process: off the loop
    if first:
        await _end_found(lambda: left_by(issuer), None, grace)
    return len(first)


def started(pid: int) -> str | None:
    """``pid``'s start (boot id and start time in clock ticks), or None if it is not running."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            ticks = handle.read().rsplit(b")", 1)[1].split()[19].decode()
        with open("/proc/sys/kernel/random/boot_id", "rb") as handle:
            boot = handle.read().strip().decode()
    except (OSError, IndexError):
        return None
    return f"{boot}/{ticks}"


def _remaining(token: str, leader: int | None) -> set[int]:
    if _PROC:
        return members(token, _alive(leader))
    # No /proc: the leader's process group is all that can be found.
    if leader is not None:
        with contextlib.suppress(OSError):
            os.killpg(leader, 0)
            return {leader}
    return set()


def _alive(leader: int | None) -> int | None:
    """``leader`` while it is not reaped (so its pid cannot have been reused), else None; without
    ``/proc`` there is no telling, and the leader's group is what there is to signal."""
    if leader is None or not _PROC:
        return leader
    return leader if _stat(leader) is not None else None


def _signal_group(leader: int | None, *numbers: int) -> None:
    if leader is None:
        return
    for number in numbers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, number)


# -- reaping -------------------------------------------------------------------------------------


def _children_of(me: int) -> list[int]:
    pids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{me}/task")
    except OSError:
        return pids
    for task in tasks:
        try:
            with open(f"/proc/{me}/task/{task}/children", "rb") as handle:
                pids.extend(int(pid) for pid in handle.read().split())
        except OSError:  # a kernel without CONFIG_PROC_CHILDREN: look through the whole table
            return [pid for pid, info in _table().items() if info.ppid == me]
    return pids


def reap_orphans() -> int:
    """Reap the zombie children nobody else waits for (see the module contract); how many."""
    if not _PROC:
        return 0
    me, now = os.getpid(), time.monotonic()
    my_session = os.getsid(0)
    children = _children_of(me)
    waiting: set[int] = set()
    reaped: set[int] = set()
    for pid in children:
        info = _stat(pid)
        if info is None or pid in _leaders:
            continue
        if info.state != "Z":
            if pid not in _adopted and child_processes.carries(pid, _ISSUED):
                _adopted.add(pid)
            continue
        first_seen = _zombie_since.setdefault(pid, now)
        overdue = is_subreaper() and now - first_seen >= _PATIENCE
        if info.sid not in (pid, my_session) or pid in _adopted or overdue:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
                reaped.add(pid)
        else:
            waiting.add(pid)
    for pid in list(_zombie_since):
        if pid not in waiting:
            del _zombie_since[pid]
    _adopted.intersection_update(set(children) - reaped)
    return len(reaped)
