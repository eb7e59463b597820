"""``agent-host serve`` as a child process of the caller, for the tests and benchmarks that run real
host processes (``--cluster`` processes, ``--workers``); the command itself does not use it.

``ServeProcess(arguments, token=...)`` names the ``serve`` to run (``--port 0`` is added, the token
goes in the environment, never on a command line). ``await start()`` starts it and returns once it
listens: the URL it prints (``ws://…?token=…``), read from its output, which a thread collects from
then on, so a process that logs a lot never blocks on a full pipe. ``kill()`` sends SIGKILL to that
process (by its pid) and reaps it; ``start()`` may be called again afterwards (a restart on the same
data directory). ``stop()`` ends it cleanly (SIGTERM, SIGKILL after ``grace`` seconds) and returns
everything it printed, standard output and standard error together (``output="discard"`` keeps
nothing, for a measurement that must not pay for the host's logging).

Linux only, read from ``/proc``: ``children()`` (the processes it runs now: the workers and the
NATS server of ``--workers``) and ``serving_pid`` (which process holds the server's end of a
client's TCP connection).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

__all__ = ["ServeProcess", "serving_pid"]

_CHECKOUT = Path(__file__).resolve().parents[1]
"""The folder holding this ``cli`` package: the child runs ``python -m cli.main`` from it, so it is
this same code whether or not the package is installed."""
_URL = re.compile(r"(ws://\S+)")


class ServeProcess:
    """``python -m cli.main serve --port 0 *arguments`` as a child process."""

    def __init__(self, arguments: Sequence[str], *, token: str, output: Literal["keep", "discard"] = "keep",
                 prefix: Sequence[str] = (), cwd: Path | None = None) -> None:
        """``prefix``: a command to start it through (``unshare`` with lower limits, say);
        ``cwd``: the directory to start it in (a user's project) instead of the checkout, which is
        then not on its ``sys.path`` (``python -P``: the installed package runs)."""
        self.arguments = list(arguments)
        self.prefix = list(prefix)
        self.cwd = cwd
        self.token = token
        self.output = output
        self.process: subprocess.Popen[str] | None = None
        self.url = ""
        self._printed: list[str] = []
        self._reader: threading.Thread | None = None

    @property
    def address(self) -> str:
        """The URL without its token (``ws://HOST:PORT/``)."""
        return self.url.split("?")[0]

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1].strip("/"))

    async def start(self, timeout: float = 120) -> str:
        """Start it and wait (``timeout`` seconds at most) until it prints its URL; raise
        ``RuntimeError`` with what it printed if it ends or times out first."""
        self.process = subprocess.Popen(
            [*self.prefix, sys.executable, *(["-P"] if self.cwd is not None else []), "-m", "cli.main", "serve",
             "--port", "0", *self.arguments],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=self.cwd or _CHECKOUT,
            env={**os.environ, "AGENT_HOST_TOKEN": self.token})
        listening: concurrent.futures.Future[str] = concurrent.futures.Future()
        self._reader = threading.Thread(target=self._read, args=(self.process, listening), daemon=True)
        self._reader.start()
        try:
            self.url = await asyncio.wait_for(asyncio.wrap_future(listening), timeout)
        except TimeoutError:
            raise RuntimeError(f"agent-host serve printed no URL in {timeout} s: {''.join(self._printed)!r}") from None
        return self.url

    def _read(self, process: subprocess.Popen[str], listening: concurrent.futures.Future[str]) -> None:
        """The reader thread: every line the process prints, until it ends."""
        assert process.stdout is not None  # stdout=PIPE
        for line in process.stdout:
            if not listening.done() and (found := _URL.search(line)):
                listening.set_result(found.group(1))
            if self.output == "keep":
                self._printed.append(line)
        if not listening.done():
            listening.set_exception(RuntimeError(f"agent-host serve ended without printing its URL: {''.join(self._printed)!r}"))

    def kill(self) -> None:
        """SIGKILL, by its pid, and reap it."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self, grace: float = 60) -> str:
        """SIGTERM (SIGKILL after ``grace`` seconds) and everything it printed."""
        if self.process is None:
            return ""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self._reader is not None:
            self._reader.join(10)
        return "".join(self._printed)

    def children(self) -> dict[int, str]:
        """The processes it runs now: pid → command line (Linux)."""
        assert self.process is not None
        found: dict[int, str] = {}
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue  # a thread of the parent that ended in between
            for pid in children:
                try:
                    found[int(pid)] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    pass  # ended in between
        return found

    def workers(self) -> list[int]:
        """The pids of the ``serve`` processes it runs (``--workers``), in order."""
        return sorted(pid for pid, command in self.children().items() if " serve " in command)


def serving_pid(local_port: int, server_port: int, pids: Sequence[int]) -> int | None:
    """Which of ``pids`` holds the server's end of the TCP connection from ``local_port`` to
    ``server_port`` on this machine (Linux, IPv4); None when none does."""
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == server_port and int(fields[2].split(":")[1], 16) == local_port:
            inode = fields[9]
    if inode is None:
        return None
    for pid in pids:
        try:
            if any(os.readlink(fd) == f"socket:[{inode}]" for fd in Path(f"/proc/{pid}/fd").iterdir()):
                return pid
        except OSError:
            continue
    return None
