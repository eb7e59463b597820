"""providers._request_body: each SDK sends the body the provider built, the same JSON as its own
``create(**params)`` (with the SDK's transform) would have sent, with the same headers."""

from __future__ import annotations

import asyncio

import anthropic
import httpx2
import openai
import pytest

from providers import (
    AnthropicOptions,
    AnthropicProvider,
    AnthropicThinkingBudget,
    AssistantMessage,
    ImageContent,
    ModelRequest,
    OpenAIChatProvider,
    OpenAIOptions,
    OpenAIResponsesProvider,
    ProviderError,
    ProviderStalledError,
    TextContent,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from providers.messages import TextPart, ToolCallPart

from .fake_server import FakeProviderServer, KeepAliveServer, Reply, chat_sse, messages_sse

TOOL = ToolDefinition(name="read_file", description="Read a file.",
                      input_schema={"type": "object", "properties": {"path": {"type": "string", "format": "uri"}}, "required": ["path"]})
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def request(api: str) -> ModelRequest:
    answer = AssistantMessage(api=api, parts=(TextPart(text="Let me look."),
                                              ToolCallPart(tool_call_id="call_1", tool_name="read_file", arguments='{"path": "a.txt"}')))
    return ModelRequest(
        model="some-model", system="Be brief.", tools=(TOOL,), max_tokens=300, temperature=0.5,
        openai=OpenAIOptions(reasoning_effort="low", reasoning_summary="auto", store=False),
        anthropic=AnthropicOptions(thinking=AnthropicThinkingBudget(budget_tokens=1024), cache_prompt=True),
        messages=(
            UserMessage(content=(TextContent(text="What is in a.txt?"), ImageContent(media_type="image/png", data=PIXEL))),
            answer,
            ToolResultsMessage(results=(ToolResult.of("call_1", "read_file", "hello, 2026-01-02"),)),
        ),
    )


# Headers that say how a request was made, not what it asks for (the raw-response header: the
# provider asks for the response unparsed, as with_raw_response does).
_HOW = {"content-length", "x-stainless-raw-response", "x-stainless-read-timeout", "x-stainless-timeout"}


async def bodies(make, sdk_create, api: str) -> tuple[dict, dict]:
    """(what the provider sent, what the SDK's own create(**params) sent) for the same request;
    the headers are compared here."""
    async with FakeProviderServer([Reply(500, b'{"error": {"message": "stop here"}}')] * 2) as server:
        provider = make(server.base_url)
        with pytest.raises(ProviderError):
            async for _ in provider.stream(request(api)):
                pass
        await provider.aclose()
        with pytest.raises((openai.InternalServerError, anthropic.InternalServerError)):
            await sdk_create(server.base_url, provider.build_params(request(api)))
        ours, theirs = server.requests
        assert ours.path == theirs.path and ours.method == theirs.method == "POST"
        assert {k: v for k, v in ours.headers.items() if k not in _HOW} == {k: v for k, v in theirs.headers.items() if k not in _HOW}
        assert ours.headers["x-stainless-raw-response"] == "true"
        return ours.json(), theirs.json()


async def test_openai_chat_body_is_what_the_sdk_would_send() -> None:
    import openai

    async def sdk_create(url: str, params: dict) -> None:
        async with openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0, http_client=httpx2.AsyncClient()) as client:
            await client.chat.completions.create(**params, stream=True)

    sent, expected = await bodies(lambda url: OpenAIChatProvider(api_key="k", base_url=url), sdk_create, "openai-chat")
    assert sent == expected and sent["tools"][0]["function"]["name"] == "read_file" and sent["stream"] is True


async def test_openai_responses_body_is_what_the_sdk_would_send() -> None:
    import openai

    async def sdk_create(url: str, params: dict) -> None:
        async with openai.AsyncOpenAI(api_key="k", base_url=url, max_retries=0, http_client=httpx2.AsyncClient()) as client:
            await client.responses.create(**params, stream=True)

    sent, expected = await bodies(lambda url: OpenAIResponsesProvider(api_key="k", base_url=url), sdk_create, "openai-responses")
    assert sent == expected and sent["reasoning"] == {"effort": "low", "summary": "auto"} and sent["stream"] is True


async def test_anthropic_body_is_what_the_sdk_would_send() -> None:
    import anthropic

    async def sdk_create(url: str, params: dict) -> None:
        async with anthropic.AsyncAnthropic(api_key="k", base_url=url, max_retries=0, http_client=httpx2.AsyncClient()) as client:
            await client.messages.create(**params, stream=True)

    sent, expected = await bodies(lambda url: AnthropicProvider(api_key="k", base_url=url), sdk_create, "anthropic")
    assert sent == expected and sent["thinking"] == {"type": "enabled", "budget_tokens": 1024} and sent["stream"] is True


def test_the_raw_response_header_is_the_one_both_sdks_use() -> None:
    import anthropic._constants
    import openai._constants

    from providers._request_body import RAW_RESPONSE_HEADER

    assert RAW_RESPONSE_HEADER == openai._constants.RAW_RESPONSE_HEADER == anthropic._constants.RAW_RESPONSE_HEADER


def _hello(stall_timeout: float | None) -> ModelRequest:
    return ModelRequest(model="some-model", messages=(UserMessage(content=(TextContent(text="hello"),)),),
                        stall_timeout=stall_timeout)


@pytest.mark.parametrize("stall_timeout, told", [(30, "30.0"), (None, "600.0")])
async def test_the_server_is_told_the_read_bound_the_client_keeps(stall_timeout: float | None, told: str) -> None:
    # A stream the stall watch bounds has no per-read bound in the HTTP client: the watch's is told.
    async with KeepAliveServer(base_path="/v1") as server:
        provider = OpenAIChatProvider(api_key="sk-one", base_url=server.base_url)
        try:
            async for _ in provider.stream(_hello(stall_timeout)):
                pass
        finally:
            await provider.aclose()
    assert server.requests[0].headers["x-stainless-read-timeout"] == told


@pytest.mark.parametrize("make", [OpenAIChatProvider, AnthropicProvider], ids=["openai-chat", "anthropic"])
async def test_a_watched_stream_that_goes_silent_mid_answer_ends_as_stalled_and_hangs_up(make: type) -> None:
    body, text = (chat_sse("partial"), b"partial") if make is OpenAIChatProvider else (messages_sse("partial"), b"text_delta")
    stall = asyncio.Event()
    reply = Reply(200, body[: body.index(b"\n\n", body.index(text)) + 2], stall=stall)  # up to the text, then silence
    async with FakeProviderServer([reply], base_path="/v1" if make is OpenAIChatProvider else "") as server:
        provider = make(api_key="sk-one", base_url=server.base_url)
        try:
            with pytest.raises(ProviderStalledError):
                async for _ in provider.stream(_hello(0.3)):
                    pass
        finally:
            await provider.aclose()
        await asyncio.wait_for(reply.closed.wait(), 5)
