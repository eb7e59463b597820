"""What a session adds to each turn of a provider-backed agent, beyond the agent's own config.

The ``ProviderAgent`` asks its ``TurnEnvironment`` for the extras of one turn; the environment
asks each registered ``Contributor`` in order. Contributors are how later features plug into the
turn loop without editing it:

* ``tools(ctx)``: tools offered to the model for this session (built-in tools, MCP servers,
  the active client's tools, a skill loader...). Names are unique: when two contributors offer
  the same name, the one registered first wins (and the agent's own static tools win over all).
* ``system_prompt(ctx)``: text appended to the agent's system prompt (custom agent, rules...).
* ``before_tool_call(ctx, request, arguments)``: runs before the call is approved and returns a
  ``PreToolVerdict``: block it (the reason is shown to the user and the model), change its
  arguments, or say whether to ask (``allow`` skips the confirmation unless a rule asks, ``ask``
  forces it), as ``PreToolUse`` hooks answer. Contributors are asked in order, each with the
  arguments the previous one left; the first block wins, ``ask`` beats ``allow``.
* ``after_tool_call(ctx, request, result)``: observes a finished call (``PostToolUse`` hooks) and
  may return text to add to what the model reads of the result (a hook's ``additionalContext``).
* ``stop(ctx, active)``: the model finished answering; returning a reason keeps the turn going
  with that reason as the next user message (a ``Stop`` hook exiting 2 or answering
  ``decision: block``). ``active`` is True when the turn already continued because of a stop.
* ``tool_context(ctx, context)``: fills in the host callbacks of a ``ToolContext`` (streaming
  partial content, asking the user, re-confirmation, the content store, sandbox roots).
* ``filter_tools(ctx, tools)``: narrows the offered set after every contributor added its tools
  (a custom agent's tool allow-list); filters run in registration order.
* ``before_compact(ctx, trigger, instructions)`` / ``after_compact(ctx, trigger)``: around a
  compaction of the conversation (``trigger`` ``manual`` for ``/compact``, ``auto`` when the
  context window is full): ``PreCompact`` hooks, then ``SessionStart`` hooks with ``compact``.
* ``user_message(ctx, message)``: sees the turn's ``Message`` before the model does and may
  return a replacement (``/skill args`` expanded) or raise ``TurnFailed`` to reject it (a
  ``UserPromptSubmit`` hook exiting 2). Runs once per turn, before the first model call.

``Contributor`` is a base class with do-nothing defaults; subclass it and override what you need.
The environment also carries the ``ToolApprover`` (the confirmation flow).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from host.runtime.agents.base import TurnContext
from host.runtime.agents.tooling import AutoApprover, PreToolVerdict, ToolApprover, ToolCallRequest
from tools.base import Tool, ToolContext

__all__ = ["Contributor", "TurnEnvironment"]


class Contributor:
    """One source of per-session extras; every method has a neutral default."""

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        return ()

    def system_prompt(self, ctx: TurnContext) -> Sequence[str]:
        return ()

    async def before_tool_call(self, ctx: TurnContext, request: ToolCallRequest, arguments: Any) -> PreToolVerdict:
        return PreToolVerdict()

    async def after_tool_call(self, ctx: TurnContext, request: ToolCallRequest, result: dict[str, Any]) -> str | None:
        return None

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        return context

    async def stop(self, ctx: TurnContext, active: bool) -> str | None:
        return None

    def filter_tools(self, ctx: TurnContext, tools: dict[str, Tool]) -> dict[str, Tool]:
        return tools

    async def user_message(self, ctx: TurnContext, message: dict[str, Any]) -> dict[str, Any]:
        return message

    async def before_compact(self, ctx: TurnContext, trigger: str, instructions: str | None) -> None:
        return None

    async def after_compact(self, ctx: TurnContext, trigger: str) -> None:
        return None


@dataclass
class TurnEnvironment:
    contributors: list[Contributor] = field(default_factory=list)
    approver: ToolApprover = field(default_factory=AutoApprover)

    def tools(self, ctx: TurnContext, own: Sequence[Tool] = ()) -> dict[str, Tool]:
        offered: dict[str, Tool] = {tool.name: tool for tool in own}
        for contributor in self.contributors:
            for tool in contributor.tools(ctx):
                offered.setdefault(tool.name, tool)
        for contributor in self.contributors:
            offered = contributor.filter_tools(ctx, offered)
        return offered

    async def user_message(self, ctx: TurnContext, message: dict[str, Any]) -> dict[str, Any]:
        for contributor in self.contributors:
            message = await contributor.user_message(ctx, message)
        return message

    def system_prompt(self, ctx: TurnContext, base: str | None) -> str | None:
        parts = [base] if base else []
        for contributor in self.contributors:
            parts.extend(text for text in contributor.system_prompt(ctx) if text)
        return "\n\n".join(parts) or None

    async def before_tool_call(self, ctx: TurnContext, request: ToolCallRequest, arguments: Any) -> PreToolVerdict:
        permission: str | None = None
        reason: str | None = None
        changed: Any = None
        for contributor in self.contributors:
            verdict = await contributor.before_tool_call(ctx, request, arguments if changed is None else changed)
            if verdict.blocked:
                return verdict
            if verdict.arguments is not None:
                changed = verdict.arguments
            if verdict.permission == "ask" or (verdict.permission == "allow" and permission is None):
                permission, reason = verdict.permission, verdict.reason or reason
        return PreToolVerdict(permission=permission, reason=reason, arguments=changed)

    async def after_tool_call(self, ctx: TurnContext, request: ToolCallRequest, result: dict[str, Any]) -> str | None:
        added = [text for contributor in self.contributors if (text := await contributor.after_tool_call(ctx, request, result))]
        return "\n\n".join(added) or None

    async def stop(self, ctx: TurnContext, active: bool) -> str | None:
        for contributor in self.contributors:
            reason = await contributor.stop(ctx, active)
            if reason:
                return reason
        return None

    async def before_compact(self, ctx: TurnContext, trigger: str, instructions: str | None) -> None:
        for contributor in self.contributors:
            await contributor.before_compact(ctx, trigger, instructions)

    async def after_compact(self, ctx: TurnContext, trigger: str) -> None:
        for contributor in self.contributors:
            await contributor.after_compact(ctx, trigger)

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        for contributor in self.contributors:
            context = contributor.tool_context(ctx, context)
        return context
