"""``agent-host chat -p MESSAGE``: send one message, print the answer, exit with the turn's outcome.

The answer text (markdown parts) goes to stdout, as it streams; reasoning, tool activity, usage
and errors go to stderr, so ``agent-host chat -p "..." > answer.md`` captures only the answer.

Nobody is at the keyboard, so the client answers for the user: a tool call waiting for
confirmation is denied with the host's first deny option (``--yes``: approved with its first
approve option); a result waiting for acceptance is rejected (``--yes``: accepted); an input
request is declined. Each decision is reported on stderr.

Exit status: 0 the turn completed, 1 it ended in error (or the session could not start, or the
host refused the message), 130 it was cancelled (Ctrl-C cancels it), 2 connection problems.
"""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path
from typing import Any, TextIO

from chat import _session as actions
from chat._answers import attachments_in, session_directory
from chat.render import Style, TurnView, clean, text_of
from client import AhpClient, AhpClientError, AhpError

__all__ = ["run_oneshot", "EXIT_OK", "EXIT_TURN_ERROR", "EXIT_USAGE", "EXIT_CANCELLED"]

EXIT_OK = 0
EXIT_TURN_ERROR = 1
EXIT_USAGE = 2
EXIT_CANCELLED = 130


async def run_oneshot(
    client: AhpClient,
    message: str,
    *,
    out: TextIO,
    err: TextIO,
    err_style: Style,
    cwd: Path,
    session: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    approve: bool = False,
    timeout: float | None = None,
) -> int:
    """Run one turn and return the exit status (see the module docstring)."""

    def say(text: str) -> None:
        if text:
            err.write(text)
            err.flush()

    try:
        if session is not None:
            await client.subscribe(session)
        else:
            session = await client.create_session(provider=agent, model=model, working_directory=cwd.as_uri())
    except AhpError as error:
        say(f"agent-host chat: {error.message}\n")
        return EXIT_USAGE if session is not None else EXIT_TURN_ERROR

    attachments, problems = attachments_in(message, session_directory(client.state(session), cwd))
    for problem in problems:
        say(f"(not attached: {problem})\n")
    events = client.subscribe_events()  # before dispatching: no update can slip past the loop
    action = actions.turn_started(message, attachments)
    turn_id = action["turnId"]
    seq = client.dispatch(session, action)

    cancel_requested = asyncio.Event()
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, cancel_requested.set)
    except (NotImplementedError, RuntimeError):
        pass

    view = TurnView(err_style)
    answered: set[tuple[str, str]] = set()
    declined: set[str] = set()
    cancelled_sent = False
    deadline = None if timeout is None else loop.time() + timeout

    try:
        while True:
            outcome = client.mirror.outcome(seq)
            if outcome is not None and outcome.status != "accepted":
                say(f"agent-host chat: the host refused the message: {outcome.reason}\n")
                return EXIT_TURN_ERROR
            state = client.state(session) or {}
            if state.get("lifecycle") == "creationFailed":
                error = state.get("creationError") or {}
                say(f"agent-host chat: the session could not start: {clean(error.get('message', 'unknown error'))}\n")
                return EXIT_TURN_ERROR
            turn, finished = actions.turn_snapshot(state, turn_id)
            if turn is not None:
                for channel, text in view.update_split(turn):
                    (out if channel == "answer" else err).write(text)
                out.flush()
                err.flush()
            if finished and outcome is not None:
                if turn is None:
                    say("agent-host chat: the turn disappeared (the session was truncated or disposed)\n")
                    return EXIT_TURN_ERROR
                await _settle(client)
                return {"complete": EXIT_OK, "cancelled": EXIT_CANCELLED}.get(turn.get("state"), EXIT_TURN_ERROR)
            if turn is not None and not finished:
                for call in actions.waiting_tool_calls(turn):
                    key = (call["toolCallId"], call["status"])
                    if key in answered:
                        continue
                    answered.add(key)
                    _decide(client, session, turn_id, call, approve, say)
            for request in actions.open_input_requests(state):
                if request["id"] not in declined:
                    declined.add(request["id"])
                    say(f"(the agent asks: {text_of(request.get('message')) or 'for input'}; declined: -p mode cannot answer)\n")
                    client.dispatch(session, {"type": "session/inputCompleted", "requestId": request["id"], "response": "decline"})
            if cancel_requested.is_set() and not cancelled_sent and turn is not None and not finished:
                cancelled_sent = True
                client.cancel_turn(session, turn_id)
                say("\n^C cancelling the turn\n")
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                say("agent-host chat: gave up waiting for the turn to finish\n")
                return EXIT_TURN_ERROR
            next_event = asyncio.ensure_future(events.get())
            interrupt = asyncio.ensure_future(cancel_requested.wait())
            done, pending = await asyncio.wait({next_event, interrupt}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            for task in pending:
                task.cancel()
            if next_event in done and next_event.result() is None:
                say("agent-host chat: the connection to the host was lost\n")
                return EXIT_USAGE
            while not events.empty():  # state is read whole next time round: drain the backlog
                if events.get_nowait() is None:
                    say("agent-host chat: the connection to the host was lost\n")
                    return EXIT_USAGE
    except AhpClientError as error:
        say(f"agent-host chat: {error}\n")
        return EXIT_USAGE
    finally:
        client.unsubscribe_events(events)
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError, ValueError):
            pass


async def _settle(client: AhpClient) -> None:
    """Wait (briefly) until the host has answered every action we sent, so none is lost at exit."""
    try:
        await client.wait_for(lambda mirror, _event: not mirror.pending(), timeout=5.0)
    except AhpClientError:
        pass


def _decide(client: AhpClient, session: str, turn_id: str, call: dict[str, Any], approve: bool, say: Any) -> None:
    name = clean(call.get("displayName") or call.get("toolName") or "tool")
    if call["status"] == "pending-result-confirmation":
        client.dispatch(session, actions.result_confirmation(turn_id, call, approve))
        say(f"({'accepted' if approve else 'rejected'} the result of {name}{'' if approve else '; pass --yes to accept results'})\n")
        return
    option = actions.first_option(call, "approve" if approve else "deny")
    reason = None if approve else "Denied automatically: the chat client runs non-interactively (-p) without --yes."
    client.dispatch(session, actions.confirmation(turn_id, call, option, reason_message=reason))
    label = clean(option.get("label") or ("allowed" if approve else "denied"))
    say(f"({label}: {name}{'' if approve else '; pass --yes to allow tool calls'})\n")
