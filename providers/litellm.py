"""LiteLLM provider for the long tail of model APIs (``litellm.acompletion(stream=True)``).

LiteLLM yields OpenAI-shaped chunks, so translation is
:class:`providers.openai.chat_stream.ChatStreamTranslator`; its exceptions subclass the
``openai`` SDK's, so error mapping is :func:`providers.openai.map_error`. ``litellm`` is
imported on the first call only (it is slow to import), with the bundled model-cost map forced
so that importing it never touches the network.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

from ._streaming import sdk_events
from .events import StreamEvent
from .messages import ModelRequest
from .openai._errors import map_error
from .openai.chat import build_messages
from .openai.chat_stream import ChatStreamTranslator

PROVIDER = "litellm"


def _litellm() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


class LiteLLMProvider:
    """Streams any LiteLLM model id, e.g. ``openai/gpt-4o`` or ``ollama/llama3``."""

    name = PROVIDER
    api = "litellm"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        timeout: float | None = 600.0,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self._api_key = api_key
        self._api_base = api_base
        self._timeout = timeout
        self._extra = dict(extra or {})
        """Passed through to ``litellm.acompletion`` (e.g. ``custom_llm_provider``)."""

    async def aclose(self) -> None:
        return None  # LiteLLM pools its clients globally

    def build_params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": build_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
            "num_retries": 0,  # the turn loop owns retries
            **self._extra,
        }
        if request.tools:
            params["tools"] = [
                {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.input_schema}}
                for t in request.tools
            ]
        if request.max_tokens is not None:
            params["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        if request.openai.reasoning_effort is not None:
            params["reasoning_effort"] = request.openai.reasoning_effort
        thinking = request.anthropic.thinking
        if thinking is not None and thinking.type == "enabled":
            params["thinking"] = {"type": "enabled", "budget_tokens": thinking.budget_tokens}
        for key, value in (("api_key", self._api_key), ("api_base", self._api_base), ("timeout", self._timeout)):
            if value is not None:
                params[key] = value
        return params

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        params = self.build_params(request)
        translator = ChatStreamTranslator(api="litellm", provider=PROVIDER)
        async for event in sdk_events(
            lambda: _litellm().acompletion(**params),
            translator.feed,
            lambda exc: map_error(exc, provider=PROVIDER, key_env="the provider's API key variable"),
            finished=lambda: translator.finish_reason is not None,
            dropped="The connection dropped before the model finished answering. Try again.",
            provider=PROVIDER,
            close=False,
        ):
            yield event
        for event in translator.close():
            yield event
