"""AnthropicProvider: real recorded streams through the real SDK, request building, error mapping."""

from __future__ import annotations

import json

import httpx2
import pytest
import yaml

from providers import (
    AnthropicOptions,
    AnthropicProvider,
    AnthropicThinkingAdaptive,
    AnthropicThinkingBudget,
    AuthenticationError,
    ModelRequest,
    ProviderUnavailableError,
    RateLimitError,
    ToolDefinition,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
    replay_client,
)
from providers.cassette import ReplayTransport

from .fake_server import FakeProviderServer, KeepAliveServer, Reply, messages_sse, sse
from .streams import cassette, collect, summarize

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

PRIMES = "How many primes below 400 contain 79 as a substring? Answer ONLY with the number, not sharing which primes they are."
SECRETS = "Please retrieve the secrets associated with each of these passwords: mellon,radiance"
SECRET_TOOL = ToolDefinition(
    name="secret_retrieval_tool",
    description="A tool that requires a password to retrieve a secret.",
    input_schema={"properties": {"password": {"title": "Password", "type": "string"}}, "required": ["password"], "additionalProperties": False, "type": "object"},
)


def provider_for(name: str) -> tuple[AnthropicProvider, ReplayTransport]:
    client, transport = replay_client(cassette(f"anthropic/{name}.yaml"))
    return AnthropicProvider(api_key="test-key", http_client=client), transport


def recorded_request(name: str, index: int) -> dict:
    data = yaml.safe_load(cassette(f"anthropic/{name}.yaml").read_text())
    return json.loads(data["interactions"][index]["request"]["body"])


async def test_text_stream_yields_one_text_part_usage_and_end_turn():
    provider, transport = provider_for("messages-stream-text")
    events, message = await collect(provider, ModelRequest(model="claude-3-haiku-20240307", messages=(UserMessage.of("Tell me a joke about OpenTelemetry"),)))
    summary = summarize(events)
    assert summary[0] == ("usage", 17, 3, 0, 0, 0)
    assert summary[1] == ("start", 0, "text", None, None)
    assert summary[2][0:2] == ("delta", 0)
    assert summary[2][2].startswith("Here's an OpenTelemetry-themed joke for you:")
    assert summary[3:] == [
        ("end", 0),
        ("usage", 17, 171, 0, 0, 0),
        ("finish", "stop", "end_turn", "msg_01MXWxhWoPSgrYhjTuMDM6F1", "claude-3-haiku-20240307"),
    ]
    assert message.text == summary[2][2]
    assert sum(1 for e in events if e.kind == "part_delta") == 70
    transport.assert_all_played()


async def test_max_tokens_stop_is_reported_as_max_tokens():
    provider, _ = provider_for("messages-stream-text-max-tokens")
    events, message = await collect(provider, ModelRequest(model="claude-sonnet-4-0", max_tokens=50, messages=(UserMessage.of("List all U.S. states."),)))
    finish = events[-1]
    assert (finish.kind, finish.reason, finish.raw_reason) == ("finish", "max_tokens", "max_tokens")
    assert [e.usage.output_tokens for e in events if e.kind == "usage"][-1] == 50
    assert message.text.strip()


async def test_thinking_stream_gives_reasoning_then_text_and_turn_two_replays_the_signed_block_verbatim():
    name = "messages-stream-thinking-multiturn"
    provider, transport = provider_for(name)
    options = AnthropicOptions(thinking=AnthropicThinkingBudget(budget_tokens=6400), cache_prompt=False)
    first = ModelRequest(model="claude-sonnet-4-0", max_tokens=16000, messages=(UserMessage.of(PRIMES),), anthropic=options)
    events, message = await collect(provider, first)

    summary = summarize(events)
    assert [s[0:3] for s in summary if s[0] != "delta"] == [
        ("usage", 67, 8),
        ("start", 0, "reasoning"),
        ("end", 0),
        ("start", 1, "text"),
        ("end", 1),
        ("usage", 67, 1193),
        ("finish", "stop", "end_turn"),
    ]
    reasoning, text = message.parts
    assert reasoning.text.startswith('I need to find all prime numbers below 400 that contain "79"')
    assert text.text.endswith("- 379: Prime\n\n3")
    assert len(reasoning.native["signature"]) == 3312

    recorded_assistant = recorded_request(name, 1)["messages"][1]
    assert [reasoning.native, text.native] == recorded_assistant["content"]

    second = first.model_copy(
        update={
            "messages": (*first.messages, message, UserMessage.of("If you remember what the primes were, then share them, or say 'I don't remember.'")),
            "anthropic": AnthropicOptions(thinking=AnthropicThinkingBudget(budget_tokens=1024)),
        }
    )
    events2, message2 = await collect(provider, second)
    sent = json.loads(transport.requests[1].content)
    assert sent["messages"][1] == recorded_assistant  # thinking + signature byte-for-byte unchanged
    assert sent["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert len(message2.parts[0].native["signature"]) == 560
    assert message2.parts[1].kind == "text"
    transport.assert_all_played()


async def test_parallel_tool_use_streams_two_calls_and_turn_two_sends_blocks_and_results():
    name = "messages-stream-parallel-tool-use-multiturn"
    provider, transport = provider_for(name)
    first = ModelRequest(model="claude-sonnet-4-0", system="Use parallel tool calling.", tools=(SECRET_TOOL,), messages=(UserMessage.of(SECRETS),))
    events, message = await collect(provider, first)
    assert summarize(events) == [
        ("usage", 416, 1, 0, 0, 0),
        ("start", 0, "text", None, None),
        ("delta", 0, "I'll retrieve the secrets for both passwords you provided."),
        ("end", 0),
        ("start", 1, "tool_call", "toolu_015cUijgET79LXjgeYQerN2h", "secret_retrieval_tool"),
        ("delta", 1, '{"password": "mellon"}'),
        ("end", 1),
        ("start", 2, "tool_call", "toolu_01XZTimPexA7h3EVKesnKt5T", "secret_retrieval_tool"),
        ("delta", 2, '{"password": "radiance"}'),
        ("end", 2),
        ("usage", 416, 109, 0, 0, 0),
        ("finish", "tool_calls", "tool_use", "msg_013zKrzHmx2EAPhcF2gQKQ4k", "claude-sonnet-4-20250514"),
    ]
    sent_first = json.loads(transport.requests[0].content)
    assert sent_first["system"] == recorded_request(name, 0)["system"]
    assert sent_first["tools"] == recorded_request(name, 0)["tools"]

    results = ToolResultsMessage(
        results=(
            ToolResult.of("toolu_015cUijgET79LXjgeYQerN2h", "secret_retrieval_tool", "Welcome to Moria!"),
            ToolResult.of("toolu_01XZTimPexA7h3EVKesnKt5T", "secret_retrieval_tool", "Life before Death"),
        )
    )
    events2, message2 = await collect(provider, first.model_copy(update={"messages": (*first.messages, message, results)}))
    sent = json.loads(transport.requests[1].content)
    recorded = recorded_request(name, 1)["messages"]
    assert sent["messages"][1] == recorded[1]
    assert [(b["tool_use_id"], b["content"]) for b in sent["messages"][2]["content"]] == [
        (b["tool_use_id"], b["content"]) for b in recorded[2]["content"]
    ]
    assert events2[-1].reason == "stop" and message2.text
    transport.assert_all_played()


async def test_invalid_key_is_an_authentication_error_naming_the_variable():
    provider, _ = provider_for("error-401-authentication-error-stream-request")
    with pytest.raises(AuthenticationError) as caught:
        await collect(provider, ModelRequest(model="claude-sonnet-4-0", messages=(UserMessage.of("hi"),)))
    assert caught.value.status_code == 401
    assert not caught.value.retryable
    assert "ANTHROPIC_API_KEY" in str(caught.value) and "invalid x-api-key" in str(caught.value)


async def test_missing_key_is_an_authentication_error_before_any_request(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AuthenticationError, match="set ANTHROPIC_API_KEY"):
        await collect(AnthropicProvider(), ModelRequest(model="claude-sonnet-4-5", messages=(UserMessage.of("hi"),)))


def test_adaptive_thinking_sends_effort_in_output_config_and_drops_temperature():
    params = AnthropicProvider(api_key="k").build_params(
        ModelRequest(
            model="claude-opus-4-6",
            temperature=0.3,
            messages=(UserMessage.of("hi"),),
            anthropic=AnthropicOptions(thinking=AnthropicThinkingAdaptive(effort="high")),
        )
    )
    assert params["thinking"] == {"type": "adaptive"}
    assert params["output_config"] == {"effort": "high"}
    assert "temperature" not in params


def test_cache_breakpoints_mark_system_tools_and_latest_user_turn():
    params = AnthropicProvider(api_key="k").build_params(
        ModelRequest(model="m", system="sys", tools=(SECRET_TOOL,), messages=(UserMessage.of("a"),))
    )
    assert params["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert params["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert params["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}


# ---- faults built by the tests -----------------------------------------------------------

MESSAGE_START = {
    "type": "message_start",
    "message": {"id": "msg_x", "type": "message", "role": "assistant", "model": "claude-test", "content": [], "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}},
}
TEXT_START = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
TEXT_DELTA = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}


async def run_against(reply: Reply):
    async with FakeProviderServer([reply]) as server:
        provider = AnthropicProvider(api_key="test-key", base_url=server.base_url, http_client=httpx2.AsyncClient())
        seen = []
        try:
            async for event in provider.stream(ModelRequest(model="claude-test", messages=(UserMessage.of("hi"),))):
                seen.append(event)
        finally:
            await provider.aclose()
        return seen


async def test_429_with_retry_after_is_a_retryable_rate_limit_error():
    body = json.dumps({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}}).encode()
    with pytest.raises(RateLimitError) as caught:
        await run_against(Reply(429, body, {"retry-after": "7"}))
    assert caught.value.retryable and caught.value.retry_after == 7.0 and caught.value.status_code == 429


async def test_500_is_a_retryable_unavailable_error():
    body = json.dumps({"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}).encode()
    with pytest.raises(ProviderUnavailableError) as caught:
        await run_against(Reply(500, body))
    assert caught.value.retryable and caught.value.status_code == 500


async def test_529_overloaded_is_a_retryable_unavailable_error():
    body = json.dumps({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}).encode()
    with pytest.raises(ProviderUnavailableError, match="Overloaded") as caught:
        await run_against(Reply(529, body))
    assert caught.value.retryable and caught.value.status_code == 529


async def test_overloaded_error_event_mid_stream_is_unavailable_after_partial_output():
    body = sse(
        ("message_start", MESSAGE_START),
        ("content_block_start", TEXT_START),
        ("content_block_delta", TEXT_DELTA),
        ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    )
    seen = []
    with pytest.raises(ProviderUnavailableError) as caught:
        async with FakeProviderServer([Reply(200, body)]) as server:
            provider = AnthropicProvider(api_key="k", base_url=server.base_url, http_client=httpx2.AsyncClient())
            async for event in provider.stream(ModelRequest(model="claude-test", messages=(UserMessage.of("hi"),))):
                seen.append(event)
    assert caught.value.retryable and caught.value.status_code is None
    assert [e.kind for e in seen] == ["usage", "part_start", "part_delta"]


async def test_connection_cut_mid_stream_is_a_retryable_unavailable_error():
    body = sse(("message_start", MESSAGE_START), ("content_block_start", TEXT_START), ("content_block_delta", TEXT_DELTA))
    with pytest.raises(ProviderUnavailableError) as caught:
        await run_against(Reply(200, body, cut_after=len(body) - 10))
    assert caught.value.retryable
    assert "dropped" in str(caught.value)


async def test_stream_that_ends_without_message_stop_is_unavailable():
    body = sse(("message_start", MESSAGE_START), ("content_block_start", TEXT_START), ("content_block_delta", TEXT_DELTA))
    with pytest.raises(ProviderUnavailableError, match="dropped"):
        await run_against(Reply(200, body))


async def test_delta_for_a_block_never_started_is_a_protocol_error():
    from providers import UnexpectedDeltaError

    body = sse(("message_start", MESSAGE_START), ("content_block_delta", TEXT_DELTA))
    with pytest.raises(UnexpectedDeltaError):
        await run_against(Reply(200, body))


async def test_ping_events_between_deltas_are_ignored_like_the_sdk_does():
    body = sse(
        ("message_start", MESSAGE_START),
        ("ping", {"type": "ping"}),
        ("content_block_start", TEXT_START),
        ("content_block_delta", TEXT_DELTA),
        ("ping", {"type": "ping"}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    )
    seen = await run_against(Reply(200, body))
    assert summarize(seen) == [
        ("usage", 5, 1, 0, 0, 0),
        ("start", 0, "text", None, None),
        ("delta", 0, "Hel"),
        ("end", 0),
        ("usage", 5, 3, 0, 0, 0),
        ("finish", "stop", "end_turn", "msg_x", "claude-test"),
    ]


async def test_event_that_is_not_json_mid_stream_is_a_protocol_error_in_plain_words():
    body = sse(("message_start", MESSAGE_START), ("content_block_start", TEXT_START), ("content_block_delta", TEXT_DELTA))
    body += b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_de\n\n'
    from providers import ProviderProtocolError

    with pytest.raises(ProviderProtocolError, match="not valid JSON") as caught:
        await run_against(Reply(200, body))
    assert not caught.value.retryable


async def test_rate_limit_error_event_mid_stream_says_what_happened():
    body = sse(
        ("message_start", MESSAGE_START),
        ("error", {"type": "error", "error": {"type": "rate_limit_error", "message": "Too many tokens this minute"}}),
    )
    with pytest.raises(RateLimitError, match="Too many tokens this minute") as caught:
        await run_against(Reply(200, body))
    assert caught.value.retryable and caught.value.status_code is None


async def test_default_http_client_streams_and_a_cut_or_refused_connection_is_unavailable():
    """Without an ``http_client`` the SDK's aiohttp-backed client carries the stream."""
    whole = sse(
        ("message_start", MESSAGE_START), ("content_block_start", TEXT_START), ("content_block_delta", TEXT_DELTA),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}),
        ("message_stop", {"type": "message_stop"}),
    )
    request = ModelRequest(model="claude-test", messages=(UserMessage.of("hi"),))
    async with FakeProviderServer([Reply(200, whole), Reply(200, whole, cut_after=len(whole) // 2)]) as server:
        provider = AnthropicProvider(api_key="test-key", base_url=server.base_url)
        try:
            events, message = await collect(provider, request)
            assert message.text == "Hel" and events[-1].reason == "stop"
            assert type(provider._client._client).__name__ == "_DefaultAioHttpClient"
            with pytest.raises(ProviderUnavailableError, match="dropped"):
                await collect(provider, request)
        finally:
            await provider.aclose()
        url = server.base_url
    refused = AnthropicProvider(api_key="test-key", base_url=url)
    try:
        with pytest.raises(ProviderUnavailableError, match="failed or dropped"):
            await collect(refused, request)
    finally:
        await refused.aclose()


async def test_the_turns_of_one_provider_go_over_one_connection() -> None:
    async with KeepAliveServer(lambda seen: messages_sse("hi")) as server:
        provider = AnthropicProvider(api_key="sk-ant", base_url=server.base_url)
        request = ModelRequest(model="claude-x", messages=(UserMessage.of("hello"),), stall_timeout=30)
        try:
            for _ in range(2):
                _events, message = await collect(provider, request)
                assert message.text == "hi"
        finally:
            await provider.aclose()
    assert server.connection_of == [0, 0]
