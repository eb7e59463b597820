"""What every part of the interactive chat shares: the connection, the session, output and sending.

``ChatCore`` holds the state of one interactive chat (which session, which agent and model new
sessions get, which turns were already drawn) and the few operations the loop (``chat.app``),
the dialogs (``chat._dialogs``) and the slash commands (``chat._commands``) all use: writing to
the terminal, taking the next inbox item (resuming a lost connection there; on the shared host of
``agent-host``, starting a host that stopped again through ``find_host``), reading the
session's state from the client's mirror, creating the session on first use and sending a
message, a steering message or a queued one. ``ChatExit`` ends the chat with a status.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from chat import _session as actions
from chat._answers import attachments_in, session_directory
from chat._images import model_sees_images
from chat._markdown import THEMES, Theme
from chat._notify import Notifier
from chat._settings import split_token
from chat._terminal import Event, Lost, Terminal
from chat.render import Style, clean
from client import ROOT_CHANNEL, AhpClient, AhpClientError, AhpError

__all__ = ["ChatCore", "ChatExit"]


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
        theme: str = "dark",
        notifier: Notifier | None = None,
    ) -> None:
        self.client = client
        self._find_host = find_host
        """Where the host is now, starting it again if it stopped (a URL with its token), for a
        chat on the data directory's shared host; None for a chat given a URL."""
        self.terminal = terminal
        self.style = style
        self.out = out
        self.cwd = cwd
        self.session: str | None = None
        self._initial_session = session
        self._pick_session = pick_session
        """Start by listing the sessions to resume and asking which (``--resume`` without an id)."""
        self.provider = agent
        """Agent (``AgentInfo.provider``) for sessions this client creates."""
        self.model: dict[str, Any] | None = {"id": model} if model else None
        """Model selection for sessions this client creates."""
        self._host_label = host_label
        self.rich = rich
        """Render answers as markdown and diffs highlighted, with rich (a colour terminal)."""
        self.width = width
        """The terminal's width now, for rich to wrap at."""
        self.theme: Theme = THEMES[theme]
        """The colours of answers and diffs rendered with rich (the terminal's background)."""
        self.notifier = notifier or Notifier("off")
        """When and how the user is called back to the chat (``chat._notify``)."""
        self._turn_since: dict[str, float] = {}
        """When each turn was sent (ours) or first seen, for the elapsed time in the status."""
        self._listed: list[Mapping[str, Any]] = []
        self._oldest_shown: int = 0
        self._fetched_before: str | None = None
        self._done_turns: set[str] = set()
        self._current_turn: str | None = None
        self._start_seq: int | None = None
        self._last_interrupt = -100.0
        self._eof = False
        self._seen_rejections = 0
        self._answered_requests: set[str] = set()
        self._own_turns: set[str] = set()
        self._steering_sent: dict[str, tuple[str | None, str]] = {}
        """Our steering messages still pending: the turn each was meant for, and its text."""
        self._ended_turns: set[str] = set()
        """Turns whose end this client has seen go by (for ``_watch_steering``)."""
        self._prefill: str = ""
        """Text the next message prompt starts with (a rewound turn's message), taken once."""
        self._new_session_mode = permission_mode
        """The permission mode for the session this client creates (``--permission-mode``, or
        switched before the first message); None: the host's default."""
        self._pasted_images: list[dict[str, Any]] = []
        """Images ``/paste-image`` took from the clipboard, sent with the next message."""
        self._applied: Any = None
        """The client's notifications in the order its mirror applied them, read by
        ``_catch_up_steering`` (the inbox lags behind the mirror the turns are drawn from)."""

    # -- output ----------------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        self.terminal.write(text)

    def _ask(self, prompt: str, *, default: str | None = None, history: bool = False, quiet: bool = False) -> None:
        """Show what the next typed line answers (a pre-filled ``default`` where the terminal can)."""
        self.terminal.ask(prompt, default or "", history=history, quiet=quiet)

    def _note(self, text: str) -> None:
        self._write(self.style.dim(text) + "\n")

    def _call_back(self, what: str) -> None:
        """A turn waits for the user: ring (and notify) unless the window is known to have the focus."""
        self.terminal.signal(self.notifier.waiting(what, self.terminal.focused))

    def _problem(self, text: str) -> None:
        self._write(self.style.red("! ") + clean(text) + "\n")

    def _report_rejections(self) -> None:
        rejections = self.client.mirror.rejections
        while self._seen_rejections < len(rejections):
            outcome = rejections[self._seen_rejections]
            self._seen_rejections += 1
            self._problem(f"the host refused {outcome.action.get('type')}: {outcome.reason}")


    async def _next(self) -> Any:
        """The next inbox item; a lost connection is resumed here (or ends the client)."""
        while True:
            item = await self.terminal.inbox.get()
            self._catch_up_steering()
            if not isinstance(item, Lost):
                return item
            self._problem(f"connection lost: {item.error}")
            try:
                await self._resume()
            except (AhpClientError, OSError) as error:
                self._problem(f"could not reconnect: {error}")
                raise ChatExit(1) from None
            self.terminal.follow(self.client)
            self._note("(reconnected)")
            return Event(None)  # the state may have changed

    async def _resume(self) -> None:
        """Reconnect; on the shared host, one that stopped is started again and resumed there."""
        try:
            await self.client.resume()
            return
        except (AhpClientError, OSError):
            if self._find_host is None:
                raise
        self._note("(the host stopped: starting it again)")
        try:
            url = await self._find_host()
        except Exception as error:  # the shared host's own sentence (it cannot start, and why)
            raise OSError(str(error)) from None
        bare, token = split_token(url)
        self.client.move_to(bare, token)
        await self.client.resume()

    def _catch_up_steering(self) -> None:
        """Read every action the mirror has applied so far for ``_watch_steering``. Turns are drawn
        from the mirror's latest state, so this runs before a turn's end is drawn too: a note about
        the turn then lands under it, never inside the text of the turn after."""
        while self._applied is not None and not self._applied.empty():
            note = self._applied.get_nowait()
            if note is None:  # the connection ended; ``_send_pending`` listens again
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
        if kind in ("session/turnComplete", "session/turnCancelled", "session/error") and action.get("turnId"):
            self._ended_turns.add(action["turnId"])
        elif kind == "session/pendingMessageRemoved" and action.get("id") in self._steering_sent:
            meant_for, _ = self._steering_sent.pop(action["id"])
            if meant_for is not None and meant_for not in self._ended_turns:
                self._note("(the turn took in your steering message)")

    def _state(self) -> dict[str, Any] | None:
        return self.client.state(self.session) if self.session else None
    # -- sending ---------------------------------------------------------------------------------

    def _send_pending(self, kind: str, text: str) -> None:
        if not self.session:
            return
        attachments = self._attachments(text)
        action = actions.pending_message(kind, text, attachments)
        if kind == "steering" and self._applied is None:
            self._applied = self.client.subscribe_events()
        self.client.dispatch(self.session, action)
        if kind == "steering":
            self._steering_sent[action["id"]] = (self._current_turn, text)
            self._note("(steering the running turn)")
        else:
            self._note("(queued for after the turn)")

    def _attachments(self, text: str) -> list[dict[str, Any]]:
        """The message's attachments: its ``@paths`` and pasted image paths, then the images
        ``/paste-image`` took from the clipboard for it (taken once)."""
        sees, model = self._sees_images()
        attachments, problems = attachments_in(text, session_directory(self._state(), self.cwd), vision=sees, model=model)
        attachments += self._pasted_images
        self._pasted_images = []
        for problem in problems:
            self._note(f"(not attached: {problem})")
        for attachment in attachments:
            if attachment.get("type") == "simple":
                continue  # an image the model cannot see: said above
            kind = " (image)" if attachment.get("displayKind") == "image" else ""
            self._note(f"(attached {attachment['label']}{kind})")
        return attachments

    def _sees_images(self) -> tuple[bool | None, str]:
        """Whether the session's model takes images (None: the host does not say), and its name."""
        agents = (self.client.state(ROOT_CHANNEL) or {}).get("agents") or ()
        state = self._state()
        if state is None and self.provider:  # no session yet: the agent and model it will be created with
            state = {"summary": {"provider": self.provider, "model": self.model}}
        return model_sees_images(agents, state)

    async def _settle_trust(self) -> None:
        """A new session's folder asks to be trusted: answered before its first message is sent
        (the dialogs do it), so that message runs with the user's choice."""

    async def _ensure_session(self) -> bool:
        if self.session:
            return True
        try:
            self.session = await self.client.create_session(
                provider=self.provider, model=self.model, working_directory=self.cwd.as_uri(),
                config={actions.PERMISSION_MODE: self._new_session_mode} if self._new_session_mode else None,
            )
        except AhpError as error:
            self._problem(f"cannot create a session: {error.message}")
            return False
        summary = (self._state() or {}).get("summary") or {}
        model = (summary.get("model") or {}).get("id")
        self.provider = summary.get("provider", self.provider)
        self._note(f"(new session · agent {clean(self.provider)}" + (f" · model {clean(model)}" if model else "") + ")")
        self._oldest_shown = 0
        self._fetched_before = None
        return True

    async def _send(self, text: str, attachments: list[dict[str, Any]] | None = None) -> None:
        created = self.session is None
        if not await self._ensure_session():
            return
        if created:
            await self._settle_trust()
        assert self.session is not None
        state = self._state() or {}
        if state.get("lifecycle") == "creationFailed":
            error = state.get("creationError") or {}
            self._problem(f"this session could not start: {error.get('message', 'unknown error')}; /new starts another")
            return
        all_attachments = self._attachments(text) + list(attachments or [])
        action = actions.turn_started(text, all_attachments)
        self._turn_since[action["turnId"]] = time.monotonic()
        self._start_seq = self.client.dispatch(self.session, action)
        self._current_turn = action["turnId"]
        self._own_turns.add(action["turnId"])

