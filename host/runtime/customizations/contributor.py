"""The ``Contributor`` that makes a session's customizations act on its turns.

Per turn (and per model request where noted) it adds:

* **user message** (once, before the first model call): waits (briefly, see
  ``CustomizationService.wait_started``) for the session's MCP servers to start; runs ``UserPromptSubmit`` hooks (a block ends the turn with the hook's
  reason); expands ``/name args`` naming a usable skill, command or prompt into its body with
  ``$ARGUMENTS`` substituted (the model receives the expanded text; the ``!`cmd``` lines of a
  command that lies in a folder not trusted are replaced by a note instead of running, see
  ``host.runtime.trust``); attached files join the files in play.
* **system prompt** (every request): the selected custom agent's body (``ctx.agent``, captured at
  turn start), rules with ``alwaysApply`` and no globs, glob rules whose files are in play
  (attached or touched by a tool), a list of on-request rules, and which MCP servers are not
  available right now (starting, restarting, failed) so the model knows their tools are missing
  for a reason and may come later.
* **tools**: the session's MCP tools, ``load_skill`` (model-invocable skills and commands) and
  ``load_rule``; a custom agent that declares ``tools`` restricts the offered set to those names
  (the loaders stay available). Names match exactly, or as ``mcp-server/*`` / the MCP tool name.
* **tool hooks**: ``PreToolUse``-type hooks before a call (exit 2 or a JSON deny blocks it; the
  reason is the call's error, which the user and the model see); ``PostToolUse`` /
  ``PostToolUseFailure`` after it, and the call's paths join the files in play.
* **stop**: ``Stop`` hooks when the model has answered; one that blocks (exit 2, or JSON
  ``decision: block``) keeps the turn going with its reason as the next user message.
* **tool context**: elicitation from MCP tools becomes a session input request, unless another
  contributor already supplied ``ask``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from host.runtime.agents.base import TurnContext, TurnFailed
from host.runtime.agents.environment import Contributor
from host.runtime.agents.tooling import ToolCallRequest
from host.runtime.command_bodies import BANG_COMMAND
from host.runtime.customizations.session import TOOL_ALIASES, SessionCustomizations
from host.runtime.customizations.skills import RULE_TOOL, SKILL_TOOL, CatalogEntry, LoadTextTool, qualified
from tools.base import Tool, ToolContext
from tools.base import _no_ask as _DEFAULT_ASK  # the sentinel meaning "nobody supplied ask yet"

if TYPE_CHECKING:  # plugins is imported where used: the host starts without it
    from plugins import Command, LoadedContainer, Skill

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
        added: list[str] = []
        for result in await runtime.fire(LifecyclePoint.USER_PROMPT_SUBMIT, prompt=text):
            if result.blocked:
                raise TurnFailed("blockedByHook", f"A plugin hook refused this message: {result.reason}")
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
                  for loaded in runtime.usable() for item in _model_invocable(loaded)]
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

    async def before_tool_call(self, ctx: TurnContext, request: ToolCallRequest, arguments: Any) -> str | None:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return None
        for result in await runtime.fire(LifecyclePoint.BEFORE_TOOL_CALL, request.tool_name,
                                         tool_name=request.tool_name, tool_input=arguments):
            if result.blocked:
                return result.reason
        return None

    async def after_tool_call(self, ctx: TurnContext, request: ToolCallRequest, result: dict[str, Any]) -> str | None:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return None
        for path in _paths(request, result):
            runtime.touch(path)
        point = LifecyclePoint.AFTER_TOOL_CALL if result.get("success") else LifecyclePoint.AFTER_TOOL_CALL_FAILURE
        results = await runtime.fire(point, request.tool_name, tool_name=request.tool_name,
                                     tool_input=_json_or_text(request.arguments), tool_response=result)
        added = [r.additional_context for r in results if r.additional_context]
        return "\n\n".join(added) or None

    async def stop(self, ctx: TurnContext, active: bool) -> str | None:
        from plugins import LifecyclePoint

        runtime = self._runtime(ctx)
        if runtime is None:
            return None
        for result in await runtime.fire(LifecyclePoint.STOP, stop_hook_active=active):
            if result.blocked:
                return result.reason
        return None

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        if context.ask is _DEFAULT_ASK and self._runtime(ctx) is not None:
            session = ctx.session

            async def ask(request: dict) -> dict:
                return await self._ask(session, request)

            context.ask = ask
        return context


def _allowed(tool: Tool, allowed: set[str]) -> bool:
    # Claude Code agents name its tools ("Read", "Bash(git:*)"): they mean this host's equivalents.
    names = {tool.name, *TOOL_ALIASES.get(tool.name, ())}
    if names & {entry.split("(", 1)[0].strip() for entry in allowed}:
        return True
    server = getattr(tool, "server_name", None)
    mcp_name = getattr(tool, "mcp_name", None)
    if server is None:
        return False
    return bool({f"{server}/*", f"{server}/{mcp_name}", f"mcp__{server}__{mcp_name}", f"mcp__{server}"} & allowed)


def _json_or_text(arguments: str) -> Any:
    import json

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


def _model_invocable(loaded: LoadedContainer) -> list[Skill | Command]:
    """The container's skills and commands the model may load (not ``disable-model-invocation``)."""
    items: list[Skill | Command] = [*loaded.skills, *loaded.commands]
    return [item for item in items if not item.disable_model_invocation]
