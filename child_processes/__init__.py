"""Starting the server's child processes so that none outlives the server's process, even under SIGKILL.

Every process the server starts (MCP servers, hooks, the ``shell`` tool's commands, terminals,
ripgrep, git, the embedded NATS server) is started through this module, and only through it
(``tests/test_architecture.py`` says so). A process that ends cleanly ends its children itself
(sessions closing, ``BackgroundProcesses.stop``, MCP connections leaving their context); this
module covers the process that cannot: killed with SIGKILL (a cluster's failover, the OOM
killer, a crash). It sits beside ``tools``, ``plugins`` and ``host`` (all three use it) and imports
nothing from the project.

Contract, on Linux:

* ``popen``, ``run``, ``create_subprocess_exec`` (asyncio) and ``open_process`` (anyio) take the
  arguments of the call they are named after and start the same command, with the same pid, exit
  status, pipes and session, through a parent-death signal: the child gets ``death_signal``
  (SIGKILL unless told; ``None``: none) when the thread that started it ends, which for the
  server's children is the process ending. ``setpriv --pdeathsig`` (util-linux) sets it and
  execs the command; where ``setpriv`` is missing, a short ``python -I -S`` step does the same
  ``prctl(PR_SET_PDEATHSIG)`` and also checks that its parent is still the one that started it.
  Start a long-lived child only from a thread that lives as long as the server (its event
  loop's): a child started from a thread that ends gets the signal then. A blocking ``run``
  may be called from any thread (the thread waits for the child).
* A command that cannot be started raises as the plain call would: ``FileNotFoundError`` for a
  command not found (on the ``PATH`` of ``env``, or relative to ``cwd``), ``PermissionError``
  for one that is not executable, and the call's own error for a missing ``cwd``.
* A signal reaches only the child itself, not what it started: a shell's pipeline, a job it
  sent to the background, a ``nohup``/``setsid`` daemon live on. For those, a process calls
  ``sweep_on_death(entry)`` with the start of an environment entry its children's families
  carry (``tools.processes`` registers ``AGENT_HOST_FAMILY=<its issuer>.`` with its first
  token). The first child started through this module once an entry is registered (or the
  registration, once a child was started) also starts the process's *guardian*: a small Python
  process in a session of its own that holds one end of a pipe (the lifeline) and learns the
  entries over it. Once this process has exited, however it ended (the lifeline closed and the guardian
  re-parented: never while the process lives), the guardian ends every process of this user
  whose environment carries one of the entries, and their descendants: SIGTERM and SIGCONT,
  SIGKILL after ``GRACE`` seconds, in rounds until none is left (after a clean stop, that is
  what escaped its family's end). One guardian serves every host in a process; a process forked
  without exec gets its own at its first child.
* ``carrying(entries)`` (``/proc``): the live processes whose environment holds an entry starting
  with one of ``entries``, and their descendants: what the guardian ends (and what
  ``tools.processes.left_by`` finds of a host killed before its guardian could act).

Elsewhere (no ``prctl``, no ``/proc``): the calls start the command as given, with no
parent-death signal and no guardian; after a SIGKILL the children run on until the next host on
the same data directory ends what carries the killed host's tokens (``host.runtime.processes``,
Linux too), or for good where there is no ``/proc`` to find them by.

Limits: a setuid program (and ``bwrap`` when installed setuid) drops the parent-death signal at
exec; ``bwrap --die-with-parent`` sets its own (``tools.os_sandbox``). A process that clears its
environment and is not a descendant of one that carries an entry is not found by the guardian.
Between the fork and ``setpriv``'s ``prctl`` there is a window of microseconds in which the
server's death goes unnoticed by the child (the guardian still finds it if it carries an entry).
Killing the guardian together with the server (the whole cgroup, a signal to both) leaves only
the parent-death signals.
"""

from __future__ import annotations

import asyncio
import errno
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from child_processes._guardian import carries, carrying

__all__ = ["GRACE", "carries", "carrying", "create_subprocess_exec", "open_process", "popen", "run", "sweep_on_death"]

GRACE = 1.0
"""Seconds the guardian gives what a dead process left running between SIGTERM and SIGKILL."""

_LINUX = sys.platform.startswith("linux")

# Runs between the fork and the command when setpriv is missing: the parent-death signal, then a
# check that the parent did not die before it was set (the child would have been re-parented).
_DIE_WITH_PARENT = ("import ctypes,os,sys;ctypes.CDLL(None).prctl(1,int(sys.argv[2]),0,0,0);"
                    "os.getppid()==int(sys.argv[1]) or os._exit(137);os.execvp(sys.argv[3],sys.argv[3:])")
_GUARDIAN = str(Path(__file__).with_name("_guardian.py"))
"""Run as a script (``python -I -S``): the guardian imports nothing but the standard library."""

_lock = threading.Lock()
_entries: list[str] = []
_guardian: subprocess.Popen[bytes] | None = None
_guardian_of = 0
"""The pid of the process whose guardian ``_guardian`` is (a forked child needs its own)."""
_lifeline = -1
_spawned_in = 0
"""The pid of the process that last started a child here (the guardian waits for an entry)."""
_setpriv: str | None | bool = False
"""The ``setpriv`` that can set a parent-death signal: its path, None when there is none, False
until looked for."""


# -- the seam ------------------------------------------------------------------------------------


def popen(argv: Sequence[str], *, death_signal: signal.Signals | None = signal.SIGKILL, **options: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen(argv, **options)`` through a parent-death signal (module contract)."""
    return subprocess.Popen(_prepared(argv, options, death_signal), **options)


def run(argv: Sequence[str], *, death_signal: signal.Signals | None = signal.SIGKILL,
        **options: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(argv, **options)`` through a parent-death signal (module contract)."""
    return subprocess.run(_prepared(argv, options, death_signal), **options)


async def create_subprocess_exec(*argv: str, death_signal: signal.Signals | None = signal.SIGKILL,
                                 **options: Any) -> asyncio.subprocess.Process:
    """``asyncio.create_subprocess_exec(*argv, **options)`` through a parent-death signal."""
    return await asyncio.create_subprocess_exec(*_prepared(argv, options, death_signal), **options)


async def open_process(argv: Sequence[str], *, death_signal: signal.Signals | None = signal.SIGKILL,
                       **options: Any) -> anyio.abc.Process:
    """``anyio.open_process(argv, **options)`` through a parent-death signal."""
    return await anyio.open_process(_prepared(argv, options, death_signal), **options)


def sweep_on_death(entry: str) -> None:
    """When this process dies, the guardian ends every process whose environment holds an entry
    starting with ``entry`` (``NAME=prefix``), and their descendants (module contract)."""
    if "\n" in entry or "=" not in entry:
        raise ValueError(f"an environment entry's start is NAME=VALUE on one line, not {entry!r}")
    with _lock:
        if entry in _entries:
            return
        _entries.append(entry)
        if _guardian is not None and _guardian_of == os.getpid():
            _tell(entry)
    if _spawned_in == os.getpid():
        _ensure_guardian()  # children were started before there was anything to sweep


# -- the parent-death signal ---------------------------------------------------------------------


def _prepared(argv: Sequence[str], options: Mapping[str, Any], death_signal: signal.Signals | None) -> list[str]:
    argv = [os.fspath(part) for part in argv]
    if not argv:
        raise ValueError("no command to start: the argument list is empty")
    if not _LINUX:
        return argv
    global _spawned_in
    _spawned_in = os.getpid()
    if _entries:
        _ensure_guardian()
    if death_signal is None:
        return argv
    _check_startable(argv[0], options.get("env"), options.get("cwd"))
    setpriv = _find_setpriv()
    if setpriv is not None:
        return [setpriv, "--pdeathsig", death_signal.name.removeprefix("SIG"), "--", *argv]
    return [sys.executable, "-I", "-S", "-c", _DIE_WITH_PARENT, str(os.getpid()), str(int(death_signal)), *argv]


def _find_setpriv() -> str | None:
    global _setpriv
    if _setpriv is False:
        found = shutil.which("setpriv")
        if found is not None:
            try:  # util-linux before 2.33 has setpriv without --pdeathsig
                probe = subprocess.run([found, "--pdeathsig", "KILL", "--", "true"], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)
                found = found if probe.returncode == 0 else None
            except (OSError, subprocess.TimeoutExpired):
                found = None
        _setpriv = found
    return _setpriv if isinstance(_setpriv, str) else None


def _check_startable(command: str, env: Mapping[str, str] | None, cwd: Any) -> None:
    """Raise what ``exec`` of ``command`` would (not found, not executable): with a wrapper in
    front, the wrapper's exec would fail instead, inside the child, as an exit status."""
    if cwd is not None and not os.path.isdir(cwd):
        return  # the call itself raises for the working directory, as it would without us
    if "/" in command:
        candidates = [os.path.join(os.fspath(cwd), command) if cwd is not None else command]
    else:
        candidates = [os.path.join(folder, command) for folder in os.get_exec_path(dict(env) if env is not None else None)]
    present = [candidate for candidate in candidates if os.path.isfile(candidate)]
    if any(os.access(candidate, os.X_OK) for candidate in present):
        return
    if present:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), command)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), command)


# -- the guardian --------------------------------------------------------------------------------


def _ensure_guardian() -> None:
    global _guardian, _guardian_of, _lifeline
    if _guardian_of == os.getpid() or not os.path.isdir("/proc/self"):
        return
    with _lock:
        if _guardian_of == os.getpid():
            return
        if _lifeline >= 0 and _guardian_of:  # forked: the parent's lifeline is not ours to hold
            os.close(_lifeline)
        read, write = os.pipe()  # neither end is inherited by other children (O_CLOEXEC)
        try:
            _guardian = subprocess.Popen(
                [sys.executable, "-I", "-S", _GUARDIAN, str(os.getpid()), str(GRACE)],
                stdin=read, stdout=subprocess.DEVNULL, start_new_session=True, close_fds=True)
        except OSError:
            os.close(write)
            _guardian_of, _lifeline = os.getpid(), -1  # not again; the parent-death signals remain
            return
        finally:
            os.close(read)
        os.set_blocking(write, False)
        _guardian_of, _lifeline = os.getpid(), write
        for entry in _entries:
            _tell(entry)


def _tell(entry: str) -> None:
    if _lifeline < 0:
        return
    try:
        os.write(_lifeline, entry.encode() + b"\n")  # a few bytes into an empty pipe: never short
    except OSError:
        pass  # the guardian is gone: the parent-death signals remain
