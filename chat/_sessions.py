"""The chat's sessions and the chats in them: ``/sessions`` lists sessions (this directory's
first, ``chat.session_list``), ``/resume`` picks one to go on with (``/resume N`` from the last
list, or an id or URI), ``/new`` starts a new one with the next message, and ``/history`` pages
back through older turns (those in the chat's state, then, page by page from its ``turnsNextCursor``,
those the host keeps: ``fetchTurns`` loads them into the state).

A session holds chats (AHP 0.9.0 and later): ``/chats`` lists the open session's chats and the
sub-agent chats its tool calls opened, ``/chat N`` (or a chat URI) opens one, ``/side`` starts a
second chat in the session beside this one, and ``/fork [N]`` starts a chat that begins with this
chat's turns up to turn N. A new chat's URI names its session (``AhpClient.create_chat`` mints it).

Opening a session subscribes to it and its default chat (and lets the ones before go); opening a
chat subscribes to that chat. Either draws the chat's last turns as history (markdown rendered,
like live ones, in a colour terminal) and marks its finished turns as drawn, so that the loop
follows only what happens from now on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from ahp.state import channel_kind, default_chat_uri, parse_subagent_chat_uri
from chat._core import ChatCore
from chat._dialogs import Dialogs
from chat._markdown import MarkdownStream, drawn
from chat.render import clean, render_history
from chat.session_list import Listing, arrange, render_session_list
from client import AhpClientError, AhpError, subagent_chats

__all__ = ["Sessions"]

_HISTORY_PAGE = 10


class Sessions:
    """The handlers of ``/sessions``, ``/resume``, ``/new``, ``/fork`` and ``/history``
    (``chat._command_table``), and opening a session, on the chat's shared ``core``; the
    ``dialogs`` ask which session to resume."""

    def __init__(self, core: ChatCore, dialogs: Dialogs) -> None:
        self.core = core
        self.dialogs = dialogs
        self.listed: list[Mapping[str, Any]] = []
        """The sessions ``/sessions`` or ``/resume`` listed last, in their numbers' order."""

    async def _listing(self, args: str) -> Listing | None:
        """The host's sessions by project (``chat.session_list``), shown; ``args`` may be ``--all``."""
        if args not in ("", "--all"):
            self.core.note("usage: /sessions [--all] (--all: -p sessions too)")
            return None
        listing = arrange(await self.core.client.list_sessions(), self.core.cwd.as_uri(), show_all=args == "--all")
        self.listed = list(listing.ordered)
        self.core.write(render_session_list(listing, self.core.style, current=self.core.session, now_ms=time.time() * 1000))
        return listing

    async def sessions(self, args: str) -> None:
        await self._listing(args.strip())

    async def resume(self, args: str) -> None:
        """``/resume`` (or ``--all``): list and pick; ``/resume N``: from the last list; else an id or URI."""
        target = args.strip()
        if target in ("", "--all"):
            listing = await self._listing(target)
            if listing is None or not listing.ordered:
                return
            picked = await self.dialogs.pick(f"Resume which? [1-{len(listing.ordered)}] (Enter cancels): ", len(listing.ordered))
            if picked is None:
                self.core.note("(nothing resumed)")
                return
            target = str(picked)
        if target.isdigit():
            if not self.listed:
                self.listed = list(arrange(await self.core.client.list_sessions(), self.core.cwd.as_uri()).ordered)
            index = int(target)
            if not 1 <= index <= len(self.listed):
                self.core.note(f"there is no session {index}; /resume lists {len(self.listed)}")
                return
            target = self.listed[index - 1]["resource"]
        if ":" not in target:  # a session's id: its URI is <agent>:/<id>
            found = [s["resource"] for s in await self.core.client.list_sessions()
                     if str(s.get("resource", "")).endswith(f":/{target}")]
            if not found:
                self.core.note(f"there is no session {target!r}; /sessions lists them")
                return
            target = found[0]
        await self.open(target)

    def _draw(self) -> Callable[[list[tuple[str, str]]], str] | None:
        """How history turns are drawn: as live ones are (markdown rendered) in a colour terminal."""
        if not self.core.rich:
            return None

        def draw(chunks: list[tuple[str, str]]) -> str:
            answer = MarkdownStream(self.core.width(), theme=self.core.theme)
            return drawn(chunks, answer) + answer.finish()

        return draw

    async def open(self, uri: str) -> None:
        """Open session ``uri`` on its default chat (a chat's URI opens that chat)."""
        if channel_kind(uri) == "chat":
            await self.open_chat(uri)
            return
        try:
            await self.core.client.subscribe(uri)
            await self.core.client.subscribe(default_chat_uri(uri))
        except AhpError as error:
            self.core.problem(f"cannot open {uri}: {error.message}")
            return
        old_session, old_chat = self.core.session, self.core.chat
        self.core.session = uri
        await self._let_go(old_chat, old_session)
        self._draw_opened(uri)

    async def open_chat(self, chat: str) -> None:
        """Show ``chat``, a chat of the open session (or a sub-agent's chat of it)."""
        if not self.core.session:
            self.core.note("no session yet: /resume opens one")
            return
        if chat == self.core.chat:
            self.core.note("(this chat is open)")
            return
        try:
            await self.core.client.subscribe(chat)
        except AhpError as error:
            self.core.problem(f"cannot open {chat}: {error.message}")
            return
        old_chat = self.core.chat
        self.core.open_chat(chat)
        await self._let_go(old_chat, None)
        self._draw_opened(chat)

    async def _let_go(self, chat: str | None, session: str | None) -> None:
        """Unsubscribe from a chat and a session no longer shown (the open ones stay)."""
        for channel in (chat, session):
            if channel and channel not in (self.core.chat, self.core.session):
                try:
                    await self.core.client.unsubscribe(channel)
                except AhpClientError:
                    pass

    def _draw_opened(self, uri: str) -> None:
        state = self.core.state() or {}
        summary = state.get("summary") or {}
        self.core.provider = summary.get("provider", self.core.provider)
        turns = state.get("turns") or []
        # Turns already finished are history, not something to follow live.
        self.core.done_turns.update(t.get("id") for t in turns)
        start = max(0, len(turns) - _HISTORY_PAGE)
        title = clean(summary.get("title") or "session") + (f" › {clean(summary['chatTitle'])}" if summary.get("chatTitle") else "")
        self.core.write(self.core.style.bold(f"── {title} ──") + self.core.style.dim(f" {uri}") + "\n")
        self.core.write(render_history(turns[start:], self.core.style, first_number=start + 1, draw=self._draw()))
        self.core.oldest_shown = start
        if start > 0:
            self.core.note(f"({start} earlier turns: /history)")

    async def history(self, args: str) -> None:
        if not self.core.session:
            self.core.note("no session yet")
            return
        turns = (self.core.state() or {}).get("turns") or []
        if self.core.oldest_shown > 0:
            start = max(0, self.core.oldest_shown - _HISTORY_PAGE)
            self.core.write(render_history(turns[start : self.core.oldest_shown], self.core.style, first_number=start + 1, draw=self._draw()))
            self.core.oldest_shown = start
            if start > 0:
                self.core.note(f"({start} earlier turns: /history)")
            return
        if not (self.core.state() or {}).get("turnsNextCursor"):
            self.core.note("(no earlier turns)")  # the chat's state holds every turn it has
            return
        # The host loads the page before the chat's cursor into its state (``chat/turnsLoaded``).
        try:
            page = await self.core.client.fetch_turns(self.core.chat or self.core.session)
        except AhpError as error:
            self.core.problem(f"cannot fetch earlier turns: {error.message}")
            return
        older = page.get("turns") or []
        self.core.done_turns.update(t.get("id") for t in older)
        if not older:
            self.core.note("(no earlier turns)")
            return
        self.core.write("".join(render_history([t], self.core.style, draw=self._draw()).replace("#1 ", "earlier ") for t in older))
        if not page.get("hasMore"):
            self.core.note("(that was the first turn)")

    async def new(self, args: str) -> None:
        old_session, old_chat = self.core.session, self.core.chat
        self.core.session = None
        await self._let_go(old_chat, old_session)
        self.core.note("(a new session starts with your next message)")

    async def fork(self, args: str) -> None:
        state = self.core.state()
        turns = (state or {}).get("turns") or []
        if not self.core.session or not self.core.chat or not turns:
            self.core.note("nothing to fork yet: a fork copies a chat's finished turns")
            return
        number = int(args) if args.strip().isdigit() else len(turns)
        if not 1 <= number <= len(turns):
            self.core.note(f"pick a turn from 1 to {len(turns)}")
            return
        fork = await self.core.client.create_chat(self.core.session, fork=(self.core.chat, turns[number - 1]["id"]), subscribe=False)
        self.core.note(f"(forked at turn {number}) a new chat in this session; /chats lists its chats")
        await self.open_chat(fork)

    async def side(self, args: str) -> None:
        """``/side``: a new, empty chat in the open session, opened; the other chats go on."""
        if not self.core.session:
            self.core.note("no session yet: a side chat is a second chat in a session")
            return
        chat = await self.core.client.create_chat(self.core.session, subscribe=False)
        self.core.note("(side chat) a new chat in this session; /chats lists its chats")
        await self.open_chat(chat)

    def _chat_list(self) -> list[tuple[str, str]]:
        """``(URI, label)`` of the open session's chats in the host's order, then of the sub-agent
        chats their tool calls opened."""
        session = self.core.session_state() or {}
        listed: list[tuple[str, str]] = []
        for entry in session.get("chats") or ():
            if isinstance(entry, dict) and isinstance(entry.get("resource"), str):
                uri, title = entry["resource"], clean(str(entry.get("title") or ""))
                if uri == session.get("defaultChat"):
                    title += " (the session's first)"
                elif parse_subagent_chat_uri(uri) is not None:
                    title = f"sub-agent: {title or 'sub-agent'}"
                listed.append((uri, title))
        for uri, _ in list(listed):
            for sub in subagent_chats(self.core.client.state(uri)):
                if sub.resource not in (u for u, _ in listed):
                    listed.append((sub.resource, f"sub-agent: {clean(sub.title or 'sub-agent')}"))
        return listed

    async def chats(self, args: str) -> None:
        """``/chats``: the open session's chats, this one marked."""
        listed = self._chat_list()
        if not listed:
            self.core.note("no session yet" if not self.core.session else "(this session lists no chats)")
            return
        for index, (uri, label) in enumerate(listed, 1):
            mark = "*" if uri == self.core.chat else " "
            self.core.write(f"{mark}{index:>3}) {label or 'chat'}" + self.core.style.dim(f"  {uri}") + "\n")
        self.core.note("(/chat N opens one, /side starts another, /fork [N] forks this one)")

    async def chat(self, args: str) -> None:
        """``/chat N`` (from ``/chats``) or ``/chat URI``: open that chat of the session."""
        target = args.strip()
        if not target:
            await self.chats("")
            return
        if target.isdigit():
            listed = self._chat_list()
            if not 1 <= int(target) <= len(listed):
                self.core.note(f"there is no chat {target}; /chats lists {len(listed)}")
                return
            target = listed[int(target) - 1][0]
        if channel_kind(target) != "chat":
            self.core.note(f"{target} is not a chat (ahp-chat://...); /chats lists this session's")
            return
        await self.open_chat(target)
