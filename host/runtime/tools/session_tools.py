"""The ``Contributor`` that gives every session its tools and fills in each call's ``ToolContext``.

``tools(ctx)``: the built-in tools (``tools.builtin``, the shell with the configured timeout),
then the session's active clients' tools (``client_tools``: a client tool clashing with any server
tool offered by any contributor is offered as ``client__<name>``).

``tool_context(ctx, context)`` wires a call to its session:

* sandbox: the session's working directory (set by the turn loop) plus ``[tools] extra_roots``;
* ``report_content`` → throttled ``chat/toolCallContentChanged`` (``_reporting``);
* ``ask`` → ``chat/inputRequested`` in the turn's chat (``host.runtime.inputs``); resolves when
  ``chat/inputCompleted`` arrives, with the answers merged from the synced state
  (``inputAnswerChanged``) and the completing action;
* ``reconfirm`` → the approver's re-confirmation (``toolCallReady`` without ``confirmed``);
* ``content_store`` → the host's durable content store (served by ``resourceRead``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from tools.base import Tool, ToolContext
from tools.content import ContentStore

from ._reporting import ContentReporters
from ._waiters import Waiters
from .client_tools import ClientDeparture, ClientTool, offered_client_tools

__all__ = ["SessionTools", "SessionToolParts"]


@dataclass(frozen=True)
class SessionToolParts:
    """What ``SessionTools`` is built from (the tools runtime supplies each part)."""

    builtins: Sequence[Tool]
    extra_roots: tuple[Path, ...]
    untracked: tuple[Path, ...]
    """Folders whose file changes tools never report (the host's data directory)."""
    content_store: ContentStore
    waiters: Waiters
    reporters: ContentReporters
    departure: ClientDeparture
    other_server_tool_names: Callable[[TurnContext, Contributor], set[str]]
    reconfirm: Callable[[TurnContext, str, str], Awaitable[bool]]
    ask: Callable[[TurnContext, dict], Awaitable[dict]]
    readable_roots: Callable[[], Sequence[Path]] = tuple
    """The host's resource roots, which every client may read (``ToolContext.readable_roots``)."""


class SessionTools(Contributor):
    def __init__(self, parts: SessionToolParts) -> None:
        self._parts = parts

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        builtins = list(self._parts.builtins)
        if not any(isinstance(active, dict) and active.get("tools") for active in ctx.state.get("activeClients") or ()):
            return builtins  # no client offers a tool: no names to keep clear of (each turn asked every contributor)
        taken = {tool.name for tool in builtins} | self._parts.other_server_tool_names(ctx, self)
        parts = self._parts

        def make(definition: dict[str, Any], client_id: str, name: str) -> ClientTool:
            return ClientTool(definition, client_id, name, session=ctx.session, chat=ctx.chat, turn_id=ctx.turn_id,
                              waiters=parts.waiters, on_orphan=parts.departure.watch)

        return [*builtins, *offered_client_tools(ctx.state, taken, make)]

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        parts = self._parts
        context.extra_roots = (*context.extra_roots, *(r for r in parts.extra_roots if r not in context.extra_roots))
        context.content_store = parts.content_store
        context.untracked = (*context.untracked, *parts.untracked)
        context.readable_roots = tuple(parts.readable_roots())
        call_id = context.tool_call_id
        if call_id is not None:
            context.report_content = parts.reporters.callback(ctx, call_id)

            async def reconfirm(reason: str) -> bool:
                return await parts.reconfirm(ctx, call_id, reason)

            context.reconfirm = reconfirm

        async def ask(request: dict) -> dict:
            return await parts.ask(ctx, request)

        context.ask = ask
        return context
