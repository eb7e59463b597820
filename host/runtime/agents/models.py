"""What models a provider-backed agent offers, and how a session's model selection becomes a request.

Contract:
* ``ProviderSource`` gives the provider for one turn (``StaticSource``: always the same one).
* ``ModelSpec`` is one offered model: its ``AgentInfo`` entry and its ``configSchema`` (reasoning
  effort for OpenAI reasoning models, a thinking level for Anthropic).
* ``TurnSettings`` is how the turn loop behaves (from the agent's config table).
* ``model_for(models, selection, agent_name)`` picks the model a turn uses: the selected one, a
  model not listed sent as-is, else the first; ``TurnFailed`` when there is none.
* ``request_options(selection, spec, api, max_tokens)`` turns the selection's config into provider
  request options (OpenAI reasoning effort and summaries, Anthropic thinking budgets).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import providers
from host.runtime.agents.base import TurnFailed
from providers.base import Provider

__all__ = [
    "ProviderSource", "StaticSource", "ModelSpec", "TurnSettings", "THINKING_BUDGETS", "EFFORTS",
    "model_for", "request_options",
]

THINKING_BUDGETS = {"low": 2048, "medium": 8192, "high": 24576}
"""Anthropic extended-thinking budget (tokens) per thinking level offered in the configSchema."""
EFFORTS: list[Literal["minimal", "low", "medium", "high"]] = ["minimal", "low", "medium", "high"]
"""OpenAI reasoning efforts offered in the configSchema."""


class ProviderSource(Protocol):
    """Where a ``ProviderAgent`` gets the provider for one turn (or one title request)."""

    api: str

    def for_turn(
        self, session: str, turn_id: str, model: str, *, workdir: str | None = None
    ) -> contextlib.AbstractAsyncContextManager[Provider]:
        """The provider to use for this turn (a title request's ``turn_id`` ends in ``-title``);
        ``workdir`` is the session's working directory, which a cassette stores as ``${cwd}``."""
        ...

    async def aclose(self) -> None: ...


class StaticSource:
    """Always the same provider (tests, the scripted provider, a shared SDK client)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.api = provider.api

    @contextlib.asynccontextmanager
    async def for_turn(self, session: str, turn_id: str, model: str, *, workdir: str | None = None) -> AsyncIterator[Provider]:
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
                        "enum": EFFORTS,
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
    recorded_demo: bool = False
    """The keyless demo (the replay agent the host adds when no agent is configured): each turn says
    its answer is a recording, the first how to connect a real provider, and its usage names the model
    as a recording."""


def model_for(models: Sequence[ModelSpec], selection: dict[str, Any] | None, agent_name: str) -> tuple[str, ModelSpec]:
    """The model id a turn sends and its spec (see the module docstring)."""
    wanted = selection.get("id") if isinstance(selection, dict) else None
    for model in models:
        if model.id == wanted:
            return model.id, model
    if wanted:
        return wanted, ModelSpec(id=wanted)  # a model not listed in the config: send it as-is
    if models:
        return models[0].id, models[0]
    raise TurnFailed("noModel", f"The agent {agent_name} has no model configured; add one to its models list.")


def request_options(selection: dict[str, Any] | None, spec: ModelSpec, api: str, max_tokens: int | None) -> dict[str, Any]:
    """``openai`` / ``anthropic`` options and a ``max_tokens`` override for the selection's config."""
    config = (selection or {}).get("config") or {}
    options: dict[str, Any] = {}
    if spec.reasoning == "effort":
        wanted = config.get("reasoningEffort") or spec.default_level or "medium"
        effort = next((known for known in EFFORTS if known == wanted), None)
        if effort is not None:
            summary: Literal["auto"] | None = "auto" if api == "openai-responses" else None
            options["openai"] = providers.OpenAIOptions(reasoning_effort=effort, reasoning_summary=summary)
    elif spec.reasoning == "thinking":
        level = config.get("thinking") or spec.default_level or "off"
        budget = THINKING_BUDGETS.get(level)
        if budget is not None:
            options["anthropic"] = providers.AnthropicOptions(thinking=providers.AnthropicThinkingBudget(budget_tokens=budget))
            options["max_tokens"] = max(max_tokens or 0, budget + 4096, 16000)
    return options
