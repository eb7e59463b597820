"""How the turn loop runs the tools a model calls: the approval seam and the call itself.

For each tool call whose arguments are final, the loop builds a ``ToolCallRequest`` (the tool,
the raw JSON arguments, and the ``toolCallReady`` fields from ``Tool.prepare``) and awaits
``approver.approve(request, ctx)``. The approver owns the ``chat/toolCallReady`` action:

* ``AutoApprover`` (this task) dispatches it with ``confirmed: "not-needed"`` → ``running``.
* A confirming approver (the confirmation flow) dispatches it without ``confirmed`` →
  ``pending-confirmation`` and waits for the client's ``chat/toolCallConfirmed``; it returns
  ``Approval(approved=False, ...)`` on denial (the reducer already cancelled the call), or
  ``Approval(True, edited_input=...)`` when the client edited the input.

Then ``run_tool`` calls the tool and returns its AHP ``ToolCallResult``. Cancelling the task
that awaits it (the turn was cancelled) sets the tool's cancellation event and propagates.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ahp.protocol import builders
from host.runtime.agents.base import TurnContext
from tools.base import Tool, ToolContext, failure_result

__all__ = ["ToolCallRequest", "PreToolVerdict", "Approval", "ToolApprover", "AutoApprover", "run_tool", "finish_call", "unknown_tool_result"]


@dataclass(frozen=True)
class ToolCallRequest:
    """One tool call the model made, ready to be approved."""

    tool_call_id: str
    """The AHP tool call id (unique in the turn)."""
    tool_name: str
    arguments: str
    """Raw JSON argument text, exactly as the model streamed it."""
    tool: Tool | None
    """The tool, or None when the model called a tool this session does not have."""
    ready_fields: Mapping[str, Any] = field(default_factory=dict)
    """``invocationMessage``, ``confirmationTitle?``, ``edits?`` for ``toolCallReady``."""
    hook_permission: str | None = None
    """What ``PreToolUse`` hooks said about asking: ``allow`` (no confirmation unless a rule asks)
    or ``ask`` (a confirmation even when a rule or the mode would allow it); None: nothing."""
    hook_reason: str | None = None
    """The hooks' ``permissionDecisionReason``, shown in the confirmation they asked for."""

    def ready_action(
        self, turn_id: str, *, confirmed: str | None = None, asking: bool = True,
        options: Sequence[Any] | None = None, editable: bool | None = None,
    ) -> dict[str, Any]:
        """This call's ``chat/toolCallReady``. Without ``asking`` (the call was allowed or
        refused without asking anyone) the confirmation title and the proposed edits are left out."""
        fields = self.ready_fields
        return builders.chat_tool_call_ready(
            turn_id=turn_id,
            tool_call_id=self.tool_call_id,
            tool_input=self.arguments,
            invocation_message=fields.get("invocationMessage") or f"Call {self.tool_name}",
            confirmation_title=fields.get("confirmationTitle") if asking else None,
            edits=fields.get("edits") if asking else None,
            confirmed=confirmed,
            options=options,
            editable=editable,
        )


@dataclass(frozen=True)
class PreToolVerdict:
    """What the environment's ``before_tool_call`` decided about one call (``PreToolUse`` hooks)."""

    blocked: str | None = None
    """Refuse the call with this reason (the model and the user see it)."""
    permission: str | None = None
    """``allow`` or ``ask`` (see ``ToolCallRequest.hook_permission``)."""
    reason: str | None = None
    """Why (``permissionDecisionReason``)."""
    arguments: Any = None
    """Arguments to run the call with instead of the model's (this host's names), or None."""


@dataclass(frozen=True)
class Approval:
    approved: bool
    edited_input: str | None = None
    """Replacement argument JSON when the user edited the call before approving."""
    reason: str | None = None
    """Why the call was refused; given to the model as the call's result."""


class ToolApprover(Protocol):
    async def approve(self, request: ToolCallRequest, ctx: TurnContext) -> Approval:
        """Dispatch ``chat/toolCallReady`` for ``request`` and decide whether it runs."""
        ...


class AutoApprover:
    """Approves every call without asking (``confirmed: "not-needed"``)."""

    async def approve(self, request: ToolCallRequest, ctx: TurnContext) -> Approval:
        ctx.emit(request.ready_action(ctx.turn_id, confirmed="not-needed"))
        return Approval(approved=True)


def parse_arguments(arguments: str) -> Any:
    """The arguments as JSON (``{}`` for empty text); raises ``ValueError`` when malformed."""
    return json.loads(arguments) if arguments.strip() else {}


def unknown_tool_result(name: str, available: Sequence[str]) -> dict[str, Any]:
    listed = ", ".join(sorted(available)) or "none"
    return failure_result(
        f"Tried to call {name}", f"There is no tool named {name!r} in this session (available: {listed}).", "unknown_tool"
    )


async def finish_call(approver: ToolApprover, request: ToolCallRequest, result: dict[str, Any], ctx: TurnContext) -> dict[str, Any]:
    """Complete a call that ran; returns the result the model is told.

    An approver with a ``finish(request, result, ctx)`` method owns the completion (result
    confirmation, client tools completed by their owner); otherwise ``toolCallComplete`` is
    dispatched here and the result goes to the model unchanged.
    """
    finish = getattr(approver, "finish", None)
    if finish is not None:
        return await finish(request, result, ctx)
    ctx.emit(builders.chat_tool_call_complete(turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, result=result))
    return result


async def run_tool(tool: Tool, arguments: Any, context: ToolContext) -> dict[str, Any]:
    """Call ``tool``; on cancellation, tell it to stop and let the cancellation propagate."""
    try:
        return await tool.call(arguments, context)
    except asyncio.CancelledError:
        context.cancellation.set()
        raise
