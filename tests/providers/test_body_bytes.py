"""providers._body_bytes: a raw stream's body is read from aiohttp's own reader under the SDKs'
aiohttp clients (the installed versions must take that way), and the plain way otherwise: the
same bytes, and a connection cut mid-body raises what the SDKs' error mapping knows."""

from __future__ import annotations

import asyncio
import gzip

import anthropic
import httpx
import openai
import pytest

from providers import AnthropicProvider, OpenAIChatProvider, ProviderUnavailableError, UserMessage
from providers._body_bytes import _alone, body_reader
from providers._request_body import open_stream
from providers.messages import ModelRequest

from .fake_server import FakeProviderServer, Reply, chat_sse, messages_sse

BODY = chat_sse("hello", " world")


async def read_all(response) -> tuple[bytes, str]:
    read, errors = body_reader(response)
    out = b""
    with errors:
        while chunk := await read():
            out += chunk
    await response.aclose()
    return out, getattr(read, "__name__", "")


def openai_client(base_url: str, http_client=None) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url=base_url, max_retries=0,
                              http_client=http_client or openai.DefaultAioHttpClient())


async def test_the_openai_aiohttp_client_is_read_from_aiohttps_reader() -> None:
    async with FakeProviderServer([Reply(200, BODY)], base_path="/v1") as server:
        client = openai_client(server.base_url)
        try:
            body, way = await read_all(await open_stream(client, "/chat/completions", {"model": "m"}))
        finally:
            await client.close()
    assert (body, way) == (BODY, "readany_alone")


async def test_the_anthropic_aiohttp_client_is_read_from_aiohttps_reader() -> None:
    sent = messages_sse("hi")
    async with FakeProviderServer([Reply(200, sent)]) as server:
        client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=server.base_url, max_retries=0,
                                          http_client=anthropic.DefaultAioHttpClient())
        try:
            body, way = await read_all(await open_stream(client, "/v1/messages", {"model": "m"}))
        finally:
            await client.close()
    assert (body, way) == (sent, "readany_alone")


async def test_a_plain_httpx_client_is_read_the_plain_way() -> None:
    async with FakeProviderServer([Reply(200, BODY)], base_path="/v1") as server:
        client = openai_client(server.base_url, http_client=httpx.AsyncClient())
        try:
            body, way = await read_all(await open_stream(client, "/chat/completions", {"model": "m"}))
        finally:
            await client.close()
    assert (body, way) == (BODY, "read")


async def test_a_content_encoded_body_is_read_the_plain_way_and_decoded() -> None:
    async with FakeProviderServer([Reply(200, gzip.compress(BODY), headers={"content-encoding": "gzip"})],
                                  base_path="/v1") as server:
        client = openai_client(server.base_url)
        try:
            body, way = await read_all(await open_stream(client, "/chat/completions", {"model": "m"}))
        finally:
            await client.close()
    assert (body, way) == (BODY, "read")


async def test_a_body_larger_than_aiohttps_buffer_read_slowly_arrives_whole() -> None:
    # The reader falls behind: aiohttp's buffer passes its high-water mark and pauses the socket, reads
    # find several pieces waiting (``readany``'s way), and reading resumes once the buffer drained.
    sent = chat_sse(*(f"{index:05d}" + "x" * 2000 for index in range(1500)))
    async with FakeProviderServer([Reply(200, sent)], base_path="/v1") as server:
        client = openai_client(server.base_url)
        try:
            response = await open_stream(client, "/chat/completions", {"model": "m"})
            read, errors = body_reader(response)
            out, reads = b"", 0
            with errors:
                while chunk := await read():
                    out += chunk
                    reads += 1
                    if reads < 5:
                        await asyncio.sleep(0.05)
            await response.aclose()
        finally:
            await client.close()
    assert len(sent) > 1 << 20 and out == sent and read.__name__ == "readany_alone"


def test_a_stream_reader_without_the_expected_internals_is_read_with_readany() -> None:
    class Reader:  # another aiohttp's reader: readany, but not the internals the short way reads
        async def readany(self) -> bytes:
            return b""

    assert _alone(Reader()) is None


@pytest.mark.parametrize("aiohttp", [True, False], ids=["aiohttp-reader", "plain-httpx"])
async def test_a_connection_cut_mid_body_is_the_same_error_either_way(aiohttp: bool) -> None:
    async with FakeProviderServer([Reply(200, BODY, cut_after=len(BODY) // 2)], base_path="/v1") as server:
        client = openai_client(server.base_url, http_client=None if aiohttp else httpx.AsyncClient())
        try:
            response = await open_stream(client, "/chat/completions", {"model": "m"})
            with pytest.raises(httpx.TransportError):
                await read_all(response)
        finally:
            await client.close()


@pytest.mark.parametrize("make", [OpenAIChatProvider, AnthropicProvider], ids=["openai-chat", "anthropic"])
async def test_a_provider_whose_answer_is_cut_mid_stream_reports_the_provider_unavailable(make: type) -> None:
    sent = BODY if make is OpenAIChatProvider else messages_sse("a longer answer")
    async with FakeProviderServer([Reply(200, sent, cut_after=len(sent) // 2)],
                                  base_path="/v1" if make is OpenAIChatProvider else "") as server:
        provider = make(api_key="sk-test", base_url=server.base_url)
        try:
            with pytest.raises(ProviderUnavailableError):
                async for _ in provider.stream(ModelRequest(model="m", messages=(UserMessage.of("hi"),), stall_timeout=5)):
                    pass
        finally:
            await provider.aclose()
