"""The turn runner: turns accepted session actions into running agent turns.

It watches the store (as an observer) and, for each session:

* ``session/turnStarted``  → start the agent's ``run_turn`` in a task; when it returns, dispatch
  ``session/turnComplete``; when it raises ``TurnFailed``, ``session/error`` with its ``ErrorInfo``;
  any other exception is our bug: logged, and the turn ends with an error that says so;
* the turn leaving ``activeTurn`` by any other way (``turnCancelled``, ``truncated``...) → cancel
  the task at once, so the provider stream and any running tool stop;
* a turn ending with queued messages, or a message queued while idle → dispatch
  ``pendingMessageRemoved`` then ``turnStarted`` (with ``queuedMessageId``) for the first one;
* a steering message still pending when the turn ends (it came after the turn's last model call),
  or sent while no turn runs → it becomes the next turn, before the queued messages, with a
  system notification saying so: never held back to follow the user's next message;
* ``session/ready`` / ``creationFailed`` after ``prepare_session``.

Observers run inside ``Store.dispatch``; everything that dispatches is scheduled with
``call_soon`` or in tasks, never done re-entrantly.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any, Callable

from ahp.protocol import builders
from host.agents.base import Agent, SessionCreationFailed, TurnContext, TurnEnded, TurnFailed
from host.store import Store

__all__ = ["TurnRunner", "LATE_STEERING_NOTE"]

LATE_STEERING_NOTE = ("This steering message arrived after the previous turn had made its last model call, "
                      "so it runs as its own turn.")

logger = logging.getLogger(__name__)


class TurnRunner:
    def __init__(self, store: Store, agent_for: Callable[[str], Agent | None]) -> None:
        self._store = store
        self._agent_for = agent_for
        self._tasks: dict[str, tuple[str, asyncio.Task[None]]] = {}
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
        agent = self._agent_for(state["summary"]["provider"])
        try:
            if agent is None:
                raise SessionCreationFailed(
                    "providerNotFound", f"No agent named {state['summary']['provider']!r} is configured."
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
            self._schedule_next_queued(session)

    def forget(self, session: str) -> None:
        """The session is being disposed: stop its turn without dispatching anything."""
        running = self._tasks.pop(session, None)
        if running is not None:
            running[1].cancel()

    async def close(self) -> None:
        tasks = [task for _, task in self._tasks.values()] + list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()

    # -- observing the store -------------------------------------------------------------------

    def _observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if self._store.kind(channel) != "session":
            return
        action_type = envelope["action"].get("type")
        before_turn = before.get("activeTurn")
        after_turn = after.get("activeTurn")
        running = self._tasks.get(channel)
        if running is not None and (after_turn is None or after_turn.get("id") != running[0]):
            # The turn the task serves is over: stop the provider stream and tools now.
            self._tasks.pop(channel, None)
            running[1].cancel()
        if action_type == "session/turnStarted" and after_turn is not None and after_turn is not before_turn:
            self._start(channel, after_turn)
        elif before_turn is not None and after_turn is None:
            self._schedule_next_queued(channel)
        elif action_type == "session/pendingMessageSet" and after_turn is None:
            self._schedule_next_queued(channel)

    # -- running turns -------------------------------------------------------------------------

    def _start(self, session: str, turn: dict[str, Any]) -> None:
        state = self._store.state(session) or {}
        agent = self._agent_for(state.get("summary", {}).get("provider", ""))
        summary = state.get("summary", {})
        ctx = TurnContext(
            session=session,
            turn_id=turn["id"],
            user_message=turn.get("userMessage") or {},
            model=summary.get("model"),
            agent=summary.get("agent"),
            _dispatch=lambda action: self._store.dispatch(session, action),
            _state=lambda: self._store.state(session),
        )
        task = asyncio.get_running_loop().create_task(self._run(agent, ctx), name=f"turn {turn['id']}")
        self._tasks[session] = (turn["id"], task)

    async def _run(self, agent: Agent | None, ctx: TurnContext) -> None:
        try:
            await asyncio.sleep(0)  # let the turnStarted echo go out before the first part
            if agent is None:
                raise TurnFailed("providerNotFound", "This session's agent is no longer configured; create a new session.")
            await agent.run_turn(ctx)
        except (TurnEnded, asyncio.CancelledError):
            return
        except TurnFailed as failure:
            self._end(ctx, builders.session_error(turn_id=ctx.turn_id, error=failure.error))
        except Exception:
            logger.exception("turn %s of %s failed", ctx.turn_id, ctx.session)
            self._end(ctx, builders.session_error(turn_id=ctx.turn_id, error={
                "errorType": "internalError",
                "message": "The host failed while running this turn; the error is in the host's log.",
            }))
        else:
            self._end(ctx, builders.session_turn_complete(turn_id=ctx.turn_id))
        finally:
            current = self._tasks.get(ctx.session)
            if current is not None and current[0] == ctx.turn_id:
                self._tasks.pop(ctx.session, None)

    def _end(self, ctx: TurnContext, action: dict[str, Any]) -> None:
        if ctx.session in self._store and ctx.is_active():
            self._tasks.pop(ctx.session, None)
            ctx.emit(action)

    # -- queued messages -----------------------------------------------------------------------

    def _schedule_next_queued(self, session: str) -> None:
        asyncio.get_running_loop().call_soon(self._start_next_queued, session)

    def _start_next_queued(self, session: str) -> None:
        state = self._store.state(session)
        if state is None or state.get("activeTurn") is not None or state.get("lifecycle") == "creationFailed":
            return
        steering = state.get("steeringMessage")
        if isinstance(steering, dict) and steering.get("id"):
            # Sent too late for the turn it was meant to steer (its last model call was made), or
            # while no turn ran: it becomes the next turn, ahead of queued messages, never held back.
            turn_id = str(uuid.uuid4())
            self._store.dispatch(session, builders.session_pending_message_removed(kind="steering", id=steering["id"]))
            self._store.dispatch(session, builders.session_turn_started(turn_id=turn_id, user_message=steering["userMessage"]))
            self._store.dispatch(session, builders.session_response_part(
                turn_id=turn_id, part={"kind": "systemNotification", "content": LATE_STEERING_NOTE}))
            return
        queue = state.get("queuedMessages") or []
        if not queue:
            return
        message = queue[0]
        self._store.dispatch(session, builders.session_pending_message_removed(kind="queued", id=message["id"]))
        self._store.dispatch(session, builders.session_turn_started(
            turn_id=str(uuid.uuid4()), user_message=message["userMessage"], queued_message_id=message["id"]))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
