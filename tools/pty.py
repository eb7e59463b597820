"""Processes on a pseudo-terminal: the one way this project runs a command whose output a person
may watch (the ``shell`` tool's commands and the terminals clients create).

Contract:

* ``PtyProcess.spawn(argv, cwd=..., env=..., interactive=...)`` starts ``argv`` in a new session
  (it leads its own process group) with stdout and stderr on the slave side of a fresh pty of
  ``cols`` × ``rows``. ``interactive=True`` also makes the pty its stdin and its controlling
  terminal (job control, Ctrl-C as ``\\x03``); otherwise stdin is ``/dev/null``, so a command that
  reads its input gets end-of-file instead of waiting for a person.
* Output is read on the event loop (``add_reader`` on the master side, no thread) and handed, in
  arrival order, to every callable in ``listeners`` (raw bytes). ``output_closed`` is set when no
  process holds the slave side any more.
* ``write`` queues input for the pty (never blocks); ``resize`` sets the window size
  (``TIOCSWINSZ``, which also signals ``SIGWINCH`` to the foreground group).
* ``wait()`` returns the exit status as ``subprocess`` reports it (negative = killed by that
  signal) once the process itself exited, even if a background child still holds the pty.
* ``drain()`` reads at once what the pty holds, for the listeners (the output a command wrote
  just before it exited, while a background job keeps the pty open).
* The command and everything it starts form its *family* (``tools.processes``): ``family`` is
  the token in their environment, ``members()`` the live ones, ``background()`` those other than
  the command itself. ``terminate(grace)`` ends the whole family, daemonised jobs included
  (SIGHUP + SIGTERM, SIGKILL after ``grace`` seconds); ``close()`` stops reading and releases
  the pty (nothing is signalled).

Why hand-written: ``ptyprocess`` (pexpect's) forks the interpreter itself, which is unsafe in a
process that runs threads (uvicorn, SQLite, MCP transports); here ``subprocess`` does the fork and
exec in C (through ``child_processes``: the command dies with the host's process, SIGKILL
included), and a three-line shim (``_TAKE_TTY``) makes the pty the controlling terminal of an
interactive child before it execs the shell.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import struct
import subprocess
import sys
import termios
from collections.abc import Callable, Mapping
from pathlib import Path

import child_processes

from . import processes

__all__ = ["PtyProcess", "exit_code_of"]

# Runs in the child between fork and exec of the shell: the pty (fd 0) becomes the controlling
# terminal of the new session, so the shell gets job control and Ctrl-C reaches its foreground job.
# The shell starts with every signal at its default and none blocked, as a terminal window's does:
# a disposition the host inherited (a host started with ``nohup`` ignores SIGHUP; this Python
# ignores SIGPIPE) would otherwise pass through exec, and a shell that ignores SIGHUP outlives
# its terminal until SIGKILL.
_TAKE_TTY = ("import os,sys,fcntl,termios,signal;fcntl.ioctl(0,termios.TIOCSCTTY,0);"
             "[signal.signal(s,signal.SIG_DFL) for s in (signal.SIGHUP,signal.SIGINT,signal.SIGQUIT,signal.SIGTERM,"
             "signal.SIGPIPE,signal.SIGTSTP,signal.SIGTTIN,signal.SIGTTOU,signal.SIGCHLD)];"
             "signal.pthread_sigmask(signal.SIG_SETMASK,[]);os.execvp(sys.argv[1],sys.argv[1:])")


def exit_code_of(returncode: int | None) -> int | None:
    """A shell-style exit code: the status, or 128 + signal for a process killed by a signal."""
    if returncode is None:
        return None
    return returncode if returncode >= 0 else 128 - returncode


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", max(1, rows), max(1, cols), 0, 0))


class PtyProcess:
    """One child process on its own pty; see the module contract."""

    def __init__(self, process: subprocess.Popen, master: int, family: str) -> None:
        self.process = process
        self.pid = process.pid
        self.family = family
        """The token every process this command starts carries (``tools.processes``)."""
        self.listeners: list[Callable[[bytes], None]] = []
        self.output_closed = asyncio.Event()
        self._master = master
        self._loop = asyncio.get_running_loop()
        self._pending_input = bytearray()
        self._reading = True
        self._closed = False
        self._exit: asyncio.Future[int] | None = None
        self._loop.add_reader(master, self._readable)

    @classmethod
    async def spawn(
        cls,
        argv: list[str],
        *,
        cwd: Path | str,
        env: Mapping[str, str],
        cols: int = 80,
        rows: int = 24,
        interactive: bool = False,
    ) -> PtyProcess:
        master, slave = os.openpty()
        try:
            _set_size(master, cols, rows)
            os.set_blocking(master, False)
            os.set_inheritable(master, False)
            if interactive:
                argv = [sys.executable, "-I", "-S", "-c", _TAKE_TTY, *argv]
                stdin: int = slave
            else:
                stdin = subprocess.DEVNULL
            family = processes.new_family()
            process = child_processes.popen(
                argv, cwd=cwd, env={**env, processes.FAMILY_VARIABLE: family}, stdin=stdin, stdout=slave, stderr=slave,
                start_new_session=True, close_fds=True,
            )
            processes.register_leader(process.pid)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return cls(process, master, family)

    # -- output --------------------------------------------------------------------------------

    def _readable(self) -> None:
        self._read_once()

    def _read_once(self) -> bool:
        """One read from the pty, handed to the listeners; False when nothing was there to read."""
        try:
            chunk = os.read(self._master, 65536)
        except BlockingIOError:
            return False
        except OSError:  # EIO: every holder of the slave side is gone
            chunk = b""
        if not chunk:
            self._stop_reading()
            self.output_closed.set()
            return False
        for listener in tuple(self.listeners):
            listener(chunk)
        return True

    def drain(self, limit: int = 64) -> None:
        """Read now what the pty holds (what the command wrote before it exited), at most
        ``limit`` reads of 64 KiB, handing it to the listeners as usual."""
        for _ in range(limit):
            if not self._reading or not self._read_once():
                return

    def _stop_reading(self) -> None:
        if self._reading:
            self._reading = False
            self._loop.remove_reader(self._master)

    # -- input and size ------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Queue ``data`` for the pty; whatever the kernel does not take now is sent when it can."""
        if self._closed or not data:
            return
        flushing = bool(self._pending_input)
        self._pending_input += data
        if not flushing:
            self._flush_input()

    def _flush_input(self) -> None:
        try:
            written = os.write(self._master, self._pending_input)
        except BlockingIOError:
            written = 0
        except OSError:
            self._pending_input.clear()
            self._loop.remove_writer(self._master)
            return
        del self._pending_input[:written]
        if self._pending_input:
            self._loop.add_writer(self._master, self._flush_input)
        else:
            self._loop.remove_writer(self._master)

    def resize(self, cols: int, rows: int) -> None:
        if not self._closed:
            with contextlib.suppress(OSError):
                _set_size(self._master, cols, rows)

    # -- exit ----------------------------------------------------------------------------------

    @property
    def returncode(self) -> int | None:
        if self._exit is not None and self._exit.done():
            return self._exit.result()
        return self._poll()

    def _poll(self) -> int | None:
        returncode = self.process.poll()
        if returncode is not None:
            processes.unregister_leader(self.pid)
        return returncode

    async def wait(self) -> int:
        """The exit status once the process itself has exited (a pidfd on Linux, no thread)."""
        return await asyncio.shield(self._exited())

    def _exited(self) -> asyncio.Future[int]:
        if self._exit is None:
            self._exit = self._loop.create_future()
            self._loop.create_task(self._watch_exit())
        return self._exit

    async def _watch_exit(self) -> None:
        assert self._exit is not None
        try:
            pidfd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            pidfd = None
        if pidfd is not None:
            exited: asyncio.Future[None] = self._loop.create_future()

            def mark_exited() -> None:
                if not exited.done():
                    exited.set_result(None)

            self._loop.add_reader(pidfd, mark_exited)
            try:
                await exited
            finally:
                self._loop.remove_reader(pidfd)
                os.close(pidfd)
        while self._poll() is None:
            await asyncio.sleep(0.02)
        if not self._exit.done():
            self._exit.set_result(self.process.returncode)

    # -- the family ------------------------------------------------------------------------------

    def members(self) -> set[int]:
        """The live processes of this command's family, itself included while it runs."""
        return processes.members(self.family, self._unreaped())

    def background(self) -> set[int]:
        """The family's live processes other than the command itself: its background jobs."""
        return self.members() - {self.pid}

    def _unreaped(self) -> int | None:
        return self.pid if self.process.returncode is None else None

    async def terminate(self, grace: float = 2.0) -> int:
        """End the whole family (``tools.processes.end``: SIGHUP + SIGTERM, SIGKILL after
        ``grace`` seconds) and return the command's exit status."""
        self._exited()  # its watcher reaps the command as soon as it exits
        await processes.end(self.family, self._unreaped(), grace)
        return await self.wait()

    def close(self) -> None:
        """Stop reading and release the pty (the process is not signalled)."""
        if self._closed:
            return
        self._closed = True
        self._stop_reading()
        self._loop.remove_writer(self._master)
        os.close(self._master)
        self.output_closed.set()
