"""The ``Contributor`` that makes a session's customizations act on its turns.

Per turn (and per model request where noted) it adds:

* **user message** (once, before the first model call): waits (briefly, see
  ``CustomizationService.wait_started``) for the session's MCP servers to start; takes what hooks
  that ran in the background said for the model; runs ``UserPromptSubmit`` hooks (a sub-agent's
  turn runs ``SubagentStart`` instead): a block ends the turn with the hook's reason (the prompt is
  then left out of the conversation), ``continue: false`` stops it (``TurnStopped``), context is
  added after the prompt; expands ``/name args`` naming a usable skill, command or prompt into its body with
  ``$ARGUMENTS``, ``$1``... substituted (the model receives the expanded text; its shell commands,
  ``!`cmd``` and ```` ```! ```` blocks, run next, see ``tool_runs``). A skill's or command's
  ``allowed-tools`` (Claude Code permission rules, read with ``plugins.claude_code_tools.host_rules``)
  become the turn's grants (``TurnContext.grants``): allow rules for this turn only, which cover
  its shell commands and the model's calls until the turn ends (its own read-only shell commands,
  ``git status`` or ``git log``, are granted too: ``command_bodies.context_rules``); a plugin's
  command also sets ``CLAUDE_PLUGIN_ROOT`` (and ``PLUGIN_ROOT``, ``PLUGIN_DATA``) for the
  commands the turn runs, and so does a turn run by a plugin's custom agent (a sub-agent's,
  say). A command that lies in a folder not trusted gets neither: its shell commands are replaced by a
  note instead of running, and its ``allowed-tools`` grant nothing (``host.runtime.trust``); in
  such a folder no command grants anything (a repository's git configuration can run programs), so
  a plugin's command runs with every call confirmed;
  attached files join the files in play.
  ``/mcp__<server>__<prompt> args`` runs an MCP server's prompt (``prompts/get``, arguments as
  ``mcp_prompts`` maps them) and its messages become the user's turn (a prompt's text never runs
  shell commands); ``@server:uri`` mentions of a running server's resources are read
  (``resources/read``) and attached (``mcp_resources``); what could not be read is said in the
  turn and to the model. A prompt that fails or gets wrong arguments ends the turn with an error
  saying why and how to call it.
* **system prompt** (every request): the selected custom agent's body (``ctx.agent``, captured at
  turn start), rules with ``alwaysApply`` and no globs, glob rules whose files are in play
  (attached or touched by a tool), a list of on-request rules, and which MCP servers are not
  available right now (starting, restarting, failed) so the model knows their tools are missing
  for a reason and may come later.
* **tools**: the session's MCP tools, ``list_mcp_resources`` / ``read_mcp_resource`` when a
  running server has resources, ``load_skill`` (model-invocable skills and commands) and
  ``load_rule``, whose catalogues are bounded and ranked (``skills``; by the session's first
  message, so they do not change from turn to turn and the provider's prompt cache holds); a
  custom agent that declares ``tools`` restricts the offered set to those names (the loaders stay
  available). Names match exactly, or as ``mcp-server/*`` / the MCP tool name.
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
  contributor already supplied ``ask``; the reading tools may also read the session's plugins and
  skill folders (``SessionCustomizations.read_roots``, never writable); the turn's grants'
  environment reaches the commands it runs.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import plugins
from ahp.protocol import builders
from ahp.state import parse_subagent_chat_uri
from ahp.tool_results import result_text
from ahp.workspace_trust import covers
from host.runtime.agents.base import BLOCKED_BY_HOOK, TurnContext, TurnFailed, TurnGrants, TurnStopped
from host.runtime.agents.environment import Contributor
from host.runtime.agents.tooling import PreToolVerdict, ToolCallRequest
from host.runtime.catalogue import CatalogueItem, catalogue
from host.runtime.command_bodies import BANG_COMMAND, context_rules, replace_bang_commands
from host.runtime.customizations.mcp_prompts import McpPrompt, PromptUsageError, prompt_arguments, prompt_message
from host.runtime.customizations.mcp_resources import (
    ListMcpResourcesTool,
    ReadMcpResourceTool,
    mentions,
    resource_attachments,
)
from host.runtime.customizations.session import HookCall, SessionCustomizations
from host.runtime.customizations.skills import (
    RULE_BUDGET,
    RULE_TOOL,
    SKILL_BUDGET,
    SKILL_TOOL,
    CatalogEntry,
    LoadTextTool,
    qualified,
)
from plugins.claude_code_tools import claude_name, host_rules, matcher_names, to_claude_response, to_host_input
from plugins.expand import plugin_environment
from tools.base import Tool, ToolContext
from tools.base import _no_ask as _DEFAULT_ASK  # the sentinel meaning "nobody supplied ask yet"
from tools.errors import PolicyRuleError
from tools.mcp.errors import McpRequestError
from tools.policy import parse_rule

__all__ = ["CustomizationContributor", "HOOK_CONTEXT"]

logger = logging.getLogger(__name__)

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
        trust_for: Callable[[str, str], Awaitable[bool]] | None = None,
    ) -> None:
        """``runtime_of(session)``: the session's customizations (None when it has none);
        ``wait_started(runtime)``: until its MCP servers are up or failed; ``ask(session, request)``:
        a question to the user (hooks and MCP elicitation); ``trust_for(session, why)``: whether
        the folder is trusted, the user asked first if need be (``CustomizationService.trust_for``)."""
        self._runtime_of = runtime_of
        self._wait_started = wait_started
        self._ask = ask
        self._trust_for = trust_for

    def _runtime(self, ctx: TurnContext) -> SessionCustomizations | None:
        return self._runtime_of(ctx.session)

    # -- user message --------------------------------------------------------------------------

    async def user_message(self, ctx: TurnContext, message: dict[str, Any]) -> dict[str, Any]:
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
            results = await runtime.fire(plugins.LifecyclePoint.SUBAGENT_START, agent_type, agent_id=agent_id, agent_type=agent_type)
        else:
            results = await runtime.fire(plugins.LifecyclePoint.USER_PROMPT_SUBMIT, prompt=text)
        _show(ctx, runtime)
        for result in results:
            if result.stopped:
                raise TurnStopped(result.stop_reason or "")
            if result.blocked:
                raise TurnFailed(BLOCKED_BY_HOOK, f"A plugin hook refused this message: {result.reason}")
            if result.additional_context:
                added.append(result.additional_context)
        owner = runtime.agent_container(ctx.agent)
        if owner is not None and isinstance(owner.usable, plugins.LoadedPlugin):
            # A plugin's agent runs its commands with the plugin's variables, as its hooks do.
            ctx.grants = TurnGrants(environment=plugin_environment(owner.usable.root, owner.usable.data_dir))
        invocation = plugins.parse_slash(text, _slash_entries(runtime))
        if invocation is not None and isinstance(invocation.entry.target, McpPrompt):
            message = await self._mcp_prompt(runtime, message, invocation.entry.target, invocation.arguments)
        elif invocation is not None:
            prompt = invocation.prompt
            untrusted = not runtime.folder_trusted and runtime.folder is not None
            if untrusted and self._trust_for is not None and bool(getattr(invocation.entry.target, "allowed_tools", None)) \
                    and BANG_COMMAND.search(prompt) and runtime.folder is not None \
                    and not _inside(invocation.entry.target.path, runtime.folder):
                # A command that runs shell commands as it expands (!`git status`), whose
                # allowed-tools pre-approve nothing in a folder not trusted: ask first, as Claude
                # Code asks for a folder's trust before anything runs there.
                untrusted = not await self._trust_for(ctx.session, f"/{invocation.entry.name}: the commands it runs and "
                                                      "the tools its allowed-tools list would run without asking")
            if untrusted and runtime.folder is not None and _inside(invocation.entry.target.path, runtime.folder):
                # The folder's own commands neither run their shell commands nor pre-approve
                # anything until it is trusted.
                prompt = replace_bang_commands(prompt, lambda command: f"[`{command}` was not run: {runtime.folder} is not trusted]")
            else:
                # In a folder not trusted, nothing runs there unasked (its git config alone can
                # run programs): a plugin's command still runs, but every call is confirmed.
                ctx.grants = _grants(runtime, invocation, prompt, allow=not untrusted)
            message = {**message, "text": prompt}
        if added:
            message = {**message, "text": str(message.get("text") or "") + "".join(f"\n\n{HOOK_CONTEXT}\n{a}" for a in added)}
        if runtime.mcp is not None:
            message = await self._mcp_mentions(ctx, runtime, message, text)
        return message

    async def _mcp_prompt(self, runtime: SessionCustomizations, message: dict[str, Any], prompt: McpPrompt,
                          typed: str) -> dict[str, Any]:
        assert runtime.mcp is not None
        try:
            arguments = prompt_arguments(prompt, typed)
        except PromptUsageError as error:
            raise TurnFailed("mcpPromptArguments", str(error)) from None
        try:
            result = await runtime.mcp.get_prompt(prompt, arguments)
        except McpRequestError as error:
            raise TurnFailed("mcpPromptFailed", f"/{prompt.name} could not be run: {error}") from None
        text, attachments = prompt_message(result, f"/{prompt.name}")
        meta = {**(message.get("_meta") or {}), "mcpPrompt": {"server": prompt.server, "prompt": prompt.mcp_name}}
        return {**message, "text": text, "attachments": [*(message.get("attachments") or []), *attachments], "_meta": meta}

    async def _mcp_mentions(self, ctx: TurnContext, runtime: SessionCustomizations, message: dict[str, Any],
                            typed: str) -> dict[str, Any]:
        assert runtime.mcp is not None
        servers = runtime.mcp.resource_servers()
        attachments = list(message.get("attachments") or [])
        # A resource completion's attachment names its server in _meta; the text names it as @server:uri.
        found = [(a["_meta"]["mcpServer"], str(a.get("uri"))) for a in attachments
                 if isinstance(a, dict) and isinstance(a.get("_meta"), dict) and a["_meta"].get("mcpServer") in servers]
        found += [pair for pair in mentions(typed, frozenset(servers)) if pair not in found]
        if not found:
            return message
        uris = {uri for _, uri in found}
        attachments = [a for a in attachments if not (isinstance(a, dict) and a.get("type") == "resource" and a.get("uri") in uris)]
        problems: list[str] = []
        for server, uri in found:
            label = f"@{server}:{uri}"
            try:
                result = await servers[server].read_resource(uri)
            except McpRequestError as error:
                problems.append(f"{label} was not attached: {error}")
                continue
            added, notes = resource_attachments(result, label)
            attachments.extend(added)
            problems.extend(notes)
        for note in problems:
            ctx.emit(builders.chat_response_part(turn_id=ctx.turn_id, part={"kind": "systemNotification", "content": note}))
        text = str(message.get("text") or "")
        if problems:
            text += "".join(f"\n\n[{note}]" for note in problems)
        return {**message, "text": text, "attachments": attachments}

    # -- prompt --------------------------------------------------------------------------------

    def system_prompt(self, ctx: TurnContext) -> Sequence[str]:
        runtime = self._runtime(ctx)
        if runtime is None:
            return ()
        parts: list[str] = [*runtime.session_context]
        agent = runtime.agent(ctx.agent)
        if agent is not None and agent.body.strip():
            parts.append(agent.body.strip())
        on_request: list[CatalogueItem] = []
        for loaded, rule in runtime.rules():
            if rule.always_apply and not rule.globs:
                parts.append(rule.body.strip())
            elif rule.globs and not runtime.in_play(rule):
                continue
            elif rule.always_apply:
                parts.append(rule.body.strip())
            else:
                on_request.append(CatalogueItem(qualified(loaded, rule.name), rule.description or ""))
        if on_request:
            listing = catalogue(on_request, budget=RULE_BUDGET, query=_catalogue_query(runtime, ctx),
                                more=f"- ... and {{count}} more rules: call {RULE_TOOL} with a word of what you need to find one.")
            parts.append(f"Rules you can load with the {RULE_TOOL} tool when they apply:\n{listing}")
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
        if runtime.mcp is not None and runtime.mcp.resource_servers():
            offered += [ListMcpResourcesTool(runtime.mcp.resource_servers), ReadMcpResourceTool(runtime.mcp.resource_servers)]
        query = _catalogue_query(runtime, ctx)
        skills = [CatalogEntry(qualified(loaded, item.name), item.name, item)
                  for loaded in _ranked_containers(runtime) for item in (*loaded.skills, *loaded.commands)
                  if not item.disable_model_invocation]
        if skills:
            offered.append(LoadTextTool(SKILL_TOOL, "skill", skills, budget=SKILL_BUDGET, query=query,
                                        used=list(runtime.catalogue_used), on_load=lambda name: _used(runtime, name)))
        rules = [CatalogEntry(qualified(loaded, rule.name), rule.name, rule) for loaded, rule in runtime.rules()
                 if not rule.always_apply and (not rule.globs or runtime.in_play(rule))]
        if rules:
            offered.append(LoadTextTool(RULE_TOOL, "rule", rules, budget=RULE_BUDGET, query=query))
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
        runtime = self._runtime(ctx)
        if runtime is None:
            return PreToolVerdict()
        given = arguments if isinstance(arguments, dict) else {}
        call = HookCall(request.tool_name, given, request.tool, request.tool_call_id)
        results = await runtime.fire(plugins.LifecyclePoint.BEFORE_TOOL_CALL, call=call)
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
            results = await runtime.fire(plugins.LifecyclePoint.AFTER_TOOL_CALL, call=call,
                                         tool_response=to_claude_response(request.tool_name, given, result, cwd=cwd))
        else:
            error = result.get("error")
            if not isinstance(error, dict):
                error = {}
            results = await runtime.fire(plugins.LifecyclePoint.AFTER_TOOL_CALL_FAILURE, call=call,
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
        runtime = self._runtime(ctx)
        if runtime is None:
            return None
        subagent = _subagent(ctx, runtime)
        if subagent is not None:
            agent_id, agent_type = subagent
            if not runtime.fires(plugins.LifecyclePoint.SUBAGENT_STOP, agent_type):
                results = []  # no hook: the answer is not gathered for one
            else:
                results = await runtime.fire(plugins.LifecyclePoint.SUBAGENT_STOP, agent_type, stop_hook_active=active,
                                             agent_id=agent_id, agent_type=agent_type, last_assistant_message=_last_answer(ctx))
        elif not runtime.fires(plugins.LifecyclePoint.STOP):
            results = []
        else:
            results = await runtime.fire(plugins.LifecyclePoint.STOP, stop_hook_active=active, last_assistant_message=_last_answer(ctx))
        _show(ctx, runtime)
        for result in results:
            if result.stopped:
                raise TurnStopped(result.stop_reason or "")
            if result.blocked:
                return result.reason
        return None

    async def before_compact(self, ctx: TurnContext, trigger: str, instructions: str | None) -> None:
        runtime = self._runtime(ctx)
        if runtime is None:
            return
        results = await runtime.fire(plugins.LifecyclePoint.PRE_COMPACT, trigger, trigger=trigger, custom_instructions=instructions or "")
        for result in results:
            if result.blocked and result.reason:  # as in Claude Code, PreCompact's exit 2 is for the user
                runtime.notices.append(f"A PreCompact hook says: {result.reason}")
        _show(ctx, runtime)

    async def after_compact(self, ctx: TurnContext, trigger: str) -> None:
        runtime = self._runtime(ctx)
        if runtime is None:
            return
        # The conversation was summarised: SessionStart hooks run again with ``compact`` (what they
        # add joins the session's context once).
        results = await runtime.fire(plugins.HookEvent.SESSION_START, "compact", source="compact")
        for result in results:
            if result.additional_context and result.additional_context not in runtime.session_context:
                runtime.session_context.append(result.additional_context)
        _show(ctx, runtime)

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        runtime = self._runtime(ctx)
        if runtime is not None and (runtime.settings_env or runtime.settings_directories):
            # Claude Code settings: their env for the tools' processes, their additionalDirectories as roots.
            context.environment = {**context.environment, **runtime.settings_env}
            extra = tuple(Path(d) for d in runtime.settings_directories)
            context.extra_roots = (*context.extra_roots, *(d for d in extra if d not in context.extra_roots))
        if runtime is not None:
            context.read_roots = (*context.read_roots, *runtime.read_roots())
        if ctx.grants.environment:
            # A plugin's command, skill or agent in play: its variables win over the settings' env.
            context.environment = {**context.environment, **ctx.grants.environment}
        if context.ask is _DEFAULT_ASK and runtime is not None:
            session = ctx.session

            async def ask(request: dict) -> dict:
                return await self._ask(session, request)

            context.ask = ask
        return context


def _grants(runtime: SessionCustomizations, invocation: plugins.SlashInvocation, prompt: str, *, allow: bool) -> TurnGrants:
    """What an invoked skill or command grants its turn: its ``allowed-tools`` as this host's
    allow rules, its own read-only shell commands (``command_bodies.context_rules``), and its
    plugin's variables for the commands the turn runs. ``allow=False``: the variables only."""
    target = invocation.entry.target
    rules: list[str] = []
    for rule in (getattr(target, "allowed_tools", ()) or ()) if allow else ():
        try:
            translated = host_rules(rule, settings_root=runtime.folder, home=os.path.expanduser("~"))
            for host_rule in translated:
                parse_rule(host_rule)
        except (ValueError, PolicyRuleError) as exc:
            logger.info("/%s: allowed-tools entry %r is not used: %s", invocation.entry.name, rule, exc)
            continue
        rules.extend(translated)
    if allow:
        rules.extend(context_rules(prompt))
    environment: dict[str, str] = {}
    owner = next((c for c in runtime.usable() if c.name == invocation.entry.container
                  and any(item is target for item in (*c.skills, *c.commands, *c.prompts))), None)
    if isinstance(owner, plugins.LoadedPlugin):
        environment = plugin_environment(owner.root, owner.data_dir)
    return TurnGrants(allow=tuple(dict.fromkeys(rules)), granted_by=f"/{invocation.entry.name}", environment=environment)


def _catalogue_query(runtime: SessionCustomizations, ctx: TurnContext) -> str:
    """What the session's catalogues are ranked by: the first message they were made for."""
    if runtime.catalogue_query is not None:
        return runtime.catalogue_query
    text = str(ctx.message.get("text") or "")
    if ctx.turn_id:  # a listing of the session's tools outside a turn pins nothing
        runtime.catalogue_query = text
    return text


def _ranked_containers(runtime: SessionCustomizations) -> list[Any]:
    """Usable containers with the workspace's own folders first: they rank first in catalogues."""
    usable = runtime.usable()
    return [c for c in usable if not isinstance(c, plugins.LoadedPlugin)] + [c for c in usable if isinstance(c, plugins.LoadedPlugin)]


def _used(runtime: SessionCustomizations, name: str) -> None:
    runtime.catalogue_used.pop(name, None)
    runtime.catalogue_used[name] = None
    while len(runtime.catalogue_used) > 50:
        runtime.catalogue_used.pop(next(iter(runtime.catalogue_used)))


def _subagent(ctx: TurnContext, runtime: SessionCustomizations) -> tuple[str, str] | None:
    """``(agent_id, agent_type)`` when the turn is a sub-agent's (its spawning call's id, its custom
    agent's name or Claude Code's ``general-purpose``); None for the session's own chats."""
    parsed = parse_subagent_chat_uri(ctx.chat)
    if parsed is None:
        return None
    agent = runtime.agent(ctx.agent)
    return parsed[1], agent.name if agent is not None else "general-purpose"


def _slash_entries(runtime: SessionCustomizations) -> Iterator[plugins.SlashEntry]:
    """The session's slash entries, gathered only once read: ``parse_slash`` reads them only for a
    message that starts with a slash command."""
    yield from runtime.slash_entries()


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
    return path is not None and covers(folder, os.path.realpath(path))
