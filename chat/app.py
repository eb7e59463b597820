"""The interactive ``agent-host chat`` loop: one coroutine reacting to one inbox.

Everything the user does (lines, Ctrl-C, Ctrl-D) and everything the host sends (notifications)
arrives on ``Terminal.inbox`` in order (see ``_terminal``); this module decides what it means and
draws state with the pure ``render`` module. State is never kept twice: what is shown is always
derived from the client's mirror of the session (``AhpClient.state``), so a turn started by
another client, a queued message the host starts, or a confirmation answered elsewhere all show
up here the same way as our own.

Behaviour (the contract users rely on):

* Idle: a line is a message (a new session is created on first use), ``>> text`` queues it,
  ``/command`` runs a client command or, for names the client does not know, a host command or
  skill offered through ``completions``, ``!command`` runs a shell command (its output goes into the
  conversation). Ctrl-D exits, and Ctrl-C twice within two seconds (one says how to exit, as in
  Claude Code). Esc twice rewinds: ``/rewind``'s list of turns to go back to.
* While a turn runs (ours or anyone's in this session): its answer streams; a typed line steers
  the turn (``pendingMessageSet`` steering), ``>> text`` or ``/queue text`` queues it; Ctrl-C
  or Esc cancels the turn (``turnCancelled``). The cancel applies optimistically, so the client is idle
  at once and a second Ctrl-C exits; one arriving within two seconds while a turn is still shown
  (the host refused the cancel, another turn started) exits with status 130.
* A tool call waiting for confirmation, a result waiting for acceptance or an open input request
  opens a dialog; the dialog ends by itself when the host moves on (someone else answered, the
  turn ended), and Ctrl-C inside it cancels the turn.
* Shift+Tab switches the session's permission mode at any time, and the status line shows it;
  ``/mode`` does the same in the line terminal (``chat._modes``).
* A dialog opening, or a turn ending while the user looks elsewhere, rings the terminal's bell
  (and shows a desktop notification where the terminal can: ``chat._notify``).
* Actions the host rejects are reported with the host's reason.

Exit status: 0 normal exit (``/quit``, Ctrl-D, Ctrl-C twice at the prompt), 1 the connection was lost
and could not be resumed, 130 two quick Ctrl-C while a turn was shown.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from operator import attrgetter
from typing import Any

import chat._session as actions
from ahp.protocol import builders
from chat._changes import Changes
from chat._command_table import HANDLERS
from chat._commands import Commands
from chat._core import ChatCore, ChatExit
from chat._dialogs import Dialogs
from chat._markdown import MarkdownStream, drawn
from chat._messages import Messages
from chat._modes import Modes
from chat._sessions import Sessions
from chat._terminal import Eof, Escape, Interrupt, Line
from chat.render import HELP_TEXT, TurnView, clean, turn_status
from client import AhpError

__all__ = ["ChatApp"]


class ChatApp:
    """One interactive chat on ``core`` (its shared state: ``chat._core``); ``await run()``
    returns the exit status.

    The loop lives here; it is composed of parts with one job each, all on the same ``core``:
    ``dialogs`` (questions, confirmations, pickers), ``messages`` (what the user sends),
    ``sessions`` (listing, opening, resuming, forking; the history), ``modes`` (the permission
    mode), ``changes`` (``/diff``, ``/undo``, ``/rewind``) and ``commands`` (the other slash
    commands); the command table (``chat._command_table``) names
    which part's method runs each command.
    """

    def __init__(self, core: ChatCore) -> None:
        self.core = core
        self.dialogs = Dialogs(core)
        self.messages = Messages(core, self.dialogs)
        self.modes = Modes(core)
        self.sessions = Sessions(core, self.dialogs)
        self.changes = Changes(core, self.dialogs)
        self.commands = Commands(core, self.messages, self.sessions)
        self._handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            name: attrgetter(path)(self) for name, path in HANDLERS.items()}
        """Every spelling of a client command → the bound handler that runs it."""

    async def completions(self, text: str, offset: int) -> list[dict[str, Any]]:
        """The host's completion items for ``text`` typed so far (none without a session)."""
        return await self.commands.completions(text, offset)

    # -- main loop -------------------------------------------------------------------------------

    async def run(self) -> int:
        core = self.core
        self.modes.install_key()
        try:
            where = f" at {core.host_label}" if core.host_label else ""
            agent = f"agent {core.provider}" if core.provider else "the host's default agent"
            core.note(f"connected{where} · AHP {core.client.protocol_version} · {agent} · /help for commands")
            if core.initial_session:
                await self.sessions.open(core.initial_session)
                if core.new_session_mode and core.session and self.modes.current() not in (None, core.new_session_mode):
                    self.modes.switch(core.new_session_mode)  # --permission-mode for the session opened
            elif core.pick_session:
                await self.sessions.resume("")
            prompt_shown = False
            while True:
                core.report_rejections()
                turn_id = self._unfollowed_turn()
                if turn_id is not None:
                    await self._follow(turn_id)
                    prompt_shown = False
                    continue
                if await self.dialogs.idle_input_requests():
                    prompt_shown = False
                    continue
                if not prompt_shown:
                    prefill, core.prefill = core.prefill, ""
                    core.ask(core.style.bold("> "), default=prefill, history=True)
                    prompt_shown = True
                item = await core.next()
                if isinstance(item, Line):
                    prompt_shown = False
                    await self._idle_line(item.text)
                elif isinstance(item, Eof) or (isinstance(item, Interrupt) and core.idle_interrupt()):
                    core.write("\n")
                    return 0
                elif isinstance(item, Interrupt):
                    prompt_shown = False  # (the input line ended with the Ctrl-C: a new one)
                elif isinstance(item, Escape) and item.twice:
                    prompt_shown = False
                    await self.changes.rewind("")  # Esc Esc: go back to an earlier turn, as in Claude Code
        except ChatExit as exit_:
            return exit_.code

    def _unfollowed_turn(self) -> str | None:
        """The next turn to draw: one that ended unseen (it ran between two looks), else the live one."""
        core = self.core
        state = core.state() or {}
        turns = [turn for turn in state.get("turns") or () if isinstance(turn, dict)]
        # Only after the newest turn drawn: older ones a client loaded since (``/history`` here or
        # elsewhere: ``chat/turnsLoaded`` puts them first) are history, not news.
        drawn = max((index for index, turn in enumerate(turns) if turn.get("id") in core.done_turns), default=-1)
        for turn in turns[drawn + 1:]:
            if turn.get("id") not in core.done_turns:
                return turn["id"]
        active = state.get("activeTurn")
        if isinstance(active, dict) and active.get("id") not in core.done_turns:
            return active["id"]
        if core.current_turn is not None and core.current_turn not in core.done_turns:
            return core.current_turn  # our own turn the host has not echoed (or rejected) yet
        return None

    # -- following a turn --------------------------------------------------------------------------

    async def _follow(self, turn_id: str) -> None:
        core = self.core
        core.current_turn = turn_id
        view = TurnView(core.style)
        answer = MarkdownStream(core.width(), theme=core.theme) if core.rich else None
        core.turn_since.setdefault(turn_id, time.monotonic())
        asked: dict[str, str] = {}
        diffed: set[str] = set()
        if turn_id not in core.own_turns:
            # Started by someone else (another client, or the host from the queue): say by what.
            turn, _ = actions.turn_snapshot(core.state(), turn_id)
            text = actions.message_text(turn)
            core.write("\n" + core.style.bold("» ") + clean(text) + "\n")
        try:
            while True:
                core.report_rejections()
                state = core.state()
                turn, finished = actions.turn_snapshot(state, turn_id)
                if turn is None:
                    if core.start_seq is not None and core.client.mirror.outcome(core.start_seq) is None:
                        pass  # our turnStarted is still in flight: wait for the echo
                    else:
                        core.report_rejections()
                        return
                else:
                    self._show(view, answer, turn_id, turn, finished)
                    await self._show_unasked_edits(turn, diffed)
                    if finished:
                        self._turn_ended(turn_id, turn)
                        return
                    if await self.dialogs.open_one(turn_id, turn, asked):
                        continue
                # Typing during a turn steers it; the prompt says so where it stays on screen.
                core.ask(core.style.dim("steer › "), history=True, quiet=True)
                item = await core.next()
                if isinstance(item, Line):
                    await self._turn_line(item.text)
                elif isinstance(item, Interrupt):
                    core.interrupt()
                elif isinstance(item, Escape):
                    core.cancel_turn()
                elif isinstance(item, Eof):
                    core.eof = True
        finally:
            if answer is not None:
                core.write(answer.finish())
            core.catch_up_steering()
            core.terminal.set_tail("")
            core.terminal.set_status(None)
            core.done_turns.add(turn_id)
            core.current_turn = None
            if core.config_after_turn and core.session:
                core.client.dispatch(core.session, builders.session_config_changed(config=core.config_after_turn))
                core.config_after_turn = {}
            core.start_seq = None
            if core.eof:
                raise ChatExit(0)

    async def _show_unasked_edits(self, turn: dict[str, Any], diffed: set[str]) -> None:
        """The diff of each edit that ran without the user being asked (accept-edits, full-auto, a
        remembered choice, a rule), once, after its call: what an asked one showed before it ran."""
        for part in turn.get("responseParts") or ():
            call = part.get("toolCall") if part.get("kind") == "toolCall" else None
            if (not isinstance(call, dict) or call.get("status") != "completed" or not call.get("success")
                    or call.get("confirmed") == "user-action" or call.get("toolCallId") in diffed):
                continue
            diffed.add(call["toolCallId"])
            # The result's fileEdit items: each file's content before and after, as an asked call's edits.
            edits = [item for item in call.get("content") or () if isinstance(item, dict) and item.get("type") == "fileEdit"]
            if edits:
                self.core.write(await self.dialogs.edits_preview({"edits": {"items": edits}}))

    def _show(self, view: TurnView, answer: MarkdownStream | None, turn_id: str, turn: dict[str, Any], finished: bool) -> None:
        """Draw what is new in the turn: answer text as markdown (whole blocks printed, the rest
        live) when rendering with rich, else as it comes; and the live status line."""
        core = self.core
        chunks = view.update_split(turn)
        if answer is None:
            core.write("".join(text for _, text in chunks))
        else:
            core.write(drawn(chunks, answer))  # tool calls, reasoning, usage end the answer block before them
            if finished:
                core.write(answer.finish())
            core.terminal.set_tail(answer.tail())
        core.terminal.set_status(None if finished else turn_status(turn, core.turn_since[turn_id]))

    def _turn_ended(self, turn_id: str, turn: dict[str, Any]) -> None:
        """Call the user back to a turn that ended unwatched (``chat._notify``); not to one they cancelled."""
        core = self.core
        state = turn.get("state")
        if state == "cancelled":
            return
        error = (actions.turn_error(turn) or {}).get("message") if state == "error" else None
        summary = f"the turn failed: {error}" if error else "the turn finished"
        elapsed = time.monotonic() - core.turn_since.get(turn_id, time.monotonic())
        core.terminal.signal(core.notifier.turn_ended(summary, elapsed, core.terminal.focused))

    async def _turn_line(self, text: str) -> None:
        core = self.core
        text = text.strip()
        if not text:
            return
        kind = "steering"
        if text.startswith(">>"):
            kind, text = "queued", text[2:].strip()
        elif text.startswith("/queue"):
            kind, text = "queued", text[len("/queue"):].strip()
        elif text in ("/help", "/?"):
            core.write(HELP_TEXT)
            return
        elif text in ("/quit", "/exit"):
            core.note("(the turn keeps running on the host)")
            raise ChatExit(0)
        elif text.startswith("/") and not text.startswith("//"):
            core.note("a turn is running: wait for it, or press Ctrl-C to cancel it first")
            return
        if not text:
            return
        self.messages.send_pending(kind, text)

    # -- idle lines and commands -----------------------------------------------------------------

    async def _idle_line(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if text.startswith(">>"):
            if await self.messages.ensure_session():
                self.messages.send_pending("queued", text[2:].strip())
            return
        if text.startswith("/") and not text.startswith("//"):
            name, rest = (text[1:].split(None, 1) + [""])[:2]  # the name is the first word, the rest its arguments
            await self._command(name, rest.strip(), text)
            return
        await self.messages.send(text[1:] if text.startswith("//") else text)


    async def _command(self, name: str, args: str, text: str) -> None:
        """Run client command ``name`` (``chat._command_table``) or hand the line to the host."""
        handler = self._handlers.get(name)
        try:
            if handler is not None:
                await handler(args)
            else:
                await self.commands.host_command(name, text)
        except AhpError as error:
            self.core.problem(error.message)
