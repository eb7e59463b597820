"""Asking a session's user structured questions: ``session/inputRequested`` out, the matching
``session/inputCompleted`` back. The host owns one ``InputRequests``; the ``ask_user`` tool and
MCP elicitation both go through it.

Contract: ``InputRequests.ask(session, request)`` publishes the request and resolves to
``{response, answers?}`` once a client completes it; the answers are those synced on the
request (``inputAnswerChanged``) overlaid with the ones sent on completion. ``observe`` must be
registered as a store observer. A request whose session goes away, or whose turn ends (the
reducer drops open requests), resolves as ``cancel`` so the waiting MCP server is answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ahp.protocol import builders
from host.store import Store

__all__ = ["InputRequests"]


class InputRequests:
    """Futures keyed by ``(session, request id)``, resolved from observed actions."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._waiting: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}

    async def ask(self, session: str, request: dict[str, Any]) -> dict[str, Any]:
        key = (session, str(request["id"]))
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        try:
            if session not in self._store:
                return {"response": "cancel"}
            self._store.dispatch(session, builders.session_input_requested(request=request))
            return await future
        finally:
            self._waiting.pop(key, None)

    def observe(self, channel: str, before: dict[str, Any], after: dict[str, Any], envelope: dict[str, Any]) -> None:
        if not self._waiting:
            return
        action = envelope.get("action") or {}
        if action.get("type") == "session/inputCompleted":
            future = self._waiting.get((channel, str(action.get("requestId"))))
            if future is None or future.done():
                return
            synced = next((r for r in before.get("inputRequests") or [] if r.get("id") == action.get("requestId")), {})
            answers = {**(synced.get("answers") or {}), **(action.get("answers") or {})}
            reply: dict[str, Any] = {"response": action.get("response")}
            if answers:
                reply["answers"] = answers
            future.set_result(reply)
            return
        open_ids = {str(r.get("id")) for r in after.get("inputRequests") or []}
        for (session, request_id), future in list(self._waiting.items()):
            dropped = session == channel and request_id not in open_ids and request_id in {
                str(r.get("id")) for r in before.get("inputRequests") or []}
            if dropped and not future.done():
                future.set_result({"response": "cancel"})

    def session_gone(self, session: str) -> None:
        for (owner, _), future in list(self._waiting.items()):
            if owner == session and not future.done():
                future.set_result({"response": "cancel"})
