"""The turn runner: turns accepted chat actions into running agent turns.

It watches the store (as an observer) and, for each chat of a session (internal model, AHP 0.9.0):

* ``chat/turnStarted``, or ``chat/turnResume`` reopening a turn that ended in a resumable error
  → start the agent's ``run_turn`` in a task (a resumed turn runs again from its message, its
  earlier parts kept), whose first step's actions (up to its first wait) are committed with the
  turn's start in one journal transaction (``Store.commit_with_next_step``); when it returns, dispatch
  ``chat/turnComplete``; when it raises ``TurnFailed``, ``chat/error`` with an error part holding
  its ``ErrorInfo``; any other exception is our bug: logged, and the turn ends with an error that
  says so. Every end carries the turn's ``duration`` (host clock, milliseconds since ``startedAt``);
* the turn leaving ``activeTurn`` by any other way (``turnCancelled``, ``truncated``...) → cancel
  the task at once, so the provider stream and any running tool stop;
* a turn ending with queued messages, or a message queued while idle → dispatch
  ``chat/pendingMessageRemoved`` then ``chat/turnStarted`` (with ``queuedMessageId``) for the first one;
* a steering message still pending when the turn ends (it came after the turn's last model call),
  or sent while no turn runs → it becomes the next turn, before the queued messages, with a
  system notification saying so: never held back to follow the user's next message;
* ``session/ready`` / ``creationFailed`` after ``prepare_session`` (on the session channel);
* ``start_pending`` at start-up: a chat recovered idle with pending messages starts the next one.

The model and agent a turn runs with are its message's own, else the chat draft's, else the
session config's ``model``/``agent`` values, else the agent's default (``selection``).

Observers run inside ``Store.dispatch``; everything that dispatches is scheduled with
``call_soon`` or in tasks, never done re-entrantly.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

from ahp.protocol import builders
from ahp.state import default_chat_uri
from ahp.state.clock import iso_timestamp, parse_timestamp
from host.runtime.agents.base import Agent, SessionCreationFailed, TurnContext, TurnEnded, TurnFailed, TurnStopped
from host.state.store import Store

__all__ = ["TurnRunner", "LATE_STEERING_NOTE", "now_iso", "turn_duration", "turn_started", "user_message", "selection"]

LATE_STEERING_NOTE = ("This steering message arrived after the previous turn had made its last model call, "
                      "so it runs as its own turn.")

logger = logging.getLogger(__name__)

_STARTS = frozenset({"chat/turnStarted", "chat/turnResume"})
"""The actions after which a chat's (new or reopened) active turn is run."""


def now_iso() -> str:
    """The host clock as an ISO-8601 timestamp (``Turn.startedAt``)."""
    return iso_timestamp(int(time.time() * 1000)) or "1970-01-01T00:00:00.000Z"


def _parts_numbered(turn: dict[str, Any]) -> int:
    """How many part ids a (resumed) turn's parts used already: its new parts are numbered after
    them (``TurnContext.new_part_id``), so a resumed turn never writes into an earlier part."""
    prefix = f"{turn.get('id')}:"
    used = 0
    for part in turn.get("responseParts") or ():
        ident = part.get("id") if isinstance(part, dict) else None
        if isinstance(ident, str) and ident.startswith(prefix):
            number = ident.rpartition("-")[2]
            if number.isdigit():
                used = max(used, int(number))
    return used


def turn_duration(started_at: Any) -> int:
    """Milliseconds from ``started_at`` (ISO-8601) to now; 0 when it cannot be read."""
    started = parse_timestamp(started_at)
    return 0 if started is None else max(0, int(time.time() * 1000) - started)


def user_message(text: str, **fields: Any) -> dict[str, Any]:
    """A ``Message`` from the user: ``text``, ``origin: {kind: "user"}`` and any other fields given."""
    return {"text": text, "origin": {"kind": "user"}, **{k: v for k, v in fields.items() if v is not None}}


def turn_started(turn_id: str, message: dict[str, Any], queued_message_id: str | None = None) -> dict[str, Any]:
    """``chat/turnStarted`` for ``message`` now; a message without ``origin`` is the user's."""
    if "origin" not in message:
        message = {**message, "origin": {"kind": "user"}}
    return builders.chat_turn_started(turn_id=turn_id, started_at=now_iso(), message=message,
                                      queued_message_id=queued_message_id)


def selection(key: str, message: dict[str, Any], chat: dict[str, Any], session: dict[str, Any]) -> dict[str, Any] | None:
    """The ``model`` or ``agent`` selection a turn runs with: the message's, else the chat
    draft's, else the session config's value (a selection object, or a bare model id)."""
    for candidate in (message.get(key), (chat.get("draft") or {}).get(key),
                      ((session.get("config") or {}).get("values") or {}).get(key)):
        if isinstance(candidate, dict) and candidate:
            return candidate
        if isinstance(candidate, str) and candidate:
            return {"id": candidate} if key == "model" else {"uri": candidate}
    return None


class TurnRunner:
    def __init__(self, store: Store, agent_for: Callable[[str], Agent | None],
                 session_of: Callable[[str], str | None]) -> None:
        self._store = store
        self._agent_for = agent_for
        self._session_of = session_of
        """The session a chat channel belongs to (``ChatSummaries.session_of``): a chat's URI
        need not encode it."""
        self._tasks: dict[str, tuple[str, asyncio.Task[None]]] = {}
        self._contexts: dict[str, TurnContext] = {}
        """Each running turn's context, by chat (``forget`` stops it quietly)."""
        self._background: set[asyncio.Task[Any]] = set()
        store.change_observers.append(self._observe)

    # -- session lifecycle ---------------------------------------------------------------------

    def prepare(self, session: str) -> None:
        """Initialise the session's backend in the background, then mark it ready or failed."""
        self._spawn(self._prepare(session))

    async def _prepare(self, session: str) -> None:
        state = self._store.state(session)
        if state is None:
            return
        agent = self._agent_for(state.get("provider") or "")
        try:
            if agent is None:
                raise SessionCreationFailed(
                    "providerNotFound", f"No agent named {state.get('provider')!r} is configured."
                )
            await agent.prepare_session(session, state)
        except SessionCreationFailed as failure:
            if session in self._store:
                self._store.dispatch(session, builders.session_creation_failed(error=failure.error))
            return
        except Exception:
            logger.exception("preparing %s failed", session)
            if session in self._store:
                self._store.dispatch(session, builders.session_creation_failed(error={
                    "errorType": "internalError",
                    "message": "The host failed to start this session; the error is in the host's log.",
                }))
            return
        if session in self._store:
            self._store.dispatch(session, builders.session_ready())
            for chat in self._chats_of(session):
                self._schedule_next_queued(chat)

    def forget(self, session: str) -> None:
        """The session is being disposed, or another process of a cluster runs it now: stop its
        chats' turns without dispatching anything (their provider streams and tool calls are
        cancelled; what they would clear on the way out, their activity, is left as it is)."""
        for chat in [chat for chat in self._tasks if chat == session or self._session_of(chat) == session]:
            self.halt(chat)

    def halt(self, chat: str) -> str | None:
        """Stop ``chat``'s running turn here without dispatching anything (its provider stream
        and tool calls cancelled; ``forget`` for one chat: a write of the turn was refused by a
        cluster's log, ``AgentHost``). The id of the turn stopped, or None when none ran."""
        running = self._tasks.pop(chat, None)
        context = self._contexts.pop(chat, None)
        if context is not None:
            context.stopped = True
        if running is None:
            return None
        running[1].cancel()
        return running[0]

    def _chats_of(self, session: str) -> list[str]:
        state = self._store.state(session) or {}
        chats = [entry.get("resource") for entry in state.get("chats") or () if isinstance(entry, dict)]
        chats = list(dict.fromkeys([default_chat_uri(session), *chats]))
        return [chat for chat in chats if isinstance(chat, str) and self._store.kind(chat) == "chat"]

    async def close(self) -> None:
        tasks = [task for _, task in self._tasks.values()] + list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    # -- observing the store -------------------------------------------------------------------

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if self._store.kind(channel) != "chat":
            return
        action_type = envelope["action"].get("type")
        before_turn = before.get("activeTurn")
        after_turn = after.get("activeTurn")
        running = self._tasks.get(channel)
        if running is not None and (after_turn is None or after_turn.get("id") != running[0]):
            # The turn the task serves is over: stop the provider stream and tools now.
            self._tasks.pop(channel, None)
            running[1].cancel()
        if action_type in _STARTS and after_turn is not None and after_turn is not before_turn:
            self._start(channel, after_turn)
        elif before_turn is not None and after_turn is None:
            self._schedule_next_queued(channel)
        elif action_type == "chat/pendingMessageSet" and after_turn is None:
            self._schedule_next_queued(channel)

    # -- running turns -------------------------------------------------------------------------

    def _start(self, chat: str, turn: dict[str, Any]) -> None:
        session = self._session_of(chat) or ""
        state = self._store.state(session) or {}
        chat_state = self._store.state(chat) or {}
        agent = self._agent_for(state.get("provider", ""))
        message = turn.get("message") or {}
        store = self._store
        ctx = TurnContext(
            session=session,
            turn_id=turn["id"],
            message=message,
            chat=chat,
            model=selection("model", message, chat_state, state),
            agent=selection("agent", message, chat_state, state),
            _dispatch=store.dispatch,
            _dispatch_streamed=store.dispatch_streamed,
            _commit_with_next_step=store.commit_with_next_step,
            _state=lambda: store.state(session),
            _chat_state=lambda: store.state(chat),
            _active_turn_id=functools.partial(store.active_turn_id, chat),  # (per emit: no Python frame of its own)
            _finished_turns=lambda: store.turns(chat),
            _part_ids=_parts_numbered(turn),
        )
        task = asyncio.get_running_loop().create_task(self._run(agent, ctx), name=f"turn {turn['id']}")
        self._tasks[chat] = (turn["id"], task)
        self._contexts[chat] = ctx
        # What the task's first step dispatches before it first waits (a provider turn's "Waiting
        # for" activity) is committed with the turn's start, and their frames leave together: one
        # journal transaction a turn fewer. A step that waits first (a hook) leaves the start alone.
        store.commit_with_next_step()

    async def _run(self, agent: Agent | None, ctx: TurnContext) -> None:
        try:
            if agent is None:
                raise TurnFailed("providerNotFound", "This session's agent is no longer configured; create a new session.")
            await agent.run_turn(ctx)
        except (TurnEnded, asyncio.CancelledError):
            return
        except TurnFailed as failure:
            self._end(ctx, failure.error)
        except TurnStopped as stop:
            if ctx.chat in self._store and ctx.is_active():
                ctx.emit(builders.chat_response_part(turn_id=ctx.turn_id, part={
                    "kind": "systemNotification", "content": f"A plugin hook stopped this turn: {stop.reason}"}))
            self._end(ctx, None)
        except Exception:
            logger.exception("turn %s of %s failed", ctx.turn_id, ctx.chat)
            self._end(ctx, {
                "errorType": "internalError",
                "message": "The host failed while running this turn; the error is in the host's log.",
            })
        else:
            self._end(ctx, None)
        finally:
            current = self._tasks.get(ctx.chat)
            if current is not None and current[0] == ctx.turn_id:
                self._tasks.pop(ctx.chat, None)
            if self._contexts.get(ctx.chat) is ctx:
                self._contexts.pop(ctx.chat, None)

    def _end(self, ctx: TurnContext, error: dict[str, Any] | None) -> None:
        """``chat/turnComplete`` (no error) or ``chat/error`` with an error part."""
        if ctx.chat in self._store and ctx.is_active():
            self._tasks.pop(ctx.chat, None)
            duration = turn_duration((ctx.chat_state.get("activeTurn") or {}).get("startedAt"))
            if error is None:
                ctx.emit(builders.chat_turn_complete(turn_id=ctx.turn_id, duration=duration))
            else:
                ctx.emit(builders.chat_error(turn_id=ctx.turn_id, duration=duration, part={"kind": "error", "error": error}))

    # -- queued messages -----------------------------------------------------------------------

    def start_pending(self, chat: str) -> None:
        """Start ``chat``'s pending steering or first queued message soon, if no turn runs then
        (start-up: the host may have been killed before it started one). Idempotent."""
        self._schedule_next_queued(chat)

    def _schedule_next_queued(self, chat: str) -> None:
        asyncio.get_running_loop().call_soon(self._start_next_queued, chat)

    def _start_next_queued(self, chat: str) -> None:
        state = self._store.state(chat)
        session = self._store.state(self._session_of(chat) or "")
        if state is None or state.get("activeTurn") is not None or (session or {}).get("lifecycle") == "failed":
            return
        steering = state.get("steeringMessage")
        if isinstance(steering, dict) and steering.get("id"):
            # Sent too late for the turn it was meant to steer (its last model call was made), or
            # while no turn ran: it becomes the next turn, ahead of queued messages, never held back.
            turn_id = str(uuid.uuid4())
            self._store.dispatch(chat, builders.chat_pending_message_removed(kind="steering", id=steering["id"]))
            self._store.dispatch(chat, turn_started(turn_id, steering.get("message") or {}))
            self._store.dispatch(chat, builders.chat_response_part(
                turn_id=turn_id, part={"kind": "systemNotification", "content": LATE_STEERING_NOTE}))
            return
        queue = state.get("queuedMessages") or []
        if not queue:
            return
        message = queue[0]
        self._store.dispatch(chat, builders.chat_pending_message_removed(kind="queued", id=message["id"]))
        self._store.dispatch(chat, turn_started(str(uuid.uuid4()), message.get("message") or {}, queued_message_id=message["id"]))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
