"""providers.openai._client: the HTTP connections an OpenAI provider's turns use (one client, its
keep-alive pool, per provider object: one per agent configuration), against a keep-alive server on
127.0.0.1 counting connections."""

from __future__ import annotations

import asyncio

from providers import ModelRequest, OpenAIChatProvider, OpenAIResponsesProvider, TextContent, UserMessage

from ..fake_server import KeepAliveServer, SeenRequest, chat_sse, responses_sse


def request(stall_timeout: float | None = None) -> ModelRequest:
    return ModelRequest(model="some-model", messages=(UserMessage(content=(TextContent(text="hello"),)),),
                        stall_timeout=stall_timeout)


async def answer(provider: OpenAIChatProvider | OpenAIResponsesProvider, stall_timeout: float | None = None) -> str:
    stream = provider.stream(request(stall_timeout))
    async for _ in stream:
        pass
    return stream.message().text


async def test_the_turns_of_one_provider_go_over_one_connection() -> None:
    async with KeepAliveServer(base_path="/v1") as server:
        provider = OpenAIChatProvider(api_key="sk-one", base_url=server.base_url)
        try:
            assert [await answer(provider, stall_timeout=30) for _ in range(3)] == ["hi"] * 3
        finally:
            await provider.aclose()
    assert server.connection_of == [0, 0, 0]


async def test_turns_that_overlap_each_have_a_connection_and_later_turns_reuse_them() -> None:
    async with KeepAliveServer(base_path="/v1") as server:
        provider = OpenAIChatProvider(api_key="sk-one", base_url=server.base_url)
        try:
            for _ in range(3):
                assert await asyncio.gather(*(answer(provider) for _ in range(4))) == ["hi"] * 4
        finally:
            await provider.aclose()
    assert len(server.requests) == 12
    assert server.connections == 4


async def test_two_configurations_each_send_their_own_key_on_their_own_connections() -> None:
    def body(seen: SeenRequest) -> bytes:
        return chat_sse("hi") if seen.path.endswith("/chat/completions") else responses_sse("hi")

    async with KeepAliveServer(body, base_path="/v1") as server:
        first = OpenAIChatProvider(api_key="sk-first", base_url=server.base_url)
        second = OpenAIResponsesProvider(api_key="sk-second", base_url=server.base_url)
        try:
            for _ in range(2):
                assert await asyncio.gather(answer(first), answer(second)) == ["hi", "hi"]
        finally:
            await first.aclose()
            await second.aclose()
    keys: dict[int, set[str]] = {}
    for seen, connection in zip(server.requests, server.connection_of, strict=True):
        keys.setdefault(connection, set()).add(seen.headers["authorization"])
    assert sorted(keys.values(), key=sorted) == [{"Bearer sk-first"}, {"Bearer sk-second"}]
