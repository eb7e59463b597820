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
  skill offered through ``completions``. Ctrl-C or Ctrl-D exits.
* While a turn runs (ours or anyone's in this session): its answer streams; a typed line steers
  the turn (``pendingMessageSet`` steering), ``>> text`` or ``/queue text`` queues it; Ctrl-C
  cancels the turn (``turnCancelled``). The cancel applies optimistically, so the client is idle
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

Exit status: 0 normal exit (``/quit``, Ctrl-D, Ctrl-C at the prompt), 1 the connection was lost
and could not be resumed, 130 two quick Ctrl-C while a turn was shown.
"""

from __future__ import annotations

import time
from typing import Any

from chat import _session as actions
from chat._changes import Changes
from chat._commands import CLIENT_COMMANDS, Commands
from chat._core import ChatExit
from chat._dialogs import Dialogs
from chat._markdown import MarkdownStream, drawn
from chat._modes import Modes
from chat._terminal import Eof, Interrupt, Line
from chat.render import HELP_TEXT, TurnView, clean, turn_status
from client import AhpClientError

__all__ = ["ChatApp", "CLIENT_COMMANDS"]

_DOUBLE_INTERRUPT_SECONDS = 2.0


# Changes declares _pick as an attribute (Commands's method, later in the MRO): mypy cannot relate the two.
class ChatApp(Changes, Commands, Dialogs, Modes):  # type: ignore[misc]
    """One interactive chat on a connected client; ``await run()`` returns the exit status.

    The loop lives here; ``Changes`` (``/diff``, ``/undo``, ``/rewind``), ``Commands`` and
    ``Dialogs`` (on the shared ``ChatCore``) do the rest.
    """

    # -- main loop -------------------------------------------------------------------------------

    async def run(self) -> int:
        self._install_mode_key()
        try:
            where = f" at {self._host_label}" if self._host_label else ""
            agent = f"agent {self.provider}" if self.provider else "the host's default agent"
            self._note(f"connected{where} · {agent} · /help for commands")
            if self._initial_session:
                await self._open_session(self._initial_session)
                if self._new_session_mode and self.session and self._current_mode() not in (None, self._new_session_mode):
                    self._switch_mode(self._new_session_mode)  # --permission-mode for the session opened
            elif self._pick_session:
                await self._cmd_resume("")
            prompt_shown = False
            while True:
                self._report_rejections()
                turn_id = self._unfollowed_turn()
                if turn_id is not None:
                    await self._follow(turn_id)
                    prompt_shown = False
                    continue
                if await self._idle_input_requests():
                    prompt_shown = False
                    continue
                if not prompt_shown:
                    prefill, self._prefill = self._prefill, ""
                    self._ask(self.style.bold("> "), default=prefill, history=True)
                    prompt_shown = True
                item = await self._next()
                if isinstance(item, Line):
                    prompt_shown = False
                    await self._idle_line(item.text)
                elif isinstance(item, (Eof, Interrupt)):
                    self._write("\n")
                    return 0
        except ChatExit as exit_:
            return exit_.code


    def _unfollowed_turn(self) -> str | None:
        """The next turn to draw: one that ended unseen (it ran between two looks), else the live one."""
        state = self._state() or {}
        for turn in state.get("turns") or ():
            if isinstance(turn, dict) and turn.get("id") not in self._done_turns:
                return turn["id"]
        active = state.get("activeTurn")
        if isinstance(active, dict) and active.get("id") not in self._done_turns:
            return active["id"]
        if self._current_turn is not None and self._current_turn not in self._done_turns:
            return self._current_turn  # our own turn the host has not echoed (or rejected) yet
        return None

    # -- following a turn --------------------------------------------------------------------------

    async def _follow(self, turn_id: str) -> None:
        self._current_turn = turn_id
        view = TurnView(self.style)
        answer = MarkdownStream(self.width(), theme=self.theme) if self.rich else None
        self._turn_since.setdefault(turn_id, time.monotonic())
        asked: dict[str, str] = {}
        if turn_id not in self._own_turns:
            # Started by someone else (another client, or the host from the queue): say by what.
            turn, _ = actions.turn_snapshot(self._state(), turn_id)
            text = ((turn or {}).get("userMessage") or {}).get("text", "")
            self._write("\n" + self.style.bold("» ") + clean(text) + "\n")
        try:
            while True:
                self._report_rejections()
                state = self._state()
                turn, finished = actions.turn_snapshot(state, turn_id)
                if turn is None:
                    if self._start_seq is not None and self.client.mirror.outcome(self._start_seq) is None:
                        pass  # our turnStarted is still in flight: wait for the echo
                    else:
                        self._report_rejections()
                        return
                else:
                    self._show(view, answer, turn_id, turn, finished)
                    if finished:
                        self._turn_ended(turn_id, turn)
                        return
                    if await self._dialogs(turn_id, turn, state or {}, asked):
                        continue
                # Typing during a turn steers it; the prompt says so where it stays on screen.
                self._ask(self.style.dim("steer › "), history=True, quiet=True)
                item = await self._next()
                if isinstance(item, Line):
                    await self._turn_line(item.text)
                elif isinstance(item, Interrupt):
                    self._interrupt()
                elif isinstance(item, Eof):
                    self._eof = True
        finally:
            if answer is not None:
                self._write(answer.finish())
            self._catch_up_steering()
            self.terminal.set_tail("")
            self.terminal.set_status(None)
            self._done_turns.add(turn_id)
            self._current_turn = None
            self._start_seq = None
            if self._eof:
                raise ChatExit(0)

    def _show(self, view: TurnView, answer: MarkdownStream | None, turn_id: str, turn: dict[str, Any], finished: bool) -> None:
        """Draw what is new in the turn: answer text as markdown (whole blocks printed, the rest
        live) when rendering with rich, else as it comes; and the live status line."""
        chunks = view.update_split(turn)
        if answer is None:
            self._write("".join(text for _, text in chunks))
        else:
            self._write(drawn(chunks, answer))  # tool calls, reasoning, usage end the answer block before them
            if finished:
                self._write(answer.finish())
            self.terminal.set_tail(answer.tail())
        self.terminal.set_status(None if finished else turn_status(turn, self._turn_since[turn_id]))

    def _turn_ended(self, turn_id: str, turn: dict[str, Any]) -> None:
        """Call the user back to a turn that ended unwatched (``chat._notify``); not to one they cancelled."""
        state = turn.get("state")
        if state == "cancelled":
            return
        error = (turn.get("error") or {}).get("message") if state == "error" else None
        summary = f"the turn failed: {error}" if error else "the turn finished"
        elapsed = time.monotonic() - self._turn_since.get(turn_id, time.monotonic())
        self.terminal.signal(self.notifier.turn_ended(summary, elapsed, self.terminal.focused))

    async def _dialogs(self, turn_id: str, turn: dict[str, Any], state: dict[str, Any], asked: dict[str, str]) -> bool:
        """Open at most one dialog for what waits on the user; True if one ran."""
        waiting = {c["toolCallId"]: c for c in actions.waiting_tool_calls(turn)}
        for call_id in [k for k in asked if k not in waiting]:
            del asked[call_id]  # it moved on; a later re-confirmation asks again
        for call_id, call in waiting.items():
            if asked.get(call_id) != call.get("status"):
                asked[call_id] = call["status"]
                await self._confirm(turn_id, call)
                return True
        for request in actions.open_input_requests(state):
            if request.get("id") not in self._answered_requests:
                self._answered_requests.add(request["id"])
                await self._answer(request)
                return True
        return False

    def _interrupt(self) -> None:
        now = time.monotonic()
        if now - self._last_interrupt < _DOUBLE_INTERRUPT_SECONDS:
            self._write("\n")
            raise ChatExit(130)
        self._last_interrupt = now
        state = self._state() or {}
        active = state.get("activeTurn")
        if self.session and isinstance(active, dict):
            try:
                self.client.cancel_turn(self.session, active["id"])
            except AhpClientError as error:
                self._problem(f"could not cancel: {error}")
                return
            self._write("\n" + self.style.yellow("^C cancelling the turn (Ctrl-C again to exit)") + "\n")

    async def _turn_line(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        kind = "steering"
        if text.startswith(">>"):
            kind, text = "queued", text[2:].strip()
        elif text.startswith("/queue"):
            kind, text = "queued", text[len("/queue"):].strip()
        elif text in ("/help", "/?"):
            self._write(HELP_TEXT)
            return
        elif text in ("/quit", "/exit"):
            self._note("(the turn keeps running on the host)")
            raise ChatExit(0)
        elif text.startswith("/") and not text.startswith("//"):
            self._note("a turn is running: wait for it, or press Ctrl-C to cancel it first")
            return
        if not text:
            return
        self._send_pending(kind, text)

    # -- idle lines and commands -----------------------------------------------------------------

    async def _idle_line(self, text: str) -> None:
        text = text.strip()
        if not text:
            return
        if text.startswith(">>"):
            if await self._ensure_session():
                self._send_pending("queued", text[2:].strip())
            return
        if text.startswith("/") and not text.startswith("//"):
            name, rest = (text[1:].split(None, 1) + [""])[:2]  # the name is the first word, the rest its arguments
            await self._command(name, rest.strip(), text)
            return
        await self._send(text[1:] if text.startswith("//") else text)

