"""The provider-backed agent: one AHP turn = a loop of model calls and tool runs.

``ProviderAgent.run_turn`` does, for one turn:

1. Builds the conversation: the session's finished turns (``host.runtime.agents.compaction``: a summary
   in place of compacted turns, then stored transcripts, else rebuilt from the AHP state, see
   ``host.runtime.conversation``) + this turn's user message with its attachments.
2. Calls the model with the model selection *captured at turn start* (``host.runtime.agents.models``);
   the stream is mapped onto AHP actions token by token (``host.runtime.agents._mapping``). Before every
   model call a pending steering message is taken in (``pendingMessageRemoved{kind: steering}``,
   a ``systemNotification`` "Steering: <text>" marking where it entered, then it is part of the
   context). A request that would not fit the context window compacts older turns first.
3. If the model called tools, ``host.runtime.agents.tool_runs`` prepares, approves, runs and completes
   them; the results go back to the model and the loop repeats, until the model answers without
   tool calls (or ``max_model_calls`` is reached, which is said in the turn). Stop hooks may keep
   the turn going as often as they ask (each time is a model call, within ``max_model_calls``).
4. ``chat/usage`` after every model call carries the turn's running totals (summed over its
   calls; within a call the provider's latest report wins).

Failures: a provider error becomes ``TurnFailed`` with an ``ErrorInfo`` saying what to do.
Retries (429, 5xx, 529, dropped connections: ``err.retryable``) happen with exponential backoff,
honouring ``retry_after``, only while the failing call has not streamed anything yet.

Cancellation: the turn runner cancels the task; the provider stream is closed by ``aclosing`` and
running tools get their cancellation event (``host.runtime.agents.tooling.run_tool``). Whatever happens,
``activity`` is cleared and the turn's transcript (what the model really saw and said, native
payloads included) is saved for the next turn; a model call cut short by a cancel or an error
after it streamed keeps its streamed text in the transcript (``host.runtime.conversation.partial_reply``).
After a successful first turn a title is made in the background (``host.runtime.agents.titles``); a title
already changed by a client is never overwritten.

The loop itself is ``host.runtime.agents.turn.ProviderTurn``, one object per turn, given what it
needs of the agent as a frozen ``TurnNeeds`` (the turn never imports this module), not imported at
start-up: listing an agent needs only its models and settings, not the providers' message models,
the stream mapping, compaction and tool runs (the start-up plan, ``host.startup``). Creating a session starts importing them
in a worker thread, as for the SDK (``host.runtime.memory.import_ahead``), and a turn waits for that import
off the event loop instead of running it there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from host import startup
from host.runtime.agents.base import SessionCreationFailed, TurnContext
from host.runtime.agents.environment import TurnEnvironment
from host.runtime.agents.models import (
    THINKING_BUDGETS,
    ModelSpec,
    ProviderSource,
    StaticSource,
    TurnSettings,
    model_for,
)
from host.runtime.agents.tooling import AutoApprover, ToolApprover
from host.runtime.memory import import_ahead
from host.state.transcripts import TranscriptStore
from tools.base import Tool

if TYPE_CHECKING:  # the start-up plan: the token arithmetic loads the providers' message models
    from host.runtime.agents.context import TokenMeter

__all__ = ["ProviderAgent", "ProviderSource", "StaticSource", "ModelSpec", "TurnSettings", "THINKING_BUDGETS"]


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
        self.sleep = sleep
        """How a turn waits before a retry (tests pass one that does not)."""
        self.meters: dict[str, TokenMeter] = {}
        """Per session: what the last model call really used (for the next request's estimate)."""
        self.pasts: dict[str, Any] = {}
        """Per chat: the conversation of finished turns its last turn sent (``KeptPast``, of the turn loop)."""
        self._background: set[asyncio.Task[Any]] = set()
        self._loading: asyncio.Future[None] | None = None
        """The turn loop's import in a worker thread, from the first session made on this agent."""

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
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(import_ahead, _import_turn_loop, "the turn loop"))
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
        if self._loading is not None and not self._loading.done():
            await asyncio.shield(self._loading)  # not on the event loop (see the module docstring)
        turn = startup.load("host.runtime.agents.turn")
        needs = turn.TurnNeeds(
            source=self.source, settings=self.settings, environment=self.environment, transcripts=self.transcripts,
            tools=tuple(self.tools.values()), models=tuple(self.models), agent_name=self.display_name,
            meters=self.meters, pasts=self.pasts, key_hint=self.key_hint, sleep=self.sleep, spawn=self.spawn,
        )
        await turn.ProviderTurn(needs, ctx).run()

    # -- for the turn --------------------------------------------------------------------------

    def model_for(self, selection: dict[str, Any] | None) -> tuple[str, ModelSpec]:
        """The model id and spec a turn with this ``ModelSelection`` uses."""
        return model_for(self.models, selection, self.display_name)

    def spawn(self, coro: Any) -> None:
        """Run ``coro`` beyond the turn (a title); cancelled when the agent closes."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)


def _import_turn_loop() -> None:
    startup.load("host.runtime.agents.turn")
