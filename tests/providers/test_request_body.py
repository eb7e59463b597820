"""providers._request_body: each SDK sends the body the provider built, the same JSON as its own
``create(**params)`` (with the SDK's transform) would have sent, with the same headers."""

from __future__ import annotations

import asyncio
from typing import Any

import anthropic
import httpx
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


# -- the request made once per client (providers._request_body, "The request made once per client")


def _client(url: str, **kwargs) -> openai.AsyncOpenAI:
    """An ``AsyncOpenAI`` as the host's providers make it (``make_client``: the SDK's aiohttp client)."""
    from providers.openai._client import make_client

    return make_client("sk-one", base_url=url, **kwargs)


_PARAMS = {"model": "some-model", "messages": [{"role": "user", "content": "hello"}]}


def _options(client: openai.AsyncOpenAI) -> dict:
    from providers._request_body import READ_TIMEOUT_HEADER, unbounded_reads

    return {"timeout": unbounded_reads(openai.Timeout, client.timeout), "headers": {READ_TIMEOUT_HEADER: "30.0"}}


async def _send(client: openai.AsyncOpenAI, params: dict = _PARAMS) -> bytes:
    from providers._request_body import open_stream

    response = await open_stream(client, "/chat/completions", params, _options(client))
    try:
        return await response.aread()
    finally:
        await response.aclose()


async def test_a_client_s_later_requests_put_on_the_wire_what_its_first_did() -> None:
    # The first request goes through the SDK's post; the later ones are the request kept then,
    # with their own bodies: the same method, path, headers and (for the same params) bytes.
    from providers import _request_body

    body = chat_sse("hi")
    async with FakeProviderServer([Reply(200, body)] * 3, base_path="/v1") as server:
        client = _client(server.base_url)
        try:
            assert await _send(client) == body
            assert _request_body._templates.get(client)  # kept: the later requests take the template
            assert await _send(client) == body
            assert await _send(client, {**_PARAMS, "model": "other-model"}) == body
        finally:
            await client.close()
    first, second, third = server.requests
    assert (second.method, second.path, second.headers, second.body) == (first.method, first.path, first.headers, first.body)
    assert third.json() == {**first.json(), "model": "other-model"} and third.headers["authorization"] == "Bearer sk-one"
    assert int(third.headers["content-length"]) == len(third.body)


@pytest.mark.parametrize("status, error", [(429, openai.RateLimitError), (500, openai.InternalServerError),
                                           (401, openai.AuthenticationError)])
async def test_a_status_error_is_raised_as_the_sdk_raises_it(status: int, error: type) -> None:
    payload = b'{"error": {"message": "no, not now", "type": "some_error"}}'
    async with FakeProviderServer([Reply(200, chat_sse("hi")), Reply(status, payload), Reply(status, payload)],
                                  base_path="/v1") as server:
        client = _client(server.base_url)
        plain = _client(server.base_url, http_client=httpx2.AsyncClient())  # never kept (httpx2): the SDK's post
        try:
            await _send(client)
            with pytest.raises(error) as kept:
                await _send(client)
            with pytest.raises(error) as posted:
                await _send(plain)
        finally:
            await client.close()
            await plain.close()
    assert (kept.value.status_code, kept.value.message, kept.value.body) == (posted.value.status_code, posted.value.message, posted.value.body)


async def test_a_connection_that_fails_is_the_sdk_s_connection_error() -> None:
    async with FakeProviderServer([Reply(200, chat_sse("hi"))], base_path="/v1") as server:
        client = _client(server.base_url)
        await _send(client)
    try:  # the server is gone: nothing listens on its port now
        with pytest.raises(openai.APIConnectionError):
            await _send(client)
    finally:
        await client.close()


async def test_a_timeout_is_the_sdk_s_timeout_error() -> None:
    import httpx

    calls = []

    async def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) > 1:
            raise httpx.ConnectTimeout("too slow", request=request)
        return httpx.Response(200, content=chat_sse("hi"), headers={"content-type": "text/event-stream"})

    client = openai.AsyncOpenAI(api_key="sk-one", base_url="http://model.test/v1", max_retries=0,
                                http_client=httpx.AsyncClient(transport=httpx.MockTransport(handler)))
    try:
        await _send(client)
        with pytest.raises(openai.APITimeoutError):
            await _send(client)
    finally:
        await client.close()
    assert len(calls) == 2


async def test_a_client_whose_key_changed_sends_its_new_key() -> None:
    async with FakeProviderServer([Reply(200, chat_sse("hi"))] * 3, base_path="/v1") as server:
        client = _client(server.base_url)
        try:
            await _send(client)
            await _send(client)
            client.api_key = "sk-two"
            await _send(client)
        finally:
            await client.close()
    assert [seen.headers["authorization"] for seen in server.requests] == ["Bearer sk-one", "Bearer sk-one", "Bearer sk-two"]


@pytest.mark.parametrize("how", ["retries", "switched off", "subclass"])
async def test_the_plain_way_where_the_sdk_does_more_per_request(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A client the SDK would retry for, a subclass (Azure's rewrites its URLs) or the switch set:
    # every request through the SDK's post, and what it sends is what the kept way sends.
    from providers import _request_body

    class Subclass(openai.AsyncOpenAI):
        pass

    if how == "switched off":
        monkeypatch.setattr(_request_body, "_enabled", False)
    async with FakeProviderServer([Reply(200, chat_sse("hi"))] * 4, base_path="/v1") as server:
        if how == "subclass":
            client = Subclass(api_key="sk-one", base_url=server.base_url, max_retries=0, http_client=openai.DefaultAioHttpClient())
        else:
            client = _client(server.base_url) if how == "switched off" else openai.AsyncOpenAI(
                api_key="sk-one", base_url=server.base_url, max_retries=2, http_client=openai.DefaultAioHttpClient())
        kept = _client(server.base_url)
        try:
            await _send(client)
            await _send(client)
            assert not _request_body._templates.get(client)
            await _send(kept)
            await _send(kept)
            assert bool(_request_body._templates.get(kept)) is (how != "switched off")
        finally:
            await client.close()
            await kept.close()
    plain, _, first, later = server.requests
    assert later.body == plain.body == first.body
    assert {k: v for k, v in later.headers.items() if k not in {"x-stainless-retry-count", "user-agent"}} == \
        {k: v for k, v in plain.headers.items() if k not in {"x-stainless-retry-count", "user-agent"}}


async def test_cookies_a_server_set_are_sent_as_the_sdk_sends_them() -> None:
    # A CDN in front of a model API sets cookies (Cloudflare's ``__cf_bm``): the kept request
    # carries the client's cookies of the moment, as the SDK's own request does.
    set_cookie = {"set-cookie": "__cf_bm=abc; Path=/"}
    async with FakeProviderServer([Reply(200, chat_sse("hi"), headers=set_cookie)] + [Reply(200, chat_sse("hi"))] * 3,
                                  base_path="/v1") as server:
        client = _client(server.base_url)
        plain = _client(server.base_url, http_client=httpx2.AsyncClient())
        try:
            await _send(client)
            await _send(client)
            client._client.cookies.set("later", "1")
            await _send(client)
            plain._client.cookies.set("__cf_bm", "abc")
            plain._client.cookies.set("later", "1")
            await _send(plain)
        finally:
            await client.close()
            await plain.close()
    first, second, third, posted = server.requests
    assert "cookie" not in first.headers and second.headers["cookie"] == "__cf_bm=abc"
    assert sorted(third.headers["cookie"].split("; ")) == sorted(posted.headers["cookie"].split("; ")) == ["__cf_bm=abc", "later=1"]


async def test_a_cookie_a_kept_request_s_response_sets_is_sent_with_the_next_and_a_cleared_one_is_not() -> None:
    # The kept way reads cookies only from a response that sets one (providers._request_body,
    # "Cookies read only from a response that sets one"): one set, then cleared, on responses to
    # kept requests, reaches the requests after each as it would through the SDK's post.
    sent = await cookies_sent_set_then_cleared(chat_sse("hi"), _client, _send, httpx.Cookies, base_path="/v1")
    assert sent == [None, None, None, "__cf_bm=abc", "__cf_bm=abc", None]


async def cookies_sent_set_then_cleared(body: bytes, client_of: Any, send: Any, sdk_cookies: type, **server: Any) -> list[str | None]:
    """The ``cookie`` header of each of six kept requests whose third response sets a cookie and
    whose fifth clears it (the Anthropic tests use it too); the client's cookies must have become
    the lean kind instead of the SDK's ``sdk_cookies``."""
    set_cookie = {"set-cookie": "__cf_bm=abc; Path=/"}
    cleared = {"set-cookie": "__cf_bm=gone; Path=/; Max-Age=0"}
    replies = [Reply(200, body), Reply(200, body), Reply(200, body, headers=set_cookie),
               Reply(200, body), Reply(200, body, headers=cleared), Reply(200, body)]
    async with FakeProviderServer(replies, **server) as fake:
        client = client_of(fake.base_url)
        try:
            for _ in replies:
                await send(client)
            assert type(client._client.cookies) is not sdk_cookies  # the lean cookies were taken
        finally:
            await client.close()
    return [seen.headers.get("cookie") for seen in fake.requests]


async def test_cookies_of_a_kind_the_seam_does_not_know_are_left_as_they_are_and_still_kept() -> None:
    # The plain fallback: a client whose cookies are not a plain httpx.Cookies (its owner's own)
    # keeps them, and httpx reads every response into them as it always does.
    class Own(httpx.Cookies):
        pass

    set_cookie = {"set-cookie": "__cf_bm=abc; Path=/"}
    async with FakeProviderServer([Reply(200, chat_sse("hi")), Reply(200, chat_sse("hi"), headers=set_cookie),
                                   Reply(200, chat_sse("hi"))], base_path="/v1") as server:
        client = _client(server.base_url)
        client._client._cookies = Own()
        try:
            for _ in range(3):
                await _send(client)
            assert type(client._client.cookies) is Own
        finally:
            await client.close()
    assert [seen.headers.get("cookie") for seen in server.requests] == [None, None, "__cf_bm=abc"]
