"""providers._events: the raw SSE path and the SDK's typed events are one seam, and either way a
provider yields the same neutral events and builds the same message (native payloads included).

Every recorded vendor stream is played both ways and compared; the typed way is taken when the
environment asks for it, and by itself when an SDK client's ``post`` no longer takes what the raw
way passes."""

from __future__ import annotations

import logging

import pytest

import providers._events as events_module
from providers import (
    AnthropicProvider,
    ModelRequest,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    UserMessage,
    replay_client,
)
from providers._events import ENVIRONMENT_VARIABLE, raw_supported

from .streams import cassette, collect

RECORDED = [
    (AnthropicProvider, "anthropic/messages-stream-text", "claude-3-haiku-20240307"),
    (AnthropicProvider, "anthropic/messages-stream-thinking-multiturn", "claude-sonnet-4-5"),
    (AnthropicProvider, "anthropic/messages-stream-parallel-tool-use-multiturn", "claude-sonnet-4-5"),
    (OpenAIChatProvider, "openai/chat-completions-stream-text-usage", "gpt-4o"),
    (OpenAIChatProvider, "openai/chat-completions-stream-parallel-tool-calls-multiturn", "gpt-4o"),
    (OpenAIResponsesProvider, "openai/responses-stream-reasoning-summary-multiturn", "gpt-5"),
    (OpenAIResponsesProvider, "openai/responses-stream-parallel-function-calls-multiturn", "gpt-5"),
]


async def _played(vendor, name: str, model: str):
    client, transport = replay_client(cassette(f"{name}.yaml"))
    provider = vendor(api_key="test-key", http_client=client)
    events, message = await collect(provider, ModelRequest(model=model, messages=(UserMessage.of("hi"),)))
    sent = transport.requests[0]
    return events, message, sent.headers.get("x-stainless-raw-response")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("vendor, name, model", RECORDED)
async def test_both_ways_give_the_same_events_and_message(vendor, name: str, model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    raw_events, raw_message, raw_header = await _played(vendor, name, model)
    monkeypatch.setenv(ENVIRONMENT_VARIABLE, "sdk")
    typed_events, typed_message, typed_header = await _played(vendor, name, model)
    assert (raw_header, typed_header) == ("true", None)  # each way really was the one taken
    assert typed_events == raw_events
    assert typed_message == raw_message and raw_message.parts


class _OldClient:
    """An SDK client whose ``post`` lacks the ``content`` argument the raw way passes."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.chat = inner.chat

    async def post(self, path, *, cast_to, body=None, options=None, stream=False):  # pragma: no cover - never called
        raise AssertionError("the raw way was taken")


async def test_an_sdk_whose_post_changed_is_read_through_its_typed_events(monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv(ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setattr(events_module, "_checked", {})
    client, _ = replay_client(cassette("openai/chat-completions-stream-text-usage.yaml"))
    provider = OpenAIChatProvider(api_key="test-key", http_client=client)
    old = _OldClient(provider._sdk())
    monkeypatch.setattr(provider, "_sdk", lambda: old)
    with caplog.at_level(logging.WARNING, logger="providers._events"):
        _, message = await collect(provider, ModelRequest(model="gpt-4o", messages=(UserMessage.of("What is 4200 + 42?"),)))
    assert message.text == "4200 + 42 equals 4242."
    assert not raw_supported(old)
    assert [r.getMessage() for r in caplog.records] == [
        "_OldClient.post no longer takes cast_to, content, options, stream: provider streams are read through "
        "the SDK's typed events (slower, same results)"
    ]


def test_the_sdks_clients_take_what_the_raw_way_passes() -> None:
    import anthropic
    import openai

    assert raw_supported(openai.AsyncOpenAI(api_key="k")) and raw_supported(anthropic.AsyncAnthropic(api_key="k"))
