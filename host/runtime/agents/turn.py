"""One turn of a ``ProviderAgent``: a loop of model calls and tool runs (see ``host.runtime.agents.provider``).

``ProviderTurn(needs, ctx).run()`` is the whole turn; the object lives as long as the turn and
holds what is the turn's own (its messages, running usage, activity, tool-call ids). What outlives
a turn stays on the agent (its settings, tools, environment, transcripts, token meters), which
hands the turn only that, as a frozen ``TurnNeeds``: this module never imports the agent's.

The loop decides what happens next; the parts it leans on are their own: the context budget
(``host.runtime.agents.budget``: a request that fits, and the retry after a ``context_length``
error), retry timing (``host.runtime.agents.retries``, pure), the stream's mapping onto actions
(``host.runtime.agents._mapping``) and tool runs (``host.runtime.agents.tool_runs``).

This module, and with it the providers' message and event models, the stream mapping, compaction
and tool runs, is imported when a ``ProviderAgent`` runs its first turn, not when the host starts:
an agent only needs its models and settings to be listed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ahp.protocol import builders
from host.resources.workdirs import session_directory
from host.runtime.agents._mapping import CallMapper, TurnToolIds, tool_start_meta
from host.runtime.agents.base import TurnContext, TurnEnded, TurnFailed
from host.runtime.agents.budget import ContextBudget
from host.runtime.agents.compaction import Compaction
from host.runtime.agents.context import COMPACT_COMMAND, TokenMeter
from host.runtime.agents.environment import TurnEnvironment
from host.runtime.agents.kept_past import KeptPast, kept_for
from host.runtime.agents.models import ModelSpec, ProviderSource, TurnSettings, model_for, request_options
from host.runtime.agents.replay import DEMO_LABEL, DEMO_NOTICE, recorded_label
from host.runtime.agents.retries import retry_after, too_long
from host.runtime.agents.session_source import ReplayedCancelError
from host.runtime.agents.titles import make_title
from host.runtime.agents.tool_runs import BANG_COMMAND, TurnTools
from host.runtime.conversation import partial_reply, repair, repair_after, steering_note, to_user_message
from host.runtime.turns import turn_duration
from host.state.sessions import DEFAULT_TITLE
from host.state.transcripts import TranscriptStore
from providers import (
    AnthropicOptions,
    AssistantMessage,
    Message,
    ModelRequest,
    ModelStream,
    OpenAIOptions,
    Provider,
    ProviderError,
    ToolDefinition,
    Usage,
    UserMessage,
)
from tools.base import Tool

__all__ = ["ProviderTurn", "TurnNeeds"]

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class TurnNeeds:
    """What one turn takes from its agent, as the agent stands when the turn starts."""

    source: ProviderSource
    settings: TurnSettings
    environment: TurnEnvironment
    transcripts: TranscriptStore
    tools: tuple[Tool, ...]
    """The agent's own tools (the environment adds the session's)."""
    models: tuple[ModelSpec, ...]
    agent_name: str
    """The agent's display name, for "no model configured"."""
    meters: dict[str, TokenMeter]
    """The agent's, per chat: what the last model call really used (outlives the turn)."""
    pasts: dict[str, KeptPast]
    """The agent's, per chat: the conversation of finished turns the last turn sent (outlives the turn)."""
    key_hint: str | None
    """Where the key comes from, for authentication errors."""
    sleep: Callable[[float], Any]
    """How to wait before a retry."""
    spawn: Callable[[Coroutine[Any, Any, None]], None]
    """Runs work beyond the turn (a title); the agent cancels it when it closes."""

    def model_for(self, selection: dict[str, Any] | None) -> tuple[str, ModelSpec]:
        return model_for(self.models, selection, self.agent_name)


class ProviderTurn:
    """The state and loop of one turn (see the module docstring)."""

    def __init__(self, needs: TurnNeeds, ctx: TurnContext) -> None:
        self.needs = needs
        self.ctx = ctx
        self.settings = needs.settings
        self.environment = needs.environment
        self.messages: list[Message] = []
        """What this turn sent and received, saved as its transcript when it ends."""
        self.model: str | None = None
        """The model the provider says answered (else the one asked for)."""
        self.activity: str | None = None
        self.usage = Usage()
        """Summed over the turn's model calls."""
        self.compaction = Compaction(lambda: needs.transcripts, needs.settings, _notify)
        self.recorded = needs.settings.recorded_demo
        """The answers are the keyless demo's recordings: said in the turn and on its usage."""

    async def run(self) -> None:
        ctx = self.ctx
        finished_turns = ctx.finished_turns()
        title_before = ctx.state.get("title")
        model_id, spec = self.needs.model_for(ctx.model)
        self.model = model_id
        if self.recorded:
            _notify(ctx, DEMO_LABEL if finished_turns else DEMO_NOTICE)
        try:
            workdir = session_directory(ctx.state)
            async with self.needs.source.for_turn(ctx.session, ctx.turn_id, model_id, workdir=str(workdir) if workdir else None) as provider:
                await self._loop(provider, model_id, spec, finished_turns)
        except ProviderError as error:
            # No provider for this turn (e.g. a model the agent cannot serve): its error, said plainly.
            raise TurnFailed(error.error_type, error.message) from error
        finally:
            self._save()
            self._clear_activity()
        if not finished_turns and title_before == DEFAULT_TITLE and ctx.chat == ctx.state.get("defaultChat"):
            self.needs.spawn(self._make_title(model_id))

    # -- the loop ------------------------------------------------------------------------------

    async def _loop(self, provider: Provider, model_id: str, spec: ModelSpec, finished: list[dict[str, Any]]) -> None:
        ctx, settings, environment = self.ctx, self.settings, self.environment
        working_directory = session_directory(ctx.state)
        text = str(ctx.message.get("text") or "")
        if text.strip() == COMPACT_COMMAND or text.startswith(COMPACT_COMMAND + " "):
            focus = text[len(COMPACT_COMMAND):].strip() or None
            await self._compact(provider, model_id, spec, finished, keep=0, focus=focus, through=ctx.turn_id)
            return
        if text.startswith("!") and text[1:].strip():
            await self._shell_mode(text[1:].strip(), working_directory)
            return
        # Contributors may expand ``/skill args`` or reject the prompt (UserPromptSubmit hooks).
        message = await environment.user_message(ctx, ctx.message)
        ids = TurnToolIds()
        tools = TurnTools(ctx, environment, working_directory, output_limit=settings.tool_output_limit,
                          running=lambda names: self._set_activity(f"Running {names}"))
        expanded = str(message.get("text") or "")
        from_server = isinstance(message.get("_meta"), dict) and "mcpPrompt" in message["_meta"]
        if text.startswith("/") and expanded != text and not from_server and BANG_COMMAND.search(expanded):
            # A command's !`cmd` lines run as shell tool calls (same confirmation and policy) and
            # their output takes their place, as in Claude Code's slash commands (an MCP server's
            # prompt text is the server's, so it never runs anything).
            offered = environment.tools(ctx, list(self.needs.tools))
            message = {**message, "text": await tools.run_commands(expanded, ids, offered)}
        user, notes = to_user_message(message, working_directory=working_directory, vision=spec.vision, model_name=spec.name or model_id,
                                      content=tools.read_content)
        for note in notes:
            _notify(ctx, note)
        self.messages.append(user)
        options = request_options(ctx.model, spec, self.needs.source.api, settings.max_tokens)
        kept = kept_for(self.needs.pasts, ctx.chat)
        latest_past: list[list[Message]] = [[]]

        def past() -> list[Message]:
            # Repaired already: each model call folds only what this turn added after it.
            latest_past[0] = self.compaction.past(ctx.session, finished, kept)
            return latest_past[0]

        def compose(messages: Sequence[Message], offered: dict[str, Tool]) -> ModelRequest:
            # Built from models and values that are valid already: validating the request would
            # check every message of the conversation again before every model call.
            return ModelRequest.model_construct(
                model=model_id,
                system=environment.system_prompt(ctx, settings.system_prompt),
                messages=tuple(repair_after(latest_past[0], messages)),
                tools=tuple(_definitions(offered)),
                max_tokens=options.get("max_tokens", settings.max_tokens),
                anthropic=options.get("anthropic", AnthropicOptions()),
                openai=options.get("openai", OpenAIOptions()),
                stall_timeout=settings.stall_timeout,
            )

        async def compact(keep: int) -> bool:
            return await self._compact(provider, model_id, spec, finished, keep=keep, focus=None)

        budget = ContextBudget(
            messages=self.messages, compose=compose, past=past,
            compact=compact, notify=lambda text: _notify(ctx, text),
            meter=self.needs.meters.setdefault(ctx.chat, TokenMeter()), limit=self.compaction.budget(spec),
            keep_recent=settings.keep_recent_turns,
        )
        stops = 0
        for _ in range(settings.max_model_calls):
            self._take_steering()
            offered = environment.tools(ctx, list(self.needs.tools))
            request = await budget.fit(offered)
            try:
                mapper, reply = await self._call(provider, request, ids, offered)
            except TurnFailed as failure:
                # The provider says it does not fit after all: compact everything once and retry.
                retry = await budget.refit(offered) if failure.error.get("errorType") == "context_length" else None
                if retry is None:
                    raise
                request = retry
                mapper, reply = await self._call(provider, request, ids, offered)
            budget.record(request, mapper.usage.input_tokens + mapper.usage.cache_read_tokens + mapper.usage.cache_write_tokens,
                          mapper.usage.output_tokens)
            self.messages.append(reply)
            finish = mapper.finish
            if reply.tool_calls:
                results = await tools.run(reply, mapper.tool_ids, offered)
                self.messages.append(results)
                continue
            if finish is not None and finish.reason == "pause":
                continue  # Anthropic pause_turn: call again so the model can carry on
            if finish is not None:
                self._finish_note(finish.reason, request.max_tokens)
            # As in Claude Code, Stop hooks may keep the turn going as often as they ask (a loop such as
            # ralph-wiggum's); each time is a model call, so ``max_model_calls`` bounds it.
            reason = await environment.stop(ctx, stops > 0)
            if reason:
                stops += 1
                _notify(ctx, f"A plugin's Stop hook asked the agent to go on: {reason}")
                self.messages.append(UserMessage.of(f"[A Stop hook asked you to continue]\n{reason}"))
                continue
            return
        _notify(ctx, f"Stopped after {settings.max_model_calls} model calls in one turn. "
                     "Send a message to let the agent continue.")

    async def _call(
        self, provider: Provider, request: ModelRequest, ids: TurnToolIds, offered: dict[str, Tool],
    ) -> tuple[CallMapper, AssistantMessage]:
        """One model call, retried while nothing streamed: the actions its events map to (the
        mapper's usage, finish and tool ids) and the message the provider's stream built."""
        ctx, settings = self.ctx, self.settings
        display = {name: tool.title for name, tool in offered.items()}
        metas = {name: meta for name, tool in offered.items() if (meta := tool_start_meta(tool)) is not None}
        # Client-provided and MCP tools start with their contributor (and a client's own name for the tool).
        owners = {name: (contributor, getattr(tool, "wire_name", name)) for name, tool in offered.items()
                  if (contributor := getattr(tool, "contributor", None))}
        attempt = 0
        while True:
            self._set_activity(f"Waiting for {request.model}" if attempt == 0 else f"Retrying {request.model} (attempt {attempt + 1})")
            mapper = CallMapper(ctx, ids, display, owners, metas)
            try:
                stream = ModelStream.open(provider, request)
                try:
                    async with contextlib.aclosing(stream):
                        # The stream is read in a task of its own, which this one waits for: each
                        # chunk then resumes that task's two coroutines (``_streamed`` and the
                        # provider's generator), not the whole chain of the turn's (its runner's,
                        # the agent's, ``run``, ``_loop`` and this one) as well. Cancelling this
                        # task cancels that one and waits for it; what it raises is raised here.
                        await asyncio.get_running_loop().create_task(self._streamed(stream, mapper))
                except BaseException:
                    # Cancelled or failed after streaming: what the user saw is kept for the next turn.
                    if mapper.streamed:
                        partial = partial_reply(stream.message())
                        if partial is not None:
                            self.messages.append(partial)
                    raise
            except ProviderError as error:
                if isinstance(error, ReplayedCancelError):
                    # A replayed session whose recording was cancelled here: the turn ends cancelled, as it did.
                    self._add_usage(mapper)
                    started = (ctx.chat_state.get("activeTurn") or {}).get("startedAt")
                    ctx.emit(builders.chat_turn_cancelled(turn_id=ctx.turn_id, duration=turn_duration(started)))
                    raise TurnEnded() from None
                delay = retry_after(retryable=error.retryable, streamed=mapper.streamed, attempt=attempt,
                                    retries=settings.retries, base_delay=settings.retry_base_delay, asked=error.retry_after)
                if delay is None:
                    self._add_usage(mapper)
                    raise TurnFailed(error.error_type, self._explain(error, streamed=mapper.streamed, attempts=attempt + 1)) from error
                if too_long(delay, settings.retry_max_delay):
                    raise TurnFailed(
                        error.error_type,
                        f"{error.message} The provider asked to wait {delay:.0f} s before retrying, which is longer "
                        f"than this host waits ({settings.retry_max_delay:.0f} s); send your message again later.",
                    ) from error
                attempt += 1
                self._set_activity(f"Retrying in {delay:.1f} s: {error.message}")
                await self.needs.sleep(delay)
                continue
            self._add_usage(mapper)
            return mapper, stream.message()

    async def _streamed(self, stream: ModelStream, mapper: CallMapper) -> None:
        """Map one call's events onto the turn's actions, as they stream (``_call``'s reading, in a
        task of its own).

        Its end joins the next loop step's commit (``TurnContext.commit_with_next_step``): ``_call``
        goes on only in the loop step after this task's last one (a task's waiter is woken by a
        callback queued when it ends), behind the end-of-tick commit that the last chunk's append
        queued. Without the join the last chunk's frames would leave in one write and what
        follows in the same provider read (the call's usage, the turn's end, the next tool call's
        start) in a later one: a client would show the answer while a turn still runs, which one
        task never did (``tests/host/runtime/test_turns.py``)."""
        try:
            async for event in stream.bare():
                if isinstance(event, str):  # nearly every event: a streamed chunk (a bare delta)
                    mapper.bare(event)
                    continue
                mapper.apply(event)
                if event.kind == "part_start" and self.activity and self.activity.startswith(("Waiting", "Retrying")):
                    self._set_activity("Thinking" if event.part_kind == "reasoning" else "Writing")
        finally:
            self.ctx.commit_with_next_step()

    def _add_usage(self, mapper: CallMapper) -> None:
        if mapper.usage == Usage():
            return  # the provider reported no usage for this call: nothing to add or show
        total = self.usage = _sum(self.usage, mapper.usage)
        if mapper.finish is not None and mapper.finish.model:
            self.model = mapper.finish.model
        usage: dict[str, Any] = {"inputTokens": total.input_tokens, "outputTokens": total.output_tokens}
        if self.model:
            usage["model"] = recorded_label(self.model) if self.recorded else self.model
        if total.cache_read_tokens:
            usage["cacheReadTokens"] = total.cache_read_tokens
        meta = {k: v for k, v in (("cacheWriteTokens", total.cache_write_tokens), ("reasoningTokens", total.reasoning_tokens)) if v}
        if meta:
            usage["_meta"] = meta
        self.ctx.emit(builders.chat_usage(turn_id=self.ctx.turn_id, usage=usage))

    def _explain(self, error: ProviderError, *, streamed: bool, attempts: int) -> str:
        message = error.message
        if error.error_type == "authentication" and self.needs.key_hint:
            message += f" Check {self.needs.key_hint}, then send your message again."
        elif streamed and error.retryable:
            message += " Part of the answer had already arrived, so the host did not retry; send your message again to retry."
        elif error.retryable and attempts > 1:
            message += f" The host tried {attempts} times; send your message again later."
        elif error.error_type == "context_length":
            message += " Start a new session or fork an earlier turn to shorten the conversation."
        return message

    def _finish_note(self, reason: str, max_tokens: int | None) -> None:
        limit = f" ({max_tokens} tokens)" if max_tokens else ""
        note = {
            "max_tokens": f"The answer was cut off: the model reached its output limit{limit}.",
            "content_filter": "The provider's content filter stopped the answer.",
            "refusal": "The model declined to answer.",
        }.get(reason)
        if note:
            _notify(self.ctx, note)

    async def _shell_mode(self, command: str, working_directory: Any) -> None:
        """``!command``: the user's own shell command, as in Claude Code. It runs as the turn's
        shell tool call, pre-approved for this turn (the user typed it; a rule that denies still
        applies, as does the sandbox), and no model is asked: the command and its output go into
        the conversation, for the model to see with the next message."""
        ctx = self.ctx
        ctx.grants = replace(ctx.grants, allow=(*ctx.grants.allow, f"shell({command})"), granted_by="your ! command")
        tools = TurnTools(ctx, self.environment, working_directory, output_limit=self.settings.tool_output_limit,
                          running=lambda names: self._set_activity(f"Running {names}"))
        offered = self.environment.tools(ctx, list(self.needs.tools))
        if offered.get("shell") is None:
            _notify(ctx, f"{command} was not run: this session has no shell tool")
            return
        [output] = await tools.run_shell([command], TurnToolIds(), offered)
        said = f"I ran a command in the shell myself:\n$ {command}\n{output}"
        user, _ = to_user_message({"text": said}, working_directory=working_directory, vision=False)
        self.messages.append(user)

    # -- context window ------------------------------------------------------------------------

    async def _compact(
        self, provider: Provider, model_id: str, spec: ModelSpec, finished: list[dict[str, Any]], *,
        keep: int, focus: str | None, through: str | None = None,
    ) -> bool:
        trigger = "manual" if through is not None else "auto"
        await self.environment.before_compact(self.ctx, trigger, focus)
        compacted = await self.compaction.compact(
            self.ctx, provider, model_id, spec, finished, keep=keep, focus=focus, through=through,
            started=lambda: self._set_activity("Compacting the conversation"),
        )
        if compacted:
            self.needs.meters.pop(self.ctx.chat, None)
            await self.environment.after_compact(self.ctx, trigger)
        return compacted

    # -- context -------------------------------------------------------------------------------

    def _take_steering(self) -> None:
        ctx = self.ctx
        steering = ctx.chat_state.get("steeringMessage")
        if not isinstance(steering, dict) or not steering.get("id"):
            return
        spec = self.needs.model_for(ctx.model)[1]
        message, notes = to_user_message(
            steering.get("message") or {}, working_directory=session_directory(ctx.state), vision=spec.vision
        )
        ctx.dispatch_chat(builders.chat_pending_message_removed(kind="steering", id=steering["id"]))
        # Say where it entered, so clients see it and a turn rebuilt from state keeps it.
        _notify(ctx, steering_note(steering.get("message") or {}))
        for note in notes:
            _notify(ctx, note)
        self.messages.append(message)

    # -- persistence, activity, title ----------------------------------------------------------

    def _save(self) -> None:
        if not self.messages:
            return
        try:
            self.needs.transcripts.save(self.ctx.session, self.ctx.turn_id, repair(self.messages))
        except Exception:  # memory loss degrades the next turn; it must not break this one's end
            logger.exception("could not save the transcript of turn %s", self.ctx.turn_id)

    def _set_activity(self, activity: str) -> None:
        if self.activity != activity and self.ctx.is_active():
            self.activity = activity
            # The chat says what it does; the session says it too (what the session list and a
            # 0.2.0 client show is the session's activity).
            self.ctx.dispatch_chat(builders.chat_activity_changed(activity=activity))
            self.ctx.dispatch(builders.session_activity_changed(activity=activity))

    def _clear_activity(self) -> None:
        if self.activity is None:
            return
        # A later turn may already say something else: clear only what is still ours.
        if self.ctx.chat_state.get("activity") == self.activity:
            self.ctx.dispatch_chat(builders.chat_activity_changed())
        if self.ctx.state.get("activity") == self.activity:
            self.ctx.dispatch(builders.session_activity_changed())
        self.activity = None

    async def _make_title(self, model_id: str) -> None:
        ctx = self.ctx
        title = await make_title(self.needs.source, ctx, model_id, self.settings)
        if not title or ctx.state.get("title") != DEFAULT_TITLE:
            return  # a client named the session meanwhile: never overwrite that
        ctx.dispatch(builders.session_title_changed(title=title))


def _sum(a: Usage, b: Usage) -> Usage:
    return Usage(
        input_tokens=a.input_tokens + b.input_tokens,
        output_tokens=a.output_tokens + b.output_tokens,
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        reasoning_tokens=a.reasoning_tokens + b.reasoning_tokens,
    )


def _definitions(tools: dict[str, Tool]) -> list[ToolDefinition]:
    return [ToolDefinition(name=t.name, description=t.description, input_schema=t.input_schema) for t in tools.values()]


def _notify(ctx: TurnContext, text: str) -> None:
    """A system notification in the turn's response (what happened that the user should know)."""
    ctx.emit(builders.chat_response_part(turn_id=ctx.turn_id, part={"kind": "systemNotification", "content": text}))
