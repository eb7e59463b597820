"""Asking a chat's user structured questions, and the session's list of what it waits on.

**Questions** (``InputRequests.ask``): ``chat/inputRequested`` out, the matching
``chat/inputCompleted`` back (internal model, AHP 0.9.0: a request is an ``inputRequest``
response part of the chat's active turn). The host owns one ``InputRequests``; the ``ask_user``
tool and MCP elicitation both go through it.

Contract: ``ask(channel, request)`` takes a chat URI, or a session URI meaning that session's
default chat, publishes the request and resolves to ``{response, answers?}`` once a client
completes it; the answers are those synced on the request (``chat/inputAnswerChanged``) overlaid
with the ones sent on completion. A request asked while the chat runs no turn has no part to live
in: it is published only in the session's ``inputNeeded`` (a ``chatInput`` entry naming the
chat), which is all a client needs to answer it. ``observe`` must be registered as a store
observer. A request whose session goes away, or whose turn ends unanswered, resolves as
``cancel`` so the waiting MCP server is answered. ``ask_now`` publishes at once and returns the
answer's future (cancelling it withdraws the question). Questions asked outside a turn that a
previous run of the host left behind are removed at start (``drop_unanswerable``).

**What the session waits on** (``SessionState.inputNeeded``): ``observe`` keeps, for every chat,
one entry per open input request (``chatInput``), per tool call waiting for a confirmation
(``toolConfirmation``: pending-confirmation or pending-result-confirmation) and per tool call
running on a client (``toolClientExecution``), through ``session/inputNeededSet`` /
``session/inputNeededRemoved`` on the chat's session. Entry ids are ``<chat>|<kind>|<id>`` and
only this module writes them; the sync runs with ``call_soon`` after the chat's active turn
changed (observers never dispatch re-entrantly; nothing else of a chat makes an entry) and is
idempotent: it compares the chat's state with the session's list and dispatches only the difference.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ahp.protocol import builders
from ahp.state import default_chat_uri
from host.state.store import Store

__all__ = ["InputRequests", "input_needed_entries"]

_WAITING_TOOL_STATES = ("pending-confirmation", "pending-result-confirmation")


@dataclass
class _Question:
    future: asyncio.Future[dict[str, Any]]
    turn_id: Any
    """The chat's active turn when it was asked (None: asked outside a turn)."""
    session: str


def _entry_id(chat: str, kind: str, key: Any) -> str:
    return f"{chat}|{kind}|{key}"


def input_needed_entries(chat: str, state: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The ``inputNeeded`` entries a chat's state calls for, by entry id."""
    turn = state.get("activeTurn")
    if not isinstance(turn, dict):
        return {}
    entries: dict[str, dict[str, Any]] = {}
    for part in turn.get("responseParts") or ():
        if not isinstance(part, dict):
            continue
        if part.get("kind") == "inputRequest" and "response" not in part and isinstance(part.get("request"), dict):
            request = part["request"]
            entry_id = _entry_id(chat, "input", request.get("id"))
            entries[entry_id] = {"id": entry_id, "chat": chat, "kind": "chatInput", "request": request}
        elif part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict):
            call = part["toolCall"]
            status = call.get("status")
            contributor = call.get("contributor") if isinstance(call.get("contributor"), dict) else {}
            if status in _WAITING_TOOL_STATES:
                entry_id = _entry_id(chat, "confirm", call.get("toolCallId"))
                entries[entry_id] = {"id": entry_id, "chat": chat, "kind": "toolConfirmation",
                                     "turnId": turn.get("id"), "toolCall": call}
            elif status == "running" and contributor.get("kind") == "client" and contributor.get("clientId"):
                entry_id = _entry_id(chat, "client", call.get("toolCallId"))
                entries[entry_id] = {"id": entry_id, "chat": chat, "kind": "toolClientExecution",
                                     "turnId": turn.get("id"), "clientId": contributor["clientId"], "toolCall": call}
    return entries


def _open_request(state: dict[str, Any], request_id: Any) -> dict[str, Any] | None:
    turn = state.get("activeTurn")
    for part in (turn.get("responseParts") or ()) if isinstance(turn, dict) else ():
        if (isinstance(part, dict) and part.get("kind") == "inputRequest" and "response" not in part
                and (part.get("request") or {}).get("id") == request_id):
            return part["request"]
    return None


class InputRequests:
    """Futures keyed by ``(chat, request id)``, resolved from observed actions; the sessions'
    ``inputNeeded`` lists kept in step with their chats."""

    def __init__(self, store: Store, session_of: Callable[[str], str | None]) -> None:
        self._store = store
        self._session_of = session_of
        """The session a chat channel belongs to (``ChatSummaries.session_of``)."""
        self._waiting: dict[tuple[str, str], _Question] = {}
        self._syncing: set[str] = set()

    async def ask(self, channel: str, request: dict[str, Any]) -> dict[str, Any]:
        return await self.ask_now(channel, request)

    def ask_now(self, channel: str, request: dict[str, Any]) -> asyncio.Future[dict[str, Any]]:
        """Publish the question at once (before this returns, so a snapshot taken next holds it)
        and return the future of its answer; cancelling the future withdraws the question."""
        chat = channel if self._store.kind(channel) == "chat" else default_chat_uri(channel)
        session = self._session_of(chat) or channel
        key = (chat, str(request["id"]))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        if session not in self._store:
            future.set_result({"response": "cancel"})
            return future
        outside = _entry_id(chat, "ask", request["id"])
        turn = (self._store.state(chat) or {}).get("activeTurn")
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        question = self._waiting[key] = _Question(future, turn_id, session)

        def done(_: asyncio.Future[dict[str, Any]]) -> None:
            if self._waiting.get(key) is question:
                del self._waiting[key]
            if turn_id is None and session in self._store and any(
                    entry.get("id") == outside for entry in (self._store.state(session) or {}).get("inputNeeded") or ()):
                self._store.dispatch(session, builders.session_input_needed_removed(id=outside))

        future.add_done_callback(done)
        if turn_id is not None:
            self._store.dispatch(chat, builders.chat_input_requested(request=request))
        else:
            self._store.dispatch(session, builders.session_input_needed_set(
                request={"id": outside, "chat": chat, "kind": "chatInput", "request": request}))
        return future

    def observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if self._store.kind(channel) != "chat":
            return
        if after.get("activeTurn") is not before.get("activeTurn") and channel not in self._syncing:
            # The entries follow the active turn alone (``input_needed_entries``): a change that
            # kept it (an activity, a draft, a title) leaves them as the last sync made them.
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None  # no loop (a synchronous caller): nothing can be scheduled
            if loop is not None:
                self._syncing.add(channel)
                loop.call_soon(self._sync, channel)
        if not self._waiting:
            return
        action = envelope.get("action") or {}
        if action.get("type") == "chat/inputCompleted":
            question = self._waiting.get((channel, str(action.get("requestId"))))
            if question is None or question.future.done():
                return
            synced = _open_request(before, action.get("requestId")) or self._outside_request(question.session, channel, action)
            answers = {**((synced or {}).get("answers") or {}), **(action.get("answers") or {})}
            reply: dict[str, Any] = {"response": action.get("response")}
            if answers:
                reply["answers"] = answers
            question.future.set_result(reply)
            return
        turn = after.get("activeTurn")
        turn_id = turn.get("id") if isinstance(turn, dict) else None
        for (chat, _), question in list(self._waiting.items()):
            if chat == channel and question.turn_id is not None and question.turn_id != turn_id and not question.future.done():
                question.future.set_result({"response": "cancel"})  # its turn ended unanswered

    def _outside_request(self, session: str, chat: str, action: dict[str, Any]) -> dict[str, Any] | None:
        wanted = _entry_id(chat, "ask", action.get("requestId"))
        for entry in (self._store.state(session) or {}).get("inputNeeded") or ():
            if isinstance(entry, dict) and entry.get("id") == wanted:
                return entry.get("request")
        return None

    def _sync(self, chat: str) -> None:
        self._syncing.discard(chat)
        session = self._session_of(chat)
        state = self._store.state(chat)
        session_state = self._store.state(session) if session else None
        if session is None or session_state is None:
            return
        wanted = input_needed_entries(chat, state or {})
        prefix = chat + "|"
        managed = {entry["id"]: entry for entry in session_state.get("inputNeeded") or ()
                   if isinstance(entry, dict) and isinstance(entry.get("id"), str) and entry["id"].startswith(prefix)
                   and not entry["id"].startswith(prefix + "ask|")}
        for entry_id in managed.keys() - wanted.keys():
            self._store.dispatch(session, builders.session_input_needed_removed(id=entry_id))
        for entry_id, entry in wanted.items():
            if managed.get(entry_id) != entry:
                self._store.dispatch(session, builders.session_input_needed_set(request=entry))

    def drop_unanswerable(self) -> None:
        """At host start: remove the questions asked outside a turn that a previous run left in
        sessions' ``inputNeeded`` (nobody waits for their answers any more; whoever asked them
        asks again, e.g. the trust question when the session is resumed)."""
        for session, state in list(self._store.channels("session")):
            for entry in state.get("inputNeeded") or ():
                if isinstance(entry, dict) and "|ask|" in str(entry.get("id")) and entry.get("kind") == "chatInput":
                    self._store.dispatch(session, builders.session_input_needed_removed(id=entry["id"]))

    def session_gone(self, session: str) -> None:
        for question in list(self._waiting.values()):
            if question.session == session and not question.future.done():
                question.future.set_result({"response": "cancel"})
