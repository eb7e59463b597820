"""The dialogs of the interactive chat: confirming a tool call (with its edits preview and an
edit of its input), accepting a tool result, answering an input request (among them the host's
question whether to trust the session's folder, ``ahp.workspace_trust``, answered before a new
session's first message is sent: ``chat._messages``), and the questions the slash commands ask
(a number from a list: ``pick``; a line: ``line``).

A dialog runs inside the chat loop and reads its answers from the same inbox; it ends by
itself when the host moves on (someone else answered, the turn ended): ``line`` returns None
then, and on Ctrl-C (which cancels the turn) or Ctrl-D. ``Dialogs`` also shows the files an
edit would change (``edits_preview``, ``read_ref``, ``display_path``), which ``/diff`` shares.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import chat._session as actions
from ahp.protocol import builders
from ahp.workspace_trust import is_trust_request
from chat._answers import AnswerError, parse_answer, parse_choice
from chat._core import ChatCore, ChatExit
from chat._markdown import render_edit
from chat._terminal import Eof, Interrupt, Line
from chat.render import (
    clean,
    render_confirmation,
    render_input_request,
    render_question,
    render_unified_diff,
    shell_command_of,
    text_of,
    tool_input_text,
)
from client import ROOT_CHANNEL, AhpError

__all__ = ["Dialogs"]


class Dialogs:
    """The chat's dialogs, on its shared ``core`` (see the module docstring)."""

    def __init__(self, core: ChatCore) -> None:
        self.core = core
        self._answered_requests: set[str] = set()
        """Input requests the user was already asked (each is asked once)."""

    async def line(self, still_needed: Callable[[], bool]) -> str | None:
        """The next typed line, or None when the dialog is moot (host moved on, Ctrl-C, EOF)."""
        while True:
            if not still_needed():
                self.core.write("\n")
                self.core.note("(no longer needed: the host moved on)")
                return None
            item = await self.core.next()
            if isinstance(item, Line):
                return item.text
            if isinstance(item, Interrupt):
                self.core.interrupt()
                return None
            if isinstance(item, Eof):
                self.core.eof = True
                return None

    async def pick(self, prompt: str, count: int) -> int | None:
        """A number from 1 to ``count`` typed by the user; None for an empty line or Ctrl-C."""
        self.core.ask(prompt)
        while True:
            item = await self.core.next()
            if isinstance(item, Eof):
                raise ChatExit(0)
            if isinstance(item, Interrupt):
                return None
            if not isinstance(item, Line):
                continue  # the host's news: keep waiting for the answer
            text = item.text.strip()
            if not text:
                return None
            if text.isdigit() and 1 <= int(text) <= count:
                return int(text)
            self.core.ask(f"type a number from 1 to {count}, or Enter to cancel: ")

    async def open_one(self, turn_id: str, turn: dict[str, Any], asked: dict[str, str]) -> bool:
        """Open at most one dialog for what in ``turn`` waits on the user; True if one ran.
        ``asked`` (the tool calls already asked about, with the status asked in) is the caller's,
        kept for the turn it follows."""
        waiting = {c["toolCallId"]: c for c in actions.waiting_tool_calls(turn)}
        for call_id in [k for k in asked if k not in waiting]:
            del asked[call_id]  # it moved on; a later re-confirmation asks again
        for call_id, call in waiting.items():
            if asked.get(call_id) != call.get("status"):
                asked[call_id] = call["status"]
                await self.confirm(turn_id, call)
                return True
        return await self.idle_input_requests()

    def _call_waits(self, turn_id: str, call_id: str, status: str) -> Callable[[], bool]:
        def check() -> bool:
            turn, finished = actions.turn_snapshot(self.core.state(), turn_id)
            call = actions.tool_call(turn, call_id) if not finished else None
            return call is not None and call.get("status") == status

        return check

    async def confirm(self, turn_id: str, call: dict[str, Any]) -> None:
        assert self.core.session is not None
        call_id = call["toolCallId"]
        name = clean(call.get("displayName") or call.get("toolName") or "a tool")
        if call.get("status") == "pending-result-confirmation":
            self.core.call_back(f"{name}: its result waits for you to accept it")
            waits = self._call_waits(turn_id, call_id, "pending-result-confirmation")
            while True:
                self.core.ask("Accept this result? [y/n] ")
                line = await self.line(waits)
                if line is None:
                    return
                if line.strip().lower() in ("y", "yes", "n", "no"):
                    approved = line.strip().lower().startswith("y")
                    self.core.client.dispatch(self.core.chat or self.core.session, actions.result_confirmation(turn_id, call, approved))
                    return
                self.core.note("type y to accept the result or n to reject it")
        waits = self._call_waits(turn_id, call_id, "pending-confirmation")
        self.core.call_back(f"{name} waits for your confirmation")
        header, choices = render_confirmation(call, self.core.style, preview=await self.edits_preview(call))
        self.core.write(header)
        edited: str | None = None
        while True:
            editable = bool(call.get("editable"))
            self.core.ask(f"Choose [1-{len(choices)}{', e' if editable else ''}]: ")
            line = await self.line(waits)
            if line is None:
                return
            try:
                choice = parse_choice(line, choices, editable)
            except AnswerError as error:
                self.core.note(str(error))
                continue
            if choice == "edit":
                new_input = await self._edit_input(call, edited, waits)
                if new_input is None:
                    return
                edited = new_input
                self.core.note("(input edited; now pick an allow option to run it)")
                continue
            assert isinstance(choice, int)
            option = choices[choice]
            reason: str | None = None
            if option.get("kind") != "approve" and _asks_reason(option):
                self.core.ask("Reason to give the agent (Enter for none): ")
                answer = await self.line(waits)
                if answer is None:
                    return
                reason = answer.strip() or None
            self.core.client.dispatch(self.core.chat or self.core.session,
                                      actions.confirmation(turn_id, call, option, edited_input=edited, reason_message=reason))
            return

    async def _edit_input(self, call: dict[str, Any], edited: str | None, waits: Callable[[], bool]) -> str | None:
        current = dict(call, toolInput=edited) if edited is not None else call
        command = shell_command_of(current)
        while True:
            kept = edited if edited is not None else str(call.get("toolInput") or "")
            if self.core.terminal.prefills:  # edit in place: the buffer holds the current text
                if command is not None:
                    self.core.ask("Edit the command (Enter runs this): ", default=command)
                else:
                    self.core.ask("Edit the input JSON (Enter keeps it): ", default=tool_input_text(current))
            elif command is not None:
                self.core.ask(f"Current command: {clean(command)}\nNew command (Enter keeps it): ")
            else:
                self.core.ask(f"Current input: {tool_input_text(current)}\nNew input as JSON on one line (Enter keeps it): ")
            line = await self.line(waits)
            if line is None:
                return None
            text = line.strip()
            if not text or (command is not None and text == command.strip()):
                return kept
            if command is not None:
                raw = current.get("toolInput")
                parsed = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
                parsed["command"] = text
                return json.dumps(parsed, ensure_ascii=False)
            try:
                json.loads(text)
            except json.JSONDecodeError as error:
                self.core.note(f"that is not valid JSON ({error.msg} at column {error.colno}); try again")
                continue
            return text

    async def edits_preview(self, call: dict[str, Any]) -> str:
        """The diffs of the files ``call`` would change (its ``edits``), as the terminal shows them."""
        shown: list[str] = []
        for edit in (call.get("edits") or {}).get("items") or ():
            before, after = edit.get("before"), edit.get("after")
            target = (after or before or {}).get("uri", "")
            try:
                old = await self.read_ref(before)
                new = await self.read_ref(after)
            except AhpError as error:
                shown.append(self.core.style.dim(f"(cannot show the changes to {clean(target)}: {error.message})") + "\n")
                continue
            path = self.display_path(target)
            if self.core.rich:  # the code highlighted for its language, changed lines on a tint
                shown.append(render_edit(path, old, new, self.core.width(), self.core.theme))
            else:
                shown.append(render_unified_diff(path, old, new, self.core.style))
        return "".join(shown)

    async def read_ref(self, side: dict[str, Any] | None) -> str | None:
        if not side:
            return None
        ref = side.get("content") or {}
        result = await self.core.client.request("resourceRead", {"channel": ROOT_CHANNEL, "uri": ref.get("uri"), "encoding": "utf-8"})
        if result.get("encoding") == "base64":
            return "(binary content)\n"
        return str(result.get("data", ""))

    def display_path(self, uri: str) -> str:
        if uri.startswith("file://"):
            path = Path(unquote(urlparse(uri).path))
            try:
                return str(path.relative_to(self.core.cwd))
            except ValueError:
                return str(path)
        return uri

    async def answer(self, request: dict[str, Any]) -> None:
        assert self.core.session is not None
        request_id = request["id"]

        def still_open() -> bool:
            return any(r.get("id") == request_id for r in actions.open_input_requests(self.core.state()))

        self.core.call_back(f"a question waits for you: {text_of(request.get('message')) or 'the agent asks for input'}")
        self.core.write("\n" + render_input_request(request, self.core.style))
        questions = [q for q in request.get("questions") or () if isinstance(q, dict)]
        if not questions:
            while True:
                self.core.ask("Done? [y = accept, n = decline] ")
                line = await self.line(still_open)
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
                head, _, prompt = render_question(question, self.core.style).rpartition("\n")
                self.core.write(head + "\n")
                self.core.ask(prompt)
                line = await self.line(still_open)
                if line is None:
                    return
                if line.strip() in ("/decline", "/cancel"):
                    self._complete(request_id, line.strip()[1:], None)
                    return
                try:
                    answer = parse_answer(question, line)
                except AnswerError as error:
                    self.core.note(str(error))
                    continue
                self.core.client.dispatch(
                    self.core.chat or self.core.session,
                    builders.chat_input_answer_changed(request_id=request_id, question_id=question["id"], answer=answer),
                )
                answers[question["id"]] = answer
                break
        self._complete(request_id, "accept", answers)

    def _complete(self, request_id: str, response: str, answers: dict[str, Any] | None) -> None:
        assert self.core.session is not None
        self.core.client.dispatch(self.core.chat or self.core.session,
                                  builders.chat_input_completed(request_id=request_id, response=response, answers=answers or None))

    async def settle_trust(self) -> None:
        """Answer the new session's question whether to trust its folder, if it asks one."""
        for request in actions.open_input_requests(self.core.state()):
            if is_trust_request(request) and request.get("id") not in self._answered_requests:
                self._answered_requests.add(request["id"])
                await self.answer(request)

    async def idle_input_requests(self) -> bool:
        """Answer the session's first input request not asked yet; True if there was one."""
        for request in actions.open_input_requests(self.core.state()):
            if request.get("id") not in self._answered_requests:
                self._answered_requests.add(request["id"])
                await self.answer(request)
                return True
        return False


def _asks_reason(option: dict[str, Any]) -> bool:
    """Whether a deny option is the one that sends the agent a reason ("Deny with a reason…"); a
    plain "Deny" denies at once, as Claude Code's does."""
    return "reason" in f"{option.get('id', '')} {option.get('label', '')}".casefold()
