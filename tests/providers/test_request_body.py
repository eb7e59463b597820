"""providers._request_body: each SDK sends the body the provider built, byte for byte what its own
``create(**params)`` (with the SDK's transform) would have sent."""

from __future__ import annotations

import httpx2
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
    TextContent,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)
from providers.messages import TextPart, ToolCallPart

from .fake_server import FakeProviderServer, Reply

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


async def bodies(make, sdk_create, api: str) -> tuple[dict, dict]:
    """(what the provider sent, what the SDK's own create(**params) sent) for the same request."""
    async with FakeProviderServer([Reply(500, b'{"error": {"message": "stop here"}}')] * 2) as server:
        provider = make(server.base_url)
        with pytest.raises(Exception):
            async for _ in provider.stream(request(api)):
                pass
        await provider.aclose()
        with pytest.raises(Exception):
            await sdk_create(server.base_url, provider.build_params(request(api)))
        return server.requests[0].json(), server.requests[1].json()


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
