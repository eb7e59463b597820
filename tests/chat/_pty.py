"""Drive ``python -m cli.main chat`` (or another ``agent-host`` command) in a real pseudo-terminal from an asyncio test.

``ChatProcess.spawn`` forks the client onto a fresh pty (it becomes the session leader with the
pty as its controlling terminal, so Ctrl-C written to the master delivers SIGINT like a real
keyboard). Output is read with ``loop.add_reader``; every wait has a timeout and waits on
output, except ``line_editor``, which looks at the terminal mode every 20 ms (a pty reports no
event when it changes).

Output is kept two ways. ``text`` is the byte stream without escape sequences: what was printed,
in order (a line printed above the prompt, a dialog). ``screen`` is what a terminal shows now
(pyte plays the stream onto a screen of the pty's size). A drawing client (prompt_toolkit) redraws
only the cells that changed and moves the cursor over the others, so the input line and the
completion menu are read from ``screen`` (``on_screen``): in ``text`` a cell kept from the
previous drawing is missing (``see @notes:not·s://rea`` after ``/mcp__notes__re``). ``tty_env`` is a terminal that draws (the prompt_toolkit and rich client),
``chat_env`` a dumb one without colour (the line client).
"""

from __future__ import annotations

import asyncio
import os
import pty
import re
import signal
import sys
from pathlib import Path

import pyte

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]")
REPO = Path(__file__).resolve().parents[2]


def tty_env(**extra: str) -> dict[str, str]:
    """A terminal that can draw (colour, cursor movement): the prompt_toolkit and rich client.
    ``PROMPT_TOOLKIT_NO_CPR``: a pty does not answer cursor position requests as a terminal would;
    ``COLORFGBG``: nor the background colour query (``chat._theme``): this one says it is dark."""
    env = chat_env(**extra)
    env.pop("NO_COLOR", None)
    env.update({"TERM": "xterm-256color", "PROMPT_TOOLKIT_NO_CPR": "1", "COLORFGBG": "15;0"})
    env.update(extra)
    return env


def chat_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_HOST")}
    env.update({"PYTHONPATH": str(REPO), "NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "200", "LINES": "50"})
    env["XDG_CONFIG_HOME"] = extra.pop("XDG_CONFIG_HOME", env.get("XDG_CONFIG_HOME", "/nonexistent"))
    env.update(extra)
    return env


class Screen:
    """What a terminal of ``columns`` x ``lines`` shows after the bytes fed to it."""

    def __init__(self, columns: int = 200, lines: int = 50) -> None:
        self._screen = pyte.Screen(columns, lines)
        self._stream = pyte.ByteStream(self._screen)

    def feed(self, data: bytes) -> None:
        self._stream.feed(data)

    @property
    def lines(self) -> list[str]:
        """The screen's rows, trailing blanks dropped."""
        return [row.rstrip() for row in self._screen.display]

    def __str__(self) -> str:
        return "\n".join(self.lines).rstrip("\n")


class ChatProcess:
    def __init__(self, pid: int, fd: int, columns: int = 200, lines: int = 50) -> None:
        self.pid = pid
        self.fd = fd
        self.raw = b""
        self.screen = Screen(columns, lines)
        self._seen = 0
        self._changed = asyncio.Event()
        self._closed = False
        self._status: int | None = None
        asyncio.get_running_loop().add_reader(fd, self._on_readable)

    @classmethod
    def spawn(cls, args: list[str], *, cwd: Path, env: dict[str, str] | None = None, command: tuple[str, ...] = ("chat",)) -> ChatProcess:
        """``agent-host chat ARGS`` (``command=()``: ``agent-host ARGS``, the one-command mode)."""
        argv = [sys.executable, "-m", "cli.main", *command, *args]
        environment = env or chat_env()
        pid, fd = pty.fork()
        if pid == 0:  # the child: become the client
            try:
                os.chdir(cwd)
                os.execve(sys.executable, argv, environment)
            finally:
                os._exit(127)
        # A real terminal has a size; prompt_toolkit and rich lay out to it.
        import fcntl
        import struct
        import termios

        lines, columns = int(environment.get("LINES", 50)), int(environment.get("COLUMNS", 200))
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
        return cls(pid, fd, columns, lines)

    def _on_readable(self) -> None:
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            self._closed = True
            asyncio.get_running_loop().remove_reader(self.fd)
        self.raw += data
        self.screen.feed(data)
        self._changed.set()

    @property
    def text(self) -> str:
        """Everything printed so far, without escape sequences and carriage returns."""
        return _ESCAPES.sub("", self.raw.decode("utf-8", "replace")).replace("\r", "")

    async def _next_output(self, deadline: float, exited: str, timed_out: str) -> None:
        """Wait for the client to print more (or for ``deadline``, a loop time); fail with
        ``exited`` if it has exited, with ``timed_out`` once the deadline has passed."""
        if self._closed:
            raise AssertionError(exited)
        self._changed.clear()
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise AssertionError(timed_out)
        try:
            await asyncio.wait_for(self._changed.wait(), remaining)
        except TimeoutError:
            pass

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
            await self._next_output(deadline, f"the client exited before printing {needle!r}; it printed:\n{text[self._seen:]}",
                                    f"timed out waiting for {needle!r}; after the last match the client printed:\n{text[self._seen:]}")

    async def on_screen(self, needle: str, timeout: float = 15.0) -> str:
        """Wait until ``needle`` is shown on the screen (within one row); returns the screen. What
        was printed until then counts as seen: a later ``expect`` waits for what comes after."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not any(needle in row for row in self.screen.lines):
            await self._next_output(deadline, f"the client exited without showing {needle!r}; the screen:\n{self.screen}",
                                    f"timed out waiting for {needle!r} on the screen; it shows:\n{self.screen}")
        self._seen = len(self.text)
        return str(self.screen)

    async def printed(self, needle: str, timeout: float = 15.0) -> int:
        """Wait until ``needle`` was printed anywhere so far (order-free); returns how many times."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while needle not in self.text:
            if self._closed:
                raise AssertionError(f"the client exited without printing {needle!r}; it printed:\n{self.text}")
            self._changed.clear()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {needle!r} anywhere; the client printed:\n{self.text}")
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except TimeoutError:
                pass
        return self.text.count(needle)

    async def line_editor(self, timeout: float = 15.0) -> None:
        """Wait until the client's input line reads keys one at a time (the terminal left canonical
        mode: prompt_toolkit is at its prompt), so what is typed next is seen as keys, not a line."""
        import termios

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while termios.tcgetattr(self.fd)[3] & termios.ICANON:
            if self._closed or loop.time() > deadline:
                raise AssertionError(f"the client's terminal never left line mode; it printed:\n{self.text}")
            await asyncio.sleep(0.02)  # the mode is not an event a pty reports: look again shortly

    def send(self, line: str) -> None:
        """Type ``line`` and press Enter."""
        os.write(self.fd, line.encode() + b"\r")

    def type(self, keys: str) -> None:
        """Type ``keys`` as they are (escape sequences included), without pressing Enter."""
        os.write(self.fd, keys.encode())

    def paste(self, text: str) -> None:
        """Paste ``text`` the way a terminal does in bracketed-paste mode."""
        os.write(self.fd, b"\x1b[200~" + text.encode() + b"\x1b[201~")

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
