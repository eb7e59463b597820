"""The dialogs of the interactive chat: confirming a tool call (with its edits preview and an
edit of its input), accepting a tool result, and answering an input request (among them the
host's question whether to trust the session's folder, ``ahp.workspace_trust``, answered before a
new session's first message is sent).

A dialog runs inside the chat loop and reads its answers from the same inbox; it ends by
itself when the host moves on (someone else answered, the turn ended): ``_dialog_line``
returns None then, and on Ctrl-C (which cancels the turn) or Ctrl-D.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ahp.dialects.v0_2 import builders
from ahp.workspace_trust import is_trust_request
from chat import _session as actions
from chat._answers import AnswerError, parse_answer, parse_choice
from chat._core import ChatCore
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


class Dialogs(ChatCore):
    """Confirmation, result and input-request dialogs (``_interrupt`` comes from the loop)."""

    _interrupt: Callable[[], None]

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
        name = clean(call.get("displayName") or call.get("toolName") or "a tool")
        if call.get("status") == "pending-result-confirmation":
            self._call_back(f"{name}: its result waits for you to accept it")
            waits = self._call_waits(turn_id, call_id, "pending-result-confirmation")
            while True:
                self._ask("Accept this result? [y/n] ")
                line = await self._dialog_line(waits)
                if line is None:
                    return
                if line.strip().lower() in ("y", "yes", "n", "no"):
                    approved = line.strip().lower().startswith("y")
                    self.client.dispatch(self.session, actions.result_confirmation(turn_id, call, approved))
                    return
                self._note("type y to accept the result or n to reject it")
        waits = self._call_waits(turn_id, call_id, "pending-confirmation")
        self._call_back(f"{name} waits for your confirmation")
        header, choices = render_confirmation(call, self.style, preview=await self._edits_preview(call))
        self._write(header)
        edited: str | None = None
        while True:
            editable = bool(call.get("editable"))
            self._ask(f"Choose [1-{len(choices)}{', e' if editable else ''}]: ")
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
                self._ask("Reason to give the agent (Enter for none): ")
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
            kept = edited if edited is not None else str(call.get("toolInput") or "")
            if self.terminal.prefills:  # edit in place: the buffer holds the current text
                if command is not None:
                    self._ask("Edit the command (Enter runs this): ", default=command)
                else:
                    self._ask("Edit the input JSON (Enter keeps it): ", default=tool_input_text(current))
            elif command is not None:
                self._ask(f"Current command: {clean(command)}\nNew command (Enter keeps it): ")
            else:
                self._ask(f"Current input: {tool_input_text(current)}\nNew input as JSON on one line (Enter keeps it): ")
            line = await self._dialog_line(waits)
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
                self._note(f"that is not valid JSON ({error.msg} at column {error.colno}); try again")
                continue
            return text

    async def _edits_preview(self, call: dict[str, Any]) -> str:
        """The diffs of the files ``call`` would change (its ``edits``), as the terminal shows them."""
        shown: list[str] = []
        for edit in (call.get("edits") or {}).get("items") or ():
            before, after = edit.get("before"), edit.get("after")
            target = (after or before or {}).get("uri", "")
            try:
                old = await self._read_ref(before)
                new = await self._read_ref(after)
            except AhpError as error:
                shown.append(self.style.dim(f"(cannot show the changes to {clean(target)}: {error.message})") + "\n")
                continue
            path = self._display_path(target)
            if self.rich:  # the code highlighted for its language, changed lines on a tint
                shown.append(render_edit(path, old, new, self.width(), self.theme))
            else:
                shown.append(render_unified_diff(path, old, new, self.style))
        return "".join(shown)

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

        self._call_back(f"a question waits for you: {text_of(request.get('message')) or 'the agent asks for input'}")
        self._write("\n" + render_input_request(request, self.style))
        questions = [q for q in request.get("questions") or () if isinstance(q, dict)]
        if not questions:
            while True:
                self._ask("Done? [y = accept, n = decline] ")
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
                head, _, prompt = render_question(question, self.style).rpartition("\n")
                self._write(head + "\n")
                self._ask(prompt)
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
                    builders.session_input_answer_changed(request_id=request_id, question_id=question["id"], answer=answer),
                )
                answers[question["id"]] = answer
                break
        self._complete(request_id, "accept", answers)

    def _complete(self, request_id: str, response: str, answers: dict[str, Any] | None) -> None:
        assert self.session is not None
        self.client.dispatch(self.session, builders.session_input_completed(request_id=request_id, response=response, answers=answers or None))

    async def _settle_trust(self) -> None:
        for request in actions.open_input_requests(self._state()):
            if is_trust_request(request) and request.get("id") not in self._answered_requests:
                self._answered_requests.add(request["id"])
                await self._answer(request)

    async def _idle_input_requests(self) -> bool:
        for request in actions.open_input_requests(self._state()):
            if request.get("id") not in self._answered_requests:
                self._answered_requests.add(request["id"])
                await self._answer(request)
                return True
        return False

