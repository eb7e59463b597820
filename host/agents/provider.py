"""The provider-backed agent: one AHP turn = a loop of model calls and tool runs.

``ProviderAgent.run_turn`` does, for one turn:

1. Builds the conversation: the session's finished turns (stored transcripts, else rebuilt from
   the AHP state, see ``host.conversation``) + this turn's user message with its attachments.
2. Calls the model with the model selection *captured at turn start*; the stream is mapped onto
   AHP actions token by token (``host.agents._mapping``). Before every model call a pending
   steering message is taken in (``pendingMessageRemoved{kind: steering}``, a
   ``systemNotification`` "Steering: <text>" marking where it entered, then it is part of the
   context).
3. If the model called tools: each call is prepared, approved through the ``ToolApprover`` seam
   (which dispatches ``toolCallReady``), run (approved calls concurrently) and completed with
   ``toolCallComplete``; the results go back to the model and the loop repeats, until the model
   answers without tool calls (or ``max_model_calls`` is reached, which is said in the turn).
4. ``session/usage`` after every model call carries the turn's running totals (summed over its
   calls; within a call the provider's latest report wins).

Failures: a provider error becomes ``TurnFailed`` with an ``ErrorInfo`` saying what to do.
Retries (429, 5xx, 529, dropped connections: ``err.retryable``) happen with exponential backoff,
honouring ``retry_after``, only while the failing call has not streamed anything yet.

Cancellation: the turn runner cancels the task; the provider stream is closed by ``aclosing`` and
running tools get their cancellation event (``host.agents.tooling.run_tool``). Whatever happens,
``activity`` is cleared and the turn's transcript (what the model really saw and said, native
payloads included) is saved for the next turn; a model call cut short by a cancel or an error
after it streamed keeps its streamed text in the transcript (``host.conversation.partial_reply``). After a successful first turn a title is made in
the background; a title already changed by a client is never overwritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ahp.protocol import builders
from ahp.tool_results import result_text
from host.agents._mapping import CallMapper, TurnToolIds
from host.agents.base import SessionCreationFailed, TurnContext, TurnFailed
from host.agents.context import (
    COMPACT_COMMAND,
    TokenMeter,
    compaction_request,
    cut_tool_output,
    elide_old_tool_results,
    estimate_messages,
    summary_message,
)
from host.agents.environment import TurnEnvironment
from host.agents.tooling import (
    Approval,
    AutoApprover,
    ToolApprover,
    ToolCallRequest,
    finish_call,
    parse_arguments,
    run_tool,
    unknown_tool_result,
)
from host.conversation import history, partial_reply, repair, steering_note, to_user_message
from host.sessions import DEFAULT_TITLE
from host.transcripts import TranscriptStore
from host.workdirs import session_directory
from providers import (
    AnthropicOptions,
    AnthropicThinkingBudget,
    AssistantMessage,
    Message,
    ModelRequest,
    OpenAIOptions,
    Provider,
    ProviderError,
    ToolCallPart,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from tools.base import Tool, ToolContext, failure_result

__all__ = ["ProviderAgent", "ProviderSource", "StaticSource", "ModelSpec", "TurnSettings", "THINKING_BUDGETS"]

logger = logging.getLogger(__name__)

THINKING_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
"""Anthropic extended-thinking budget (tokens) per thinking level offered in the configSchema."""
_EFFORTS = ["minimal", "low", "medium", "high"]
_BANG_COMMAND = re.compile(r"!`([^`\n]+)`")
"""A shell command inside a slash command's body, run before the prompt reaches the model."""

_STOP_CONTINUATIONS = 3
"""How often Stop hooks may keep one turn going: a hook that always blocks must not loop forever."""

_TITLE_PROMPT = (
    "Write a title of at most six words for a conversation that starts with the user's message "
    "below. Reply with the title only: no quotes, no punctuation at the end."
)
_TITLE_TIMEOUT = 30.0


class ProviderSource(Protocol):
    """Where a ``ProviderAgent`` gets the provider for one turn (or one title request)."""

    api: str

    def for_turn(self, session: str, turn_id: str, model: str) -> contextlib.AbstractAsyncContextManager[Provider]:
        """The provider to use for this turn; a recording source gives each turn its own cassette."""
        ...

    async def aclose(self) -> None: ...


class StaticSource:
    """Always the same provider (tests, the scripted provider, a shared SDK client)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.api = provider.api

    @contextlib.asynccontextmanager
    async def for_turn(self, session: str, turn_id: str, model: str) -> AsyncIterator[Provider]:
        yield self.provider

    async def aclose(self) -> None:
        await self.provider.aclose()


@dataclass(frozen=True)
class ModelSpec:
    """A model as offered in the agent's ``AgentInfo``."""

    id: str
    name: str | None = None
    context_window: int | None = None
    vision: bool = False
    reasoning: str = "none"
    """"effort" (OpenAI reasoning effort), "thinking" (Anthropic thinking level) or "none"."""
    default_level: str | None = None

    def info(self, provider: str) -> dict[str, Any]:
        model: dict[str, Any] = {"id": self.id, "provider": provider, "name": self.name or self.id, "supportsVision": self.vision}
        if self.context_window:
            model["maxContextWindow"] = self.context_window
        schema = self.config_schema()
        if schema is not None:
            model["configSchema"] = schema
        return model

    def config_schema(self) -> dict[str, Any] | None:
        if self.reasoning == "effort":
            return {
                "type": "object",
                "properties": {
                    "reasoningEffort": {
                        "type": "string",
                        "title": "Reasoning effort",
                        "description": "How much the model reasons before answering (more is slower and costs more).",
                        "enum": _EFFORTS,
                        "enumLabels": ["Minimal", "Low", "Medium", "High"],
                        "default": self.default_level or "medium",
                    }
                },
            }
        if self.reasoning == "thinking":
            return {
                "type": "object",
                "properties": {
                    "thinking": {
                        "type": "string",
                        "title": "Thinking",
                        "description": "Extended thinking before answering; the level sets its token budget.",
                        "enum": ["off", *THINKING_BUDGETS],
                        "enumLabels": ["Off", "Low", "Medium", "High"],
                        "default": self.default_level or "off",
                    }
                },
            }
        return None


@dataclass(frozen=True)
class TurnSettings:
    """How the loop behaves (from the agent's config table)."""

    system_prompt: str | None = None
    max_tokens: int | None = None
    retries: int = 3
    retry_base_delay: float = 1.0
    retry_max_delay: float = 60.0
    max_model_calls: int = 50
    title: str = "model"
    """"model": ask the model for a title; "first-words": the message's first words."""
    stall_timeout: float | None = 90.0
    """Seconds without anything from the provider before a model call fails as stalled."""
    compact_at: float | None = 0.8
    """Compact older turns when a request would pass this share of the model's context window."""
    keep_recent_turns: int = 2
    """Turns kept word for word when older ones are compacted automatically."""
    tool_output_limit: int = 40_000
    """Characters of one tool result the model is sent; the rest is stored and readable on request."""


@dataclass
class _TurnState:
    usage_input: int = 0
    usage_output: int = 0
    usage_cache_read: int = 0
    usage_cache_write: int = 0
    usage_reasoning: int = 0
    model: str | None = None
    activity: str | None = None
    messages: list[Message] = field(default_factory=list)

    def add_usage(self, usage: Usage) -> None:
        self.usage_input += usage.input_tokens
        self.usage_output += usage.output_tokens
        self.usage_cache_read += usage.cache_read_tokens
        self.usage_cache_write += usage.cache_write_tokens
        self.usage_reasoning += usage.reasoning_tokens


class ProviderAgent:
    """An AHP agent backed by a model provider; see the module docstring."""

    def __init__(
        self,
        provider: str,
        source: ProviderSource,
        *,
        display_name: str,
        description: str = "",
        models: Sequence[ModelSpec],
        settings: TurnSettings = TurnSettings(),
        tools: Sequence[Tool] = (),
        approver: ToolApprover | None = None,
        environment: TurnEnvironment | None = None,
        transcripts: TranscriptStore | None = None,
        unavailable: str | None = None,
        key_hint: str | None = None,
        sleep: Callable[[float], Any] = asyncio.sleep,
    ) -> None:
        self.provider = provider
        self.source = source
        self.display_name = display_name
        self.description = description
        self.models = list(models)
        self.settings = settings
        self.tools = {tool.name: tool for tool in tools}
        self.environment = environment or TurnEnvironment(approver=approver or AutoApprover())
        """Per-session extras (tools, prompt, hooks, approval); the host binds its own."""
        self._environment_fixed = environment is not None or approver is not None
        self.transcripts = transcripts or TranscriptStore(None)
        self.unavailable = unavailable
        """When set, sessions cannot be created on this agent; the text says what to configure."""
        self.key_hint = key_hint
        """Where the key comes from (e.g. "the OPENAI_API_KEY environment variable"), for errors."""
        self._sleep = sleep
        self._background: set[asyncio.Task[Any]] = set()
        self._meters: dict[str, TokenMeter] = {}
        """Per session: what the last model call really used (for the next request's estimate)."""

    # -- Agent protocol ------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "provider": self.provider,
            "displayName": self.display_name,
            "description": self.description or f"{self.display_name} models",
            "models": [model.info(self.provider) for model in self.models],
        }
        return info

    @property
    def approver(self) -> ToolApprover:
        return self.environment.approver

    def bind_environment(self, environment: TurnEnvironment) -> None:
        """The host gives every agent the session extras it composes (see ``environment``),
        unless this agent was built with its own environment or approver (tests do that)."""
        if not self._environment_fixed:
            self.environment = environment

    def bind_transcripts(self, transcripts: TranscriptStore) -> None:
        """The host gives every agent its shared, persistent transcript store."""
        self.transcripts = transcripts

    async def prepare_session(self, session: str, state: dict[str, Any]) -> None:
        if self.unavailable is not None:
            raise SessionCreationFailed("providerNotConfigured", self.unavailable)

    async def aclose(self) -> None:
        tasks = list(self._background)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.source.aclose()

    async def run_turn(self, ctx: TurnContext) -> None:
        turn = _TurnState()
        state = ctx.state
        finished_turns = list(state.get("turns") or [])
        title_before = state.get("summary", {}).get("title")
        model_id, spec = self._model_for(ctx.model)
        turn.model = model_id
        try:
            async with self.source.for_turn(ctx.session, ctx.turn_id, model_id) as provider:
                await self._loop(ctx, provider, turn, model_id, spec, finished_turns)
        finally:
            self._save(ctx, turn)
            self._clear_activity(ctx, turn)
        if not finished_turns and title_before == DEFAULT_TITLE:
            self._spawn(self._make_title(ctx, model_id))

    # -- the loop ------------------------------------------------------------------------------

    async def _loop(
        self, ctx: TurnContext, provider: Provider, turn: _TurnState, model_id: str, spec: ModelSpec, finished: list[dict[str, Any]]
    ) -> None:
        working_directory = session_directory(ctx.state)
        text = str(ctx.user_message.get("text") or "")
        if text.strip() == COMPACT_COMMAND or text.startswith(COMPACT_COMMAND + " "):
            focus = text[len(COMPACT_COMMAND):].strip() or None
            await self._compact(ctx, provider, turn, model_id, finished, keep=0, focus=focus, through=ctx.turn_id)
            return
        # Contributors may expand ``/skill args`` or reject the prompt (UserPromptSubmit hooks).
        message = await self.environment.user_message(ctx, ctx.user_message)
        ids = TurnToolIds()
        expanded = str(message.get("text") or "")
        if text.startswith("/") and expanded != text and _BANG_COMMAND.search(expanded):
            # A command's !`cmd` lines run as shell tool calls (same confirmation and policy) and
            # their output takes their place, as in Claude Code's slash commands.
            message = {**message, "text": await self._run_bang_commands(ctx, turn, expanded, working_directory, ids)}
        user, notes = to_user_message(message, working_directory=working_directory, vision=spec.vision, model_name=spec.name or model_id)
        for note in notes:
            _notify(ctx, note)
        past = self._past(ctx.session, finished)
        turn.messages.append(user)
        options = self._options(ctx.model, spec)
        meter = self._meters.setdefault(ctx.session, TokenMeter())
        elide_keep: int | None = None
        overflowed = False
        stops = 0

        def build(offered: dict[str, Tool]) -> ModelRequest:
            sent = turn.messages if elide_keep is None else elide_old_tool_results(turn.messages, elide_keep)[0]
            return ModelRequest(
                model=model_id,
                system=self.environment.system_prompt(ctx, self.settings.system_prompt),
                messages=tuple(repair([*past, *sent])),
                tools=tuple(_definitions(offered)),
                max_tokens=options.get("max_tokens", self.settings.max_tokens),
                anthropic=options.get("anthropic", AnthropicOptions()),
                openai=options.get("openai", OpenAIOptions()),
                stall_timeout=self.settings.stall_timeout,
            )

        for _ in range(self.settings.max_model_calls):
            self._take_steering(ctx, turn)
            offered = self.environment.tools(ctx, list(self.tools.values()))
            request = build(offered)
            budget = self._budget(spec)
            if budget is not None and meter.estimate(request) > budget:
                # Older turns first (keeping the latest ones), then all of them, then this turn's
                # oldest tool output: each step only if the previous one did not make enough room.
                for keep in dict.fromkeys((self.settings.keep_recent_turns, 0)):
                    if await self._compact(ctx, provider, turn, model_id, finished, keep=keep, focus=None):
                        past = self._past(ctx.session, finished)
                        meter.forget()
                        request = build(offered)
                    if meter.estimate(request) <= budget:
                        break
                if meter.estimate(request) > budget and elide_keep is None and elide_old_tool_results(turn.messages, 2)[1]:
                    elide_keep = 2
                    request = build(offered)
                    self._note(ctx, "Older tool output in this turn was left out of what the model is sent, "
                                    "to stay within its context window; the calls themselves are kept.")
            try:
                mapper = await self._call(ctx, provider, request, turn, ids, offered)
            except TurnFailed as failure:
                # The provider says it does not fit after all: compact everything once and retry.
                if failure.error.get("errorType") != "context_length" or overflowed:
                    raise
                overflowed = True
                if await self._compact(ctx, provider, turn, model_id, finished, keep=0, focus=None):
                    past = self._past(ctx.session, finished)
                elide_keep = 1
                meter.forget()
                request = build(offered)
                mapper = await self._call(ctx, provider, request, turn, ids, offered)
            meter.record(request, mapper.usage.input_tokens + mapper.usage.cache_read_tokens + mapper.usage.cache_write_tokens,
                         mapper.usage.output_tokens)
            message = mapper.acc.message()
            turn.messages.append(message)
            finish = mapper.finish
            if message.tool_calls:
                results = await self._run_tools(ctx, turn, message, mapper.tool_ids, working_directory, offered)
                turn.messages.append(results)
                continue
            if finish is not None and finish.reason == "pause":
                continue  # Anthropic pause_turn: call again so the model can carry on
            if finish is not None:
                self._finish_note(ctx, finish.reason, request.max_tokens)
            if stops < _STOP_CONTINUATIONS:
                reason = await self.environment.stop(ctx, stops > 0)
                if reason:
                    stops += 1
                    self._note(ctx, f"A plugin's Stop hook asked the agent to go on: {reason}")
                    turn.messages.append(UserMessage.of(f"[A Stop hook asked you to continue]\n{reason}"))
                    continue
            return
        _notify(ctx, f"Stopped after {self.settings.max_model_calls} model calls in one turn. "
                     "Send a message to let the agent continue.")

    async def _call(
        self, ctx: TurnContext, provider: Provider, request: ModelRequest, turn: _TurnState, ids: TurnToolIds,
        offered: dict[str, Tool],
    ) -> CallMapper:
        display = {name: tool.title for name, tool in offered.items()}
        # Client-provided tools start with their owner and the client's own name for the tool.
        owners = {name: (tool.tool_client_id, getattr(tool, "wire_name", name)) for name, tool in offered.items()
                  if getattr(tool, "tool_client_id", None)}
        attempt = 0
        while True:
            self._set_activity(ctx, turn, f"Waiting for {request.model}" if attempt == 0 else f"Retrying {request.model} (attempt {attempt + 1})")
            mapper = CallMapper(ctx, provider.api, ids, display, owners)
            try:
                try:
                    async with contextlib.aclosing(provider.stream(request)) as events:
                        async for event in events:
                            mapper.apply(event)
                            if event.kind == "part_start" and turn.activity and turn.activity.startswith(("Waiting", "Retrying")):
                                self._set_activity(ctx, turn, "Thinking" if event.part_kind == "reasoning" else "Writing")
                except BaseException:
                    # Cancelled or failed after streaming: what the user saw is kept for the next turn.
                    if mapper.streamed:
                        partial = partial_reply(mapper.acc.message())
                        if partial is not None:
                            turn.messages.append(partial)
                    raise
            except ProviderError as error:
                if mapper.streamed or not error.retryable or attempt >= self.settings.retries:
                    self._add_usage(ctx, turn, mapper)
                    raise TurnFailed(error.error_type, self._explain(error, streamed=mapper.streamed, attempts=attempt + 1)) from error
                delay = error.retry_after if error.retry_after is not None else self.settings.retry_base_delay * (2**attempt)
                if delay > self.settings.retry_max_delay:
                    raise TurnFailed(
                        error.error_type,
                        f"{error.message} The provider asked to wait {delay:.0f} s before retrying, which is longer "
                        f"than this host waits ({self.settings.retry_max_delay:.0f} s); send your message again later.",
                    ) from error
                attempt += 1
                self._set_activity(ctx, turn, f"Retrying in {delay:.1f} s: {error.message}")
                await self._sleep(delay)
                continue
            self._add_usage(ctx, turn, mapper)
            return mapper

    def _add_usage(self, ctx: TurnContext, turn: _TurnState, mapper: CallMapper) -> None:
        if mapper.usage == Usage():
            return  # the provider reported no usage for this call: nothing to add or show
        turn.add_usage(mapper.usage)
        if mapper.finish is not None and mapper.finish.model:
            turn.model = mapper.finish.model
        usage: dict[str, Any] = {"inputTokens": turn.usage_input, "outputTokens": turn.usage_output}
        if turn.model:
            usage["model"] = turn.model
        if turn.usage_cache_read:
            usage["cacheReadTokens"] = turn.usage_cache_read
        meta = {k: v for k, v in (("cacheWriteTokens", turn.usage_cache_write), ("reasoningTokens", turn.usage_reasoning)) if v}
        if meta:
            usage["_meta"] = meta
        ctx.emit(builders.session_usage(turn_id=ctx.turn_id, usage=usage))

    def _explain(self, error: ProviderError, *, streamed: bool, attempts: int) -> str:
        message = error.message
        if error.error_type == "authentication" and self.key_hint:
            message += f" Check {self.key_hint}, then send your message again."
        elif streamed and error.retryable:
            message += " Part of the answer had already arrived, so the host did not retry; send your message again to retry."
        elif error.retryable and attempts > 1:
            message += f" The host tried {attempts} times; send your message again later."
        elif error.error_type == "context_length":
            message += " Start a new session or fork an earlier turn to shorten the conversation."
        return message

    def _finish_note(self, ctx: TurnContext, reason: str, max_tokens: int | None) -> None:
        limit = f" ({max_tokens} tokens)" if max_tokens else ""
        note = {
            "max_tokens": f"The answer was cut off: the model reached its output limit{limit}.",
            "content_filter": "The provider's content filter stopped the answer.",
            "refusal": "The model declined to answer.",
        }.get(reason)
        if note:
            _notify(ctx, note)

    # -- tools ---------------------------------------------------------------------------------

    async def _run_tools(
        self, ctx: TurnContext, turn: _TurnState, message: AssistantMessage, ahp_ids: dict[str, str], working_directory: Path | None,
        offered: dict[str, Tool],
    ) -> ToolResultsMessage:
        results: dict[str, dict[str, Any]] = {}
        added: dict[str, str] = {}
        """Context hooks added to a result, for the model only (PostToolUse additionalContext)."""
        approved: list[tuple[str, str, Tool, Any]] = []
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
                    prep = await tool.prepare(arguments, self._tool_context(ctx, working_directory, call_id))
                    failure = prep.failure
                    request = ToolCallRequest(call_id, call.tool_name, call.arguments, tool, prep.ready_fields())
                    if failure is None:
                        blocked = await self.environment.before_tool_call(ctx, request, arguments)
                        if blocked:
                            failure = failure_result(f"Did not run {tool.title}", blocked, "blocked")
            if failure is not None:
                ctx.emit(request.ready_action(ctx.turn_id, confirmed="not-needed", asking=False))
                self._complete(ctx, call_id, failure)
                results[call.tool_call_id] = failure
                continue
            assert tool is not None
            approval: Approval = await self.approver.approve(request, ctx)
            if not approval.approved:
                denied = {
                    "success": False,
                    "pastTenseMessage": f"Did not run {tool.title}",
                    "error": {"message": approval.reason or "The user denied this tool call.", "code": "denied"},
                }
                results[call.tool_call_id] = denied
                continue
            if approval.edited_input is not None:
                try:
                    arguments = parse_arguments(approval.edited_input)
                except ValueError:
                    pass
            approved.append((call.tool_call_id, call_id, tool, arguments))
        if approved:
            names = ", ".join(dict.fromkeys(tool.title for _, _, tool, _ in approved))
            self._set_activity(ctx, turn, f"Running {names}")

            requests = {call.tool_call_id: call for call in message.tool_calls}

            async def one(provider_id: str, call_id: str, tool: Tool, arguments: Any) -> None:
                result = await run_tool(tool, arguments, self._tool_context(ctx, working_directory, call_id))
                call = requests[provider_id]
                done = ToolCallRequest(call_id, call.tool_name, call.arguments, tool)
                # The approver completes the call (it may ask the user to confirm the result first).
                result = await finish_call(self.approver, done, result, ctx)
                results[provider_id] = result
                extra = await self.environment.after_tool_call(ctx, done, result)
                if extra:
                    added[provider_id] = extra

            async with asyncio.TaskGroup() as group:
                for entry in approved:
                    group.create_task(one(*entry))
        return ToolResultsMessage(
            results=tuple(
                ToolResult.of(
                    c.tool_call_id, c.tool_name,
                    self._fit_output(ctx, working_directory, result_text(results[c.tool_call_id]))
                    + (f"\n\n[Context added by a plugin hook]\n{added[c.tool_call_id]}" if c.tool_call_id in added else ""),
                    is_error=not results[c.tool_call_id].get("success"),
                )
                for c in message.tool_calls
            )
        )

    async def _run_bang_commands(
        self, ctx: TurnContext, turn: _TurnState, text: str, working_directory: Path | None, ids: TurnToolIds
    ) -> str:
        """Each !`cmd` in ``text`` run as a ``shell`` tool call (shown to clients, confirmed like
        any other) and replaced by what the call returned (its output, or why it did not run)."""
        commands = _BANG_COMMAND.findall(text)
        offered = self.environment.tools(ctx, list(self.tools.values()))
        shell = offered.get("shell")
        if shell is None:
            return _BANG_COMMAND.sub(lambda m: f"[{m.group(1)} was not run: this session has no shell tool]", text)
        parts: list[ToolCallPart] = []
        ahp_ids: dict[str, str] = {}
        for index, command in enumerate(commands):
            provider_id = f"{ctx.turn_id}-command-{index}"
            call_id = ahp_ids[provider_id] = ids.assign(provider_id)
            arguments = json.dumps({"command": command})
            ctx.emit(builders.session_tool_call_start(turn_id=ctx.turn_id, tool_call_id=call_id, tool_name="shell", display_name=shell.title))
            ctx.emit(builders.session_tool_call_delta(turn_id=ctx.turn_id, tool_call_id=call_id, content=arguments))
            parts.append(ToolCallPart(tool_call_id=provider_id, tool_name="shell", arguments=arguments))
        results = await self._run_tools(ctx, turn, AssistantMessage(parts=tuple(parts)), ahp_ids, working_directory, offered)
        outputs = iter(result.text for result in results.results)
        return _BANG_COMMAND.sub(lambda _m: next(outputs), text)

    def _fit_output(self, ctx: TurnContext, working_directory: Path | None, text: str) -> str:
        """Tool output over the limit: head and tail for the model, the whole stored for read_file."""
        cut, left_out = cut_tool_output(text, self.settings.tool_output_limit)
        if not left_out:
            return text
        store = self._tool_context(ctx, working_directory, "output").content_store
        uri = store.put(text.encode("utf-8"), "text/plain; charset=utf-8")
        return (
            f"{cut}\n\n[This output was cut for you: {left_out} of {len(text)} characters are not shown. "
            f"The whole output is stored; read it in pages with read_file(path=\"{uri}\", offset=<line>, limit=<lines>).]"
        )

    def _complete(self, ctx: TurnContext, call_id: str, result: dict[str, Any]) -> None:
        ctx.emit(builders.session_tool_call_complete(turn_id=ctx.turn_id, tool_call_id=call_id, result=result))

    def _tool_context(self, ctx: TurnContext, working_directory: Path | None, call_id: str) -> ToolContext:
        context = ToolContext(working_directory=working_directory or Path.cwd(), tool_call_id=call_id)
        return self.environment.tool_context(ctx, context)

    # -- context window ------------------------------------------------------------------------

    def _past(self, session: str, finished: list[dict[str, Any]]) -> list[Message]:
        """The finished turns as the model is sent them: a compaction's summary replaces the
        turns it covers (their transcripts stay on disk), later turns follow word for word."""
        ids = [str(t.get("id")) for t in finished]
        found = self.transcripts.compaction(session, ids)
        start, prefix = (found[0] + 1, [summary_message(found[1])]) if found else (0, [])
        return [*prefix, *history(finished[start:], self.transcripts.load(session, ids[start:]))]

    def _budget(self, spec: ModelSpec) -> int | None:
        if not spec.context_window or not self.settings.compact_at:
            return None
        return int(spec.context_window * self.settings.compact_at)

    def _note(self, ctx: TurnContext, text: str) -> None:
        _notify(ctx, text)

    async def _compact(
        self, ctx: TurnContext, provider: Provider, turn: _TurnState, model_id: str, finished: list[dict[str, Any]],
        *, keep: int, focus: str | None, through: str | None = None,
    ) -> bool:
        """Summarise the finished turns before the last ``keep`` with the model; False when there
        was nothing (new) to summarise or the model could not do it (the user is told why)."""
        ids = [str(t.get("id")) for t in finished]
        found = self.transcripts.compaction(ctx.session, ids)
        start = found[0] + 1 if found else 0
        end = len(finished) - keep
        if end <= start:
            if through is not None:
                self._note(ctx, "Nothing to compact yet: no turns since the last compaction.")
            return False
        older = [*([summary_message(found[1])] if found else []),
                 *history(finished[start:end], self.transcripts.load(ctx.session, ids[start:end]))]
        older, _ = elide_old_tool_results(repair(older), 3)
        spec = self._model_for(ctx.model)[1]
        if spec.context_window and estimate_messages(older) > spec.context_window * 0.9:
            older, _ = elide_old_tool_results(older, 0)
        request = compaction_request(model_id, older, focus=focus, max_tokens=4096, stall_timeout=self.settings.stall_timeout)
        self._set_activity(ctx, turn, "Compacting the conversation")
        from providers import StreamAccumulator

        acc = StreamAccumulator(api=provider.api)
        try:
            async with contextlib.aclosing(provider.stream(request)) as events:
                async for event in events:
                    acc.apply(event)
        except ProviderError as error:
            self._note(ctx, f"The conversation could not be compacted: {error.message}")
            return False
        summary = acc.message().text.strip()
        if not summary:
            self._note(ctx, "The conversation could not be compacted: the model returned an empty summary.")
            return False
        self.transcripts.save_compaction(ctx.session, through or ids[end - 1], summary)
        self._meters.pop(ctx.session, None)
        count = end - start
        how = f"as asked{f' (focus: {focus})' if focus else ''}" if through is not None else "to stay within the model's context window"
        kept = ""
        if keep:
            kept = "; the latest turn is kept word for word" if keep == 1 else f"; the {keep} latest turns are kept word for word"
        turns = "1 earlier turn (about" if count == 1 else f"{count} earlier turns (about"
        self._note(
            ctx,
            f"Compacted the conversation {how}: {turns} {estimate_messages(older):,} tokens) "
            f"{'is' if count == 1 else 'are'} now sent to the model as a summary of about "
            f"{estimate_messages([summary_message(summary)]):,} tokens{kept}. The full history stays in the session.",
        )
        return True

    # -- context -------------------------------------------------------------------------------

    def _take_steering(self, ctx: TurnContext, turn: _TurnState) -> None:
        steering = ctx.state.get("steeringMessage")
        if not isinstance(steering, dict) or not steering.get("id"):
            return
        spec = self._model_for(ctx.model)[1]
        message, notes = to_user_message(
            steering.get("userMessage") or {}, working_directory=session_directory(ctx.state), vision=spec.vision
        )
        ctx.dispatch(builders.session_pending_message_removed(kind="steering", id=steering["id"]))
        # Say where it entered, so clients see it and a turn rebuilt from state keeps it.
        _notify(ctx, steering_note(steering.get("userMessage") or {}))
        for note in notes:
            _notify(ctx, note)
        turn.messages.append(message)

    def _model_for(self, selection: dict[str, Any] | None) -> tuple[str, ModelSpec]:
        wanted = selection.get("id") if isinstance(selection, dict) else None
        for model in self.models:
            if model.id == wanted:
                return model.id, model
        if wanted:
            return wanted, ModelSpec(id=wanted)  # a model not listed in the config: send it as-is
        if self.models:
            return self.models[0].id, self.models[0]
        raise TurnFailed("noModel", f"The agent {self.display_name} has no model configured; add one to its models list.")

    def _options(self, selection: dict[str, Any] | None, spec: ModelSpec) -> dict[str, Any]:
        config = (selection or {}).get("config") or {}
        options: dict[str, Any] = {}
        if spec.reasoning == "effort":
            effort = config.get("reasoningEffort") or spec.default_level or "medium"
            if effort in _EFFORTS:
                summary = "auto" if self.source.api == "openai-responses" else None
                options["openai"] = OpenAIOptions(reasoning_effort=effort, reasoning_summary=summary)
        elif spec.reasoning == "thinking":
            level = config.get("thinking") or spec.default_level or "off"
            budget = THINKING_BUDGETS.get(level)
            if budget is not None:
                options["anthropic"] = AnthropicOptions(thinking=AnthropicThinkingBudget(budget_tokens=budget))
                options["max_tokens"] = max(self.settings.max_tokens or 0, budget + 4096, 16000)
        return options

    # -- persistence, activity, title ----------------------------------------------------------

    def _save(self, ctx: TurnContext, turn: _TurnState) -> None:
        if not turn.messages:
            return
        try:
            self.transcripts.save(ctx.session, ctx.turn_id, repair(turn.messages))
        except Exception:  # memory loss degrades the next turn; it must not break this one's end
            logger.exception("could not save the transcript of turn %s", ctx.turn_id)

    def _set_activity(self, ctx: TurnContext, turn: _TurnState, activity: str) -> None:
        if turn.activity != activity and ctx.is_active():
            turn.activity = activity
            ctx.dispatch(builders.session_activity_changed(activity=activity))

    def _clear_activity(self, ctx: TurnContext, turn: _TurnState) -> None:
        if turn.activity is None:
            return
        current = ctx.state.get("summary", {}).get("activity")
        if current == turn.activity:  # a later turn may already say something else
            ctx.dispatch(builders.session_activity_changed())
        turn.activity = None

    async def _make_title(self, ctx: TurnContext, model_id: str) -> None:
        text = str(ctx.user_message.get("text") or "")
        title = None
        if self.settings.title == "model":
            try:
                title = await asyncio.wait_for(self._ask_title(ctx, model_id, text), _TITLE_TIMEOUT)
            except (ProviderError, TimeoutError):
                title = None
            except Exception:
                logger.exception("title generation failed for %s", ctx.session)
        title = title or first_words(text)
        state = ctx.state
        if not title or state.get("summary", {}).get("title") != DEFAULT_TITLE:
            return  # a client named the session meanwhile: never overwrite that
        ctx.dispatch(builders.session_title_changed(title=title))

    async def _ask_title(self, ctx: TurnContext, model_id: str, text: str) -> str | None:
        request = ModelRequest(
            model=model_id, system=_TITLE_PROMPT, messages=(UserMessage.of(text[:2000]),), max_tokens=64,
            stall_timeout=self.settings.stall_timeout,
        )
        async with self.source.for_turn(ctx.session, f"{ctx.turn_id}-title", model_id) as provider:
            from providers import StreamAccumulator

            acc = StreamAccumulator(api=provider.api)
            async with contextlib.aclosing(provider.stream(request)) as events:
                async for event in events:
                    acc.apply(event)
        return clean_title(acc.message().text)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def first_words(text: str, *, words: int = 6, limit: int = 60) -> str:
    """A fallback title: the message's first words."""
    chosen = " ".join(text.split()[:words])
    if len(chosen) > limit:
        chosen = chosen[: limit - 1].rstrip() + "…"
    return chosen


def clean_title(text: str) -> str | None:
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = line.strip("\"'*#` ").rstrip(".")
    if line.lower().startswith("title:"):
        line = line[6:].strip()
    return line[:80] or None



def _definitions(tools: dict[str, Tool]) -> list[ToolDefinition]:
    return [ToolDefinition(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools.values()]


def _notify(ctx: TurnContext, text: str) -> None:
    """A system notification in the turn's response (what happened that the user should know)."""
    ctx.emit(builders.session_response_part(turn_id=ctx.turn_id, part={"kind": "systemNotification", "content": text}))
