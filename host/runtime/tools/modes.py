"""Permission modes in the turn loop: plan mode's tools and approval, and the OS sandbox for commands.

The mode itself is the session config property ``permissionMode`` (``session_config``); the
confirmation policy reads it (``tools.policy.decide``). This module is the ``Contributor`` that
makes the rest of each mode happen, read afresh for every model request:

* **plan**: the model is offered only read-only tools (``readOnlyHint: true``: reading, searching,
  asking the user) plus ``propose_plan``; a short note in the system prompt says so. Calling
  ``propose_plan(plan)`` asks the user (``chat/inputRequested``, a single-select question with the
  plan as its message): *approve and accept edits*, *approve and ask before edits and commands*,
  or *keep planning* (with what to change, typed freely). Approval dispatches
  ``session/configChanged{permissionMode}``, so the next model request of the same turn is offered
  every tool again and the model carries the plan out; anything else leaves the session in plan
  mode and tells the model what the user said. Outside plan mode ``propose_plan`` is not offered,
  nor to a sub-agent's chat (its ``task`` explores for the plan under the same read-only limit).
* **the OS sandbox** (``tools.os_sandbox``): with ``[tools] sandbox = "auto"`` the shell tool's
  commands run in it when the session is in ``full-auto``; with ``"always"`` in every mode; with
  ``"off"`` never. The sandbox may write the session's working directory and ``[tools]
  extra_roots`` (and a private ``/tmp``); the network follows ``[tools] sandbox_network``. Where a
  sandbox is required and the platform has none, the shell refuses every command with the reason
  (``ToolContext.sandbox_unavailable``).

``PlanModeMirror`` keeps VS Code's own ``mode`` setting (when the session has it) and
``permissionMode`` saying the same thing: a change of ``mode`` by VS Code sets the permission mode
it means, and a change of ``permissionMode`` by another client sets ``mode`` to match, so VS Code
shows the mode the terminal client chose and the other way round.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ahp.protocol import builders
from ahp.state.channels import parse_subagent_chat_uri
from host.resources.workdirs import session_directory
from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from tools.base import Tool, ToolContext, failure_result, success_result
from tools.content import text_content
from tools.os_sandbox import OsSandbox, unavailable

from .session_config import PERMISSION_MODE, mode_for_vscode, permission_mode_of

__all__ = ["PermissionModes", "SandboxRules", "ProposePlanTool", "PLAN_TOOL", "vscode_mode_change", "permission_mode_change", "set_mode_action"]

PLAN_TOOL = "propose_plan"
_PLAN_NOTE = ("The session is in plan mode: only read-only tools run. Explore, then call propose_plan with a "
              "concrete step-by-step plan; nothing is changed until the user approves it.")
_APPROVALS = {"accept-edits": "Yes, and accept edits", "default": "Yes, ask before each edit and command"}
_KEEP = "keep-planning"

SetMode = Callable[[str, str], None]
"""``set_mode(session, mode)``: dispatch the session's new permission mode."""


class ProposePlanTool(Tool):
    """Shows the plan to the user and, on approval, leaves plan mode."""

    name = PLAN_TOOL
    title = "Propose Plan"
    description = ("Present your plan to the user for approval (plan mode). Give the concrete steps you will take: the files "
                   "you will change and how, and the commands you will run. If the user approves, the session leaves plan "
                   "mode and you carry the plan out; otherwise you get their feedback and stay in plan mode.")
    input_schema = {
        "type": "object",
        "properties": {"plan": {"type": "string", "minLength": 1, "description": "The plan, in Markdown."}},
        "required": ["plan"],
        "additionalProperties": False,
    }
    # It changes nothing by itself: the user's answer does. Read-only, so plan mode lets it run.
    annotations = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}

    def __init__(self, session: str, set_mode: SetMode) -> None:
        self.session = session
        self.set_mode = set_mode

    def describe(self, args: dict) -> str:
        return "Propose a plan"

    def past_tense(self, args: dict) -> str:
        return "Tried to propose a plan"

    def confirmation_title(self, args: dict) -> str | None:
        return None

    async def run(self, args: dict, ctx: ToolContext) -> dict:
        options = [{"id": mode, "label": label} for mode, label in _APPROVALS.items()]
        options.append({"id": _KEEP, "label": "No, keep planning"})
        request = {
            "id": f"plan-{ctx.tool_call_id or uuid.uuid4().hex}",
            "message": args["plan"],
            "questions": [{
                "id": "approval", "kind": "single-select", "title": "Plan", "required": True,
                "message": "Approve this plan and let the agent carry it out?",
                "options": options, "allowFreeformInput": True,
            }],
        }
        reply = await ctx.ask(request)
        answer = ((reply.get("answers") or {}).get("approval") or {}).get("value") or {}
        chosen = answer.get("value") if reply.get("response") == "accept" else None
        feedback = "; ".join(str(text) for text in answer.get("freeformValues") or () if text)
        if chosen in _APPROVALS:
            self.set_mode(self.session, chosen)
            said = "edits in the session's folders run without asking, commands ask" if chosen == "accept-edits" \
                else "edits and commands ask the user first"
            text = f"The user approved the plan. The session left plan mode ({chosen}: {said}). Carry the plan out now."
            return success_result("Plan approved", [text_content(text + (f"\nThe user added: {feedback}" if feedback else ""))],
                                  {"approved": True, "permissionMode": chosen})
        if reply.get("response") in ("accept", "decline"):
            text = "The user did not approve the plan; the session stays in plan mode. " + (
                f"What the user wants changed: {feedback}" if feedback else "Ask what to change, or revise the plan.")
            return success_result("Plan not approved", [text_content(text)], {"approved": False})
        return failure_result("Plan not approved", "The user dismissed the plan; the session stays in plan mode.", "cancelled")


@dataclass(frozen=True)
class SandboxRules:
    """The user's additions to the sandbox's rules (``[tools] sandbox_*``) and the host's data directory."""

    environment: tuple[str, ...] = ()
    hidden: tuple[Path, ...] = ()
    unix_sockets: tuple[Path, ...] = ()


class PermissionModes(Contributor):
    def __init__(self, set_mode: SetMode, *, sandbox: str, network: bool, extra_roots: Sequence[Path],
                 sandbox_unavailable: Callable[[], str | None] = unavailable, rules: SandboxRules = SandboxRules()) -> None:
        self._set_mode = set_mode
        self._sandbox = sandbox
        self._network = network
        self._extra_roots = tuple(extra_roots)
        self._sandbox_unavailable = sandbox_unavailable
        self._rules = rules

    def _sandboxed(self, ctx: TurnContext) -> bool:
        """Whether this session's commands run in the OS sandbox now (its mode and ``[tools] sandbox``)."""
        return self._sandbox == "always" or (self._sandbox == "auto" and permission_mode_of(ctx.state) == "full-auto")

    def _os_sandbox(self, ctx: TurnContext, working_directory: Path | None) -> OsSandbox:
        directory = session_directory(ctx.state)
        folders = (*((directory,) if directory is not None else ()), *((working_directory,) if working_directory else ()),
                   *self._extra_roots)
        return OsSandbox(tuple(dict.fromkeys(folders)), self._network, hidden=self._rules.hidden,
                         environment=self._rules.environment, unix_sockets=self._rules.unix_sockets)

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        if permission_mode_of(ctx.state) != "plan" or parse_subagent_chat_uri(ctx.chat) is not None:
            return ()  # a sub-agent explores for the plan; only the session's own chat proposes it
        return (ProposePlanTool(ctx.session, self._set_mode),)

    def filter_tools(self, ctx: TurnContext, tools: dict[str, Tool]) -> dict[str, Tool]:
        if permission_mode_of(ctx.state) == "plan":
            return {name: tool for name, tool in tools.items() if tool.read_only}
        shell = tools.get("shell")
        if shell is None or not self._sandboxed(ctx) or self._sandbox_unavailable() is not None:
            return tools
        # The model reads what the sandbox allows where it decides to run a command.
        told = copy.copy(shell)
        told.description = f"{shell.description} {self._os_sandbox(ctx, None).describe()}"
        return {**tools, "shell": told}

    def system_prompt(self, ctx: TurnContext) -> Sequence[str]:
        if permission_mode_of(ctx.state) == "plan":
            return (_PLAN_NOTE,)
        if self._sandboxed(ctx) and self._sandbox_unavailable() is None:
            return (self._os_sandbox(ctx, None).describe(),)
        return ()

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        if not self._sandboxed(ctx):
            return context
        reason = self._sandbox_unavailable()
        if reason is not None:
            context.sandbox_unavailable = reason
            return context
        context.sandbox = self._os_sandbox(ctx, Path(context.working_directory))
        return context


def vscode_mode_change(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    """The ``permissionMode`` change a client's change of VS Code's ``mode`` calls for, or None."""
    changed = action.get("config") or {}
    if "mode" not in changed or PERMISSION_MODE in changed or not _has_mode_property(state):
        return None
    wanted = mode_for_vscode(changed["mode"])
    current = permission_mode_of(state)
    if wanted is None or wanted == current or (wanted == "default" and current == "accept-edits"):
        return None  # "interactive" covers both asking modes
    return {PERMISSION_MODE: wanted}


def permission_mode_change(state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any] | None:
    """The change of VS Code's ``mode`` a change of ``permissionMode`` calls for (when the session has ``mode``)."""
    changed = action.get("config") or {}
    values = (state.get("config") or {}).get("values") or {}
    if PERMISSION_MODE not in changed or "mode" in changed or "mode" not in values:
        return None
    wanted = {"plan": "plan", "full-auto": "autopilot"}.get(permission_mode_of(state), "interactive")
    return {"mode": wanted} if values.get("mode") != wanted else None


def _has_mode_property(state: dict[str, Any]) -> bool:
    return PERMISSION_MODE in ((((state.get("config") or {}).get("schema") or {}).get("properties")) or {})


def set_mode_action(mode: str) -> dict[str, Any]:
    return builders.session_config_changed(config={PERMISSION_MODE: mode})
