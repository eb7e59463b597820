"""Sub-agents: the ``task`` tool hands a self-contained job to a child session.

What a user sees, and the rules:

* The model calls ``task`` with a short ``description``, the full ``prompt`` and optionally a
  ``subagent_type``: the name of a custom agent from the session's plugins or ``.claude/agents``
  (Claude Code's ``agents/`` folders), listed in the tool's description with what each is for.
* The host creates a child session (``<provider>:/<uuid>``, the internal model's session URI) on
  the parent's provider and working directory, titled "Sub-agent: <description>". It is an
  ordinary session: its own default chat, turns, tools and confirmations, listed with the others.
  Its one turn's ``Message`` carries the model the parent's turn runs with and, for a specialist,
  that custom agent (model and agent ride on messages since AHP 0.5.0).
  Sub-agents stay child *sessions* here; the newer spec's tool-spawned chats
  (``ahp-chat://subagent/...``) are not modelled yet.
* As soon as the child exists, the running ``task`` call carries a ``ToolResultSubagentContent``
  (``toolCallContentChanged``) naming the child's default chat (0.9.0 names the worker chat; a
  0.2.0 client sees the child session), so a client can subscribe and watch it live.
* The child's turn runs the prompt; its final answer is the tool's result (with the subagent
  content kept). A child turn that fails or is cancelled makes the call fail, saying why.
* Cancelling the parent's turn cancels the child's turn. Children get no ``task`` tool of their own
  (no unbounded nesting).
* At most ``limit`` children of one parent run at once (``[sessions] max_subagents``, 4): a further
  ``task`` call waits for one of them to finish, saying so in its content while it waits ("waiting
  for a free sub-agent"), then runs. Waiting rather than failing: a model that asks for ten
  searches at once gets ten answers, four at a time, and has nothing to retry.
* A child goes with its parent: ``session_disposed(parent)`` returns the parent's children for the
  host to dispose (running ones are cancelled by that). The parent links are rebuilt at start
  (``recover``) from the parents' own ``task`` calls, so a restarted host still knows them.

The tool itself changes nothing (``readOnlyHint``): every action the sub-agent takes goes through
the child session's own confirmation.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ahp.protocol import builders
from ahp.dialects.v0_2.uris import v02_session_uri
from ahp.state import default_chat_uri, session_of_default_chat
from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from host.errors import RpcError
from host.state.sessions import session_id
from host.state.store import Store
from host.runtime.turns import turn_duration, turn_started, user_message
from tools.base import Tool, ToolContext, failure_result, success_result
from tools.content import text_content
from tools.errors import ToolFailure

__all__ = ["SubagentContributor", "TaskTool", "SubagentSpec", "DEFAULT_LIMIT"]

_READY_TIMEOUT = 60.0
DEFAULT_LIMIT = 4
"""Children one parent session runs at once."""


@dataclass(frozen=True)
class SubagentSpec:
    """A custom agent a ``task`` call may name."""

    name: str
    description: str
    uri: str


class TaskTool(Tool):
    """Runs a job in a child session and returns its final answer."""

    name = "task"
    title = "Run Sub-agent"
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}

    def __init__(self, run: Callable[[dict, ToolContext], Any], agents: Sequence[SubagentSpec]) -> None:
        self._run = run
        self.agents = {agent.name: agent for agent in agents}
        listed = "".join(f"\n- {a.name}: {a.description.strip().splitlines()[0][:300]}" for a in agents)
        self.description = (
            "Hand a self-contained job to a sub-agent that works in its own session with the same tools "
            "and working directory, and get its final answer back. Use it for searches or investigations "
            "that would fill this conversation, or for a specialist below. Give the sub-agent everything "
            "it needs in the prompt: it does not see this conversation."
            + (f"\nSpecialists (subagent_type):{listed}" if agents else "")
        )
        properties: dict[str, Any] = {
            "description": {"type": "string", "minLength": 1, "description": "The job in three to six words."},
            "prompt": {"type": "string", "minLength": 1, "description": "The full task for the sub-agent."},
        }
        if agents:
            properties["subagent_type"] = {"type": "string", "enum": sorted(self.agents), "description": "Which specialist to use."}
        self.input_schema = {"type": "object", "properties": properties, "required": ["description", "prompt"], "additionalProperties": False}

    def describe(self, args: dict) -> str:
        who = args.get("subagent_type") or "sub-agent"
        return f"Start {who}: {args.get('description', '')}"

    def past_tense(self, args: dict) -> str:
        return f"Sub-agent finished: {args.get('description', '')}"

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        return await self._run(args, ctx)


class SubagentContributor(Contributor):
    """Offers ``task`` to top-level sessions and runs the child sessions it starts."""

    def __init__(
        self,
        store: Store,
        create_session: Callable[[dict[str, Any], str], None],
        agents_for: Callable[[str], Sequence[SubagentSpec]],
        limit: int = DEFAULT_LIMIT,
    ) -> None:
        self.store = store
        self.create_session = create_session
        self.agents_for = agents_for
        self.limit = limit
        self.children: dict[str, str] = {}
        """child session → parent session."""
        self._slots: dict[str, asyncio.Semaphore] = {}
        """Per parent: one slot per child that may run at once."""

    def recover(self) -> None:
        """Rebuild the parent links from the parents' ``task`` calls (after a restart)."""
        for parent, _state in list(self.store.channels("session")):
            for child in _children_named(self.store.state(default_chat_uri(parent)) or {}):
                if child != parent and self.store.kind(child) == "session":
                    self.children.setdefault(child, parent)

    def session_disposed(self, session: str) -> list[str]:
        """Forget ``session``; its children, which go with it (the host disposes them)."""
        self.children.pop(session, None)
        self._slots.pop(session, None)
        children = [child for child, parent in self.children.items() if parent == session]
        for child in children:
            del self.children[child]
        return children

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        if ctx.session in self.children:
            return ()
        session = ctx.session
        agents = list(self.agents_for(session))
        model = ctx.model
        return (TaskTool(lambda args, tool_ctx: self._run(session, agents, args, tool_ctx, model), agents),)

    async def _run(self, parent: str, agents: Sequence[SubagentSpec], args: dict, ctx: ToolContext,
                   model: dict[str, Any] | None = None) -> dict:
        description = str(args["description"]).strip()
        wanted = args.get("subagent_type")
        spec = next((a for a in agents if a.name == wanted), None)
        if wanted and spec is None:
            known = ", ".join(a.name for a in agents) or "none"
            raise ToolFailure(f"There is no sub-agent {wanted!r} (available: {known}).", code="unknown_subagent")
        slots = self._slots.setdefault(parent, asyncio.Semaphore(self.limit))
        if slots.locked():
            await ctx.emit([text_content(f"Waiting for a free sub-agent: this session runs {self.limit} at once, "
                                         "and this one starts when one of them finishes.")])
        async with slots:
            return await self._run_child(parent, spec, description, args, ctx, model)

    async def _run_child(self, parent: str, spec: SubagentSpec | None, description: str, args: dict, ctx: ToolContext,
                         model: dict[str, Any] | None = None) -> dict:
        parent_state = self.store.state(parent) or {}
        provider = parent_state.get("provider")
        child = f"{provider}:/{uuid.uuid4()}"
        params: dict[str, Any] = {"channel": child, "provider": provider}
        if parent_state.get("workingDirectories"):
            params["workingDirectories"] = list(parent_state["workingDirectories"][:1])
        try:
            self.create_session(params, "host")
        except RpcError as error:
            raise ToolFailure(f"The sub-agent session could not be created: {error.message}", code="subagent_failed") from None
        self.children[child] = parent
        title = f"Sub-agent: {description}"
        self.store.dispatch(child, builders.session_title_changed(title=title))
        # The block names the worker chat (0.9.0's ToolResultSubagentContent); the text names the
        # session as people type it into a client (ahp-session:/<id>, which the host accepts).
        block: dict[str, Any] = {"type": "subagent", "resource": default_chat_uri(child), "title": title, "description": description}
        if spec is not None:
            block["agentName"] = spec.name
        await ctx.emit([block, text_content(f"Working in {v02_session_uri(child) or child}")])
        state = await _until(self.store, child, lambda s: s.get("lifecycle") in ("ready", "failed"), _READY_TIMEOUT)
        if state.get("lifecycle") != "ready":
            reason = (state.get("creationError") or {}).get("message") or "it did not become ready"
            return failure_result(f"Sub-agent could not start: {description}", f"The sub-agent session failed: {reason}", "subagent_failed")
        turn_id = str(uuid.uuid4())
        chat = default_chat_uri(child)
        message = user_message(str(args["prompt"]), model=model, agent={"uri": spec.uri} if spec is not None else None)
        self.store.dispatch(chat, turn_started(turn_id, message))
        try:
            state = await _until(self.store, chat, lambda s: any(t.get("id") == turn_id for t in s.get("turns") or ()), None)
        except asyncio.CancelledError:
            live = (self.store.state(chat) or {}).get("activeTurn") or {}
            if live.get("id") == turn_id:
                self.store.dispatch(chat, builders.chat_turn_cancelled(turn_id=turn_id, duration=turn_duration(live.get("startedAt"))))
            raise
        turn = next((t for t in state.get("turns") or () if t.get("id") == turn_id), None)
        if turn is None:  # the child went away before its turn ended
            return failure_result(f"Sub-agent did not finish: {description}", "The sub-agent session was removed.", "subagent_failed",
                                  content=[block])
        answer = "\n\n".join(p.get("content", "") for p in turn.get("responseParts") or () if p.get("kind") == "markdown").strip()
        if turn.get("state") != "complete":
            errors = [p.get("error") or {} for p in turn.get("responseParts") or () if p.get("kind") == "error"]
            why = (errors[-1] if errors else {}).get("message") or f"the sub-agent's turn ended as {turn.get('state')}"
            return failure_result(f"Sub-agent did not finish: {description}", f"The sub-agent stopped: {why}", "subagent_failed",
                                  content=[block, text_content(f"The sub-agent stopped: {why}" + (f"\n\nWhat it said:\n{answer}" if answer else ""))])
        return success_result(f"Sub-agent finished: {description}", [block, text_content(answer or "(The sub-agent gave no answer.)")])


def _children_named(state: dict[str, Any]) -> list[str]:
    """The sessions whose default chats the ``subagent`` content of a chat's own ``task`` calls
    names (a client or MCP tool's content, which names any chat it likes, is not looked at)."""
    found = []
    turns = [*(state.get("turns") or ()), *([state["activeTurn"]] if state.get("activeTurn") else [])]
    for turn in turns:
        for part in turn.get("responseParts") or ():
            call = part.get("toolCall") if part.get("kind") == "toolCall" else None
            if not call or call.get("toolName") != TaskTool.name or call.get("contributor") is not None:
                continue
            for block in call.get("content") or ():
                child = session_of_default_chat(block.get("resource")) if block.get("type") == "subagent" else None
                if child is not None and session_id(child) is not None:
                    found.append(child)
    return found


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
