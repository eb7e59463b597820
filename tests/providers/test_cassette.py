"""Cassette record → replay round trip against a local fake provider, secret scrubbing, loud failures."""

from __future__ import annotations

import httpx2
import pytest
import yaml

from providers import AnthropicProvider, CassetteError, ModelRequest, RecordingTransport, ReplayTransport, UserMessage

from .fake_server import FakeProviderServer, Reply
from .streams import cassette, collect, summarize

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

API_KEY = "sk-ant-SECRET-0123456789abcdef"
ORG_ID = "org-5e3f-secret-org"
COOKIE = "__cf_bm=SESSIONSECRET"


def recorded_stream() -> bytes:
    data = yaml.safe_load(cassette("anthropic/messages-stream-parallel-tool-use-multiturn.yaml").read_text())
    return data["interactions"][0]["response"]["body"]["string"].encode()


async def test_record_then_replay_gives_the_same_events_and_no_key_material(tmp_path):
    path = tmp_path / "recorded.yaml"
    request = ModelRequest(model="claude-test", messages=(UserMessage.of("hi"),))
    reply = Reply(200, recorded_stream(), {"set-cookie": COOKIE, "anthropic-organization-id": ORG_ID, "request-id": "req_1"})
    async with FakeProviderServer([reply]) as server:
        recorder = RecordingTransport(path, inner=httpx2.AsyncHTTPTransport())
        live = AnthropicProvider(api_key=API_KEY, base_url=server.base_url, http_client=httpx2.AsyncClient(transport=recorder))
        live_events, _ = await collect(live, request)
        await live.aclose()
        sent = server.requests[0].headers
        assert API_KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))  # the key was on the wire
        base_url = server.base_url

    text = path.read_text()
    for secret in (API_KEY, ORG_ID, "SESSIONSECRET"):
        assert secret not in text
    data = yaml.safe_load(text)
    assert data["version"] == 1 and len(data["interactions"]) == 1
    recorded_headers = data["interactions"][0]["request"]["headers"]
    assert [recorded_headers[h] for h in ("authorization", "x-api-key") if h in recorded_headers] == [["<filtered>"]]
    assert data["interactions"][0]["response"]["headers"]["set-cookie"] == ["<filtered>"]

    replay = ReplayTransport(path)
    replayed = AnthropicProvider(api_key="other", base_url=base_url, http_client=httpx2.AsyncClient(transport=replay))
    replay_events, message = await collect(replayed, request)
    assert summarize(replay_events) == summarize(live_events)
    assert [c.tool_name for c in message.tool_calls] == ["secret_retrieval_tool", "secret_retrieval_tool"]
    replay.assert_all_played()


async def test_a_request_with_nothing_left_to_play_fails_loudly():
    replay = ReplayTransport(cassette("anthropic/messages-stream-text.yaml"))
    provider = AnthropicProvider(api_key="k", http_client=httpx2.AsyncClient(transport=replay))
    request = ModelRequest(model="claude-3-haiku-20240307", messages=(UserMessage.of("hi"),))
    await collect(provider, request)
    with pytest.raises(CassetteError, match="no unplayed interaction"):
        await collect(provider, request)


async def test_a_request_to_an_unrecorded_endpoint_fails_loudly():
    replay = ReplayTransport(cassette("anthropic/messages-stream-text.yaml"))
    client = httpx2.AsyncClient(transport=replay)
    with pytest.raises(CassetteError, match="api.openai.com"):
        await client.post("https://api.openai.com/v1/responses", json={})


def test_unplayed_interactions_are_reported():
    replay = ReplayTransport(cassette("openai/responses-stream-reasoning-summary-multiturn.yaml"))
    with pytest.raises(CassetteError, match=r"\[0, 1\]"):
        replay.assert_all_played()
