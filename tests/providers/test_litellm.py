"""LiteLLMProvider against a local OpenAI-compatible server (offline): text, tool calls, errors."""

from __future__ import annotations

import pytest

from providers import AuthenticationError, LiteLLMProvider, ModelRequest, ToolDefinition, UserMessage

from .fake_server import FakeProviderServer, Reply, sse

pytestmark = pytest.mark.filterwarnings("ignore")


def chunk(delta: dict, finish: str | None = None) -> dict:
    return {"id": "c9", "object": "chat.completion.chunk", "created": 1, "model": "local-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def test_streams_text_and_parallel_tool_calls_through_litellm():
    from .streams import collect

    body = sse(
        (None, chunk({"role": "assistant", "content": "Checking."})),
        (None, chunk({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "lookup", "arguments": '{"q":'}}]})),
        (None, chunk({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "y"}'}}]})),
        (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": ' "x"}'}}]})),
        (None, chunk({}, "tool_calls")),
        (None, {"id": "c9", "object": "chat.completion.chunk", "created": 1, "model": "local-model", "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}),
        (None, "[DONE]"),
    )
    async with FakeProviderServer([Reply(200, body)]) as server:
        provider = LiteLLMProvider(api_key="sk-local", api_base=server.base_url + "/v1")
        request = ModelRequest(model="openai/local-model", tools=(ToolDefinition(name="lookup"),), messages=(UserMessage.of("find x and y"),))
        events, message = await collect(provider, request)
        sent = server.requests[0].json()
    assert sent["model"] == "local-model" and sent["stream"] is True
    assert sent["tools"][0]["function"]["name"] == "lookup"
    assert message.text == "Checking."
    assert [(c.tool_call_id, c.parsed_arguments()) for c in message.tool_calls] == [("call_a", {"q": "x"}), ("call_b", {"q": "y"})]
    assert events[-1].kind == "finish" and events[-1].reason == "tool_calls"
    usage = [e.usage for e in events if e.kind == "usage"][-1]
    assert (usage.input_tokens, usage.output_tokens) == (12, 7)


async def test_401_from_the_backend_is_an_authentication_error():
    from .streams import collect

    async with FakeProviderServer([Reply(401, b'{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}')]) as server:
        provider = LiteLLMProvider(api_key="sk-bad", api_base=server.base_url + "/v1")
        with pytest.raises(AuthenticationError) as caught:
            await collect(provider, ModelRequest(model="openai/local-model", messages=(UserMessage.of("hi"),)))
    assert not caught.value.retryable and caught.value.provider == "litellm"
