"""Drive ``python -m host.cli chat`` (or another ``agent-host`` command) in a real pseudo-terminal from an asyncio test.

``ChatProcess.spawn`` forks the client onto a fresh pty (it becomes the session leader with the
pty as its controlling terminal, so Ctrl-C written to the master delivers SIGINT like a real
keyboard). Output is read with ``loop.add_reader``; every wait has a timeout; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import os
import pty
import re
import signal
import sys
from pathlib import Path

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]")
REPO = Path(__file__).resolve().parents[2]


def chat_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}
    env.update({"PYTHONPATH": str(REPO), "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200", "LINES": "50"})
    env["XDG_CONFIG_HOME"] = extra.pop("XDG_CONFIG_HOME", env.get("XDG_CONFIG_HOME", "/nonexistent"))
    env.update(extra)
    return env


class ChatProcess:
    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.raw = b""
        self._seen = 0
        self._changed = asyncio.Event()
        self._closed = False
        self._status: int | None = None
        asyncio.get_running_loop().add_reader(fd, self._on_readable)

    @classmethod
    def spawn(cls, args: list[str], *, cwd: Path, env: dict[str, str] | None = None, command: tuple[str, ...] = ("chat",)) -> "ChatProcess":
        """``agent-host chat ARGS`` (``command=()``: ``agent-host ARGS``, the one-command mode)."""
        argv = [sys.executable, "-m", "host.cli", *command, *args]
        environment = env or chat_env()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the client
            try:
                os.chdir(cwd)
                os.execve(sys.executable, argv, environment)
            finally:
                os._exit(127)
        return cls(pid, fd)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            self._closed = True
            asyncio.get_running_loop().remove_reader(self.fd)
        self.raw += data
        self._changed.set()

    @property
    def text(self) -> str:
        """Everything printed so far, without escape sequences and carriage returns."""
        return _ESCAPES.sub("", self.raw.decode("utf-8", "replace")).replace("\r", "")

    async def expect(self, needle: str, timeout: float = 15.0) -> str:
        """Wait until ``needle`` is printed after the previous match; returns the text up to it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            text = self.text
            index = text.find(needle, self._seen)
            if index >= 0:
                chunk = text[self._seen : index + len(needle)]
                self._seen = index + len(needle)
                return chunk
            if self._closed:
                raise AssertionError(f"the client exited before printing {needle!r}; it printed:\n{text[self._seen:]}")
            self._changed.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {needle!r}; after the last match the client printed:\n{text[self._seen:]}")
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                pass

    def send(self, line: str) -> None:
        """Type ``line`` and press Enter."""
        os.write(self.fd, line.encode() + b"\r")

    def ctrl_c(self) -> None:
        os.write(self.fd, b"\x03")

    def ctrl_d(self) -> None:
        os.write(self.fd, b"\x04")

    async def wait(self, timeout: float = 15.0) -> int:
        """The client's exit status (after reading what is left of its output)."""
        if self._status is None:
            loop = asyncio.get_running_loop()
            _, status = await asyncio.wait_for(loop.run_in_executor(None, os.waitpid, self.pid, 0), timeout)
            self._status = os.waitstatus_to_exitcode(status)
        return self._status

    def close(self) -> None:
        """Kill the client if it still runs and release the pty."""
        if self._status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        if not self._closed:
            try:
                asyncio.get_running_loop().remove_reader(self.fd)
            except RuntimeError:
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass
