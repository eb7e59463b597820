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


def anthropic_sse() -> bytes:
    start = {"type": "message_start", "message": {"id": "msg_l", "type": "message", "role": "assistant", "model": "claude-local", "content": [],
                                                  "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 9, "output_tokens": 1}}}
    return sse(
        ("message_start", start),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Bridged"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    )


async def test_an_anthropic_route_goes_through_the_given_client_and_is_recorded(tmp_path):
    import httpx2

    from providers.cassette import RecordingTransport, load_cassette

    from .streams import collect

    path = tmp_path / "lite.yaml"
    async with FakeProviderServer([Reply(200, anthropic_sse())]) as server:
        client = httpx2.AsyncClient(transport=RecordingTransport(path, httpx2.AsyncHTTPTransport()))
        provider = LiteLLMProvider(api_key="sk-ant-SECRET", api_base=server.base_url, http_client=client)
        _, message = await collect(provider, ModelRequest(model="anthropic/claude-local", messages=(UserMessage.of("hi"),)))
        await provider.aclose()
        await client.aclose()
    assert message.text == "Bridged"
    [interaction] = load_cassette(path)
    assert interaction.request.path == "/v1/messages" and interaction.response["status"]["code"] == 200
    assert b"Bridged" in interaction.response["body"]["string"]
    assert "sk-ant-SECRET" not in path.read_text()


def test_recordable_names_the_backends_record_mode_can_capture():
    from providers.litellm import recordable

    assert recordable("openai/gpt-4o") and recordable("gpt-4o") and recordable("anthropic/claude-x") and recordable("claude-x")
    assert not recordable("gemini/gemini-2.0-flash") and not recordable("ollama/llama3") and not recordable("bedrock/x")
