"""The terminal edge of ``agent-host chat``: one inbox for typed lines, Ctrl-C and host events.

Everything the interactive loop reacts to arrives, in order, on one ``asyncio.Queue`` as an
``InboxItem``: a ``Line`` the user typed, ``Eof`` (Ctrl-D / end of piped input), ``Interrupt``
(Ctrl-C), ``Escape`` (Esc, from the prompt_toolkit terminal), an ``Event`` from the host, or ``Lost`` (the connection died). One consumer reads it,
so a dialog that waits for a line can never race the main loop for the same line.

Invariants:

* stdin is read by one daemon thread with ``input()`` (readline editing and history when stdin is
  a terminal), so the event loop never blocks on the keyboard; lines cross over with
  ``call_soon_threadsafe``.
* Output and prompts go through the terminal too: ``write(text)`` prints, ``ask(prompt)`` shows
  what the next line is for, ``signal(text)`` writes a bell or notification (``chat._notify``). This line terminal prints the prompt as text and ignores a
  ``default`` (it cannot pre-fill a line) and the live status; ``chat._prompt.PromptTerminal``
  is the prompt_toolkit one (pre-filled buffers, history, a live region above the input).
* SIGINT is handled by the event loop (``add_signal_handler``), never as ``KeyboardInterrupt``
  inside arbitrary code; ``restore`` puts the terminal modes back as they were at start (readline
  may be mid-line when the client exits).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import termios
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chat.render import Status
from client import AhpClient, Notification

try:
    import readline  # noqa: F401  (loaded, it is what gives input() line editing and history)
except ImportError:  # a Python built without it: input() reads plain lines
    pass

__all__ = ["Line", "Eof", "Interrupt", "Escape", "Event", "Lost", "InboxItem", "Status", "Terminal"]


@dataclass(frozen=True)
class Line:
    text: str


@dataclass(frozen=True)
class Eof:
    pass


@dataclass(frozen=True)
class Interrupt:
    pass


@dataclass(frozen=True)
class Escape:
    """Esc pressed at the input line (the prompt_toolkit terminal, emacs keys): it interrupts a
    running turn; twice at the idle prompt, it rewinds."""

    twice: bool = False
    """Esc Esc, one right after the other."""


@dataclass(frozen=True)
class Event:
    note: Notification | None
    """The host's notification; None after a reconnect (the state may have changed)."""


@dataclass(frozen=True)
class Lost:
    error: BaseException


InboxItem = Line | Eof | Interrupt | Escape | Event | Lost


class Terminal:
    """Owns stdin reading, SIGINT and the inbox; ``start`` once inside the running loop."""

    prefills = False
    """True when ``ask`` can put an editable default in the input line."""
    focused: bool | None = None
    """Whether the terminal's window has the focus, as the terminal last reported it; None when it
    has not (a line terminal never knows)."""

    def __init__(self, out: Any = None) -> None:
        self.out = out if out is not None else sys.stdout
        self.inbox: asyncio.Queue[InboxItem] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._saved_modes: Any = None
        self._pump: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._save_modes()
        try:
            self._loop.add_signal_handler(signal.SIGINT, lambda: self.inbox.put_nowait(Interrupt()))
        except (NotImplementedError, RuntimeError):
            pass
        threading.Thread(target=self._read_lines, name="chat-stdin", daemon=True).start()

    # -- output and prompts -------------------------------------------------------------------

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()

    def ask(self, prompt: str, default: str = "", *, history: bool = False, quiet: bool = False) -> None:
        """Show what the next line is for (``quiet``: only where the prompt stays on screen)."""
        if not quiet:
            self.write(prompt)

    def signal(self, text: str) -> None:
        """Write control output (a bell, a notification: ``chat._notify``) straight to the terminal."""
        self.write(text)

    def set_status(self, status: Status | None) -> None:
        """The live status shown while a turn runs (a line terminal shows none)."""

    def set_tail(self, text: str) -> None:
        """The unfinished end of the streaming answer, shown live (a line terminal prints it as it comes)."""

    def on_mode_key(self, cycle: Callable[[], None], line: Callable[[], str]) -> None:
        """What Shift+Tab does (``cycle``: switch the permission mode) and what the status line says
        about the mode (``line()``, read at every redraw). A line terminal has neither: ``/mode``."""

    def follow(self, client: AhpClient) -> None:
        """Forward the client's notifications into the inbox (replacing an earlier pump)."""
        if self._pump is not None:
            self._pump.cancel()
        self._pump = asyncio.get_running_loop().create_task(self._forward(client))

    async def _forward(self, client: AhpClient) -> None:
        try:
            async for note in client.events():
                self.inbox.put_nowait(Event(note))
        except Exception as error:  # the connection's own error: reported to the loop as Lost
            self.inbox.put_nowait(Lost(error))

    def _read_lines(self) -> None:
        assert self._loop is not None
        while True:
            try:
                line = input()
            except EOFError:
                self._post(Eof())
                return
            except (OSError, ValueError):  # stdin closed under us
                self._post(Eof())
                return
            self._post(Line(line))

    def _post(self, item: InboxItem) -> None:
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self.inbox.put_nowait, item)
        except RuntimeError:
            pass  # the loop is closed: the client is exiting

    def _save_modes(self) -> None:
        try:
            if os.isatty(sys.stdin.fileno()):
                self._saved_modes = termios.tcgetattr(sys.stdin.fileno())
        except (OSError, ValueError):
            self._saved_modes = None

    def restore(self) -> None:
        """Stop the event pump and put the terminal modes back."""
        if self._pump is not None:
            self._pump.cancel()
        if self._loop is not None:
            try:
                self._loop.remove_signal_handler(signal.SIGINT)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        if self._saved_modes is not None:
            try:
                termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, self._saved_modes)
            except (OSError, ValueError):
                pass
