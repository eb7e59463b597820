"""Client-provided tools: offering the session's active clients' tools and dispatching calls to them.

A session has any number of active clients (``SessionState.activeClients``, AHP 0.9.0), each with
the tools it offers. Name clashes: server tools (built-in, MCP, anything another contributor
offers) win. A client tool whose name a server tool (or an earlier active client's tool) already
uses is offered to the model as ``client__<name>``; when even that name is taken the tool is not
offered. On the wire (``chat/toolCallStart.toolName``) the client still sees its own name, with
``contributor: {kind: "client", clientId}`` naming the client that offered it, so it knows what
to run and no other client runs it.

A call to a client tool: the turn loop starts it with its contributor; the confirming approver
applies the server's own policy only if a configured or saved rule matches, else the call goes to
``running`` with ``confirmed: "not-needed"`` (the client confirms its own tools); then
``ClientTool.run`` waits, on a future keyed by chat, turn and tool call id, for the owner's
``chat/toolCallComplete`` (validation refuses it from anyone else) and returns its result to
the model. The host never completes such a call itself unless the owner is gone.

Departure: when a client leaves a session's active clients (it disconnected, or released the
role), ``ClientDeparture`` waits the configured grace period; if the same clientId has not come
back by then, each of its unfinished calls in the session's chats' running turns is completed
with ``success: false`` and a message saying why, so the turn goes on. A cancelled turn cancels
its client calls through the reducer (they become ``cancelled``/``skipped``) and the waiting task.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

from ahp.protocol import builders
from ahp.state import default_chat_uri
from host.state.store import Store
from tools.base import Tool, ToolContext, failure_result
from tools.errors import ToolInputError

from ._waiters import Waiters

__all__ = ["ClientTool", "ClientDeparture", "CLASH_PREFIX", "active_client_ids", "client_call_key", "client_contributor",
           "offered_client_tools", "session_chats"]

CLASH_PREFIX = "client__"
"""Prefix of a client tool's model-facing name when a server tool already has its name."""


def client_call_key(chat: str, turn_id: str, tool_call_id: str) -> Hashable:
    return ("client-complete", chat, turn_id, tool_call_id)


def client_contributor(client_id: str) -> dict[str, Any]:
    """The ``ToolCallContributor`` of a tool ``client_id`` runs."""
    return {"kind": "client", "clientId": client_id}


def active_client_ids(state: dict[str, Any] | None) -> list[str]:
    """The clientIds of a session state's ``activeClients``, in order."""
    return [client["clientId"] for client in (state or {}).get("activeClients") or ()
            if isinstance(client, dict) and isinstance(client.get("clientId"), str) and client["clientId"]]


def session_chats(store: Store, session: str) -> list[str]:
    """The session's chats that exist in the store: its default chat first, then its catalogue."""
    state = store.state(session) or {}
    listed = [entry.get("resource") for entry in state.get("chats") or () if isinstance(entry, dict)]
    return [chat for chat in dict.fromkeys([default_chat_uri(session), *listed])
            if isinstance(chat, str) and store.kind(chat) == "chat"]


class ClientTool(Tool):
    """One tool of one of the session's active clients, bound to the turn that offers it."""

    def __init__(self, definition: dict[str, Any], client_id: str, offered_name: str, *, session: str, turn_id: str,
                 waiters: Waiters, on_orphan: Callable[[str, str], None], chat: str | None = None) -> None:
        self.wire_name: str = definition["name"]
        """The client's own name for the tool (sent as ``toolName``)."""
        self.client_id = client_id
        """The owning client."""
        self.contributor = client_contributor(client_id)
        """Sent as ``toolCallStart.contributor``."""
        self.name = offered_name
        self.title = definition.get("title") or (definition.get("annotations") or {}).get("title") or self.wire_name
        self.description = definition.get("description") or f"{self.title} (provided by the user's client)."
        schema = definition.get("inputSchema")
        self.input_schema = schema if isinstance(schema, dict) else {"type": "object", "properties": {}}
        self.annotations = {k: v for k, v in (definition.get("annotations") or {}).items() if k != "title"}
        self._session = session
        self._chat = chat or default_chat_uri(session)
        self._turn_id = turn_id
        self._waiters = waiters
        self._on_orphan = on_orphan

    def validate(self, args: Any) -> None:
        # The client owns the schema and validates its own input; the host only needs an object.
        if not isinstance(args, dict):
            raise ToolInputError(f"The arguments for {self.name} must be a JSON object.")

    def describe(self, args: dict) -> str:
        return f"Run {self.title} (in the client)"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        if ctx.tool_call_id is None:
            return failure_result(f"Tried to run {self.title}", "A client tool call needs a tool call id.", "internal_error")
        self._on_orphan(self._session, self.client_id)  # fail it later if the owner is already gone
        result = await self._waiters.wait(client_call_key(self._chat, self._turn_id, ctx.tool_call_id))
        if not isinstance(result, dict):
            return failure_result(f"Tried to run {self.title}", "The client sent no result.", "client_error")
        return result


def offered_client_tools(state: dict[str, Any], taken: set[str], make: Callable[[dict[str, Any], str, str], ClientTool]) -> list[ClientTool]:
    """The active clients' tools with their model-facing names (see the module docstring)."""
    offered: list[ClientTool] = []
    names = set(taken)
    for active in state.get("activeClients") or ():
        if not isinstance(active, dict) or not isinstance(active.get("clientId"), str) or not active["clientId"]:
            continue
        for definition in active.get("tools") or ():
            if not isinstance(definition, dict) or not isinstance(definition.get("name"), str) or not definition["name"]:
                continue
            name = definition["name"]
            if name in names:
                name = CLASH_PREFIX + name
                if name in names:
                    continue  # even the prefixed name is taken: offering it would be ambiguous
            names.add(name)
            offered.append(make(definition, active["clientId"], name))
    return offered


class ClientDeparture:
    """Fails a departed active client's calls once its grace period has passed."""

    def __init__(self, store: Store, grace: float) -> None:
        self._store = store
        self.grace = grace
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}

    def active_changed(self, session: str, before: dict[str, Any], after: dict[str, Any]) -> None:
        old = set(active_client_ids(before))
        new = active_client_ids(after)
        for client_id in new:
            timer = self._timers.pop((session, client_id), None)
            if timer is not None:
                timer.cancel()  # it came back (reclaimed the role) in time
        for client_id in old.difference(new):
            self.watch(session, client_id)

    def watch(self, session: str, client_id: str) -> None:
        """Start the grace period for ``client_id`` unless it is an active client or already watched."""
        state = self._store.state(session) or {}
        if client_id in active_client_ids(state) or (session, client_id) in self._timers:
            return
        loop = asyncio.get_running_loop()
        self._timers[(session, client_id)] = loop.call_later(self.grace, self._expire, session, client_id)

    def _expire(self, session: str, client_id: str) -> None:
        self._timers.pop((session, client_id), None)
        state = self._store.state(session)
        if state is None or client_id in active_client_ids(state):
            return
        for chat in session_chats(self._store, session):
            turn = (self._store.state(chat) or {}).get("activeTurn")
            if not isinstance(turn, dict):
                continue
            for part in turn.get("responseParts") or ():
                call = part.get("toolCall") if part.get("kind") == "toolCall" else None
                if not call or not _runs_on(call, client_id) or call.get("status") not in ("running", "pending-confirmation"):
                    continue
                title = call.get("displayName") or call.get("toolName")
                message = (
                    f"The client that runs {title} ({client_id}) disconnected "
                    f"and did not come back within {self.grace:g} s, so the call did not finish."
                )
                self._store.dispatch(chat, builders.chat_tool_call_complete(
                    turn_id=turn["id"], tool_call_id=call["toolCallId"],
                    result=failure_result(f"Tried to run {title}", message, "client_gone"),
                ))

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


def _runs_on(call: dict[str, Any], client_id: str) -> bool:
    contributor = call.get("contributor")
    return isinstance(contributor, dict) and contributor.get("kind") == "client" and contributor.get("clientId") == client_id
