"""Sub-agents: the ``task`` tool hands a self-contained job to a chat it opens in its own session.

What a user sees, and the rules:

* The model calls ``task`` with a short ``description``, the full ``prompt`` and optionally a
  ``subagent_type``: the name of a custom agent from the session's plugins (``plugin:agent``, so
  two plugins' agents of one name are both reachable; the bare name works when only one agent has
  it) or ``.claude/agents`` (Claude Code's ``agents/`` folders). The tool's description lists them
  with what each is for, bounded and ranked (``host.runtime.catalogue``, ``AGENT_BUDGET`` bytes:
  those matching the session's first message first, so the listing stays the same from turn to
  turn and the provider's prompt cache holds, then how many more there are); an unknown name is
  answered with the agents that match it.
* The host opens a *tool-spawned chat* in the parent's session, as AHP 0.7.0+ models sub-agents:
  ``ahp-chat://subagent/<base64url of the session URI>/<tool call id>``
  (``ahp.state.subagent_chat_uri``; a tool call id the session already used for one gets a
  ``#n`` suffix there), listed in the session's catalogue (``session/chatAdded``) titled
  "Sub-agent: <description>", with ``origin: {kind: "tool", chat: <the calling chat>,
  toolCallId}`` and ``interactivity: "read-only"`` (clients watch it, and answer its
  confirmations, but do not type into it). It shares the session's provider, working directory,
  customizations, "allow in this session" approvals and transcripts store; it has its own turns.
  Its one turn's ``Message`` carries the model the parent's turn runs with and, for a
  specialist, that custom agent (model and agent ride on messages since AHP 0.5.0).
* As soon as the chat exists, the running ``task`` call carries a ``ToolResultSubagentContent``
  (``toolCallContentChanged``) whose ``resource`` is that chat: the forward edge of the spawn,
  whose reverse is the chat's ``origin`` (the spec asks hosts to keep the two consistent). A
  0.2.0 client, which has no chats, sees the same block naming a virtual session
  (``ahp.dialects.v0_2.uris``), which it can subscribe to like any other.
* While the sub-agent waits for a person (a confirmation or a question in its chat: the chat's
  status is InputNeeded), the running call's content says so (``WAITING_FOR_YOU``), so a client
  that shows only the calling chat (a 0.2.0 client, AG-UI) knows where to look.
* The chat's turn runs the prompt; its final answer is the tool's result (with the subagent
  content kept). A turn that fails or is cancelled makes the call fail, saying why.
* Cancelling the parent's turn cancels the sub-agent's turn. Sub-agent chats get no ``task`` tool
  of their own (no unbounded nesting).
* At most ``limit`` sub-agents of one session run at once (``[sessions] max_subagents``, 4): a
  further ``task`` call waits for one of them to finish, saying so in its content while it waits
  ("waiting for a free sub-agent"), then runs. Waiting rather than failing: a model that asks for
  ten searches at once gets ten answers, four at a time, and has nothing to retry.
* A finished sub-agent's chat stays in the catalogue for review (as VS Code expects) until its
  session goes: disposing the session removes its chats, and any sub-agent turn still running
  ends with it.
* A journal from a build that ran sub-agents as child *sessions* is converted when the host
  starts (``adopt_child_sessions``): each child named by a parent's ``task`` call becomes that
  call's sub-agent chat, with its turns and transcripts, and the child session goes.

The tool itself changes nothing (``readOnlyHint``): every action the sub-agent takes goes through
the session's own confirmation, in the sub-agent's chat.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ahp.protocol import builders
from ahp.state import ACTIVITY_MASK, SessionStatus, parse_subagent_chat_uri, session_of_default_chat, subagent_chat_uri
from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from host.runtime.catalogue import CatalogueItem, catalogue, closest
from host.runtime.turns import now_iso, turn_duration, turn_started, user_message
from host.state.store import Store
from tools.base import Tool, ToolContext, failure_result, success_result
from tools.content import text_content
from tools.errors import ToolFailure

__all__ = ["SubagentContributor", "TaskTool", "SubagentSpec", "DEFAULT_LIMIT", "SUBAGENT_CHAT_PREFIX", "SUBAGENT_INTERACTIVITY",
           "adopt_child_sessions", "child_sessions_named", "subagent_chat_state"]

logger = logging.getLogger(__name__)

DEFAULT_LIMIT = 4
"""Sub-agents one session runs at once."""

AGENT_BUDGET = 2048
"""Bytes of the specialists' catalogue in the ``task`` tool's description."""

SUBAGENT_CHAT_PREFIX = "ahp-chat://subagent/"
"""Where sub-agent chats live (``ahp.state.subagent_chat_uri``); clients may not create chats there."""

SUBAGENT_INTERACTIVITY = "read-only"
"""``ChatInteractivity`` of a sub-agent's chat: watched (and its confirmations answered), not typed into."""

WAITING_FOR_YOU = "The sub-agent is waiting for you: a confirmation or a question in its chat."
"""What a running ``task`` call says while its sub-agent waits for a person."""

OpenChat = Callable[[str, dict[str, Any]], None]
"""``open_chat(session, chat_state)``: add a chat channel to a session's catalogue (the host's)."""


@dataclass(frozen=True)
class SubagentSpec:
    """A custom agent a ``task`` call may name."""

    name: str
    description: str
    uri: str


class TaskTool(Tool):
    """Runs a job in a sub-agent chat and returns its final answer."""

    name = "task"
    title = "Run Sub-agent"
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}

    def __init__(self, run: Callable[[TaskTool, dict, ToolContext], Any], agents: Sequence[SubagentSpec],
                 query: str = "") -> None:
        """``run(tool, args, ctx)`` runs a call (given the tool, so that it need not close over it: a
        cycle the collector alone frees); ``query``: the message the specialists listed are ranked by."""
        self._run = run
        self.agents = {agent.name: agent for agent in agents}
        more = ("- ... and {count} more specialists not listed here: give subagent_type a name the user mentions, "
                "or a word of what you need, and the answer lists the specialists that match.")
        listed = catalogue([CatalogueItem(a.name, a.description) for a in agents], budget=AGENT_BUDGET, query=query,
                           more=more)
        self.description = (
            "Hand a self-contained job to a sub-agent that works in its own chat with the same tools "
            "and working directory, and get its final answer back. Use it for searches or investigations "
            "that would fill this conversation, or for a specialist below. Give the sub-agent everything "
            "it needs in the prompt: it does not see this conversation."
            + (f"\nSpecialists (subagent_type):\n{listed}" if agents else "")
        )
        properties: dict[str, Any] = {
            "description": {"type": "string", "minLength": 1, "description": "The job in three to six words."},
            "prompt": {"type": "string", "minLength": 1, "description": "The full task for the sub-agent."},
        }
        if agents:
            properties["subagent_type"] = {"type": "string", "description": "Which specialist to use, as listed."}
        self.input_schema = {"type": "object", "properties": properties, "required": ["description", "prompt"], "additionalProperties": False}

    def find(self, name: str) -> SubagentSpec | None:
        """The agent named ``name``: exactly, or by the bare name only one agent has."""
        if name in self.agents:
            return self.agents[name]
        bare = [a for a in self.agents.values() if a.name.rsplit(":", 1)[-1] == name]
        return bare[0] if len(bare) == 1 else None

    def describe(self, args: dict) -> str:
        who = args.get("subagent_type") or "sub-agent"
        return f"Start {who}: {args.get('description', '')}"

    def past_tense(self, args: dict) -> str:
        return f"Sub-agent finished: {args.get('description', '')}"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        return await self._run(self, args, ctx)


def subagent_chat_state(chat: str, *, title: str, parent_chat: str, tool_call_id: str, modified_at: str,
                        turns: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The state a sub-agent's chat opens with: no turn yet (or ``turns``, when adopting an old
    child session), its title, the spawning call as its ``origin``, read-only."""
    return {
        "resource": chat,
        "title": title,
        "status": 1,
        "modifiedAt": modified_at,
        "turns": list(turns or ()),
        "origin": {"kind": "tool", "chat": parent_chat, "toolCallId": tool_call_id},
        "interactivity": SUBAGENT_INTERACTIVITY,
    }


class SubagentContributor(Contributor):
    """Offers ``task`` to a session's own chats and runs the sub-agent chats it opens."""

    def __init__(
        self,
        store: Store,
        open_chat: OpenChat,
        agents_for: Callable[[str], Sequence[SubagentSpec]],
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.store = store
        self.open_chat = open_chat
        self.agents_for = agents_for
        self.limit = limit
        self._slots: dict[str, asyncio.Semaphore] = {}
        """Per session: one slot per sub-agent that may run at once."""
        self._queries: dict[str, str] = {}
        """Per session: the message its specialists' listing is ranked by (its first)."""

    def session_disposed(self, session: str) -> None:
        """Forget ``session`` (its chats, sub-agents' included, go with it)."""
        self._slots.pop(session, None)
        self._queries.pop(session, None)

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        if parse_subagent_chat_uri(ctx.chat) is not None:
            return ()
        session, chat, model = ctx.session, ctx.chat, ctx.model
        agents = list(self.agents_for(session))
        query = self._queries.get(session, str(ctx.message.get("text") or ""))
        if agents and ctx.turn_id:  # a listing of the session's tools outside a turn pins nothing
            self._queries.setdefault(session, query)
        return (TaskTool(lambda tool, args, tool_ctx: self._run(session, chat, tool, args, tool_ctx, model), agents,
                         query=query),)

    async def _run(self, session: str, parent_chat: str, tool: TaskTool, args: dict, ctx: ToolContext,
                   model: dict[str, Any] | None = None) -> dict:
        description = str(args["description"]).strip()
        wanted = args.get("subagent_type")
        spec = tool.find(str(wanted)) if wanted else None
        if wanted and spec is None:
            items = [CatalogueItem(a.name, a.description) for a in tool.agents.values()]
            matches = closest(items, str(wanted))
            known = ("; these match: " + ", ".join(m.name for m in matches)) if matches else \
                ("; none matches that" if items else "; this session has no specialists")
            raise ToolFailure(f"There is no sub-agent {wanted!r}{known}.", code="unknown_subagent")
        slots = self._slots.setdefault(session, asyncio.Semaphore(self.limit))
        if slots.locked():
            await ctx.emit([text_content(f"Waiting for a free sub-agent: this session runs {self.limit} at once, "
                                         "and this one starts when one of them finishes.")])
        async with slots:
            return await self._run_chat(session, parent_chat, spec, description, args, ctx, model)

    def _free_chat_uri(self, session: str, tool_call_id: str) -> str:
        """The sub-agent chat URI of ``tool_call_id``; a ``#n`` suffix when a call of an earlier
        turn with the same id already has one (providers may reuse ids across turns)."""
        candidate, n = subagent_chat_uri(session, tool_call_id), 1
        while candidate in self.store:
            n += 1
            candidate = subagent_chat_uri(session, f"{tool_call_id}#{n}")
        return candidate

    async def _run_chat(self, session: str, parent_chat: str, spec: SubagentSpec | None, description: str, args: dict,
                        ctx: ToolContext, model: dict[str, Any] | None = None) -> dict:
        tool_call_id = ctx.tool_call_id or str(uuid.uuid4())
        chat = self._free_chat_uri(session, tool_call_id)
        title = f"Sub-agent: {description}"
        self.open_chat(session, subagent_chat_state(chat, title=title, parent_chat=parent_chat, tool_call_id=tool_call_id,
                                                    modified_at=now_iso()))
        block: dict[str, Any] = {"type": "subagent", "resource": chat, "title": title, "description": description}
        if spec is not None:
            block["agentName"] = spec.name
        await ctx.emit([block])
        turn_id = str(uuid.uuid4())
        message = user_message(str(args["prompt"]), model=model, agent={"uri": spec.uri} if spec is not None else None)
        self.store.dispatch(chat, turn_started(turn_id, message))
        ended = lambda s: any(t.get("id") == turn_id for t in s.get("turns") or ())  # noqa: E731
        asking = False
        try:
            while True:
                # Wakes when the turn ends, or when the sub-agent starts or stops waiting for a
                # person (a confirmation or a question in its chat), which the call then says.
                state = await _until(self.store, chat, lambda s: ended(s) or _needs_input(s) != asking, None)  # noqa: B023  (awaited here)
                if ended(state) or chat not in self.store:
                    break
                asking = _needs_input(state)
                await ctx.emit([block, text_content(WAITING_FOR_YOU)] if asking else [block])
        except asyncio.CancelledError:
            live = (self.store.state(chat) or {}).get("activeTurn") or {}
            if live.get("id") == turn_id:
                self.store.dispatch(chat, builders.chat_turn_cancelled(turn_id=turn_id, duration=turn_duration(live.get("startedAt"))))
            raise
        turn = next((t for t in state.get("turns") or () if t.get("id") == turn_id), None)
        if turn is None:  # the chat went away before its turn ended
            return failure_result(f"Sub-agent did not finish: {description}", "The sub-agent's chat was removed.", "subagent_failed",
                                  content=[block])
        answer = "\n\n".join(p.get("content", "") for p in turn.get("responseParts") or () if p.get("kind") == "markdown").strip()
        if turn.get("state") != "complete":
            errors = [p.get("error") or {} for p in turn.get("responseParts") or () if p.get("kind") == "error"]
            why = (errors[-1] if errors else {}).get("message") or f"the sub-agent's turn ended as {turn.get('state')}"
            return failure_result(f"Sub-agent did not finish: {description}", f"The sub-agent stopped: {why}", "subagent_failed",
                                  content=[block, text_content(f"The sub-agent stopped: {why}" + (f"\n\nWhat it said:\n{answer}" if answer else ""))])
        return success_result(f"Sub-agent finished: {description}", [block, text_content(answer or "(The sub-agent gave no answer.)")])


def _needs_input(chat: dict[str, Any]) -> bool:
    status = chat.get("status")
    return isinstance(status, int) and status & ACTIVITY_MASK == int(SessionStatus.InputNeeded)


def child_sessions_named(state: dict[str, Any]) -> list[tuple[str, str, str]]:
    """``(turn id, tool call id, resource)`` for each ``subagent`` block of a chat's own ``task``
    calls that names something other than a sub-agent chat: how builds before tool-spawned chats
    recorded a sub-agent (its child session's default chat, or in the 0.2.0 era the child's
    ``ahp-session:/<id>``). A client or MCP tool's content, which names anything it likes, is not
    looked at."""
    found = []
    turns = [*(state.get("turns") or ()), *([state["activeTurn"]] if state.get("activeTurn") else [])]
    for turn in turns:
        for part in turn.get("responseParts") or ():
            call = part.get("toolCall") if part.get("kind") == "toolCall" else None
            if not call or call.get("toolName") != TaskTool.name or call.get("contributor") is not None:
                continue
            for block in call.get("content") or ():
                resource = block.get("resource") if isinstance(block, dict) and block.get("type") == "subagent" else None
                if isinstance(resource, str) and parse_subagent_chat_uri(resource) is None:
                    found.append((str(turn.get("id")), str(call.get("toolCallId")), resource))
    return found


def adopt_child_sessions(
    store: Store,
    open_chat: OpenChat,
    copy_transcripts: Callable[[str, str, list[str]], None],
    dispose_session: Callable[[str], None],
    session_named: Callable[[str], str | None] = lambda name: None,
) -> int:
    """Start-up only (``Store.replace``): convert sub-agents an older build ran as child sessions
    into the tool-spawned chats this build opens. For each ``task`` call whose ``subagent`` block
    names a child session still in the store (by its default chat, or by any name
    ``session_named`` resolves, e.g. a 0.2.0 ``ahp-session:/<id>``), the child's default chat (its
    turns, read-only, its title) opens as that call's sub-agent chat in the parent's session, its
    transcripts are copied to the parent, the block is rewritten to name the new chat, and the
    child session is disposed. Idempotent: a converted store names no child sessions. Returns
    how many it moved."""
    moved = 0
    for session, session_state in list(store.channels("session")):
        if session not in store:
            continue  # a child disposed earlier in this loop
        for entry in list(session_state.get("chats") or ()):
            parent_chat = entry.get("resource") if isinstance(entry, dict) else None
            chat_state = _whole(store, parent_chat) if isinstance(parent_chat, str) else None
            if chat_state is None or not isinstance(parent_chat, str):
                continue
            renamed: dict[str, str] = {}
            for _turn_id, tool_call_id, resource in child_sessions_named(chat_state):
                child = session_of_default_chat(resource) or session_named(resource)
                child_state = store.state(child) if child is not None and store.kind(child) == "session" else None
                child_chat = (child_state or {}).get("defaultChat")
                old = store.state(child_chat) if isinstance(child_chat, str) else None
                if child == session or child is None or old is None or not isinstance(child_chat, str):
                    continue
                chat = subagent_chat_uri(session, tool_call_id)
                n = 1
                while chat in store:
                    n += 1
                    chat = subagent_chat_uri(session, f"{tool_call_id}#{n}")
                turns = store.turns(child_chat)  # older turns too, read back from the journal
                title = str((child_state or {}).get("title") or old.get("title") or "Sub-agent")
                open_chat(session, subagent_chat_state(chat, title=title, parent_chat=parent_chat, tool_call_id=tool_call_id,
                                                       modified_at=old.get("modifiedAt") or "", turns=turns))
                copy_transcripts(child, session, [str(turn.get("id")) for turn in turns])
                renamed[resource] = chat
                dispose_session(child)
                moved += 1
            if renamed:
                store.replace(parent_chat, _renaming_blocks(_whole(store, parent_chat) or chat_state, renamed))
    if moved:
        logger.info("%d sub-agent session(s) of an older build now run as sub-agent chats", moved)
    return moved


def _whole(store: Store, chat: str) -> dict[str, Any] | None:
    """A chat's state with all its turns, the older ones the store keeps out of it included."""
    state = store.state(chat)
    return None if state is None else {**state, "turns": store.turns(chat)}


def _renaming_blocks(state: dict[str, Any], renamed: dict[str, str]) -> dict[str, Any]:
    """``state`` with each ``task`` call's ``subagent`` block naming ``renamed[old]`` instead of ``old``."""

    def block(item: Any) -> Any:
        if isinstance(item, dict) and item.get("type") == "subagent" and item.get("resource") in renamed:
            return {**item, "resource": renamed[item["resource"]]}
        return item

    def part(item: Any) -> Any:
        call = item.get("toolCall") if isinstance(item, dict) and item.get("kind") == "toolCall" else None
        if not isinstance(call, dict) or call.get("toolName") != TaskTool.name:
            return item
        return {**item, "toolCall": {**call, "content": [block(b) for b in call.get("content") or ()]}}

    def turn(item: Any) -> Any:
        return {**item, "responseParts": [part(p) for p in item.get("responseParts") or ()]} if isinstance(item, dict) else item

    out = {**state, "turns": [turn(t) for t in state.get("turns") or ()]}
    if isinstance(state.get("activeTurn"), dict):
        out["activeTurn"] = turn(state["activeTurn"])
    return out


async def _until(store: Store, channel: str, predicate: Callable[[dict[str, Any]], bool], timeout: float | None) -> dict[str, Any]:
    """The channel's state once ``predicate`` holds (woken by each action), or the last seen
    state when the channel goes away or ``timeout`` passes. Streamed tokens do not wake it."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def check() -> bool:
        state = store.state(channel)
        return state is None or predicate(state)

    def observer(*_args: Any) -> None:
        if not done.done() and check():
            done.set_result(None)

    if not check():
        # Predicates here never depend on streamed text, so tokens need not wake (and rebuild) it.
        store.change_observers.append(observer)
        try:
            await asyncio.wait_for(asyncio.shield(done), timeout)
        except TimeoutError:
            pass
        finally:
            store.change_observers.remove(observer)
    return store.state(channel) or {}
