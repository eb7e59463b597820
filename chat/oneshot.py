"""``agent-host chat -p MESSAGE``: send one message, print the answer, exit with the turn's outcome.

Output (``output_format``):

* ``text``: the answer text (markdown parts) goes to stdout, as it streams; reasoning, tool
  activity, usage and errors go to stderr, so ``agent-host -p "..." > answer.md`` captures only
  the answer.
* ``json``: nothing until the end, then one JSON object on stdout (``chat._stream.result_object``:
  the answer, session id, usage, turns, whether it errored); notes still go to stderr.
* ``stream-json``: one JSON object per line on stdout as things happen: ``{"type": "init",
  "session_id", "session", "agent", "model", "cwd"}``, the turn's events (``chat._stream``),
  ``{"type": "decision", ...}`` for each answer the client gives for the user, and the
  ``result`` object last. Every line is a whole JSON object.

A session it creates is marked as a script's (``createSession`` with ``_meta.oneShot``), so
``/resume`` lists it only when asked (``--all``).

Nobody is at the keyboard, so the client answers for the user: a tool call waiting for
confirmation is denied with the host's first deny option (``--yes``: approved with its first
approve option); a result waiting for acceptance is rejected (``--yes``: accepted); an input
request is declined. Each decision is reported on stderr (and in ``stream-json``).

The host's question whether to trust the session's folder (``ahp.workspace_trust``) is answered
before the message is sent: "for this session only" with ``trust`` (``--trust``), else no, so an
untrusted folder's hooks, ``.mcp.json`` servers and plugins stay off and the stderr note says how
to allow them. Neither answer counts as refusing something for the user (exit status 3).

Remembered *Always allow* choices: without ``--yes`` the run uses only those remembered for this
project (or none, when the session says so), never host-wide ones, and says so each time one let a call run without asking
(``(allowed without asking by a choice remembered for ~/app: write_file)`` on the call's line on
stderr, a ``{"type": "decision", "decision": "remembered", ...}`` object in ``stream-json``). It asks the
host for this by setting the session's ``useRememberedApprovals`` to ``"project"`` before the
message (when the host offers the property); a session it resumed gets its previous value back
when the run ends. ``agent-host chat`` and ``/permissions`` list and revoke the choices.

``permission_mode`` (``--permission-mode``): a new session is created in that mode; a resumed
one is switched to it and gets its previous mode back when the run ends. ``full-auto`` runs every
call without asking (the client then has nothing to refuse), ``plan`` offers the model read-only
tools and its plan is declined (nobody is there to approve it), ``accept-edits`` runs edits.

Limits: ``max_turns`` cancels the turn as soon as its tool calls would have the model answer more
than N times (``chat._stream.model_rounds``: the call is not run, the model not asked again); ``idle_timeout`` seconds without any news from the host while the
turn waits on the agent (not while a tool runs) cancel it too, and the message says so.

Exit status: 0 the turn completed; 1 it ended in error, the session could not start, the host
refused the message, or a limit (``--timeout``, ``--max-turns``) stopped it; 2 usage and
connection problems; 3 the turn completed but the client refused something for the user (a tool
call denied, a result rejected, an input request declined: pass ``--yes``); 130 it was
cancelled (Ctrl-C cancels it).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import chat._session as actions
from ahp.protocol import builders
from ahp.state import default_chat_uri
from ahp.workspace_trust import TRUST_SESSION, is_trust_request, trust_answers
from chat._answers import attachments_in, session_directory
from chat._images import model_sees_images
from chat._stream import TurnEvents, model_rounds, result_object
from chat.render import Style, TurnView, clean, text_of
from client import ROOT_CHANNEL, AhpClient, AhpClientError, AhpError

__all__ = ["run_oneshot", "EXIT_OK", "EXIT_TURN_ERROR", "EXIT_USAGE", "EXIT_REFUSED", "EXIT_CANCELLED", "IDLE_TIMEOUT", "OUTPUT_FORMATS"]

EXIT_OK = 0
EXIT_TURN_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_CANCELLED = 130

IDLE_TIMEOUT = 120.0
"""Default ``--timeout``: seconds a script waits on a silent agent before the turn is cancelled."""

OUTPUT_FORMATS = ("text", "json", "stream-json")

_CANCEL_GRACE = 10.0
"""Seconds the client waits for the host to end a turn it cancelled because of a limit."""


class _Output:
    """Where each kind of output goes for one output format."""

    def __init__(self, fmt: str, out: TextIO, err: TextIO, err_style: Style) -> None:
        self.fmt = fmt
        self.out = out
        self.err = err
        self.view = TurnView(err_style)
        self.events = TurnEvents()

    def note(self, text: str, **event: Any) -> None:
        """A line for a person (stderr); in stream-json also ``event`` as an object."""
        if text:
            self.err.write(text)
            self.err.flush()
        if event and self.fmt == "stream-json":
            self.emit(event)

    def emit(self, event: dict[str, Any]) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.out.flush()

    def turn(self, turn: dict[str, Any]) -> None:
        if self.fmt == "text":
            for channel, text in self.view.update_split(turn):
                (self.out if channel == "answer" else self.err).write(text)
            self.out.flush()
            self.err.flush()
        elif self.fmt == "stream-json":
            for event in self.events.update(turn):
                self.emit(event)


async def run_oneshot(client: AhpClient, message: str, **options: Any) -> int:
    """Run one turn and return the exit status (see the module docstring)."""
    restore: dict[str, Any] = {}
    try:
        return await _oneshot(client, message, restore=restore, **options)
    finally:
        session = restore.pop("session", None)
        if session is not None and restore:
            client.dispatch(session, builders.session_config_changed(config=restore))
            await _settle(client)


async def _only_project_choices(client: AhpClient, session: str, *, resumed: bool) -> dict[str, Any] | None:
    """Have the host use only this project's remembered approvals in the session; returns the
    config to put back when the run ends (a resumed session's previous value), or None."""
    config = _view(client, session).get("config") or {}
    if actions.REMEMBERED_USE not in ((config.get("schema") or {}).get("properties") or {}):
        return None  # a host that keeps no remembered approvals
    previous = (config.get("values") or {}).get(actions.REMEMBERED_USE)
    if previous in ("project", "none"):
        return None  # already this project's only, or stricter: never loosen it
    seq = client.dispatch(session, builders.session_config_changed(config={actions.REMEMBERED_USE: "project"}))
    outcome = await client.outcome(seq)
    if outcome.status != "accepted":
        raise AhpClientError(f"the host refused it: {outcome.reason}")
    return {actions.REMEMBERED_USE: previous or "all"} if resumed else None


async def _switch_mode(client: AhpClient, session: str, mode: str) -> str | None:
    """Put a resumed session in ``mode`` for this run; returns the mode to put back, or None."""
    previous = actions.permission_mode(_view(client, session))
    if previous is None:
        raise AhpClientError("the session has no permission modes (its host runs no tools, or it predates them)")
    if previous == mode:
        return None
    outcome = await client.outcome(client.dispatch(session, builders.session_config_changed(config={actions.PERMISSION_MODE: mode})))
    if outcome.status != "accepted":
        raise AhpClientError(f"the host refused it: {outcome.reason}")
    return previous


async def _oneshot(
    client: AhpClient,
    message: str,
    *,
    restore: dict[str, Any],
    out: TextIO,
    err: TextIO,
    err_style: Style,
    cwd: Path,
    session: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    approve: bool = False,
    trust: bool = False,
    timeout: float | None = None,
    output_format: str = "text",
    max_turns: int | None = None,
    idle_timeout: float | None = IDLE_TIMEOUT,
    permission_mode: str | None = None,
) -> int:
    output = _Output(output_format, out, err, err_style)
    started = time.monotonic()
    turn: dict[str, Any] | None = None
    refused_for_user = False

    def finish(code: int, subtype: str, error: str | None = None) -> int:
        if error:
            output.note(f"agent-host: {error}\n")
        if output_format != "text":
            output.emit(result_object(session=session, turn=turn, exit_code=code, subtype=subtype, error=error,
                                      duration_ms=int((time.monotonic() - started) * 1000)))
        return code

    resumed = session is not None
    try:
        if session is not None:
            await client.subscribe(session)
            await client.subscribe(default_chat_uri(session))
        else:
            session = await client.create_session(provider=agent, model=model, working_directory=cwd.as_uri(),
                                                  meta={"oneShot": True},  # listed by /resume only on request
                                                  config={actions.PERMISSION_MODE: permission_mode} if permission_mode else None)
    except AhpError as error:
        return finish(EXIT_USAGE if session is not None else EXIT_TURN_ERROR, "error", error.message)
    if resumed and permission_mode:
        try:
            previous = await _switch_mode(client, session, permission_mode)
        except (AhpError, AhpClientError) as error:
            return finish(EXIT_USAGE, "error", f"could not switch the session to {permission_mode} mode: {error}")
        if previous is not None:
            restore.update({actions.PERMISSION_MODE: previous, "session": session})
    if output_format == "stream-json":
        summary = _view(client, session).get("summary") or {}
        output.emit({"type": "init", "session_id": session.rsplit("/", 1)[-1], "session": session,
                     "agent": summary.get("provider"), "model": (summary.get("model") or {}).get("id"), "cwd": str(cwd)})

    if not approve:
        try:
            restore.update(await _only_project_choices(client, session, resumed=resumed) or {})
        except (AhpError, AhpClientError) as error:
            return finish(EXIT_USAGE, "error", f"could not limit the session to this project's remembered approvals: {error}")
        if restore:
            restore["session"] = session

    chat = default_chat_uri(session)
    trust_answered: set[str] = set()

    def answer_trust(state: dict[str, Any]) -> None:
        for request in actions.open_input_requests(state):
            if is_trust_request(request) and request["id"] not in trust_answered:
                trust_answered.add(request["id"])
                if trust:
                    client.dispatch(chat, builders.chat_input_completed(request_id=request["id"], response="accept",
                                                                        answers=trust_answers(TRUST_SESSION)))
                    output.note("(trusted this folder for this session: its hooks, .mcp.json servers and plugins run)\n",
                                type="decision", decision="trusted", request="workspace trust")
                else:
                    client.dispatch(chat, builders.chat_input_completed(request_id=request["id"], response="decline"))
                    output.note("(this folder is not trusted: its hooks, .mcp.json servers and plugins do not run; "
                                "pass --trust to run them)\n", type="decision", decision="untrusted", request="workspace trust")

    answer_trust(_view(client, session))
    sees, model_name = model_sees_images((client.state(ROOT_CHANNEL) or {}).get("agents") or (), _view(client, session))
    attachments, problems = attachments_in(message, session_directory(_view(client, session), cwd), vision=sees, model=model_name)
    for problem in problems:
        output.note(f"(not attached: {problem})\n")
    events = client.subscribe_events()  # before dispatching: no update can slip past the loop
    action = actions.turn_started(message, attachments)
    turn_id = action["turnId"]
    seq = client.dispatch(chat, action)

    cancel_requested = asyncio.Event()
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, cancel_requested.set)
    except (NotImplementedError, RuntimeError):
        pass

    answered: set[tuple[str, str]] = set()
    noted: set[str] = set()
    """Calls already reported as allowed by a remembered choice."""
    declined: set[str] = set()
    cancelled_sent = False
    stopped: tuple[str, str] | None = None
    """Why the client cancelled the turn itself (subtype, message), reported when it ends."""
    deadline = None if timeout is None else loop.time() + timeout
    idle_since = loop.time()
    stop_deadline: float | None = None

    def stop(subtype: str, why: str) -> None:
        nonlocal cancelled_sent, stopped
        stopped = (subtype, why)
        if not cancelled_sent:
            cancelled_sent = True
            client.cancel_turn(session, turn_id)

    try:
        while True:
            outcome = client.mirror.outcome(seq)
            if outcome is not None and outcome.status != "accepted":
                return finish(EXIT_TURN_ERROR, "refused", f"the host refused the message: {outcome.reason}")
            state = _view(client, session)
            if state.get("lifecycle") == "failed":
                failure = state.get("creationError") or {}
                return finish(EXIT_TURN_ERROR, "error", f"the session could not start: {clean(failure.get('message', 'unknown error'))}")
            turn, finished = actions.turn_snapshot(state, turn_id)
            if turn is not None:
                output.turn(turn)
                for call, approval in actions.remembered_tool_calls(turn):
                    if call["toolCallId"] not in noted:
                        noted.add(call["toolCallId"])
                        _note_remembered(call, approval, output.note)
            if finished and outcome is not None:
                if turn is None:
                    return finish(EXIT_TURN_ERROR, "error", "the turn disappeared (the session was truncated or disposed)")
                await _settle(client)
                ended = turn.get("state")
                if stopped is not None:
                    return finish(EXIT_TURN_ERROR, *stopped)
                if ended == "complete":
                    return finish(EXIT_REFUSED, "denied") if refused_for_user else finish(EXIT_OK, "success")
                if ended == "cancelled":
                    return finish(EXIT_CANCELLED, "cancelled")
                return finish(EXIT_TURN_ERROR, "error", None if output_format == "text" else text_of((actions.turn_error(turn) or {}).get("message")) or "the turn failed")
            if turn is not None and not finished:
                if max_turns is not None and model_rounds(turn) > max_turns and not cancelled_sent:
                    stop("max_turns", f"stopped the turn: its tool calls would have the model answer more than {max_turns} time(s) (--max-turns {max_turns})")
                for call in () if cancelled_sent else actions.waiting_tool_calls(turn):
                    key = (call["toolCallId"], call["status"])
                    if key in answered:
                        continue
                    answered.add(key)
                    refused_for_user |= not approve
                    _decide(client, chat, turn_id, call, approve, output.note)
            answer_trust(state)
            for request in actions.open_input_requests(state):
                if request["id"] not in declined and request["id"] not in trust_answered:
                    declined.add(request["id"])
                    refused_for_user = True
                    asked = text_of(request.get("message")) or "for input"
                    output.note(f"(the agent asks: {asked}; declined: -p mode cannot answer)\n",
                                type="decision", decision="declined", request=asked)
                    client.dispatch(chat, builders.chat_input_completed(request_id=request["id"], response="decline"))
            if cancel_requested.is_set() and not cancelled_sent and turn is not None and not finished:
                cancelled_sent = True
                client.cancel_turn(session, turn_id)
                output.note("\n^C cancelling the turn\n")
            now = loop.time()
            if turn is not None and _tool_running(turn):
                idle_since = now  # a tool at work is not a stalled agent
            if deadline is not None and deadline <= now:
                return finish(EXIT_TURN_ERROR, "timeout", "gave up waiting for the turn to finish")
            if stop_deadline is not None and stop_deadline <= now and stopped is not None:
                return finish(EXIT_TURN_ERROR, stopped[0], stopped[1] + " (the host did not confirm the cancellation)")
            if idle_timeout is not None and not cancelled_sent and idle_since + idle_timeout <= now:
                stop("timeout", f"no news from the agent for {idle_timeout:g}s (--timeout); the turn was cancelled")
            if stopped is not None and stop_deadline is None:
                stop_deadline = now + _CANCEL_GRACE
            wakes = [t for t in (deadline, stop_deadline, None if idle_timeout is None or cancelled_sent else idle_since + idle_timeout) if t is not None]
            next_event = asyncio.ensure_future(events.get())
            interrupt = asyncio.ensure_future(cancel_requested.wait())
            done, pending = await asyncio.wait(
                {next_event, interrupt}, timeout=max(0.0, min(wakes) - now) if wakes else None, return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if next_event in done:
                idle_since = loop.time()
                if next_event.result() is None:
                    return finish(EXIT_USAGE, "error", "the connection to the host was lost")
            while not events.empty():  # state is read whole next time round: drain the backlog
                if events.get_nowait() is None:
                    return finish(EXIT_USAGE, "error", "the connection to the host was lost")
    except AhpClientError as error:
        return finish(EXIT_USAGE, "error", str(error))
    finally:
        client.unsubscribe_events(events)
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError, ValueError):
            pass


def _view(client: AhpClient, session: str) -> dict[str, Any]:
    """The session's default chat as the chat client reads it (``chat._session.chat_view``)."""
    chat = default_chat_uri(session)
    return actions.chat_view(client.state(session), chat, client.state(chat)) or {}


def _tool_running(turn: dict[str, Any]) -> bool:
    return any(p.get("kind") == "toolCall" and (p.get("toolCall") or {}).get("status") == "running" for p in turn.get("responseParts") or ())


async def _settle(client: AhpClient) -> None:
    """Wait (briefly) until the host has answered every action we sent, so none is lost at exit."""
    try:
        await client.wait_for(lambda mirror, _event: not mirror.pending(), timeout=5.0)
    except AhpClientError:
        pass


def _note_remembered(call: dict[str, Any], approval: dict[str, Any], say: Callable[..., None]) -> None:
    """``stream-json``'s account of a call a remembered choice allowed (the text output says it on the
    call's line, ``chat.render.remembered_note``)."""
    say("", type="decision", decision="remembered", rule=approval["rule"], scope=approval.get("scope"),
        project=approval.get("project"), tool_call_id=call["toolCallId"], tool=call.get("toolName"))


def _decide(client: AhpClient, chat: str, turn_id: str, call: dict[str, Any], approve: bool, say: Callable[..., None]) -> None:
    name = clean(call.get("displayName") or call.get("toolName") or "tool")
    if call["status"] == "pending-result-confirmation":
        client.dispatch(chat, actions.result_confirmation(turn_id, call, approve))
        say(f"({'accepted' if approve else 'rejected'} the result of {name}{'' if approve else '; pass --yes to accept results'})\n",
            type="decision", decision="accepted" if approve else "rejected", tool_call_id=call["toolCallId"], tool=call.get("toolName"))
        return
    option = actions.first_option(call, "approve" if approve else "deny")
    reason = None if approve else "Denied automatically: the chat client runs non-interactively (-p) without --yes."
    client.dispatch(chat, actions.confirmation(turn_id, call, option, reason_message=reason))
    label = clean(option.get("label") or ("allowed" if approve else "denied"))
    hook = _HOOK_ASKS.search(text_of(call.get("confirmationTitle")) or "")
    why = {"hook_reason": hook.group(1)} if hook else {}
    said = f"; a plugin hook asks: {clean(hook.group(1))}" if hook else ""
    say(f"({label}: {name}{said}{'' if approve else '; pass --yes to allow tool calls'})\n",
        type="decision", decision="approved" if approve else "denied", option=option.get("id"), tool_call_id=call["toolCallId"],
        tool=call.get("toolName"), **why)


_HOOK_ASKS = re.compile(r"\(a plugin hook asks: (.*)\)\s*$", re.DOTALL)
"""How the host's confirmation title carries the reason of a hook that asked (``permissionDecision: ask``)."""
