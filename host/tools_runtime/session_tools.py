"""The ``Contributor`` that gives every session its tools and fills in each call's ``ToolContext``.

``tools(ctx)``: the built-in tools (``tools.builtin``, the shell with the configured timeout),
then the active client's tools (``client_tools``: a client tool clashing with any server tool
offered by any contributor is offered as ``client__<name>``).

``tool_context(ctx, context)`` wires a call to its session:

* sandbox: the session's working directory (set by the turn loop) plus ``[tools] extra_roots``;
* ``report_content`` → throttled ``session/toolCallContentChanged`` (``_reporting``);
* ``ask`` → ``session/inputRequested``; resolves when ``session/inputCompleted`` arrives, with the
  answers merged from the synced state (``inputAnswerChanged``) and the completing action;
* ``reconfirm`` → the approver's re-confirmation (``toolCallReady`` without ``confirmed``);
* ``content_store`` → the host's durable content store (served by ``resourceRead``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from host.agents.base import TurnContext
from host.agents.environment import Contributor
from tools.base import Tool, ToolContext

from .client_tools import ClientTool, offered_client_tools

if TYPE_CHECKING:
    from .runtime import ToolsRuntime

__all__ = ["SessionTools"]


class SessionTools(Contributor):
    def __init__(self, runtime: ToolsRuntime) -> None:
        self._runtime = runtime

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        builtins = list(self._runtime.builtins)
        taken = {tool.name for tool in builtins} | self._runtime.other_server_tool_names(ctx, self)
        runtime = self._runtime

        def make(definition: dict[str, Any], client_id: str, name: str) -> ClientTool:
            return ClientTool(definition, client_id, name, session=ctx.session, turn_id=ctx.turn_id,
                              waiters=runtime.waiters, on_orphan=runtime.departure.watch)

        return [*builtins, *offered_client_tools(ctx.state, taken, make)]

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        runtime = self._runtime
        context.extra_roots = (*context.extra_roots, *(r for r in runtime.extra_roots if r not in context.extra_roots))
        context.content_store = runtime.content_store
        call_id = context.tool_call_id
        if call_id is not None:
            context.report_content = runtime.reporters.callback(ctx, call_id)

            async def reconfirm(reason: str) -> bool:
                return await runtime.approver.reconfirm(ctx, call_id, reason)

            context.reconfirm = reconfirm

        async def ask(request: dict) -> dict:
            return await runtime.ask(ctx, request)

        context.ask = ask
        return context
