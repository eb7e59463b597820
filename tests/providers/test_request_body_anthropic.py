"""providers._request_body's kept request for Anthropic's SDK (``AsyncAnthropic``, on ``httpx2``):
a client's later requests put on the wire, byte for byte, what the SDK's own ``post`` puts there,
raise what it raises, and every client the kept way does not cover goes the SDK's way (the fallback)."""

from __future__ import annotations

import json

import anthropic
import httpx2
import pytest

from providers import AnthropicProvider, ModelRequest, ProviderError, TextContent, UserMessage, _request_body
from providers._request_body import READ_TIMEOUT_HEADER, open_stream, unbounded_reads

from .fake_server import FakeProviderServer, Reply, messages_sse
from .streams import collect
from .test_request_body import cookies_sent_set_then_cleared
from .test_request_body import request as rich_request


def _hello(text: str, stall_timeout: float | None) -> ModelRequest:
    return ModelRequest(model="claude-x", messages=(UserMessage(content=(TextContent(text=text),)),),
                        stall_timeout=stall_timeout)


async def _answers(provider: AnthropicProvider, requests: list[ModelRequest]) -> list[str]:
    """The text of each request's answer, one request after the other."""
    texts = []
    for one in requests:
        _events, message = await collect(provider, one)
        texts.append(message.text)
    return texts


def _wire(seen: object) -> bytes:
    """A request as it came: request line, headers in their order and case, body."""
    return seen.head + seen.body  # type: ignore[attr-defined]


@pytest.mark.parametrize("stall_timeout", [30.0, None], ids=["watched", "client-timeout"])
async def test_a_provider_s_later_requests_are_byte_for_byte_what_the_sdk_s_post_sends(
        stall_timeout: float | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # The same three turns (the second the first again, the third another body) through the
    # provider with its request kept, then with the switch off (every request the SDK's post).
    turns = [_hello("hello", stall_timeout), _hello("hello", stall_timeout),
             rich_request("anthropic").model_copy(update={"stall_timeout": stall_timeout})]
    async with FakeProviderServer([Reply(200, messages_sse("hi"))] * 6) as server:
        kept = AnthropicProvider(api_key="sk-ant", base_url=server.base_url)
        try:
            assert await _answers(kept, turns) == ["hi"] * 3
            assert _request_body._templates.get(kept._client)  # the later requests took the kept one
        finally:
            await kept.aclose()
        monkeypatch.setattr(_request_body, "_enabled", False)
        plain = AnthropicProvider(api_key="sk-ant", base_url=server.base_url)
        try:
            assert await _answers(plain, turns) == ["hi"] * 3
            assert not _request_body._templates.get(plain._client)
        finally:
            await plain.aclose()
    sent, expected = server.requests[:3], server.requests[3:]
    assert [_wire(seen) for seen in sent] == [_wire(seen) for seen in expected]
    assert sent[2].json()["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert int(sent[2].headers["content-length"]) == len(sent[2].body) != len(sent[1].body)
    for name in ("anthropic-version", "authorization", "user-agent", "x-stainless-retry-count", "x-stainless-read-timeout"):
        assert name in sent[1].headers  # what the SDK sends is there (the comparison above says it is the same)


# -- the SDK's own client, as the tests of providers._request_body's OpenAI side use it ------------


def _client(url: str, **kwargs: object) -> anthropic.AsyncAnthropic:
    """An ``AsyncAnthropic`` as the provider makes it (its aiohttp client, no retries)."""
    arguments: dict = {"api_key": "sk-ant", "base_url": url, "max_retries": 0,
                       "http_client": anthropic.DefaultAioHttpClient(), **kwargs}
    return anthropic.AsyncAnthropic(**arguments)


_PARAMS = {"model": "claude-x", "max_tokens": 100, "messages": [{"role": "user", "content": "hello"}]}


async def _send(client: anthropic.AsyncAnthropic, watched: bool = True) -> bytes:
    options = ({"timeout": unbounded_reads(anthropic.Timeout, client.timeout), "headers": {READ_TIMEOUT_HEADER: "30.0"}}
               if watched else None)
    response = await open_stream(client, "/v1/messages", _PARAMS, options)
    try:
        return await response.aread()
    finally:
        await response.aclose()


def _error(status: int, kind: str) -> Reply:
    body = json.dumps({"type": "error", "error": {"type": kind, "message": "no, not now"}}).encode()
    return Reply(status, body, headers={"retry-after": "7", "request-id": "req_1"})


@pytest.mark.parametrize("status, kind, error", [
    (429, "rate_limit_error", anthropic.RateLimitError), (500, "api_error", anthropic.InternalServerError),
    (529, "overloaded_error", anthropic.OverloadedError), (401, "authentication_error", anthropic.AuthenticationError),
    (400, "invalid_request_error", anthropic.BadRequestError)])
async def test_a_status_error_on_a_kept_request_is_the_sdk_s_and_the_provider_s(
        status: int, kind: str, error: type, monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeProviderServer([Reply(200, messages_sse()), _error(status, kind), _error(status, kind),
                                   Reply(200, messages_sse()), _error(status, kind), _error(status, kind)]) as server:
        client = _client(server.base_url)
        plain = _client(server.base_url, http_client=httpx2.AsyncClient())
        try:
            await _send(client)
            assert _request_body._templates.get(client)
            with pytest.raises(error) as kept:
                await _send(client)
            monkeypatch.setattr(_request_body, "_enabled", False)
            with pytest.raises(error) as posted:
                await _send(plain)
        finally:
            await client.close()
            await plain.close()
        # What the host makes of it: the provider's error, its advice, status and retry-after.
        monkeypatch.setattr(_request_body, "_enabled", True)
        provider = AnthropicProvider(api_key="sk-ant", base_url=server.base_url)
        try:
            await _answers(provider, [_hello("hello", 30.0)])
            with pytest.raises(ProviderError) as mapped_kept:
                await _answers(provider, [_hello("hello", 30.0)])
        finally:
            await provider.aclose()
        monkeypatch.setattr(_request_body, "_enabled", False)
        provider = AnthropicProvider(api_key="sk-ant", base_url=server.base_url)
        try:
            with pytest.raises(ProviderError) as mapped_plain:
                await _answers(provider, [_hello("hello", 30.0)])
        finally:
            await provider.aclose()
    assert (kept.value.status_code, kept.value.message, kept.value.body, kept.value.request_id) == \
        (posted.value.status_code, posted.value.message, posted.value.body, posted.value.request_id)
    assert kept.value.body == {"type": "error", "error": {"type": kind, "message": "no, not now"}}
    assert type(mapped_kept.value) is type(mapped_plain.value)
    assert (str(mapped_kept.value), mapped_kept.value.status_code, mapped_kept.value.retryable, mapped_kept.value.retry_after) == \
        (str(mapped_plain.value), mapped_plain.value.status_code, mapped_plain.value.retryable, mapped_plain.value.retry_after)


async def test_a_connection_that_fails_is_the_sdk_s_connection_error(monkeypatch: pytest.MonkeyPatch) -> None:
    async with FakeProviderServer([Reply(200, messages_sse())]) as server:
        client = _client(server.base_url)
        plain = _client(server.base_url)
        await _send(client)
    try:  # the server is gone: nothing listens on its port now
        with pytest.raises(anthropic.APIConnectionError) as kept:
            await _send(client)
        monkeypatch.setattr(_request_body, "_enabled", False)
        with pytest.raises(anthropic.APIConnectionError) as posted:
            await _send(plain)
    finally:
        await client.close()
        await plain.close()
    assert type(kept.value) is type(posted.value) is anthropic.APIConnectionError
    assert str(kept.value) == str(posted.value) and "failed" in str(kept.value)


async def test_a_timeout_is_the_sdk_s_timeout_error(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[httpx2.Request] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        calls.append(request)
        if len(calls) in (2, 3):
            raise httpx2.ConnectTimeout("too slow", request=request)
        return httpx2.Response(200, content=messages_sse(), headers={"content-type": "text/event-stream"})

    def make() -> anthropic.AsyncAnthropic:
        return _client("http://model.test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)))

    client, plain = make(), make()
    try:
        await _send(client)
        assert _request_body._templates.get(client)
        with pytest.raises(anthropic.APITimeoutError) as kept:
            await _send(client)
        monkeypatch.setattr(_request_body, "_enabled", False)
        with pytest.raises(anthropic.APITimeoutError) as posted:
            await _send(plain)
    finally:
        await client.close()
        await plain.close()
    assert str(kept.value) == str(posted.value) and "timed out" in str(kept.value)
    assert len(calls) == 3


async def test_what_a_kept_request_depends_on_is_sent_new_once_it_changes() -> None:
    # The key, the auth token, the timeout (here the client's own: no per-call timeout) and the
    # base URL: a change of any one is sent as the SDK would send it.
    async with FakeProviderServer([Reply(200, messages_sse())] * 5) as server, \
            FakeProviderServer([Reply(200, messages_sse())]) as other:
        client = _client(server.base_url, timeout=600.0)
        try:
            await _send(client, watched=False)
            await _send(client, watched=False)
            client.api_key = "sk-two"
            await _send(client, watched=False)
            client.timeout = 5.0
            await _send(client, watched=False)
            client.api_key, client.auth_token = None, "token-three"
            await _send(client, watched=False)
            client.base_url = other.base_url
            await _send(client, watched=False)
        finally:
            await client.close()
    assert [(seen.headers["authorization"], seen.headers["x-stainless-read-timeout"]) for seen in server.requests] == [
        ("Bearer sk-ant", "600.0"), ("Bearer sk-ant", "600.0"), ("Bearer sk-two", "600.0"), ("Bearer sk-two", "5.0"),
        ("Bearer token-three", "5.0")]
    assert [seen.headers["authorization"] for seen in other.requests] == ["Bearer token-three"]


async def _tag(request, call_next):  # type: ignore[no-untyped-def]  # the SDK's middleware signature
    return await call_next(request.copy(headers={**request.headers, "x-tagged": "yes"}))


async def test_a_client_with_middleware_or_credentials_is_never_kept() -> None:
    # What the SDK does per request for them (middleware's own steps, a token fetched and
    # refreshed per request) is not in a kept request. (A raw post through the SDK's middleware
    # does not come back raw: the middleware knows only ``with_raw_response``'s own header values,
    # so these are checked where the kept way decides, not by a request.)
    from anthropic._base_client import get_platform
    from anthropic.lib.credentials import StaticToken

    with_middleware = _client("http://127.0.0.1:9", middleware=[_tag])
    with_credentials = anthropic.AsyncAnthropic(credentials=StaticToken("token"), base_url="http://127.0.0.1:9",
                                                max_retries=0, http_client=anthropic.DefaultAioHttpClient())
    plain = _client("http://127.0.0.1:9")
    try:
        for client in (with_middleware, with_credentials, plain):
            client._platform = get_platform()  # as the SDK's post sets it before a template is made
        assert _request_body._sdk_of(with_middleware) is None and _request_body._sdk_of(with_credentials) is None
        assert _request_body._sdk_of(plain) is not None  # the same check passes for the provider's client
    finally:
        for client in (with_middleware, with_credentials, plain):
            await client.close()


def _unknown_sdk() -> _request_body._Sdk:
    raise ImportError("anthropic._models moved")  # as an SDK of another shape fails to give its parts


@pytest.mark.parametrize("how", ["retries", "subclass", "default headers", "switched off", "another SDK shape"])
async def test_the_plain_way_where_the_sdk_does_more_per_request(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each client the kept way does not cover: every request through the SDK's post, which does
    # what it does per request (a retry policy, a subclass's rewrites, its headers, middleware),
    # and puts the same bytes on the wire as the kept way elsewhere.
    class Subclass(anthropic.AsyncAnthropic):
        pass

    if how == "switched off":
        monkeypatch.setattr(_request_body, "_enabled", False)
    if how == "another SDK shape":
        monkeypatch.setitem(_request_body._SDKS, "anthropic", _unknown_sdk)
        monkeypatch.setattr(_request_body, "_sdks", {})
    differ: set[str] = set()
    async with FakeProviderServer([Reply(200, messages_sse())] * 4) as server:
        if how == "retries":
            client = _client(server.base_url, max_retries=2)
        elif how == "subclass":
            client = Subclass(api_key="sk-ant", base_url=server.base_url, max_retries=0, http_client=anthropic.DefaultAioHttpClient())
            differ = {"user-agent"}  # the SDK names the client's class
        elif how == "default headers":
            client = _client(server.base_url, default_headers={"anthropic-beta": "some-beta-2026-01-01"})
            differ = {"anthropic-beta"}
        else:
            client = _client(server.base_url)
        kept = _client(server.base_url)
        try:
            await _send(client)
            await _send(client)
            assert not _request_body._templates.get(client)
            await _send(kept)
            await _send(kept)
            assert bool(_request_body._templates.get(kept)) is (how not in ("switched off", "another SDK shape"))
        finally:
            await client.close()
            await kept.close()
    first, plain, _, later = server.requests
    assert later.body == plain.body == first.body
    assert {k: v for k, v in later.headers.items() if k not in differ} == {k: v for k, v in plain.headers.items() if k not in differ}
    for name in differ - {"user-agent"}:
        assert name in plain.headers and name not in later.headers  # the plain way did what the SDK does per request
    if not differ:
        assert _wire(later) == _wire(plain)


async def test_cookies_a_server_set_are_sent_with_the_kept_requests_after_it() -> None:
    # httpx2's cookies, as for httpx (test_request_body.py): read from a kept request's response
    # only when it sets one, sent with the requests after it as the SDK's post sends them.
    sent = await cookies_sent_set_then_cleared(messages_sse(), _client, _send, httpx2.Cookies)
    assert sent == [None, None, None, "__cf_bm=abc", "__cf_bm=abc", None]
