"""The confirming ``ToolApprover``: the policy decides, the user confirms, the choice is applied.

For each call the turn loop hands over (``approve``):

* ``tools.policy.decide`` decides on the session's policy plus the turn's grants (the
  ``allowed-tools`` of the slash command that started the turn, ``TurnContext.grants``, as
  ``turn_allow`` rules that end with the turn). It says **allow** → ``toolCallReady{confirmed: "not-needed" | "setting"}``;
  when a remembered *Always allow* choice allowed it, the call's ``_meta`` gains
  ``rememberedApproval`` (the choice as ``rememberedApprovals`` lists it: rule, scope, project), so
  a client can say why nobody was asked (``agent-host -p`` prints it). It is added with the call's
  ``toolCallComplete``, the one tool-call action after ``toolCallStart`` whose ``_meta`` an AHP 0.2.0
  client receives (``forget_turn`` drops what a cancelled turn's calls never used). The same
  completion carries ``answeredBy`` (``ANSWERED_BY``: who answered the call's confirmation, which
  ``host.transport.access`` records in the call's ``_meta``) when the call has one;
* **deny** (a deny rule) → ``toolCallReady{confirmed: "not-needed"}`` then ``toolCallComplete``
  with ``success: false`` and the rule as the reason; the model gets the same reason; no prompt;
* a ``PreToolUse`` hook's ``allow`` (``request.hook_permission``) turns an **ask** that no rule made
  into an allow (``confirmed: "setting"``); its ``ask`` turns an **allow** into an ask, with the
  hook's reason in the confirmation title; deny rules and plan mode still deny;
* **ask** → ``toolCallReady`` with the ``options`` of ``confirmation_options``, the ``edits`` from
  ``prepare`` and ``editable: true`` for shell commands and file edits, then waits (a future keyed
  by the tool call id, resolved by the runtime's store observer) for ``chat/toolCallConfirmed``
  and applies the chosen option with ``apply_option``: allow once; allow in this session (kept in
  the session's policy state, shell commands by prefix); always allow in this project (saved in
  ``ToolSettings`` for the session's project, which the option names, so later calls in that
  project get ``confirmed: "setting"``, across restarts too); deny; deny
  with a reason, whose ``reasonMessage`` and ``userSuggestion`` go back to the model as the
  call's result. An approval's ``editedToolInput`` replaces the arguments.

Client tools only meet the server's policy when a configured or saved rule names them; otherwise
they run with ``confirmed: "not-needed"`` (see ``client_tools``).

``finish`` completes a host-run call: ``toolCallComplete``, with ``requiresResultConfirmation``
for tools the config lists in ``result_confirmation`` (then it waits for
``toolCallResultConfirmed``; a denied result reaches the model as "the user rejected the
result"). ``reconfirm`` puts a running call back to pending-confirmation mid-execution.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ahp.protocol import builders
from host.runtime.agents.base import TurnContext
from host.runtime.agents.tooling import Approval, ToolCallRequest, parse_arguments
from tools.base import failure_result
from tools.policy import (
    OPTION_ALLOW_ALWAYS,
    OPTION_ALLOW_SESSION,
    Decision,
    OptionEffect,
    PolicyState,
    apply_option,
    confirmation_options,
    decide,
    parse_rule,
)

from ._reporting import ContentReporters
from ._waiters import Waiters
from .answers import ANSWERED_BY
from .client_tools import ClientTool
from .remembered import entry, shown_path

__all__ = ["ANSWERED_BY", "ConfirmingApprover", "RESULT_REJECTED"]


RESULT_REJECTED = (
    "The user rejected the result of this tool call, so it is not shown to you. "
    "Do not assume what it contained; ask the user or try another approach."
)
_CONTINUE_OPTIONS = [
    {"id": "continue", "label": "Continue", "kind": "approve", "group": 0},
    {"id": "stop", "label": "Stop", "kind": "deny", "group": 0},
]


def confirm_key(chat: str, turn_id: str, tool_call_id: str) -> tuple[str, ...]:
    return ("confirm", chat, turn_id, tool_call_id)


def result_key(chat: str, turn_id: str, tool_call_id: str) -> tuple[str, ...]:
    return ("result", chat, turn_id, tool_call_id)


class ConfirmingApprover:
    """Asks the user before a call and, where configured, about its result.

    It gets only what it uses: the waiters the client's answers resolve, the content reporters
    it pauses while asking again, and three questions about the session's rules."""

    def __init__(
        self,
        *,
        waiters: Waiters,
        reporters: ContentReporters,
        policy: Callable[[str], PolicyState],
        remember: Callable[[str, OptionEffect], None],
        needs_result_confirmation: Callable[[str], bool],
        project: Callable[[str], str | None] = lambda session: None,
    ) -> None:
        self._waiters = waiters
        self._reporters = reporters
        self._policy = policy
        self._remember = remember
        self._needs_result_confirmation = needs_result_confirmation
        self._project = project
        self._remembered: dict[tuple[str, str, str], dict[str, Any]] = {}
        """The remembered choice that allowed each running call, for its completion's ``_meta``."""

    # -- before the call -----------------------------------------------------------------------

    async def approve(self, request: ToolCallRequest, ctx: TurnContext) -> Approval:
        tool = request.tool
        args = _arguments(request.arguments)
        if tool is None:  # the loop never asks about unknown tools; be safe anyway
            ctx.emit(request.ready_action(ctx.turn_id, confirmed="not-needed"))
            return Approval(True)
        decision = self._decide(ctx, tool, args)
        if request.hook_permission == "allow" and decision.outcome == "ask" and decision.rule is None:
            # A PreToolUse hook allowed it: no confirmation, unless a rule asks (as in Claude Code).
            ctx.emit(request.ready_action(ctx.turn_id, confirmed="setting", asking=False))
            return Approval(True)
        if request.hook_permission == "ask" and decision.outcome == "allow":
            decision = Decision("ask", reason=request.hook_reason or "A plugin hook asks for confirmation.")
        if decision.outcome == "allow":
            if decision.source in ("project", "host") and decision.rule is not None:
                project = self._project(ctx.session) if decision.source == "project" else None
                self._remembered[(ctx.chat, ctx.turn_id, request.tool_call_id)] = entry(str(decision.rule), project)
            ctx.emit(request.ready_action(ctx.turn_id, confirmed=decision.confirmed, asking=False))
            return Approval(True)
        if decision.outcome == "deny":
            reason = decision.reason or "A rule denies this tool call."
            ctx.emit(request.ready_action(ctx.turn_id, confirmed="not-needed", asking=False))
            ctx.emit(builders.chat_tool_call_complete(
                turn_id=ctx.turn_id, tool_call_id=request.tool_call_id,
                result=failure_result(f"Did not run {tool.title}", reason, "denied_by_rule"),
            ))
            return Approval(False, reason=reason)
        editable = getattr(tool, "subject_kind", None) == "command" or "edits" in request.ready_fields
        project = self._project(ctx.session)
        options = confirmation_options(tool, args, project=shown_path(project) if project is not None else None)
        if request.hook_reason and request.hook_permission == "ask":
            # The hook's permissionDecisionReason is shown in the confirmation it asked for.
            title = request.ready_fields.get("confirmationTitle") or request.ready_fields.get("invocationMessage") or tool.title
            request = replace(request, ready_fields={**request.ready_fields,
                                                     "confirmationTitle": f"{title} (a plugin hook asks: {request.hook_reason})"})
        ready = request.ready_action(ctx.turn_id, options=options, editable=True if editable else None)
        key = confirm_key(ctx.chat, ctx.turn_id, request.tool_call_id)
        self._waiters.expect(key)
        ctx.emit(ready)
        answer = await self._waiters.wait(key)
        return self._apply(ctx.session, tool, args, answer)

    def _decide(self, ctx: TurnContext, tool: Any, args: dict[str, Any]) -> Decision:
        state = self._policy(ctx.session)
        if ctx.grants.allow:
            state = replace(state, turn_allow=tuple(parse_rule(rule) for rule in ctx.grants.allow),
                            turn_granted_by=ctx.grants.granted_by or "the command")
        decision = decide(tool, args, state)
        if isinstance(tool, ClientTool) and decision.rule is None:
            return Decision("allow", "not-needed", "The client confirms its own tools.")
        return decision

    def _apply(self, session: str, tool: Any, args: dict[str, Any], answer: dict[str, Any]) -> Approval:
        option = answer.get("selectedOptionId")
        if answer.get("approved"):
            edited = answer.get("editedToolInput")
            edited = edited if isinstance(edited, str) else None
            if option in (OPTION_ALLOW_SESSION, OPTION_ALLOW_ALWAYS):
                chosen_args = _arguments(edited) if edited is not None else args
                effect = apply_option(self._policy(session), tool, chosen_args, option)
                self._remember(session, effect)
            return Approval(True, edited_input=edited)
        return Approval(False, reason=_denial_text(answer))

    # -- during the call -----------------------------------------------------------------------

    async def reconfirm(self, ctx: TurnContext, tool_call_id: str, reason: str) -> bool:
        """Ask again whether a running call may go on; True when the user approves."""
        call = _call(ctx.chat_state, ctx.turn_id, tool_call_id)
        if call is None or call.get("status") != "running":
            return False
        key = confirm_key(ctx.chat, ctx.turn_id, tool_call_id)
        self._waiters.expect(key)
        self._reporters.pause(ctx.chat, tool_call_id)
        ctx.emit(builders.chat_tool_call_ready(
            turn_id=ctx.turn_id,
            tool_call_id=tool_call_id,
            invocation_message=call.get("invocationMessage") or reason,
            confirmation_title=reason,
            options=_CONTINUE_OPTIONS,
            tool_input=call.get("toolInput"),
        ))
        answer = await self._waiters.wait(key)
        self._reporters.resume(ctx.chat, tool_call_id)
        return bool(answer.get("approved"))

    def forget_turn(self, chat: str, turn_id: str) -> None:
        """Drop what the calls of a turn that ended left behind."""
        for key in [key for key in self._remembered if key[:2] == (chat, turn_id)]:
            del self._remembered[key]

    # -- after the call ------------------------------------------------------------------------

    async def finish(self, request: ToolCallRequest, result: dict[str, Any], ctx: TurnContext) -> dict[str, Any]:
        """Complete the call in the chat; returns what the model is told."""
        self._reporters.stop(ctx.chat, request.tool_call_id)
        remembered = self._remembered.pop((ctx.chat, ctx.turn_id, request.tool_call_id), None)
        if isinstance(request.tool, ClientTool):
            return result  # the owning client already completed it (or the host did on its departure)
        call = _call(ctx.chat_state, ctx.turn_id, request.tool_call_id)
        if call is not None and call.get("status") == "cancelled":
            return result  # the user stopped it at a re-confirmation: nothing left to complete
        confirming = self._needs_result_confirmation(request.tool_name)
        earlier = _meta_of(call)
        # Who answered its confirmation (``ANSWERED_BY``) goes with the completion too: an AHP 0.2.0
        # client receives no ``_meta`` with the answer itself.
        meta = {**earlier, "rememberedApproval": remembered} if remembered is not None else (
            earlier if ANSWERED_BY in earlier else None)
        complete = builders.chat_tool_call_complete(
            turn_id=ctx.turn_id, tool_call_id=request.tool_call_id, result=result, meta=meta,
            requires_result_confirmation=True if confirming else None,
        )
        if not confirming:
            ctx.emit(complete)
            return result
        key = result_key(ctx.chat, ctx.turn_id, request.tool_call_id)
        self._waiters.expect(key)
        ctx.emit(complete)
        answer = await self._waiters.wait(key)
        if answer.get("approved"):
            return result
        title = request.tool.title if request.tool is not None else request.tool_name
        return failure_result(f"Ran {title} (result rejected)", RESULT_REJECTED, "result_rejected")


def _arguments(text: str | None) -> dict[str, Any]:
    try:
        value = parse_arguments(text or "")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict):
        for key in ("markdown", "text"):
            if isinstance(value.get(key), str) and value[key].strip():
                return value[key].strip()
    return None


def _denial_text(answer: dict[str, Any]) -> str:
    reason = _text(answer.get("reasonMessage"))
    suggestion = _text(answer.get("userSuggestion"))
    if reason is None and suggestion is None:
        return "The user denied this tool call."
    text = "The user denied this tool call."
    if reason:
        text += f" Their reason: {reason}"
    if suggestion:
        text += f"\nWhat the user suggests doing instead: {suggestion}"
    return text


def _meta_of(call: dict[str, Any] | None) -> dict[str, Any]:
    """The call's ``_meta`` so far: an action that carries one replaces it."""
    meta = call.get("_meta") if call is not None else None
    return dict(meta) if isinstance(meta, dict) else {}


def _call(state: dict[str, Any], turn_id: str, tool_call_id: str) -> dict[str, Any] | None:
    turn = state.get("activeTurn")
    if not isinstance(turn, dict) or turn.get("id") != turn_id:
        return None
    for part in turn.get("responseParts") or ():
        call = part.get("toolCall") if part.get("kind") == "toolCall" else None
        if call is not None and call.get("toolCallId") == tool_call_id:
            return call
    return None


