"""The prompt_toolkit terminal: an input line that stays usable while answers stream above it.

``PromptTerminal`` has the same inbox and interface as the line ``Terminal`` (``chat._terminal``)
and is used when stdin and stdout are terminals (and ``TERM`` is not ``dumb``). What it adds:

* the input line is a prompt_toolkit buffer: Enter sends, Alt-Enter (Esc Enter) inserts a
  newline, a bracketed paste is inserted whole (several lines stay one message until Enter),
  Ctrl-R searches the history, Tab or typing ``/`` or ``@`` completes from ``completer``;
* Shift+Tab switches the session's permission mode (``on_mode_key``: the chat's callback), unless
  a completion menu is open (there it steps back through the menu, as usual);
* ``editing_mode="vi"`` gives the input line vi's keys (prompt_toolkit's vi mode; it starts in
  insert mode, Esc goes to normal mode, and the live region says ``-- NORMAL --`` there);
* with ``focus_reports`` the terminal is asked to report focus changes (xterm's mode 1004, which
  ``restore`` turns off again) and ``focused`` follows them, for ``chat._notify``. prompt_toolkit
  reads no focus reports: their two sequences are added to its table of escape sequences as keys
  nobody types (Ctrl-F24 in, Ctrl-F23 out), which this terminal binds;
* messages (not dialog answers) are kept in a history file per user that survives restarts
  (``history_path``: ``$XDG_STATE_HOME/agent-host/chat_history``);
* ``ask(prompt, default)`` pre-fills the buffer, which is how a command or an edit is changed in
  place before approval; asking for something else while a line is being typed keeps its text;
* a live region between the output and the input line: the status (a spinner, the elapsed time
  and tokens, from send to the end of the turn), the unfinished end of the streaming answer, and
  the permission mode when it is not the default (``⏵⏵ accept edits on (shift+tab to cycle)``).
  Output is printed above the prompt a whole line at a time (``patch_stdout``); a partial line
  waits in the live region until it is complete, so the prompt never splits a line.

Ctrl-C on an empty input line is an ``Interrupt`` and Ctrl-D on an empty line an ``Eof``, exactly
as SIGINT and end of input are for the line terminal; Ctrl-C on a line being typed clears it.
Esc (emacs keys; not while a completion menu is open or Ctrl-R searches) is an ``Escape`` and leaves
the line as it is: the chat interrupts a running turn with it, and rewinds on two at the idle prompt.
A prompt that gives way to another (the idle prompt to a turn's steering prompt, that to a dialog)
is erased; a line sent or answered stays, without the live region.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from prompt_toolkit import PromptSession
from prompt_toolkit.application import get_app
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.enums import EditingMode
from prompt_toolkit.filters import Condition, has_completions, is_searching
from prompt_toolkit.formatted_text import ANSI, AnyFormattedText
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
from prompt_toolkit.key_binding import KeyBindings
from prompt_toolkit.key_binding.vi_state import InputMode
from prompt_toolkit.keys import Keys
from prompt_toolkit.patch_stdout import patch_stdout

from ahp.text_offsets import utf16_length, utf16_to_index
from chat._notify import FOCUS_OFF, FOCUS_ON
from chat._terminal import Eof, Escape, Interrupt, Line, Status, Terminal

__all__ = ["PromptTerminal", "HostCompleter", "history_path", "CompletionSource"]

CompletionSource = Callable[[str, int], Awaitable[list[Mapping[str, Any]]]]
"""``await source(text, offset)`` → AHP ``CompletionItem`` dicts for the text typed so far."""

_FOCUS_IN, _FOCUS_OUT = Keys.ControlF24, Keys.ControlF23
ANSI_SEQUENCES.setdefault("\x1b[I", _FOCUS_IN)
ANSI_SEQUENCES.setdefault("\x1b[O", _FOCUS_OUT)

_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_TAIL_LINES = 12


def history_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where typed messages are remembered: ``$XDG_STATE_HOME/agent-host/chat_history``."""
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "agent-host" / "chat_history"


class _Replaced(Exception):
    """The prompt gave way to another one (its text carries over)."""


class HostCompleter(Completer):
    """Completes ``/commands`` (the client's own and the host's) and ``@paths`` (the host's)."""

    def __init__(self, source: CompletionSource | None, commands: Iterable[str]) -> None:
        self.source = source
        self.commands = sorted(set(commands))

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterable[Completion]:
        return []  # only the async path: the host is asked over the connection

    async def get_completions_async(self, document: Document, complete_event: CompleteEvent) -> AsyncGenerator[Completion, None]:
        text, cursor = document.text, document.cursor_position
        word = document.get_word_before_cursor(WORD=True)
        if not (word.startswith("@") or (word.startswith("/") and text.lstrip() == word)):
            return
        offered: set[str] = set()
        if word.startswith("/"):
            for name in self.commands:
                if name.startswith(word[1:]):
                    offered.add("/" + name)
                    yield Completion("/" + name, start_position=-len(word))
        if self.source is None:
            return
        try:
            items = await self.source(text, utf16_length(text[:cursor]))
        except Exception:  # a completion that fails must never disturb typing
            return
        for item in items:
            insert = str(item.get("insertText") or "")
            if not insert or insert in offered:
                continue
            start = item.get("rangeStart")
            position = -len(word) if start is None else utf16_to_index(text, int(start)) - cursor
            yield Completion(insert, start_position=min(0, position))


@Condition
def _completing() -> bool:
    """Complete while typing only a ``/command`` or an ``@path``: the menu's room below the input
    line is kept only then, not under every message."""
    document = get_app().current_buffer.document
    word = document.get_word_before_cursor(WORD=True)
    return word.startswith("@") or (word.startswith("/") and document.text_before_cursor.lstrip() == word)


def _bindings(mode_key: Callable[[], None] | None = None, focus: Callable[[bool], None] | None = None,
              escape: Callable[[bool], None] | None = None) -> KeyBindings:
    bindings = KeyBindings()

    if escape is not None:
        @bindings.add("escape", filter=~has_completions & ~is_searching)
        def _escape(event: Any) -> None:
            """Esc: the chat's (interrupt a running turn). The line typed stays."""
            escape(False)

        # Its own binding: after one Esc the key processor waits for a longer sequence (Esc f, ...),
        # so two Esc handled one by one would arrive a second or more apart.
        @bindings.add("escape", "escape", filter=~has_completions & ~is_searching)
        def _escape_twice(event: Any) -> None:
            """Esc Esc: the chat's (rewind, when idle; interrupt a running turn)."""
            escape(True)

    @bindings.add(_FOCUS_IN)
    @bindings.add(_FOCUS_OUT)
    def _focus(event: Any) -> None:
        """The terminal reports that its window gained or lost the focus."""
        if focus is not None:
            focus(event.key_sequence[0].key == _FOCUS_IN)

    @bindings.add("s-tab", filter=~has_completions & ~is_searching)
    def _mode(event: Any) -> None:
        """Shift+Tab: the next permission mode (the status line shows it)."""
        if mode_key is not None:
            mode_key()
        event.app.invalidate()

    # Not while Ctrl-R searches: there Enter keeps the line found (prompt_toolkit's own binding).
    @bindings.add("enter", filter=~is_searching)
    @bindings.add("c-j", filter=~is_searching)  # what Enter arrives as when typed before the terminal went raw
    def _send(event: Any) -> None:
        buffer = event.current_buffer
        state = buffer.complete_state
        if state is not None and state.current_completion is not None:
            buffer.apply_completion(state.current_completion)
            return
        buffer.validate_and_handle()

    @bindings.add("c-c", filter=Condition(lambda: bool(get_app().current_buffer.text)))
    def _clear(event: Any) -> None:
        """Ctrl-C on a line being typed clears it; on an empty line it interrupts (cancel or exit)."""
        event.current_buffer.reset()

    @bindings.add("escape", "enter")
    @bindings.add("escape", "c-j")  # Esc Enter typed ahead, before the terminal went raw
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    return bindings


class PromptTerminal(Terminal):
    """A prompt_toolkit input line with a live region above it (see the module docstring)."""

    prefills = True

    def __init__(
        self, *, history_file: Path | None, completer: Completer | None = None, color: bool = True,
        editing_mode: str = "emacs", focus_reports: bool = False,
    ) -> None:
        super().__init__()
        self._color = color
        self._vi = editing_mode == "vi"
        self._focus_reports = focus_reports
        self._real_out: Any = None
        self._cycle_mode: Callable[[], None] | None = None
        self._mode_line: Callable[[], str] = lambda: ""
        history: Any = InMemoryHistory()
        if history_file is not None:
            try:
                history_file.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(history_file))
            except OSError:
                pass  # an unwritable state directory costs the history, not the chat
        common: dict[str, Any] = {
            # Esc is vi's key for normal mode: in vi mode it stays that.
            "key_bindings": _bindings(self._mode_key, self._focus, None if self._vi else lambda twice: self.inbox.put_nowait(Escape(twice))),
            "multiline": True, "refresh_interval": 0.12,
            "editing_mode": EditingMode.VI if self._vi else EditingMode.EMACS,
        }
        self._messages: PromptSession[str] = PromptSession(
            history=history, completer=completer, complete_while_typing=_completing, reserve_space_for_menu=8, **common
        )
        self._answers: PromptSession[str] = PromptSession(history=InMemoryHistory(), reserve_space_for_menu=0, **common)
        self._task: asyncio.Task[None] | None = None
        self._asked: tuple[str, str, bool] | None = None
        self._session: PromptSession[str] | None = None
        self._partial = ""
        self._tail = ""
        self._status: Status | None = None
        self._patch: Any = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._real_out = sys.stdout
        if self._focus_reports:
            self.signal(FOCUS_ON)
        self._patch = patch_stdout(raw=True)
        self._patch.__enter__()

    def signal(self, text: str) -> None:
        # Straight to the terminal: the proxy of ``patch_stdout`` holds text until a line ends.
        out = self._real_out or sys.stdout
        try:
            out.write(text)
            out.flush()
        except (OSError, ValueError):
            pass

    def _focus(self, focused: bool) -> None:
        self.focused = focused

    def restore(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._partial:
            sys.stdout.write(self._partial + "\n")
            self._partial = ""
        if self._patch is not None:
            self._patch.__exit__(None, None, None)
            self._patch = None
        if self._focus_reports:
            self.signal(FOCUS_OFF)
        super().restore()

    # -- input -------------------------------------------------------------------------------------

    def ask(self, prompt: str, default: str = "", *, history: bool = False, quiet: bool = False) -> None:
        wanted = (prompt, default, history)
        previous = self._task
        if self._task is not None and not self._task.done():
            if self._asked == wanted:
                return
            session = self._session
            app = session.app if session is not None else None
            if session is not None and app is not None and app.is_running and app.future is not None and not app.future.done():
                default = default or session.default_buffer.text
                app.erase_when_done = True  # the next prompt takes its place
                app.exit(exception=_Replaced())
            # Otherwise the previous prompt has not started yet (it gives way as it starts: see
            # ``_read``), or a line was just entered there and is on its way to the inbox. It is
            # never cancelled: a prompt cancelled while starting kept reading keys, and the line
            # typed into it was lost.
        self._asked = wanted
        self._task = asyncio.get_running_loop().create_task(self._read(prompt, default, history, previous))

    async def _read(self, prompt: str, default: str, history: bool, previous: asyncio.Task[None] | None) -> None:
        if previous is not None and not previous.done():
            await asyncio.wait([previous])  # one prompt on the screen at a time
        this = asyncio.current_task()
        if self._task is not this:
            return  # another prompt was asked meanwhile
        session = self._messages if history else self._answers
        self._session = session

        def give_way_if_replaced() -> None:
            # Asked for another prompt while this one was starting: leave before reading a key.
            if self._task is not this:
                session.app.erase_when_done = True
                session.app.exit(exception=_Replaced())

        session.app.erase_when_done = False  # a line answered or sent stays in the scrollback
        try:
            text = await session.prompt_async(lambda: self._message(prompt), default=default, pre_run=give_way_if_replaced)
        except _Replaced:
            return
        except KeyboardInterrupt:
            self._done(this, Interrupt())
        except EOFError:
            self._done(this, Eof())
        else:
            self._done(this, Line(text))

    def _done(self, task: asyncio.Task[None] | None, item: Any) -> None:
        if self._task is task:
            self._asked = None  # (a line entered just as another prompt was asked leaves that one asked)
        self.inbox.put_nowait(item)

    # -- output and the live region ----------------------------------------------------------------

    def write(self, text: str) -> None:
        if not text:
            return
        text = self._partial + text
        complete, newline, self._partial = text.rpartition("\n")
        if newline:
            sys.stdout.write(complete + "\n")
            sys.stdout.flush()
        self._invalidate()

    def set_status(self, status: Status | None) -> None:
        if status != self._status:
            self._status = status
            self._invalidate()

    def set_tail(self, text: str) -> None:
        if text != self._tail:
            self._tail = text
            self._invalidate()

    def on_mode_key(self, cycle: Callable[[], None], line: Callable[[], str]) -> None:
        self._cycle_mode = cycle
        self._mode_line = line

    def _mode_key(self) -> None:
        if self._cycle_mode is not None:
            self._cycle_mode()

    def _invalidate(self) -> None:
        session = self._session
        if session is not None and session.app.is_running:
            session.app.invalidate()

    def _message(self, prompt: str) -> AnyFormattedText:
        session = self._session
        if session is not None and session.app.is_done:  # what stays on screen: the prompt and the line
            return ANSI(prompt)
        lines: list[str] = []
        tail = (self._tail + self._partial).rstrip("\n")
        if tail:
            lines.extend(tail.split("\n")[-_TAIL_LINES:])
        if self._status is not None:
            lines.append(_status_line(self._status, time.monotonic(), self._color))
        if self._vi and session is not None and session.app.vi_state.input_mode == InputMode.NAVIGATION:
            lines.append("\x1b[1m-- NORMAL --\x1b[0m" if self._color else "-- NORMAL --")
        mode = self._mode_line()
        if mode:
            hint = " (shift+tab to cycle)"
            lines.append(f"\x1b[35m{mode}\x1b[0m\x1b[2m{hint}\x1b[0m" if self._color else mode + hint)
        return ANSI("\n".join(lines + [prompt]))


def _status_line(status: Status, now: float, color: bool) -> str:
    elapsed = max(0.0, now - status.since)
    frame = _SPINNER[int(elapsed * 8) % len(_SPINNER)]
    tokens = f" · ↓ {status.tokens:,} token{'s' if status.tokens != 1 else ''}" if status.tokens else ""
    detail = f"({elapsed:.0f}s{tokens} · Ctrl-C to cancel)"
    if not color:
        return f"{frame} {status.label} {detail}"
    return f"\x1b[36m{frame}\x1b[0m {status.label} \x1b[2m{detail}\x1b[0m"
