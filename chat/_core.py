"""The shared state of one interactive chat, and the few operations every part of it uses.

``ChatCore`` is built once per chat (``chat.app.ChatApp`` takes it) and handed to each part: the
dialogs (``chat._dialogs``), what the user sends (``chat._messages``), the sessions
(``chat._sessions``), the permission modes (``chat._modes``), the changes (``chat._changes``) and
the other slash commands (``chat._commands``). It holds the chat's settings, which session is
open, which agent and model a new session gets, which turns were already drawn or are ours, and
where ``/history`` is; and it does what they all need: writing to the terminal, taking the next
inbox item (resuming a lost connection there; on the shared host of ``agent-host``, starting a
host that stopped again through ``find_host``), reading the session's state from the client's
mirror, cancelling the running turn on Ctrl-C, and saying when a turn took in one of our
steering messages. ``ChatExit`` ends the chat with a status.

Which chat is open: ``session`` is the open session's channel and ``chat`` the chat of it the
terminal shows (its default chat when a session is opened; a side chat, a fork or a sub-agent's
chat when one is opened with ``open_chat``). ``state()`` is that chat as the terminal reads it
(``chat._session.chat_view``): chat actions go to ``chat``, session ones to ``session``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

from ahp.state import default_chat_uri
from chat._markdown import THEMES, Theme
from chat._notify import Notifier
from chat._session import chat_view
from chat._settings import split_token
from chat._terminal import Event, Lost, Terminal
from chat.render import Style, clean
from client import AhpClient, AhpClientError

__all__ = ["ChatCore", "ChatExit"]

_DOUBLE_INTERRUPT_SECONDS = 2.0


class ChatExit(Exception):
    """Leave the chat with ``code`` as the exit status."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ChatCore:
    """The shared state and operations of one interactive chat (see the module docstring)."""

    def __init__(
        self,
        client: AhpClient,
        terminal: Terminal,
        style: Style,
        out: TextIO,
        *,
        cwd: Path,
        session: str | None = None,
        pick_session: bool = False,
        agent: str | None = None,
        model: str | None = None,
        host_label: str = "",
        rich: bool = False,
        width: Callable[[], int] = lambda: 80,
        permission_mode: str | None = None,
        find_host: Callable[[], Awaitable[str]] | None = None,
        reload_config: Callable[[], Awaitable[str]] | None = None,
        theme: str = "dark",
        notifier: Notifier | None = None,
    ) -> None:
        self.client = client
        self._find_host = find_host
        self.reload_config = reload_config
        """``/reload``: the shared host reads its config file again; returns what happened (None:
        a chat given a URL, whose host this client did not start)."""
        """Where the host is now, starting it again if it stopped (a URL with its token), for a
        chat on the data directory's shared host; None for a chat given a URL."""
        self.terminal = terminal
        self.style = style
        self.out = out
        self.cwd = cwd
        self._session: str | None = None
        self.chat: str | None = None
        """The chat shown (``open_chat``); the session's default chat unless another was opened."""
        self.initial_session = session
        """The session to open first (``--session``, ``--resume ID``, ``--continue``)."""
        self.pick_session = pick_session
        """Start by listing the sessions to resume and asking which (``--resume`` without an id)."""
        self.provider = agent
        """Agent (``AgentInfo.provider``) for sessions this client creates."""
        self.model: dict[str, Any] | None = {"id": model} if model else None
        """Model selection for sessions this client creates."""
        self.host_label = host_label
        self.rich = rich
        """Render answers as markdown and diffs highlighted, with rich (a colour terminal)."""
        self.width = width
        """The terminal's width now, for rich to wrap at."""
        self.theme: Theme = THEMES[theme]
        """The colours of answers and diffs rendered with rich (the terminal's background)."""
        self.notifier = notifier or Notifier("off")
        """When and how the user is called back to the chat (``chat._notify``)."""
        self.turn_since: dict[str, float] = {}
        """When each turn was sent (ours) or first seen, for the elapsed time in the status."""
        self.oldest_shown: int = 0
        """The index of the oldest turn of the session's state on screen (``/history`` pages back)."""
        self.done_turns: set[str] = set()
        """Turns already drawn to their end (or history when the session was opened)."""
        self.current_turn: str | None = None
        """The turn being followed now."""
        self.start_seq: int | None = None
        """The client seq of our ``turnStarted`` not yet echoed by the host."""
        self.eof = False
        """End of input came in a dialog: the chat ends once the turn is drawn."""
        self.own_turns: set[str] = set()
        """Turns this client started (others' are introduced by their message)."""
        self.prefill: str = ""
        """Text the next message prompt starts with (a rewound turn's message), taken once."""
        self.new_session_mode = permission_mode
        """The permission mode for the session this client creates (``--permission-mode``, or
        switched before the first message); None: the host's default."""
        self.config_after_turn: dict[str, Any] = {}
        """Session config values to put back when the followed turn ends (``/init`` turns the
        remembered approvals off for its own turn)."""
        self._last_interrupt = -100.0
        self._seen_rejections = 0
        self._steering_sent: dict[str, tuple[str | None, str]] = {}
        """Our steering messages still pending: the turn each was meant for, and its text."""
        self._ended_turns: set[str] = set()
        """Turns whose end this client has seen go by (for ``_watch_steering``)."""
        self._applied: Any = None
        """The client's notifications in the order its mirror applied them, read by
        ``catch_up_steering`` (the inbox lags behind the mirror the turns are drawn from)."""

    # -- output ----------------------------------------------------------------------------------

    def write(self, text: str) -> None:
        self.terminal.write(text)

    def ask(self, prompt: str, *, default: str | None = None, history: bool = False, quiet: bool = False) -> None:
        """Show what the next typed line answers (a pre-filled ``default`` where the terminal can)."""
        self.terminal.ask(prompt, default or "", history=history, quiet=quiet)

    def note(self, text: str) -> None:
        self.write(self.style.dim(text) + "\n")

    def call_back(self, what: str) -> None:
        """A turn waits for the user: ring (and notify) unless the window is known to have the focus."""
        self.terminal.signal(self.notifier.waiting(what, self.terminal.focused))

    def problem(self, text: str) -> None:
        self.write(self.style.red("! ") + clean(text) + "\n")

    def report_rejections(self) -> None:
        rejections = self.client.mirror.rejections
        while self._seen_rejections < len(rejections):
            outcome = rejections[self._seen_rejections]
            self._seen_rejections += 1
            self.problem(f"the host refused {outcome.action.get('type')}: {outcome.reason}")

    # -- input -----------------------------------------------------------------------------------

    async def next(self) -> Any:
        """The next inbox item; a lost connection is resumed here (or ends the client)."""
        while True:
            item = await self.terminal.inbox.get()
            self.catch_up_steering()
            if not isinstance(item, Lost):
                return item
            self.problem(f"connection lost: {item.error}")
            try:
                await self._resume()
            except (AhpClientError, OSError) as error:
                self.problem(f"could not reconnect: {error}")
                raise ChatExit(1) from None
            self.terminal.follow(self.client)
            self.note("(reconnected)")
            return Event(None)  # the state may have changed

    async def _resume(self) -> None:
        """Reconnect; on the shared host, one that stopped is started again and resumed there."""
        try:
            await self.client.resume()
            return
        except (AhpClientError, OSError):
            if self._find_host is None:
                raise
        self.note("(the host stopped: starting it again)")
        try:
            url = await self._find_host()
        except Exception as error:  # the shared host's own sentence (it cannot start, and why)
            raise OSError(str(error)) from None
        bare, token = split_token(url)
        self.client.move_to(bare, token)
        await self.client.resume()

    def interrupt(self) -> None:
        """Ctrl-C: cancel the session's running turn; a second one within two seconds exits (130)."""
        now = time.monotonic()
        if now - self._last_interrupt < _DOUBLE_INTERRUPT_SECONDS:
            self.write("\n")
            raise ChatExit(130)
        self._last_interrupt = now
        self.cancel_turn("^C cancelling the turn (Ctrl-C again to exit)")

    def idle_interrupt(self) -> bool:
        """Ctrl-C at the idle prompt: True when it is the second within two seconds (the chat
        exits), else says how to exit; one Ctrl-C alone never ends the chat, as in Claude Code."""
        now = time.monotonic()
        if now - self._last_interrupt < _DOUBLE_INTERRUPT_SECONDS:
            return True
        self._last_interrupt = now
        self.note("(press Ctrl-C again to exit)")
        return False

    def cancel_turn(self, said: str = "Esc: cancelling the turn") -> None:
        """Cancel the session's running turn, if one runs, saying ``said``."""
        state = self.state() or {}
        active = state.get("activeTurn")
        if self.session and isinstance(active, dict):
            try:
                self.client.cancel_turn(self.chat or self.session, active["id"])
            except AhpClientError as error:
                self.problem(f"could not cancel: {error}")
                return
            self.write("\n" + self.style.yellow(said) + "\n")

    @property
    def session(self) -> str | None:
        """The open session's channel (None before there is one)."""
        return self._session

    @session.setter
    def session(self, uri: str | None) -> None:
        # A session opens on its default chat.
        self._session = uri
        self.chat = default_chat_uri(uri) if uri else None

    def open_chat(self, chat: str) -> None:
        """Show ``chat`` (a chat of the open session, already subscribed) from now on."""
        self.chat = chat

    def state(self) -> dict[str, Any] | None:
        """The open chat in the client's mirror as the terminal reads it (``chat_view``; None before
        there is a session)."""
        if not self.session:
            return None
        return chat_view(self.client.state(self.session), self.chat, self.client.state(self.chat) if self.chat else None)

    def session_state(self) -> dict[str, Any] | None:
        """The open session's own state (metadata and its catalogue of chats)."""
        return self.client.state(self.session) if self.session else None

    # -- steering --------------------------------------------------------------------------------

    def steer(self, action: dict[str, Any], text: str) -> None:
        """Dispatch our steering message ``action`` (a ``pendingMessageSet``) to the running turn,
        watched so that the chat says when the turn took it in."""
        assert self.chat is not None
        if self._applied is None:
            self._applied = self.client.subscribe_events()
        self.client.dispatch(self.chat, action)
        self._steering_sent[action["id"]] = (self.current_turn, text)

    def catch_up_steering(self) -> None:
        """Read every action the mirror has applied so far for ``_watch_steering``. Turns are drawn
        from the mirror's latest state, so this runs before a turn's end is drawn too: a note about
        the turn then lands under it, never inside the text of the turn after."""
        while self._applied is not None and not self._applied.empty():
            note = self._applied.get_nowait()
            if note is None:  # the connection ended; ``steer`` listens again
                self._applied = None
            elif note.method == "action":
                self._watch_steering(note.params)
        if self._applied is not None and not self._steering_sent:
            self.client.unsubscribe_events(self._applied)  # nothing left to watch for
            self._applied = None

    def _watch_steering(self, envelope: dict[str, Any]) -> None:
        """Say when a turn took in our steering message, read from the actions in the order the
        host applied them: removed before its turn ended means taken in. One removed after (it came
        too late) becomes the next turn, where the host says so: nothing to add here."""
        action = envelope.get("action") or {}
        kind = action.get("type")
        if kind in ("chat/turnComplete", "chat/turnCancelled", "chat/error") and action.get("turnId"):
            self._ended_turns.add(action["turnId"])
        elif kind == "chat/pendingMessageRemoved" and action.get("id") in self._steering_sent:
            meant_for, _ = self._steering_sent.pop(action["id"])
            if meant_for is not None and meant_for not in self._ended_turns:
                self.note("(the turn took in your steering message)")
