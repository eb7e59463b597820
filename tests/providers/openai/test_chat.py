"""OpenAIChatProvider: recorded Chat Completions streams through the real SDK, 404, compatible-server quirks."""

from __future__ import annotations

import json

import httpx2
import pytest
import yaml

from providers import (
    ModelNotFoundError,
    ModelRequest,
    OpenAIChatProvider,
    ProviderUnavailableError,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
    replay_client,
)

from ..fake_server import FakeProviderServer, Reply, sse
from ..streams import cassette, collect, summarize


def provider_for(name: str):
    client, transport = replay_client(cassette(f"openai/{name}.yaml"))
    return OpenAIChatProvider(api_key="test-key", http_client=client), transport


def recorded_messages(name: str, index: int) -> list:
    data = yaml.safe_load(cassette(f"openai/{name}.yaml").read_text())
    return json.loads(data["interactions"][index]["request"]["body"])["messages"]


async def test_text_stream_with_usage_chunk():
    provider, transport = provider_for("chat-completions-stream-text-usage")
    events, message = await collect(provider, ModelRequest(model="gpt-4o", messages=(UserMessage.of("What is 4200 + 42?"),)))
    assert summarize(events) == [
        ("start", 0, "text", None, None),
        ("delta", 0, "4200 + 42 equals 4242."),
        ("end", 0),
        ("usage", 16, 10, 0, 0, 0),
        ("finish", "stop", "stop", "chatcmpl-CoDWl5rS0pF10P0W0TDVgY3NA26dk", "gpt-4o-2024-08-06"),
    ]
    sent = json.loads(transport.requests[0].content)
    assert sent["stream_options"] == {"include_usage": True} and sent["stream"] is True
    assert message.text == "4200 + 42 equals 4242."


async def test_parallel_tool_calls_2024_shape():
    provider, _ = provider_for("chat-completions-stream-parallel-tool-calls-2024")
    events, message = await collect(provider, ModelRequest(model="gpt-4o-mini", messages=(UserMessage.of("What's the weather in Seattle and San Francisco today?"),)))
    assert summarize(events) == [
        ("start", 0, "tool_call", "call_fHCjJqt9Pysde6vcJcvbXGBx", "get_current_weather"),
        ("delta", 0, '{"location": "Seattle, WA"}'),
        ("start", 1, "tool_call", "call_3J9foSw3CUb48lrqIXoTky6U", "get_current_weather"),
        ("delta", 1, '{"location": "San Francisco, CA"}'),
        ("end", 0),
        ("end", 1),
        ("usage", 75, 51, 0, 0, 0),
        ("finish", "tool_calls", "tool_calls", "chatcmpl-ASYMbACebDoWcuraMEWQhU48q4dAp", "gpt-4o-mini-2024-07-18"),
    ]
    assert [c.parsed_arguments() for c in message.tool_calls] == [{"location": "Seattle, WA"}, {"location": "San Francisco, CA"}]


async def test_multiturn_tool_loop_sends_assistant_tool_calls_and_tool_messages_as_recorded():
    name = "chat-completions-stream-parallel-tool-calls-multiturn"
    provider, transport = provider_for(name)
    tool = ToolDefinition(name="secret_retrieval_tool", description="A tool that requires a password to retrieve a secret.", input_schema={"type": "object"})
    first = ModelRequest(model="gpt-4o", system="Use parallel tool calling.", tools=(tool,), messages=(UserMessage.of("Please retrieve the secrets associated with each of these passwords: mellon,radiance"),))
    events, message = await collect(provider, first)
    assert [(c.tool_call_id, c.arguments) for c in message.tool_calls] == [
        ("call_M26z19sncd7b4LBgzKRRbaUE", '{"password": "mellon"}'),
        ("call_KPXe5NX7IcKkaBUhc6dto2QV", '{"password": "radiance"}'),
    ]
    assert json.loads(transport.requests[0].content)["messages"] == recorded_messages(name, 0)
    results = ToolResultsMessage(results=(
        ToolResult.of("call_M26z19sncd7b4LBgzKRRbaUE", "secret_retrieval_tool", "Welcome to Moria!"),
        ToolResult.of("call_KPXe5NX7IcKkaBUhc6dto2QV", "secret_retrieval_tool", "Life before Death"),
    ))
    events2, message2 = await collect(provider, first.model_copy(update={"messages": (*first.messages, message, results)}))
    assert json.loads(transport.requests[1].content)["messages"] == recorded_messages(name, 1)
    assert events2[-1].reason == "stop"
    assert [e for e in events2 if e.kind == "usage"][-1].usage.input_tokens + [e for e in events2 if e.kind == "usage"][-1].usage.output_tokens == 177
    assert message2.text


async def test_unknown_model_404_gzip_body_is_model_not_found():
    provider, _ = provider_for("error-404-model-not-found-gzip-body")
    with pytest.raises(ModelNotFoundError) as caught:
        await collect(provider, ModelRequest(model="this-model-does-not-exist-12345", messages=(UserMessage.of("hi"),)))
    assert caught.value.status_code == 404 and not caught.value.retryable
    assert "this-model-does-not-exist-12345" in str(caught.value)


def chunk(delta: dict, finish: str | None = None, **extra) -> dict:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "local", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


async def test_compatible_server_reasoning_fields_become_reasoning_parts():
    body = sse(
        (None, chunk({"role": "assistant", "reasoning_content": "Think"})),
        (None, chunk({"reasoning": "ing."})),
        (None, chunk({"content": "Answer"})),
        (None, chunk({}, "stop")),
        (None, {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "local", "choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 3}}}),
        (None, "[DONE]"),
    )
    async with FakeProviderServer([Reply(200, body)]) as server:
        provider = OpenAIChatProvider(api_key="x", base_url=server.base_url + "/v1", http_client=httpx2.AsyncClient(), max_tokens_field="max_tokens")
        events, message = await collect(provider, ModelRequest(model="local", max_tokens=64, messages=(UserMessage.of("q"),)))
        assert server.requests[0].path == "/v1/chat/completions"
        assert server.requests[0].json()["max_tokens"] == 64
    assert summarize(events) == [
        ("start", 0, "reasoning", None, None),
        ("delta", 0, "Thinking."),
        ("end", 0),
        ("start", 1, "text", None, None),
        ("delta", 1, "Answer"),
        ("end", 1),
        ("usage", 6, 4, 3, 0, 0),
        ("finish", "stop", "stop", "c1", "local"),
    ]


async def test_stream_without_finish_reason_is_unavailable():
    body = sse((None, chunk({"content": "Hal"})), (None, "[DONE]"))
    async with FakeProviderServer([Reply(200, body)]) as server:
        provider = OpenAIChatProvider(api_key="x", base_url=server.base_url, http_client=httpx2.AsyncClient())
        with pytest.raises(ProviderUnavailableError):
            await collect(provider, ModelRequest(model="local", messages=(UserMessage.of("q"),)))


async def test_a_500_from_a_local_server_names_that_server_not_openai():
    error = json.dumps({"error": {"message": "model crashed", "type": "server_error"}}).encode()
    async with FakeProviderServer([Reply(500, error), Reply(500, error), Reply(500, error)]) as server:
        url = server.base_url
        provider = OpenAIChatProvider(api_key="x", base_url=url, http_client=httpx2.AsyncClient())
        with pytest.raises(ProviderUnavailableError) as raised:
            await collect(provider, ModelRequest(model="local", messages=(UserMessage.of("q"),)))
    assert f"The model server at {url} is unavailable (500" in str(raised.value)
    assert "OpenAI" not in str(raised.value)
