"""OpenAIResponsesProvider: recorded Responses streams through the real SDK, turn-two replay, faults."""

from __future__ import annotations

import json

import httpx2
import pytest
import yaml

from providers import (
    ModelRequest,
    OpenAIOptions,
    OpenAIResponsesProvider,
    ProviderUnavailableError,
    RateLimitError,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
    replay_client,
)

from ..fake_server import FakeProviderServer, Reply, sse
from ..streams import cassette, collect, summarize

PRIMES = "How many primes below 400 contain 79 as a substring? Answer ONLY with the number, not sharing which primes they are."
TOOL = ToolDefinition(
    name="secret_retrieval_tool",
    description="A tool that requires a password to retrieve a secret.",
    input_schema={"properties": {"password": {"title": "Password", "type": "string"}}, "required": ["password"], "additionalProperties": False, "type": "object"},
)


def recorded_input(name: str, index: int) -> list:
    data = yaml.safe_load(cassette(f"openai/{name}.yaml").read_text())
    return json.loads(data["interactions"][index]["request"]["body"])["input"]


def provider_for(name: str):
    client, transport = replay_client(cassette(f"openai/{name}.yaml"))
    return OpenAIResponsesProvider(api_key="test-key", http_client=client), transport


async def test_reasoning_summary_stream_and_turn_two_carries_the_reasoning_item():
    name = "responses-stream-reasoning-summary-multiturn"
    provider, transport = provider_for(name)
    first = ModelRequest(model="gpt-5", messages=(UserMessage.of(PRIMES),), openai=OpenAIOptions(reasoning_effort="medium", reasoning_summary="auto"))
    events, message = await collect(provider, first)
    summary = summarize(events)
    assert [s for s in summary if s[0] != "delta"] == [
        ("start", 0, "reasoning", None, None),
        ("end", 0),
        ("start", 1, "text", None, None),
        ("end", 1),
        ("usage", 32, 839, 0, 0, 832),
        ("finish", "stop", "completed", "resp_0a1097cbfef27a8c00696afa23fb9c819693455c72eabd7718", "gpt-5-2025-08-07"),
    ]
    reasoning, text = message.parts
    recorded_summaries = [s["text"] for s in recorded_input(name, 1)[1]["summary"]]
    assert len(recorded_summaries) == 3
    assert reasoning.text == "\n\n".join(recorded_summaries)
    assert text.text == "3"
    assert json.loads(transport.requests[0].content)["reasoning"] == {"effort": "medium", "summary": "auto"}

    follow_up = UserMessage.of("If you remember what the primes were, then share them, or say 'I don't remember.'")
    second = first.model_copy(update={"messages": (*first.messages, message, follow_up), "openai": OpenAIOptions(reasoning_effort="minimal")})
    events2, message2 = await collect(provider, second)
    sent = json.loads(transport.requests[1].content)
    assert sent["input"] == recorded_input(name, 1)  # reasoning item and message item verbatim
    assert sent["reasoning"] == {"effort": "minimal"}
    assert message2.parts[0].kind == "reasoning" and message2.parts[0].text == ""
    assert message2.text and events2[-1].reason == "stop"


async def test_parallel_function_calls_stream_and_turn_two_sends_calls_and_outputs():
    name = "responses-stream-parallel-function-calls-multiturn"
    provider, transport = provider_for(name)
    first = ModelRequest(model="gpt-4o", system="Use parallel tool calling.", tools=(TOOL,), messages=(UserMessage.of("Please retrieve the secrets associated with each of these passwords: mellon,radiance"),))
    events, message = await collect(provider, first)
    assert summarize(events) == [
        ("start", 0, "tool_call", "call_sKC7OABqf2A2PTLCm0CLeRWV", "secret_retrieval_tool"),
        ("delta", 0, '{"password":"mellon"}'),
        ("end", 0),
        ("start", 1, "tool_call", "call_OdR3s3xop0vtgkDyWRMLafuH", "secret_retrieval_tool"),
        ("delta", 1, '{"password":"radiance"}'),
        ("end", 1),
        ("usage", 36, 54, 0, 0, 0),
        ("finish", "tool_calls", "completed", "resp_0c3b09d20eedf2d30068f966b9b7048190b7501a24a1447ec0", "gpt-4o-2024-08-06"),
    ]
    sent_first = json.loads(transport.requests[0].content)
    assert sent_first["input"] == recorded_input(name, 0)

    results = ToolResultsMessage(results=(
        ToolResult.of("call_sKC7OABqf2A2PTLCm0CLeRWV", "secret_retrieval_tool", "Welcome to Moria!"),
        ToolResult.of("call_OdR3s3xop0vtgkDyWRMLafuH", "secret_retrieval_tool", "Life before Death"),
    ))
    events2, message2 = await collect(provider, first.model_copy(update={"messages": (*first.messages, message, results)}))
    assert json.loads(transport.requests[1].content)["input"] == recorded_input(name, 1)
    assert events2[-1].reason == "stop" and message2.text


# ---- faults ---------------------------------------------------------------------------

async def run_against(*replies: Reply):
    async with FakeProviderServer(list(replies)) as server:
        provider = OpenAIResponsesProvider(api_key="sk-test", base_url=server.base_url + "/v1", http_client=httpx2.AsyncClient())
        seen = []
        try:
            async for event in provider.stream(ModelRequest(model="gpt-test", messages=(UserMessage.of("hi"),))):
                seen.append(event)
        finally:
            await provider.aclose()
        return seen


async def test_429_with_retry_after_ms_is_a_rate_limit_error():
    body = json.dumps({"error": {"message": "Rate limit reached for gpt-test", "type": "requests", "code": "rate_limit_exceeded"}}).encode()
    with pytest.raises(RateLimitError) as caught:
        await run_against(Reply(429, body, {"retry-after-ms": "1500"}))
    assert caught.value.retry_after == 1.5 and caught.value.retryable and "Rate limit reached" in str(caught.value)


async def test_429_insufficient_quota_is_not_retryable():
    body = json.dumps({"error": {"message": "You exceeded your current quota", "type": "insufficient_quota", "code": "insufficient_quota"}}).encode()
    with pytest.raises(RateLimitError) as caught:
        await run_against(Reply(429, body))
    assert not caught.value.retryable and "billing" in str(caught.value)


async def test_500_is_unavailable():
    with pytest.raises(ProviderUnavailableError) as caught:
        await run_against(Reply(500, b'{"error": {"message": "The server had an error", "type": "server_error"}}'))
    assert caught.value.status_code == 500 and caught.value.retryable


async def test_response_failed_event_mid_stream_is_mapped_by_code():
    created = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-test", "output": [], "status": "in_progress", "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}}
    failed = {"type": "response.failed", "sequence_number": 1, "response": {**created["response"], "status": "failed", "error": {"code": "server_error", "message": "The model failed"}}}
    with pytest.raises(ProviderUnavailableError, match="The model failed"):
        await run_against(Reply(200, sse(("response.created", created), ("response.failed", failed))))


async def test_stream_cut_mid_way_is_unavailable():
    body = cassette("openai/responses-stream-parallel-function-calls-multiturn.yaml")
    stream = yaml.safe_load(body.read_text())["interactions"][0]["response"]["body"]["string"].encode()
    with pytest.raises(ProviderUnavailableError) as caught:
        await run_against(Reply(200, stream, cut_after=len(stream) // 2))
    assert caught.value.retryable


CREATED = {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-test", "output": [], "status": "in_progress", "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}}
MESSAGE_ADDED = {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}}
TEXT_DELTA = {"type": "response.output_text.delta", "sequence_number": 2, "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": "Hel", "logprobs": []}


async def test_error_event_mid_stream_is_mapped_by_code_after_partial_output():
    error = {"type": "error", "sequence_number": 3, "code": "rate_limit_exceeded", "message": "Slow down please", "param": None}
    with pytest.raises(RateLimitError, match="Slow down please"):
        await run_against(Reply(200, sse(("response.created", CREATED), ("response.output_item.added", MESSAGE_ADDED),
                                         ("response.output_text.delta", TEXT_DELTA), ("error", error))))


async def test_error_payload_inside_the_stream_is_unavailable_in_plain_words():
    payload = {"error": {"message": "The server is overloaded", "type": "server_error", "code": "server_error"}}
    with pytest.raises(ProviderUnavailableError, match="The server is overloaded") as caught:
        await run_against(Reply(200, sse(("response.created", CREATED), (None, payload))))
    assert caught.value.retryable


async def test_event_that_is_not_json_is_a_protocol_error_in_plain_words():
    from providers import ProviderProtocolError

    body = sse(("response.created", CREATED)) + b"event: response.output_text.delta\ndata: {\"type\": \"resp\n\n"
    with pytest.raises(ProviderProtocolError, match="not valid JSON"):
        await run_against(Reply(200, body))


async def test_default_http_client_streams_and_a_refused_connection_names_the_server():
    """Without an ``http_client`` the SDK's aiohttp-backed client carries the stream."""
    done_item = {**MESSAGE_ADDED["item"], "status": "completed", "content": [{"type": "output_text", "text": "Hel", "annotations": []}]}
    completed = {"type": "response.completed", "sequence_number": 4, "response": {**CREATED["response"], "status": "completed", "output": [done_item]}}
    body = sse(("response.created", CREATED), ("response.output_item.added", MESSAGE_ADDED), ("response.output_text.delta", TEXT_DELTA),
               ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": done_item}),
               ("response.completed", completed))
    request = ModelRequest(model="gpt-test", messages=(UserMessage.of("hi"),))
    async with FakeProviderServer([Reply(200, body)]) as server:
        url = server.base_url + "/v1"
        provider = OpenAIResponsesProvider(api_key="sk-test", base_url=url)
        try:
            events, message = await collect(provider, request)
        finally:
            await provider.aclose()
    assert message.text == "Hel" and events[-1].reason == "stop"
    refused = OpenAIResponsesProvider(api_key="sk-test", base_url=url)
    try:
        with pytest.raises(ProviderUnavailableError, match=f"The connection to the model server at {url} failed"):
            await collect(refused, request)
    finally:
        await refused.aclose()
