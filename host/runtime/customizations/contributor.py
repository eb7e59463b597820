"""The ``Contributor`` that makes a session's customizations act on its turns.

Per turn (and per model request where noted) it adds:

* **user message** (once, before the first model call): waits (briefly, see
  ``CustomizationService.wait_started``) for the session's MCP servers to start; takes what hooks
  that ran in the background said for the model; runs ``UserPromptSubmit`` hooks (a sub-agent's
  turn runs ``SubagentStart`` instead): a block ends the turn with the hook's reason (the prompt is
  then left out of the conversation), ``continue: false`` stops it (``TurnStopped``), context is
  added after the prompt; expands ``/name args`` naming a usable skill, command or prompt into its
  body with ``$ARGUMENTS`` substituted (the model receives the expanded text; the ``!`cmd``` lines
  of a command that lies in a folder not trusted are replaced by a note instead of running, see
  ``host.runtime.trust``); attached files join the files in play.
* **system prompt** (every request): the selected custom agent's body (``ctx.agent``, captured at
  turn start), rules with ``alwaysApply`` and no globs, glob rules whose files are in play
  (attached or touched by a tool), a list of on-request rules, and which MCP servers are not
  available right now (starting, restarting, failed) so the model knows their tools are missing
  for a reason and may come later.
* **tools**: the session's MCP tools, ``load_skill`` (model-invocable skills and commands) and
  ``load_rule``; a custom agent that declares ``tools`` restricts the offered set to those names
  (the loaders stay available). Names match exactly, or as ``mcp-server/*`` / the MCP tool name.
* **tool hooks** (Claude Code's input and answers, see ``plugins.hooks``): ``PreToolUse`` hooks
  before the confirmation give a ``PreToolVerdict``: a block (exit 2, ``deny``) refuses the call
  with the reason the user and the model see; ``allow``/``ask`` go to the approver; an
  ``updatedInput`` (translated back by ``plugins.claude_code_tools``) replaces the arguments, which a
  notification tells the user; their ``additionalContext`` joins the call's result. After the call,
  ``PostToolUse`` (with ``tool_response``) / ``PostToolUseFailure`` (with ``error``): a block is
  feedback added to the result the model reads, and so is their context; the call's paths join the
  files in play.
* **stop**: ``Stop`` hooks (``SubagentStop`` for a sub-agent's turn) when the model has answered;
  one that blocks keeps the turn going with its reason as the next user message.
* **compaction**: ``PreCompact`` hooks before (``trigger``, ``custom_instructions``), ``SessionStart``
  hooks with ``source: "compact"`` after (their context joins the session's once).
* Every hook's ``systemMessage`` and failure is shown to the user as a ``systemNotification`` part at
  the next of these points; ``continue: false`` anywhere stops the turn (``TurnStopped``).
* **tool context**: elicitation from MCP tools becomes a session input request, unless another
  contributor already supplied ``ask``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Sequence

from ahp.protocol import builders
from ahp.state import parse_subagent_chat_uri
from ahp.tool_results import result_text
from host.runtime.agents.base import TurnContext, TurnFailed, TurnStopped
from host.runtime.agents.environment import Contributor
from host.runtime.command_bodies import BANG_COMMAND
from host.runtime.conversation import BLOCKED_BY_HOOK
from host.runtime.agents.tooling import PreToolVerdict, ToolCallRequest
from host.runtime.customizations.session import HookCall, SessionCustomizations
from host.runtime.customizations.skills import RULE_TOOL, SKILL_TOOL, CatalogEntry, LoadTextTool, qualified
from plugins.claude_code_tools import claude_name, matcher_names, to_claude_response, to_host_input
from tools.base import Tool, ToolContext
from tools.base import _no_ask as _DEFAULT_ASK  # the sentinel meaning "nobody supplied ask yet"

if TYPE_CHECKING:  # plugins is imported where used: the host starts without it
    from plugins import LifecyclePoint, parse_slash

__all__ = ["CustomizationContributor", "HOOK_CONTEXT"]

HOOK_CONTEXT = "[Context added by a plugin hook]"

_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename", "target", "source", "destination")


class CustomizationContributor(Contributor):
    """Adds what the session's enabled plugins and directories declare."""

    def __init__(
        self,
        *,
        runtime_of: Callable[[str], SessionCustomizations | None],
        wait_started: Callable[[SessionCustomizations], Awaitable[None]],
        ask: Callable[[str, dict], Awaitable[dict]],
    ) -> None:
        """``runtime_of(session)``: the session's customizations (None when it has none);
        ``wait_started(runtime)``: until its MCP servers are up or failed; ``ask(session, request)``:
        a question to the user (hooks and MCP elicitation)."""
        self._runtime_of = runtime_of
        self._wait_started = wait_started
        self._ask = ask

    def _runtime(self, ctx: TurnContext) -> SessionCustomizations | None:
        return self._runtime_of(ctx.session)

    # -- user message --------------------------------------------------------------------------

    async def user_message(self, ctx: TurnContext, message: dict[str, Any]) -> dict[str, Any]:
        from plugins import LifecyclePoint, parse_slash

        runtime = self._runtime(ctx)
        if runtime is None:
            return message
        await self._wait_started(runtime)
        text = str(message.get("text") or "")
        for attachment in message.get("attachments") or []:
            if isinstance(attachment, dict) and isinstance(attachment.get("uri"), str):
                runtime.touch(attachment["uri"])
        added: list[str] = runtime.take_late_context()
        subagent = _subagent(ctx, runtime)
        if subagent is None:
            runtime.tool_notes.clear()  # context for calls an earlier turn never ran
        if subagent is not None:  # a sub-agent's task is no user prompt: SubagentStart, as in Claude Code
            agent_id, agent_type = subagent
            results = await runtime.fire(LifecyclePoint.SUBAGENT_START, agent_type, agent_id=agent_id, agent_type=agent_type)
        else:
            results = await runtime.fire(LifecyclePoint.USER_PROMPT_SUBMIT, prompt=text)
        _show(ctx, runtime)
        for result in results:
            if result.stopped:
                raise TurnStopped(result.stop_reason or "")
            if result.blocked:
                raise TurnFailed(BLOCKED_BY_HOOK, f"A plugin hook refused this message: {result.reason}")
            if result.additional_context:
                added.append(result.additional_context)
        invocation = parse_slash(text, runtime.slash_entries())
        if invocation is not None:
            prompt = invocation.prompt
            if not runtime.folder_trusted and runtime.folder is not None and _inside(invocation.entry.target.path, runtime.folder):
                # The folder's own commands do not run their !`cmd` lines until it is trusted.
                prompt = BANG_COMMAND.sub(lambda m: f"[`{m.group(1)}` was not run: {runtime.folder} is not trusted]", prompt)
            message = {**message, "text": prompt}
        if added:
            message = {**message, "text": str(message.get("text") or "") + "".join(f"\n\n{HOOK_CONTEXT}\n{a}" for a in added)}
        return message

    # -- prompt --------------------------------------------------------------------------------

    def system_prompt(self, ctx: TurnContext) -> Sequence[str]:
        runtime = self._runtime(ctx)
        if runtime is None:
            return ()
        parts: list[str] = [*runtime.session_context]
        agent = runtime.agent(ctx.agent)
        if agent is not None and agent.body.strip():
            parts.append(agent.body.strip())
        on_request: list[str] = []
        for loaded, rule in runtime.rules():
            if rule.always_apply and not rule.globs:
                parts.append(rule.body.strip())
            elif rule.globs and not runtime.in_play(rule):
                continue
            elif rule.always_apply:
                parts.append(rule.body.strip())
            else:
                on_request.append(f"- {qualified(loaded, rule.name)}: {(rule.description or '').strip()}")
        if on_request:
            parts.append(f"Rules you can load with the {RULE_TOOL} tool when they apply:\n" + "\n".join(on_request))
        missing = runtime.mcp.unavailable() if runtime.mcp is not None else []
        if missing:
            parts.append("These MCP servers of the session are not available right now, so their tools are not offered "
                         "(a server's tools are added to a later request once it is running):\n"
                         + "\n".join(f"- {line}" for line in missing))
        return [part for part in parts if part]

    # -- tools ---------------------------------------------------------------------------------

    def tools(self, ctx: TurnContext) -> Sequence[Tool]:
        runtime = self._runtime(ctx)
        if runtime is None:
            return ()
        offered: list[Tool] = list(runtime.mcp.tools()) if runtime.mcp is not None else []
        skills = [CatalogEntry(qualified(loaded, item.name), item.name, item)
                  for loaded in runtime.usable() for item in (*loaded.skills, *loaded.commands)
                  if not item.disable_model_invocation]
        if skills:
            offered.append(LoadTextTool(SKILL_TOOL, "skill", skills))
        rules = [CatalogEntry(qualified(loaded, rule.name), rule.name, rule) for loaded, rule in runtime.rules()
                 if not rule.always_apply and (not rule.globs or runtime.in_play(rule))]
        if rules:
            offered.append(LoadTextTool(RULE_TOOL, "rule", rules))
        return offered

    def filter_tools(self, ctx: TurnContext, tools: dict[str, Tool]) -> dict[str, Tool]:
        runtime = self._runtime(ctx)
        agent = runtime.agent(ctx.agent) if runtime is not None else None
        if agent is None or agent.tools is None:
            return tools
        allowed = set(agent.tools)
        if "*" in allowed:
            return tools
        return {name: tool for name, tool in tools.items() if name in (SKILL_TOOL, RULE_TOOL) or _allowed(tool, allowed)}

    async def before_tool_call(self, ctx: TurnContext, request: ToolCallRequest, arguments: Any) -> PreToolVerdict:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return PreToolVerdict()
        given = arguments if isinstance(arguments, dict) else {}
        call = HookCall(request.tool_name, given, request.tool, request.tool_call_id)
        results = await runtime.fire(LifecyclePoint.BEFORE_TOOL_CALL, call=call)
        _show(ctx, runtime)
        permission: str | None = None
        reason: str | None = None
        changed: dict[str, Any] | None = None
        for result in results:
            if result.stopped:
                raise TurnStopped(result.stop_reason or "")
            if result.additional_context:
                runtime.tool_notes.setdefault(request.tool_call_id, []).append(result.additional_context)
            if result.blocked:
                runtime.tool_notes.pop(request.tool_call_id, None)
                return PreToolVerdict(blocked=result.reason)
            if result.updated_input is not None:
                changed = to_host_input(request.tool_name, result.updated_input)
            if result.permission_decision == "ask" or (result.permission_decision == "allow" and permission is None):
                permission, reason = result.permission_decision, result.permission_reason or reason
        if changed is not None and changed != given:
            name = claude_name(request.tool_name)
            _notify(ctx, f"A plugin's PreToolUse hook changed the input of this {name} call to: {json.dumps(changed)}")
        return PreToolVerdict(permission=permission, reason=reason, arguments=changed if changed != given else None)

    async def after_tool_call(self, ctx: TurnContext, request: ToolCallRequest, result: dict[str, Any]) -> str | None:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return None
        for path in _paths(request, result):
            runtime.touch(path)
        arguments = _json_or_text(request.arguments)
        given = arguments if isinstance(arguments, dict) else {}
        call = HookCall(request.tool_name, given, request.tool, request.tool_call_id)
        if result.get("success"):
            cwd = str(runtime.working_directory) if runtime.working_directory is not None else None
            results = await runtime.fire(LifecyclePoint.AFTER_TOOL_CALL, call=call,
                                         tool_response=to_claude_response(request.tool_name, given, result, cwd=cwd))
        else:
            error = result.get("error") if isinstance(result.get("error"), dict) else {}
            results = await runtime.fire(LifecyclePoint.AFTER_TOOL_CALL_FAILURE, call=call,
                                         error=str(error.get("message") or result_text(result)),
                                         is_interrupt=error.get("code") in ("cancelled", "timeout"))
        _show(ctx, runtime)
        added = runtime.tool_notes.pop(request.tool_call_id, [])
        for hook_result in results:
            if hook_result.stopped:
                raise TurnStopped(hook_result.stop_reason or "")
            if hook_result.blocked and hook_result.reason:
                # The tool already ran: a block is feedback for the model (exit 2, decision: block).
                added.append(f"A {hook_result.hook.event.value} hook says: {hook_result.reason}")
            if hook_result.additional_context:
                added.append(hook_result.additional_context)
        return "\n\n".join(added) or None

    async def stop(self, ctx: TurnContext, active: bool) -> str | None:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return None
        subagent = _subagent(ctx, runtime)
        answer = _last_answer(ctx)
        if subagent is not None:
            agent_id, agent_type = subagent
            results = await runtime.fire(LifecyclePoint.SUBAGENT_STOP, agent_type, stop_hook_active=active,
                                         agent_id=agent_id, agent_type=agent_type, last_assistant_message=answer)
        else:
            results = await runtime.fire(LifecyclePoint.STOP, stop_hook_active=active, last_assistant_message=answer)
        _show(ctx, runtime)
        for result in results:
            if result.stopped:
                raise TurnStopped(result.stop_reason or "")
            if result.blocked:
                return result.reason
        return None

    async def before_compact(self, ctx: TurnContext, trigger: str, instructions: str | None) -> None:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return
        results = await runtime.fire(LifecyclePoint.PRE_COMPACT, trigger, trigger=trigger, custom_instructions=instructions or "")
        for result in results:
            if result.blocked and result.reason:  # as in Claude Code, PreCompact's exit 2 is for the user
                runtime.notices.append(f"A PreCompact hook says: {result.reason}")
        _show(ctx, runtime)

    async def after_compact(self, ctx: TurnContext, trigger: str) -> None:
        from plugins import HookEvent

        runtime = self._runtime(ctx)
        if runtime is None:
            return
        # The conversation was summarised: SessionStart hooks run again with ``compact`` (what they
        # add joins the session's context once).
        results = await runtime.fire(HookEvent.SESSION_START, "compact", source="compact")
        for result in results:
            if result.additional_context and result.additional_context not in runtime.session_context:
                runtime.session_context.append(result.additional_context)
        _show(ctx, runtime)

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        if context.ask is _DEFAULT_ASK and self._runtime(ctx) is not None:
            session = ctx.session

            async def ask(request: dict) -> dict:
                return await self._ask(session, request)

            context.ask = ask
        return context


def _subagent(ctx: TurnContext, runtime: SessionCustomizations) -> tuple[str, str] | None:
    """``(agent_id, agent_type)`` when the turn is a sub-agent's (its spawning call's id, its custom
    agent's name or Claude Code's ``general-purpose``); None for the session's own chats."""
    parsed = parse_subagent_chat_uri(ctx.chat)
    if parsed is None:
        return None
    agent = runtime.agent(ctx.agent)
    return parsed[1], agent.name if agent is not None else "general-purpose"


def _last_answer(ctx: TurnContext) -> str:
    """The model's final answer in the running turn: its text since the last tool call or system
    notification (which sit between model calls: a Stop hook that kept the turn going leaves one)."""
    parts = (ctx.chat_state.get("activeTurn") or {}).get("responseParts") or ()
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        if part.get("kind") in ("toolCall", "systemNotification"):
            texts = []
        elif part.get("kind") == "markdown" and part.get("content"):
            texts.append(str(part["content"]))
    return "\n".join(texts)


def _notify(ctx: TurnContext, text: str) -> None:
    ctx.emit(builders.chat_response_part(turn_id=ctx.turn_id, part={"kind": "systemNotification", "content": text}))


def _show(ctx: TurnContext, runtime: SessionCustomizations) -> None:
    """What hooks said for the user (``systemMessage``, failures), as system notifications in the turn."""
    for notice in runtime.take_notices():
        _notify(ctx, notice)


def _allowed(tool: Tool, allowed: set[str]) -> bool:
    # Claude Code agents name its tools ("Read", "Bash(git:*)"): they mean this host's equivalents.
    names = {tool.name, *matcher_names(tool.name)}
    if names & {entry.split("(", 1)[0].strip() for entry in allowed}:
        return True
    server = getattr(tool, "server_name", None)
    mcp_name = getattr(tool, "mcp_name", None)
    if server is None:
        return False
    return bool({f"{server}/*", f"{server}/{mcp_name}", f"mcp__{server}__{mcp_name}", f"mcp__{server}"} & allowed)


def _json_or_text(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _paths(request: ToolCallRequest, result: dict[str, Any]) -> list[str]:
    found: list[str] = []
    arguments = _json_or_text(request.arguments)
    if isinstance(arguments, dict):
        for key in _PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value:
                found.append(value)
        for value in arguments.get("paths") or []:
            if isinstance(value, str):
                found.append(value)
    for item in result.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "fileEdit":
            for side in ("before", "after"):
                uri = (item.get(side) or {}).get("uri")
                if isinstance(uri, str) and uri.startswith("file:"):
                    found.append(uri)
    return found


def _inside(path: Any, folder: str) -> bool:
    import os

    from ahp.workspace_trust import covers

    return path is not None and covers(folder, os.path.realpath(path))
