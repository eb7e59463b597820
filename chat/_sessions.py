"""The chat's sessions: ``/sessions`` lists them (this directory's first, ``chat.session_list``),
``/resume`` picks one to go on with (``/resume N`` from the last list, or an id or URI),
``/new`` starts a new one with the next message, ``/fork [N]`` copies this one up to turn N into a
new session and opens it, and ``/history`` pages back through older turns (those in the state,
then those the host keeps, ``fetchTurns``).

Opening a session subscribes to it (and lets the one before go), draws its last turns as history
(markdown rendered, like live ones, in a colour terminal) and marks its finished turns as drawn, so
that the loop follows only what happens from now on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from chat._core import ChatCore
from chat._dialogs import Dialogs
from chat._markdown import MarkdownStream, drawn
from chat.render import clean, render_history
from chat.session_list import Listing, arrange, render_session_list
from client import AhpClientError, AhpError

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
        await self.open(target if ":" in target else f"ahp-session:/{target}")

    def _draw(self) -> Callable[[list[tuple[str, str]]], str] | None:
        """How history turns are drawn: as live ones are (markdown rendered) in a colour terminal."""
        if not self.core.rich:
            return None

        def draw(chunks: list[tuple[str, str]]) -> str:
            answer = MarkdownStream(self.core.width(), theme=self.core.theme)
            return drawn(chunks, answer) + answer.finish()

        return draw

    async def open(self, uri: str) -> None:
        try:
            await self.core.client.subscribe(uri)
        except AhpError as error:
            self.core.problem(f"cannot open {uri}: {error.message}")
            return
        old, self.core.session = self.core.session, uri
        if old and old != uri:
            try:
                await self.core.client.unsubscribe(old)
            except AhpClientError:
                pass
        state = self.core.state() or {}
        summary = state.get("summary") or {}
        self.core.provider = summary.get("provider", self.core.provider)
        turns = state.get("turns") or []
        # Turns already finished are history, not something to follow live.
        self.core.done_turns.update(t.get("id") for t in turns)
        start = max(0, len(turns) - _HISTORY_PAGE)
        self.core.write(self.core.style.bold(f"── {clean(summary.get('title') or 'session')} ──") + self.core.style.dim(f" {uri}") + "\n")
        self.core.write(render_history(turns[start:], self.core.style, first_number=start + 1, draw=self._draw()))
        self.core.oldest_shown = start
        self.core.fetched_before = turns[0]["id"] if turns else None
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
        if self.core.fetched_before is None:
            self.core.note("(no earlier turns)")
            return
        page = await self.core.client.fetch_turns(self.core.session, before=self.core.fetched_before, limit=_HISTORY_PAGE)
        older = page.get("turns") or []
        if not older:
            self.core.note("(no earlier turns)")
            self.core.fetched_before = None
            return
        self.core.write("".join(render_history([t], self.core.style, draw=self._draw()).replace("#1 ", "earlier ") for t in older))
        self.core.fetched_before = older[0]["id"] if page.get("hasMore") else None

    async def new(self, args: str) -> None:
        if self.core.session:
            try:
                await self.core.client.unsubscribe(self.core.session)
            except AhpClientError:
                pass
        self.core.session = None
        self.core.note("(a new session starts with your next message)")

    async def fork(self, args: str) -> None:
        state = self.core.state()
        turns = (state or {}).get("turns") or []
        if not self.core.session or not turns:
            self.core.note("nothing to fork yet: a fork copies a session's finished turns")
            return
        number = int(args) if args.strip().isdigit() else len(turns)
        if not 1 <= number <= len(turns):
            self.core.note(f"pick a turn from 1 to {len(turns)}")
            return
        source = self.core.session
        provider = (state or {}).get("summary", {}).get("provider")
        fork = await self.core.client.create_session(
            provider=provider, fork={"session": source, "turnId": turns[number - 1]["id"]}, subscribe=False
        )
        self.core.note(f"(forked at turn {number})")
        await self.open(fork)
