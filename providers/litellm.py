"""LiteLLM provider for the long tail of model APIs (``litellm.acompletion(stream=True)``).

LiteLLM yields OpenAI-shaped chunks, so translation is
:class:`providers.openai.chat_stream.ChatStreamTranslator`; its exceptions subclass the
``openai`` SDK's, so error mapping is :func:`providers.openai.map_error`. ``litellm`` is
imported on the first call only (it is slow to import), with the bundled model-cost map forced
so that importing it never touches the network.

Recording: given ``http_client`` (an ``httpx2.AsyncClient``, e.g. over a
``providers.cassette.RecordingTransport``), each call hands LiteLLM a per-call ``client=`` that
sends through it, with no global patching:

* OpenAI-SDK routes (:data:`OPENAI_SDK_ROUTES`: ``openai/``, ``custom_openai/`` and the
  OpenAI-compatible vendors LiteLLM drives with the ``openai`` SDK) get an ``AsyncOpenAI`` on
  that client, with the base URL and key LiteLLM resolves for the vendor;
* native HTTP routes (:data:`HTTP_HANDLER_ROUTES`: ``anthropic/``) get LiteLLM's own
  ``AsyncHTTPHandler`` whose ``httpx`` client is bridged onto that client.

Every other LiteLLM backend (Gemini, Vertex, Bedrock, Mistral, Ollama, ...) opens clients this
provider cannot reach per call: its traffic is not recorded, which is logged (once per vendor).
:func:`recordable` tells, without importing LiteLLM, whether a model id will be recorded.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from ._streaming import sdk_events
from .events import StreamEvent
from .messages import ApiName, ModelRequest
from .openai._errors import map_error
from .openai.chat import build_messages
from .openai.chat_stream import ChatStreamTranslator
from .stream import ModelStream

PROVIDER = "litellm"

logger = logging.getLogger(__name__)

OPENAI_SDK_ROUTES = frozenset(
    {"openai", "custom_openai", "deepinfra", "perplexity", "nvidia_nim", "cerebras", "baseten", "sambanova", "anyscale", "nebius"}
)
"""LiteLLM vendors called through the ``openai`` SDK, which accepts a per-call client."""
HTTP_HANDLER_ROUTES = frozenset({"anthropic"})
"""LiteLLM vendors called through its ``AsyncHTTPHandler``, which accepts a per-call client."""
_BARE_PREFIXES = (("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"), ("claude", "anthropic"))
_warned: set[str] = set()


def recordable(model: str) -> bool:
    """Whether record mode captures this LiteLLM model id's traffic (by its vendor prefix)."""
    if "/" in model:
        vendor = model.split("/", 1)[0]
    else:
        vendor = next((v for prefix, v in _BARE_PREFIXES if model.startswith(prefix)), "")
    return vendor in OPENAI_SDK_ROUTES or vendor in HTTP_HANDLER_ROUTES


def _warn_unrecorded(vendor: str, why: str) -> None:
    if vendor not in _warned:
        _warned.add(vendor)
        logger.warning("record mode: LiteLLM traffic to %s is not recorded (%s)", vendor, why)


def _bridged_client(client: Any, timeout: float | None, responses: list[Any]) -> Any:
    """An ``httpx.AsyncClient`` (what LiteLLM's handlers use) that sends through ``client``, an
    ``httpx2.AsyncClient``; response bodies pass raw so ``httpx`` decodes them as usual.

    LiteLLM's native streams read a body to its end without closing the response, so a body is
    closed as soon as it has been read through (which is also when a recording transport writes
    it); ``responses`` collects them so the owner can close any left open by a cancel.
    ``httpx`` is imported here, not at module level, to keep the host's start-up light."""
    import httpx

    class RawStream(httpx.AsyncByteStream):
        def __init__(self, response: Any) -> None:
            self._response = response

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._response.aiter_raw():
                yield chunk
            await self._response.aclose()

        async def aclose(self) -> None:
            await self._response.aclose()

    class Bridge(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            body = await request.aread()
            forwarded = client.build_request(request.method, str(request.url), headers=request.headers.multi_items(), content=body)
            response = await client.send(forwarded, stream=True)
            responses.append(response)
            return httpx.Response(response.status_code, headers=response.headers.multi_items(), stream=RawStream(response), request=request)

    return httpx.AsyncClient(transport=Bridge(), timeout=timeout)


def import_litellm() -> Any:
    """The ``litellm`` module, imported with its bundled model cost map (it would fetch one online)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    return litellm


class LiteLLMProvider:
    """Streams any LiteLLM model id, e.g. ``openai/gpt-4o`` or ``ollama/llama3``."""

    name = PROVIDER
    api: ApiName = "litellm"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_base: str | None = None,
        timeout: float | None = 600.0,
        extra: dict[str, Any] | None = None,
        http_client: Any = None,
    ) -> None:
        self._http_client = http_client
        """An ``httpx2.AsyncClient`` the calls should go through (recording); owned by the caller."""
        self._bridges: list[Any] = []
        """``httpx`` clients opened for native-route calls, closed with the provider."""
        self._responses: list[Any] = []
        """``httpx2`` responses those clients received, closed with the provider."""
        self._api_key = api_key
        self._api_base = api_base
        self._timeout = timeout
        self._extra = dict(extra or {})
        """Passed through to ``litellm.acompletion`` (e.g. ``custom_llm_provider``)."""

    async def aclose(self) -> None:
        # LiteLLM pools its own clients globally; only the per-call bridges are ours to close.
        responses, self._responses = self._responses, []
        for response in responses:
            await response.aclose()
        bridges, self._bridges = self._bridges, []
        for bridge in bridges:
            await bridge.aclose()

    async def _client_for(self, litellm: Any, model: str) -> Any:
        """The per-call ``client=`` that routes this model through ``http_client``, or None."""
        _, vendor, key, base = litellm.get_llm_provider(model=model, api_base=self._api_base, api_key=self._api_key)
        if vendor in OPENAI_SDK_ROUTES:
            key = key or self._api_key
            if key is None and vendor not in ("openai", "custom_openai"):
                _warn_unrecorded(vendor, "its API key is not known to the host, so LiteLLM must pick it")
                return None
            from openai import AsyncOpenAI

            return AsyncOpenAI(api_key=key, base_url=base, http_client=self._http_client, max_retries=0, timeout=self._timeout)
        if vendor in HTTP_HANDLER_ROUTES:
            from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

            handler = AsyncHTTPHandler(timeout=self._timeout)
            unused = handler.client
            bridge = _bridged_client(self._http_client, self._timeout, self._responses)
            self._bridges.append(bridge)
            handler.client = bridge
            await unused.aclose()
            return handler
        _warn_unrecorded(vendor, "LiteLLM opens its own HTTP clients for it")
        return None

    async def _open(self, params: dict[str, Any]) -> Any:
        litellm = import_litellm()
        if self._http_client is not None:
            client = await self._client_for(litellm, params["model"])
            if client is not None:
                params = {**params, "client": client}
        return await litellm.acompletion(**params)

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

    def stream(self, request: ModelRequest) -> ModelStream:
        translator = ChatStreamTranslator(api="litellm", provider=PROVIDER)
        return ModelStream(self._events(request, translator), translator.acc, bare=True)  # feed_bare's deltas are bare deltas

    async def _events(self, request: ModelRequest, translator: ChatStreamTranslator) -> AsyncIterator[StreamEvent | str]:
        params = self.build_params(request)
        async for event in sdk_events(
            lambda: self._open(params),
            translator.feed_bare,
            lambda exc: map_error(exc, provider=PROVIDER, key_env="the provider's API key variable"),
            finished=lambda: translator.finish_reason is not None,
            dropped="The connection dropped before the model finished answering. Try again.",
            provider=PROVIDER,
            stall_timeout=request.stall_timeout,
            close=False,
        ):
            yield event
        for event in translator.close():
            yield event
