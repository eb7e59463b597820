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
* Actions the host rejects are reported with the host's reason.

Exit status: 0 normal exit (``/quit``, Ctrl-D, Ctrl-C at the prompt), 1 the connection was lost
and could not be resumed, 130 two quick Ctrl-C while a turn was shown.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, TextIO

from chat import _session as actions
from chat._answers import AnswerError, attachments_in, model_selection, parse_answer, parse_choice, session_directory
from chat._terminal import Eof, Event, Interrupt, Line, Lost, Terminal
from chat.render import (
    HELP_TEXT,
    Style,
    TurnView,
    clean,
    render_agents,
    render_confirmation,
    render_history,
    render_input_request,
    render_models,
    render_question,
    render_session_list,
    render_unified_diff,
    shell_command_of,
    tool_input_text,
)
from client import ROOT_CHANNEL, AhpClient, AhpClientError, AhpError

__all__ = ["ChatApp"]

_METHOD_NOT_FOUND = -32601
_HISTORY_PAGE = 10
_DOUBLE_INTERRUPT_SECONDS = 2.0


class _Exit(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ChatApp:
    """One interactive chat on a connected client; ``await run()`` returns the exit status."""

    def __init__(
        self,
        client: AhpClient,
        terminal: Terminal,
        style: Style,
        out: TextIO,
        *,
        cwd: Path,
        session: str | None = None,
        agent: str | None = None,
        model: str | None = None,
        host_label: str = "",
    ) -> None:
        self.client = client
        self.terminal = terminal
        self.style = style
        self.out = out
        self.cwd = cwd
        self.session: str | None = None
        self._initial_session = session
        self.provider = agent
        """Agent (``AgentInfo.provider``) for sessions this client creates."""
        self.model: dict[str, Any] | None = {"id": model} if model else None
        """Model selection for sessions this client creates."""
        self._host_label = host_label
        self._listed: list[dict[str, Any]] = []
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

    # -- output ----------------------------------------------------------------------------------

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()

    def _note(self, text: str) -> None:
        self._write(self.style.dim(text) + "\n")

    def _problem(self, text: str) -> None:
        self._write(self.style.red("! ") + clean(text) + "\n")

    def _report_rejections(self) -> None:
        rejections = self.client.mirror.rejections
        while self._seen_rejections < len(rejections):
            outcome = rejections[self._seen_rejections]
            self._seen_rejections += 1
            self._problem(f"the host refused {outcome.action.get('type')}: {outcome.reason}")

    # -- main loop -------------------------------------------------------------------------------

    async def run(self) -> int:
        try:
            agent = self.provider or self._default_provider()
            self.provider = agent
            where = f" at {self._host_label}" if self._host_label else ""
            self._note(f"connected{where}" + (f" · agent {agent}" if agent else "") + " · /help for commands")
            if self._initial_session:
                await self._open_session(self._initial_session)
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
                    self._write(self.style.bold("> "))
                    prompt_shown = True
                item = await self._next()
                if isinstance(item, Line):
                    prompt_shown = False
                    await self._idle_line(item.text)
                elif isinstance(item, (Eof, Interrupt)):
                    self._write("\n")
                    return 0
        except _Exit as exit_:
            return exit_.code

    async def _next(self) -> Any:
        """The next inbox item; a lost connection is resumed here (or ends the client)."""
        while True:
            item = await self.terminal.inbox.get()
            if not isinstance(item, Lost):
                return item
            self._problem(f"connection lost: {item.error}")
            try:
                await self.client.resume()
            except (AhpClientError, OSError) as error:
                self._problem(f"could not reconnect: {error}")
                raise _Exit(1) from None
            self.terminal.follow(self.client)
            self._note("(reconnected)")
            return Event(None)  # type: ignore[arg-type]  # "state may have changed"

    def _state(self) -> dict[str, Any] | None:
        return self.client.state(self.session) if self.session else None

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
                    self._write(view.update(turn))
                    if finished:
                        return
                    if await self._dialogs(turn_id, turn, state or {}, asked):
                        continue
                item = await self._next()
                if isinstance(item, Line):
                    await self._turn_line(item.text)
                elif isinstance(item, Interrupt):
                    self._interrupt()
                elif isinstance(item, Eof):
                    self._eof = True
        finally:
            self._done_turns.add(turn_id)
            self._current_turn = None
            self._start_seq = None
            if self._eof:
                raise _Exit(0)

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
            raise _Exit(130)
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
            raise _Exit(0)
        elif text.startswith("/") and not text.startswith("//"):
            self._note("a turn is running: wait for it, or press Ctrl-C to cancel it first")
            return
        if not text:
            return
        self._send_pending(kind, text)

    def _send_pending(self, kind: str, text: str) -> None:
        if not self.session:
            return
        attachments = self._attachments(text)
        self.client.dispatch(self.session, actions.pending_message(kind, text, attachments))
        if kind == "steering":
            self._note("(steering the running turn)")
        else:
            self._note("(queued for after the turn)")

    # -- dialogs -------------------------------------------------------------------------------------

    async def _dialog_line(self, still_needed: Callable[[], bool]) -> str | None:
        """The next typed line, or None when the dialog is moot (host moved on, Ctrl-C, EOF)."""
        while True:
            if not still_needed():
                self._write("\n")
                self._note("(no longer needed: the host moved on)")
                return None
            item = await self._next()
            if isinstance(item, Line):
                return item.text
            if isinstance(item, Interrupt):
                self._interrupt()
                return None
            if isinstance(item, Eof):
                self._eof = True
                return None

    def _call_waits(self, turn_id: str, call_id: str, status: str) -> Callable[[], bool]:
        def check() -> bool:
            turn, finished = actions.turn_snapshot(self._state(), turn_id)
            call = actions.tool_call(turn, call_id) if not finished else None
            return call is not None and call.get("status") == status

        return check

    async def _confirm(self, turn_id: str, call: dict[str, Any]) -> None:
        assert self.session is not None
        call_id = call["toolCallId"]
        if call.get("status") == "pending-result-confirmation":
            waits = self._call_waits(turn_id, call_id, "pending-result-confirmation")
            while True:
                self._write("Accept this result? [y/n] ")
                line = await self._dialog_line(waits)
                if line is None:
                    return
                if line.strip().lower() in ("y", "yes", "n", "no"):
                    approved = line.strip().lower().startswith("y")
                    self.client.dispatch(self.session, actions.result_confirmation(turn_id, call, approved))
                    return
                self._note("type y to accept the result or n to reject it")
        waits = self._call_waits(turn_id, call_id, "pending-confirmation")
        header, choices = render_confirmation(call, self.style)
        self._write(header)
        await self._edits_preview(call)
        edited: str | None = None
        while True:
            editable = bool(call.get("editable"))
            self._write(f"Choose [1-{len(choices)}{', e' if editable else ''}]: ")
            line = await self._dialog_line(waits)
            if line is None:
                return
            try:
                choice = parse_choice(line, choices, editable)
            except AnswerError as error:
                self._note(str(error))
                continue
            if choice == "edit":
                new_input = await self._edit_input(call, edited, waits)
                if new_input is None:
                    return
                edited = new_input
                self._note("(input edited; now pick an allow option to run it)")
                continue
            assert isinstance(choice, int)
            option = choices[choice]
            reason: str | None = None
            if option.get("kind") != "approve":
                self._write("Reason to give the agent (Enter for none): ")
                answer = await self._dialog_line(waits)
                if answer is None:
                    return
                reason = answer.strip() or None
            self.client.dispatch(self.session, actions.confirmation(turn_id, call, option, edited_input=edited, reason_message=reason))
            return

    async def _edit_input(self, call: dict[str, Any], edited: str | None, waits: Callable[[], bool]) -> str | None:
        current = dict(call, toolInput=edited) if edited is not None else call
        command = shell_command_of(current)
        while True:
            if command is not None:
                self._write(f"Current command: {clean(command)}\nNew command (Enter keeps it): ")
            else:
                self._write(f"Current input: {tool_input_text(current)}\nNew input as JSON on one line (Enter keeps it): ")
            line = await self._dialog_line(waits)
            if line is None:
                return None
            text = line.strip()
            if not text:
                return edited if edited is not None else str(call.get("toolInput") or "")
            if command is not None:
                raw = current.get("toolInput")
                parsed = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
                parsed["command"] = text
                return json.dumps(parsed, ensure_ascii=False)
            try:
                json.loads(text)
            except ValueError as error:
                self._note(f"that is not valid JSON ({error.msg} at column {error.colno}); try again")
                continue
            return text

    async def _edits_preview(self, call: dict[str, Any]) -> None:
        for edit in (call.get("edits") or {}).get("items") or ():
            before, after = edit.get("before"), edit.get("after")
            target = (after or before or {}).get("uri", "")
            try:
                old = await self._read_ref(before)
                new = await self._read_ref(after)
            except AhpError as error:
                self._note(f"(cannot show the changes to {clean(target)}: {error.message})")
                continue
            self._write(render_unified_diff(self._display_path(target), old, new, self.style))

    async def _read_ref(self, side: dict[str, Any] | None) -> str | None:
        if not side:
            return None
        ref = side.get("content") or {}
        result = await self.client.request("resourceRead", {"channel": ROOT_CHANNEL, "uri": ref.get("uri"), "encoding": "utf-8"})
        if result.get("encoding") == "base64":
            return "(binary content)\n"
        return str(result.get("data", ""))

    def _display_path(self, uri: str) -> str:
        if uri.startswith("file://"):
            from urllib.parse import unquote, urlparse

            path = Path(unquote(urlparse(uri).path))
            try:
                return str(path.relative_to(self.cwd))
            except ValueError:
                return str(path)
        return uri

    async def _answer(self, request: dict[str, Any]) -> None:
        assert self.session is not None
        request_id = request["id"]

        def still_open() -> bool:
            return any(r.get("id") == request_id for r in actions.open_input_requests(self._state()))

        self._write("\n" + render_input_request(request, self.style))
        questions = [q for q in request.get("questions") or () if isinstance(q, dict)]
        if not questions:
            while True:
                self._write("Done? [y = accept, n = decline] ")
                line = await self._dialog_line(still_open)
                if line is None:
                    return
                word = line.strip().lower()
                if word in ("y", "yes", "n", "no", "/decline", "/cancel"):
                    response = "accept" if word.startswith("y") else "cancel" if word == "/cancel" else "decline"
                    self._complete(request_id, response, None)
                    return
        answers: dict[str, Any] = {}
        for question in questions:
            while True:
                self._write(render_question(question, self.style))
                line = await self._dialog_line(still_open)
                if line is None:
                    return
                if line.strip() in ("/decline", "/cancel"):
                    self._complete(request_id, line.strip()[1:], None)
                    return
                try:
                    answer = parse_answer(question, line)
                except AnswerError as error:
                    self._note(str(error))
                    continue
                self.client.dispatch(
                    self.session,
                    {"type": "session/inputAnswerChanged", "requestId": request_id, "questionId": question["id"], "answer": answer},
                )
                answers[question["id"]] = answer
                break
        self._complete(request_id, "accept", answers)

    def _complete(self, request_id: str, response: str, answers: dict[str, Any] | None) -> None:
        assert self.session is not None
        action: dict[str, Any] = {"type": "session/inputCompleted", "requestId": request_id, "response": response}
        if answers:
            action["answers"] = answers
        self.client.dispatch(self.session, action)

    async def _idle_input_requests(self) -> bool:
        for request in actions.open_input_requests(self._state()):
            if request.get("id") not in self._answered_requests:
                self._answered_requests.add(request["id"])
                await self._answer(request)
                return True
        return False

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
            name, _, rest = text[1:].partition(" ")
            await self._command(name, rest.strip(), text)
            return
        await self._send(text[1:] if text.startswith("//") else text)

    def _attachments(self, text: str) -> list[dict[str, Any]]:
        attachments, problems = attachments_in(text, session_directory(self._state(), self.cwd))
        for problem in problems:
            self._note(f"(not attached: {problem})")
        for attachment in attachments:
            self._note(f"(attached {attachment['label']})")
        return attachments

    async def _ensure_session(self) -> bool:
        if self.session:
            return True
        try:
            self.session = await self.client.create_session(
                provider=self.provider, model=self.model, working_directory=self.cwd.as_uri()
            )
        except AhpError as error:
            self._problem(f"cannot create a session: {error.message}")
            return False
        self._oldest_shown = 0
        self._fetched_before = None
        return True

    async def _send(self, text: str, attachments: list[dict[str, Any]] | None = None) -> None:
        if not await self._ensure_session():
            return
        assert self.session is not None
        state = self._state() or {}
        if state.get("lifecycle") == "creationFailed":
            error = state.get("creationError") or {}
            self._problem(f"this session could not start: {error.get('message', 'unknown error')}; /new starts another")
            return
        all_attachments = self._attachments(text) + list(attachments or [])
        action = actions.turn_started(text, all_attachments)
        self._start_seq = self.client.dispatch(self.session, action)
        self._current_turn = action["turnId"]
        self._own_turns.add(action["turnId"])

    async def _command(self, name: str, args: str, text: str) -> None:
        handler = {
            "help": self._cmd_help,
            "?": self._cmd_help,
            "quit": self._cmd_quit,
            "exit": self._cmd_quit,
            "sessions": self._cmd_sessions,
            "resume": self._cmd_resume,
            "new": self._cmd_new,
            "fork": self._cmd_fork,
            "history": self._cmd_history,
            "agent": self._cmd_agent,
            "agents": self._cmd_agent,
            "model": self._cmd_model,
            "models": self._cmd_model,
            "title": self._cmd_title,
            "queue": self._cmd_queue,
        }.get(name)
        try:
            if handler is not None:
                await handler(args)
            else:
                await self._host_command(name, text)
        except AhpError as error:
            self._problem(error.message)

    async def _cmd_help(self, args: str) -> None:
        self._write(HELP_TEXT)

    async def _cmd_quit(self, args: str) -> None:
        raise _Exit(0)

    async def _cmd_queue(self, args: str) -> None:
        if not args:
            self._note("usage: /queue TEXT")
        elif await self._ensure_session():
            self._send_pending("queued", args)

    async def _cmd_sessions(self, args: str) -> None:
        self._listed = await self.client.list_sessions()
        self._write(render_session_list(self._listed, self.style, current=self.session))

    async def _cmd_resume(self, args: str) -> None:
        target = args.strip()
        if not target:
            self._note("usage: /resume N (from /sessions) or /resume ahp-session:/...")
            return
        if target.isdigit():
            if not self._listed:
                self._listed = await self.client.list_sessions()
            index = int(target)
            if not 1 <= index <= len(self._listed):
                self._note(f"there is no session {index}; /sessions lists {len(self._listed)}")
                return
            target = self._listed[index - 1]["resource"]
        await self._open_session(target)

    async def _open_session(self, uri: str) -> None:
        try:
            await self.client.subscribe(uri)
        except AhpError as error:
            self._problem(f"cannot open {uri}: {error.message}")
            return
        old, self.session = self.session, uri
        if old and old != uri:
            try:
                await self.client.unsubscribe(old)
            except AhpClientError:
                pass
        state = self._state() or {}
        summary = state.get("summary") or {}
        self.provider = summary.get("provider", self.provider)
        turns = state.get("turns") or []
        # Turns already finished are history, not something to follow live.
        self._done_turns.update(t.get("id") for t in turns)
        start = max(0, len(turns) - _HISTORY_PAGE)
        self._write(self.style.bold(f"── {clean(summary.get('title') or 'session')} ──") + self.style.dim(f" {uri}") + "\n")
        self._write(render_history(turns[start:], self.style, first_number=start + 1))
        self._oldest_shown = start
        self._fetched_before = turns[0]["id"] if turns else None
        if start > 0:
            self._note(f"({start} earlier turns: /history)")

    async def _cmd_history(self, args: str) -> None:
        if not self.session:
            self._note("no session yet")
            return
        turns = (self._state() or {}).get("turns") or []
        if self._oldest_shown > 0:
            start = max(0, self._oldest_shown - _HISTORY_PAGE)
            self._write(render_history(turns[start : self._oldest_shown], self.style, first_number=start + 1))
            self._oldest_shown = start
            if start > 0:
                self._note(f"({start} earlier turns: /history)")
            return
        if self._fetched_before is None:
            self._note("(no earlier turns)")
            return
        page = await self.client.fetch_turns(self.session, before=self._fetched_before, limit=_HISTORY_PAGE)
        older = page.get("turns") or []
        if not older:
            self._note("(no earlier turns)")
            self._fetched_before = None
            return
        self._write("".join(render_history([t], self.style).replace("#1 ", "earlier ") for t in older))
        self._fetched_before = older[0]["id"] if page.get("hasMore") else None

    async def _cmd_new(self, args: str) -> None:
        if self.session:
            try:
                await self.client.unsubscribe(self.session)
            except AhpClientError:
                pass
        self.session = None
        self._note("(a new session starts with your next message)")

    async def _cmd_fork(self, args: str) -> None:
        state = self._state()
        turns = (state or {}).get("turns") or []
        if not self.session or not turns:
            self._note("nothing to fork yet: a fork copies a session's finished turns")
            return
        number = int(args) if args.strip().isdigit() else len(turns)
        if not 1 <= number <= len(turns):
            self._note(f"pick a turn from 1 to {len(turns)}")
            return
        source = self.session
        provider = (state or {}).get("summary", {}).get("provider")
        fork = await self.client.create_session(
            provider=provider, fork={"session": source, "turnId": turns[number - 1]["id"]}, subscribe=False
        )
        self._note(f"(forked at turn {number})")
        await self._open_session(fork)

    def _agents(self) -> list[dict[str, Any]]:
        return list((self.client.state(ROOT_CHANNEL) or {}).get("agents") or [])

    def _default_provider(self) -> str | None:
        agents = self._agents()
        return agents[0].get("provider") if agents else None

    async def _cmd_agent(self, args: str) -> None:
        name = args.strip()
        agents = self._agents()
        if not name:
            self._write(render_agents(agents, self.style, current=self.provider))
            return
        if any(a.get("provider") == name for a in agents):
            self.provider = name
            self.model = None
            if self.session:
                await self._cmd_new("")
            else:
                self._note("(a new session starts with your next message)")
            self._note(f"(agent {name})")
            return
        # Not a host agent: maybe an agent customization offered inside this session.
        for container in (self._state() or {}).get("customizations") or ():
            for child in container.get("children") or ():
                if child.get("type") == "agent" and name in (child.get("name"), child.get("id"), child.get("uri")):
                    assert self.session is not None
                    self.client.dispatch(self.session, {"type": "session/agentChanged", "agent": {"uri": child["uri"]}})
                    self._note(f"(agent {clean(child.get('name'))} from the next turn)")
                    return
        known = ", ".join(str(a.get("provider")) for a in agents) or "none"
        self._note(f"no agent {name!r} (agents: {known})")

    async def _cmd_model(self, args: str) -> None:
        provider = self.provider
        state = self._state()
        if state:
            provider = state.get("summary", {}).get("provider", provider)
        agent = next((a for a in self._agents() if a.get("provider") == provider), {})
        models = agent.get("models") or []
        current = (state or {}).get("summary", {}).get("model") if state else self.model
        if not args.strip():
            self._write(render_models(models, self.style, current=current))
            return
        try:
            selection = model_selection(args.split(), models)
        except AnswerError as error:
            self._note(str(error))
            return
        if self.session:
            self.client.dispatch(self.session, {"type": "session/modelChanged", "model": selection})
            self._note(f"(model {selection['id']} from the next turn)")
        else:
            self.model = selection
            self._note(f"(model {selection['id']} for the new session)")

    async def _cmd_title(self, args: str) -> None:
        if not args.strip():
            self._note("usage: /title TEXT")
        elif await self._ensure_session():
            assert self.session is not None
            self.client.dispatch(self.session, {"type": "session/titleChanged", "title": args.strip()})

    async def _host_command(self, name: str, text: str) -> None:
        """``/name args``: a command or skill the host offers through ``completions``."""
        if not await self._ensure_session():
            return
        assert self.session is not None
        offset = len(text.encode("utf-16-le")) // 2  # AHP offsets are UTF-16 code units
        try:
            result = await self.client.request(
                "completions", {"channel": self.session, "kind": "userMessage", "text": text, "offset": offset}
            )
        except AhpError as error:
            if error.code == _METHOD_NOT_FOUND:
                self._note(f"/{name}: this host does not offer commands or skills (it does not support completions yet); /help lists the client's commands")
            else:
                self._problem(f"/{name}: {error.message}")
            return
        items = [i for i in (result or {}).get("items") or () if isinstance(i, dict)]
        match = next((i for i in items if str(i.get("insertText", "")).strip().lstrip("/").split(" ")[0] == name), None)
        if match is None:
            offered = ", ".join(sorted({str(i.get('insertText', '')).strip() for i in items if str(i.get('insertText', '')).startswith('/')}))
            self._note(f"unknown command /{name}" + (f" (the host offers: {offered})" if offered else "; /help lists commands"))
            return
        attachment = match.get("attachment")
        await self._send(text, [attachment] if isinstance(attachment, dict) else None)
