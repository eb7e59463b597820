"""The provider-backed agent: one AHP turn = a loop of model calls and tool runs.

``ProviderAgent.run_turn`` does, for one turn:

1. Builds the conversation: the session's finished turns (``host.agents.compaction``: a summary
   in place of compacted turns, then stored transcripts, else rebuilt from the AHP state, see
   ``host.conversation``) + this turn's user message with its attachments.
2. Calls the model with the model selection *captured at turn start* (``host.agents.models``);
   the stream is mapped onto AHP actions token by token (``host.agents._mapping``). Before every
   model call a pending steering message is taken in (``pendingMessageRemoved{kind: steering}``,
   a ``systemNotification`` "Steering: <text>" marking where it entered, then it is part of the
   context). A request that would not fit the context window compacts older turns first.
3. If the model called tools, ``host.agents.tool_runs`` prepares, approves, runs and completes
   them; the results go back to the model and the loop repeats, until the model answers without
   tool calls (or ``max_model_calls`` is reached, which is said in the turn). Stop hooks may keep
   the turn going a bounded number of times.
4. ``session/usage`` after every model call carries the turn's running totals (summed over its
   calls; within a call the provider's latest report wins).

Failures: a provider error becomes ``TurnFailed`` with an ``ErrorInfo`` saying what to do.
Retries (429, 5xx, 529, dropped connections: ``err.retryable``) happen with exponential backoff,
honouring ``retry_after``, only while the failing call has not streamed anything yet.

Cancellation: the turn runner cancels the task; the provider stream is closed by ``aclosing`` and
running tools get their cancellation event (``host.agents.tooling.run_tool``). Whatever happens,
``activity`` is cleared and the turn's transcript (what the model really saw and said, native
payloads included) is saved for the next turn; a model call cut short by a cancel or an error
after it streamed keeps its streamed text in the transcript (``host.conversation.partial_reply``).
After a successful first turn a title is made in the background (``host.agents.titles``); a title
already changed by a client is never overwritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ahp.protocol import builders
from host.agents._mapping import CallMapper, TurnToolIds
from host.agents.base import SessionCreationFailed, TurnContext, TurnFailed
from host.agents.compaction import Compaction
from host.agents.context import COMPACT_COMMAND, TokenMeter, elide_old_tool_results
from host.agents.environment import TurnEnvironment
from host.agents.models import (
    THINKING_BUDGETS,
    ModelSpec,
    ProviderSource,
    StaticSource,
    TurnSettings,
    model_for,
    request_options,
)
from host.agents.titles import make_title
from host.agents.tool_runs import BANG_COMMAND, TurnTools
from host.agents.tooling import AutoApprover, ToolApprover
from host.conversation import partial_reply, repair, steering_note, to_user_message
from host.sessions import DEFAULT_TITLE
from host.transcripts import TranscriptStore
from host.workdirs import session_directory
from providers import (
    AnthropicOptions,
    Message,
    ModelRequest,
    OpenAIOptions,
    Provider,
    ProviderError,
    ToolDefinition,
    Usage,
    UserMessage,
)
from tools.base import Tool

__all__ = ["ProviderAgent", "ProviderSource", "StaticSource", "ModelSpec", "TurnSettings", "THINKING_BUDGETS"]

logger = logging.getLogger(__name__)

_STOP_CONTINUATIONS = 3
"""How often Stop hooks may keep one turn going: a hook that always blocks must not loop forever."""


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
        self._compaction = Compaction(lambda: self.transcripts, settings, _notify)

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
        warm = getattr(self.source, "warm", None)
        if warm is not None:
            warm()  # the SDK is imported off the event loop before the first model call needs it

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
            await self._compact(ctx, provider, turn, model_id, spec, finished, keep=0, focus=focus, through=ctx.turn_id)
            return
        # Contributors may expand ``/skill args`` or reject the prompt (UserPromptSubmit hooks).
        message = await self.environment.user_message(ctx, ctx.user_message)
        ids = TurnToolIds()
        tools = TurnTools(ctx, self.environment, working_directory, output_limit=self.settings.tool_output_limit,
                          running=lambda names: self._set_activity(ctx, turn, f"Running {names}"))
        expanded = str(message.get("text") or "")
        if text.startswith("/") and expanded != text and BANG_COMMAND.search(expanded):
            # A command's !`cmd` lines run as shell tool calls (same confirmation and policy) and
            # their output takes their place, as in Claude Code's slash commands.
            offered = self.environment.tools(ctx, list(self.tools.values()))
            message = {**message, "text": await tools.run_commands(expanded, ids, offered)}
        user, notes = to_user_message(message, working_directory=working_directory, vision=spec.vision, model_name=spec.name or model_id)
        for note in notes:
            _notify(ctx, note)
        past = self._compaction.past(ctx.session, finished)
        turn.messages.append(user)
        options = request_options(ctx.model, spec, self.source.api, self.settings.max_tokens)
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
            budget = self._compaction.budget(spec)
            if budget is not None and meter.estimate(request) > budget:
                # Older turns first (keeping the latest ones), then all of them, then this turn's
                # oldest tool output: each step only if the previous one did not make enough room.
                for keep in dict.fromkeys((self.settings.keep_recent_turns, 0)):
                    if await self._compact(ctx, provider, turn, model_id, spec, finished, keep=keep, focus=None):
                        past = self._compaction.past(ctx.session, finished)
                        meter.forget()
                        request = build(offered)
                    if meter.estimate(request) <= budget:
                        break
                if meter.estimate(request) > budget and elide_keep is None and elide_old_tool_results(turn.messages, 2)[1]:
                    elide_keep = 2
                    request = build(offered)
                    _notify(ctx, "Older tool output in this turn was left out of what the model is sent, "
                                    "to stay within its context window; the calls themselves are kept.")
            try:
                mapper = await self._call(ctx, provider, request, turn, ids, offered)
            except TurnFailed as failure:
                # The provider says it does not fit after all: compact everything once and retry.
                if failure.error.get("errorType") != "context_length" or overflowed:
                    raise
                overflowed = True
                if await self._compact(ctx, provider, turn, model_id, spec, finished, keep=0, focus=None):
                    past = self._compaction.past(ctx.session, finished)
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
                results = await tools.run(message, mapper.tool_ids, offered)
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
                    _notify(ctx, f"A plugin's Stop hook asked the agent to go on: {reason}")
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

    # -- context window ------------------------------------------------------------------------

    async def _compact(
        self, ctx: TurnContext, provider: Provider, turn: _TurnState, model_id: str, spec: ModelSpec,
        finished: list[dict[str, Any]], *, keep: int, focus: str | None, through: str | None = None,
    ) -> bool:
        compacted = await self._compaction.compact(
            ctx, provider, model_id, spec, finished, keep=keep, focus=focus, through=through,
            started=lambda: self._set_activity(ctx, turn, "Compacting the conversation"),
        )
        if compacted:
            self._meters.pop(ctx.session, None)
        return compacted

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
        return model_for(self.models, selection, self.display_name)

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
        title = await make_title(self.source, ctx, model_id, self.settings)
        if not title or ctx.state.get("summary", {}).get("title") != DEFAULT_TITLE:
            return  # a client named the session meanwhile: never overwrite that
        ctx.dispatch(builders.session_title_changed(title=title))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _definitions(tools: dict[str, Tool]) -> list[ToolDefinition]:
    return [ToolDefinition(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools.values()]


def _notify(ctx: TurnContext, text: str) -> None:
    """A system notification in the turn's response (what happened that the user should know)."""
    ctx.emit(builders.session_response_part(turn_id=ctx.turn_id, part={"kind": "systemNotification", "content": text}))
