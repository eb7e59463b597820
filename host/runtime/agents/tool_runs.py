"""Running the tools one model call asked for, within one turn.

Contract (``TurnTools``, made per turn):
* ``run(message, ahp_ids, offered)``: for each tool call in the assistant ``message``, in order:
  an unknown tool, arguments that are not JSON or a failed ``prepare`` completes the call at once
  with a failure (``toolCallReady`` with ``confirmed: "not-needed"``, then ``toolCallComplete``);
  otherwise its ``PreToolUse`` hooks run (``environment.before_tool_call``): a block completes the
  call with the hook's reason; changed arguments replace the model's (prepared again, so the
  confirmation shows them); ``allow``/``ask`` go to the approver with the request. Then the approver
  decides (and dispatches ``toolCallReady``); arguments the user edited in the confirmation go
  through the hooks again. Approved calls then run concurrently; each is completed through
  the approver (which may ask the user to accept the result). Returns the results for the model,
  each cut to ``output_limit`` characters (the whole output stored in the content store and
  readable with ``read_file``), with any context a ``PostToolUse`` hook added. A hook that stops
  the turn (``TurnStopped``) during a call lets the other calls finish, then stops it.
* ``run_commands(text, ids)``: each ``!`cmd``` and ```` ```! ```` block in a slash command's text
  runs as a ``shell`` tool call (shown to clients, confirmed like any other, the turn's grants
  applying) and is replaced by what it returned.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ahp.protocol import builders
from ahp.tool_results import result_text
from host.runtime.agents._mapping import TurnToolIds, tool_start_meta
from host.runtime.agents.base import TurnContext, TurnStopped
from host.runtime.agents.context import cut_tool_output
from host.runtime.agents.environment import TurnEnvironment
from host.runtime.agents.tooling import (
    Approval,
    ToolCallRequest,
    finish_call,
    parse_arguments,
    run_tool,
    unknown_tool_result,
)
from host.runtime.command_bodies import BANG_COMMAND, bang_command, replace_bang_commands
from providers import AssistantMessage, ToolCallPart, ToolResult, ToolResultsMessage
from tools.base import Tool, ToolContext, failure_result

__all__ = ["TurnTools", "BANG_COMMAND"]


HOOK_CONTEXT_NOTE = "[Context added by a plugin hook]"


class TurnTools:
    def __init__(
        self, ctx: TurnContext, environment: TurnEnvironment, working_directory: Path | None, *,
        output_limit: int, running: Callable[[str], None],
    ) -> None:
        """``running(names)`` is called when approved calls start (the caller shows an activity)."""
        self._ctx = ctx
        self._environment = environment
        self._working_directory = working_directory
        self._output_limit = output_limit
        self._running = running

    async def run(self, message: AssistantMessage, ahp_ids: dict[str, str], offered: dict[str, Tool]) -> ToolResultsMessage:
        ctx, environment = self._ctx, self._environment
        results: dict[str, dict[str, Any]] = {}
        added: dict[str, str] = {}
        """Context hooks added to a result, for the model only (PostToolUse additionalContext)."""
        approved: list[tuple[str, str, Tool, Any]] = []
        ran: dict[str, str] = {}
        """The arguments each approved call runs with (after hooks and user edits), as JSON."""
        stopped: list[TurnStopped] = []
        for call in message.tool_calls:
            call_id = ahp_ids.get(call.tool_call_id, call.tool_call_id)
            tool = offered.get(call.tool_name)
            request = ToolCallRequest(call_id, call.tool_name, call.arguments, tool)
            failure: dict[str, Any] | None = None
            arguments: Any = None
            if tool is None:
                failure = unknown_tool_result(call.tool_name, list(offered))
            else:
                try:
                    arguments = parse_arguments(call.arguments)
                except ValueError:
                    failure = failure_result(
                        f"Tried to run {tool.title}", f"The arguments for {call.tool_name} are not valid JSON.", "invalid_arguments"
                    )
                else:
                    prep = await tool.prepare(arguments, self._context(call_id))
                    failure = prep.failure
                    request = ToolCallRequest(call_id, call.tool_name, call.arguments, tool, prep.ready_fields())
            if failure is None and tool is not None:
                # PreToolUse hooks run before the confirmation, as in Claude Code: they may refuse
                # the call, change its input (the confirmation shows the changed input) or say
                # whether to ask. Hooks are configuration the user enabled (a folder's only once
                # it is trusted); the call itself runs only after the approval.
                verdict = await environment.before_tool_call(ctx, request, arguments)
                if verdict.blocked:
                    failure = failure_result(f"Did not run {tool.title}", verdict.blocked, "blocked")
                elif verdict.arguments is not None:
                    arguments = verdict.arguments
                    prep = await tool.prepare(arguments, self._context(call_id))
                    failure = prep.failure
                    request = ToolCallRequest(call_id, call.tool_name, json.dumps(arguments), tool, prep.ready_fields())
                request = replace(request, hook_permission=verdict.permission, hook_reason=verdict.reason)
            if failure is not None:
                ctx.emit(request.ready_action(ctx.turn_id, confirmed="not-needed", asking=False))
                ctx.emit(builders.chat_tool_call_complete(turn_id=ctx.turn_id, tool_call_id=call_id, result=failure))
                results[call.tool_call_id] = failure
                continue
            assert tool is not None
            approval: Approval = await environment.approver.approve(request, ctx)
            if not approval.approved:
                results[call.tool_call_id] = {
                    "success": False,
                    "pastTenseMessage": f"Did not run {tool.title}",
                    "error": {"message": approval.reason or "The user denied this tool call.", "code": "denied"},
                }
                continue
            if approval.edited_input is not None:
                try:
                    edited = parse_arguments(approval.edited_input)
                except ValueError:
                    edited = None
                if edited is not None and edited != arguments:
                    # The user changed the input: the hooks see what will actually run.
                    arguments = edited
                    verdict = await environment.before_tool_call(ctx, request, arguments)
                    if verdict.blocked:
                        failure = failure_result(f"Did not run {tool.title}", verdict.blocked, "blocked")
                        ctx.emit(builders.chat_tool_call_complete(turn_id=ctx.turn_id, tool_call_id=call_id, result=failure))
                        results[call.tool_call_id] = failure
                        continue
                    if verdict.arguments is not None:
                        arguments = verdict.arguments
            ran[call.tool_call_id] = call.arguments if _unchanged(call.arguments, arguments) else json.dumps(arguments)
            approved.append((call.tool_call_id, call_id, tool, arguments))
        if approved:
            self._running(", ".join(dict.fromkeys(tool.title for _, _, tool, _ in approved)))
            requests = {call.tool_call_id: call for call in message.tool_calls}

            async def one(provider_id: str, call_id: str, tool: Tool, arguments: Any) -> None:
                result = await run_tool(tool, arguments, self._context(call_id))
                call = requests[provider_id]
                done = ToolCallRequest(call_id, call.tool_name, ran[provider_id], tool)
                # The approver completes the call (it may ask the user to confirm the result first).
                result = await finish_call(environment.approver, done, result, ctx)
                results[provider_id] = result
                try:
                    extra = await environment.after_tool_call(ctx, done, result)
                except TurnStopped as stop:  # the other calls finish; then the turn stops
                    stopped.append(stop)
                    return
                if extra:
                    added[provider_id] = extra

            async with asyncio.TaskGroup() as group:
                for entry in approved:
                    group.create_task(one(*entry))
            if stopped:
                raise stopped[0]
        return ToolResultsMessage(
            results=tuple(
                ToolResult.of(
                    c.tool_call_id, c.tool_name,
                    self._fit(result_text(results[c.tool_call_id]))
                    + (f"\n\n{HOOK_CONTEXT_NOTE}\n{added[c.tool_call_id]}" if c.tool_call_id in added else ""),
                    is_error=not results[c.tool_call_id].get("success"),
                )
                for c in message.tool_calls
            )
        )

    async def run_commands(self, text: str, ids: TurnToolIds, offered: dict[str, Tool]) -> str:
        if offered.get("shell") is None:
            return replace_bang_commands(text, lambda command: f"[{command} was not run: this session has no shell tool]")
        outputs = iter(await self.run_shell([bang_command(m) for m in BANG_COMMAND.finditer(text)], ids, offered))
        return replace_bang_commands(text, lambda _command: next(outputs))

    async def run_shell(self, commands: list[str], ids: TurnToolIds, offered: dict[str, Tool]) -> list[str]:
        """Run ``commands`` as the turn's shell tool calls (shown, confirmed and sandboxed as the
        model's are); their output texts, in order. The caller checks that ``offered`` has a shell."""
        ctx = self._ctx
        shell = offered["shell"]
        parts: list[ToolCallPart] = []
        ahp_ids: dict[str, str] = {}
        for index, command in enumerate(commands):
            provider_id = f"{ctx.turn_id}-command-{index}"
            call_id = ahp_ids[provider_id] = ids.assign(provider_id)
            arguments = json.dumps({"command": command})
            ctx.emit(builders.chat_tool_call_start(turn_id=ctx.turn_id, tool_call_id=call_id, tool_name="shell", display_name=shell.title,
                                                       meta=tool_start_meta(shell)))
            ctx.emit(builders.chat_tool_call_delta(turn_id=ctx.turn_id, tool_call_id=call_id, content=arguments))
            parts.append(ToolCallPart(tool_call_id=provider_id, tool_name="shell", arguments=arguments))
        results = await self.run(AssistantMessage(parts=tuple(parts)), ahp_ids, offered)
        return [result.text for result in results.results]

    def _fit(self, text: str) -> str:
        """Tool output over the limit: head and tail for the model, the whole stored for read_file."""
        cut, left_out = cut_tool_output(text, self._output_limit)
        if not left_out:
            return text
        store = self._context("output").content_store
        uri = store.put(text.encode("utf-8"), "text/plain; charset=utf-8")
        return (
            f"{cut}\n\n[This output was cut for you: {left_out} of {len(text)} characters are not shown. "
            f"The whole output is stored; read it in pages with read_file(path=\"{uri}\", offset=<line>, limit=<lines>).]"
        )

    def read_content(self, uri: str) -> bytes | None:
        """The bytes the host's content store holds at ``uri``, for an attachment naming content it
        served; the tool context is only built when such an attachment comes."""
        store = self._context("message").content_store
        return store.get(uri) if store is not None else None

    def _context(self, call_id: str) -> ToolContext:
        context = ToolContext(working_directory=self._working_directory or Path.cwd(), tool_call_id=call_id)
        return self._environment.tool_context(self._ctx, context)


def _unchanged(text: str, arguments: Any) -> bool:
    try:
        return parse_arguments(text) == arguments
    except ValueError:
        return False
