"""CPU instructions per model call through a provider, its request kept or built by the SDK each time: a figure the machine's load does not move.

    .venv/bin/python benchmarks/request_instructions.py [--api anthropic,chat,responses] [--calls 20,60]

One provider (``AnthropicProvider``, ``OpenAIChatProvider``, ``OpenAIResponsesProvider``) makes
``--calls`` model calls one after the other, each a one-message request answered with a short
stream of one text chunk (``benchmarks/_part_streams.py``), on an ``httpx2``/``httpx`` client
whose ``MockTransport`` gives every request that body (as ``benchmarks/provider_instructions.py``
does: no network, no server in the count). Each call is read as the turn reads it
(``ModelStream.bare()``). Counted under valgrind's callgrind (user space, this process's threads)
while the calls run, after five untimed ones; run for the two counts, the difference of the totals
divided by the difference of the counts is one call's instructions: the request built and sent, the
short stream read and translated, without start-up or the client's first request.

Two rows per API: as it runs (``kept``: a client's later requests are its first one kept,
``providers._request_body``, "The request made once per client") and with
``AGENT_HOST_REQUEST_TEMPLATES=0`` (``plain``: every request built by the SDK's ``post``). Needs
``valgrind``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._callgrind import count, instrument, require_valgrind
from benchmarks._runs import command_line, machine_note

WARM_UP = 5
"""Untimed calls before the measured ones (imports, first-use caches, the client's first request)."""


def _http_client(api: str, body: list[bytes]) -> object:
    """The client the provider's SDK takes (``httpx2`` for Anthropic's, ``httpx`` for OpenAI's),
    every request answered with ``body``, one piece per read."""
    if api == "anthropic":
        from benchmarks.provider_parsing import _http_client as httpx2_client

        return httpx2_client(body)
    import httpx

    class Pieces(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def]
            for piece in body:
                yield piece

    return httpx.AsyncClient(transport=httpx.MockTransport(
        lambda request: httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Pieces())))


async def _child(api: str, calls: int) -> None:
    """Runs under callgrind: ``WARM_UP`` untimed calls, then ``calls`` calls instrumented."""
    from benchmarks._part_streams import body as stream_body
    from providers import AnthropicProvider, ModelRequest, OpenAIChatProvider, OpenAIResponsesProvider, UserMessage

    providers = {"chat": OpenAIChatProvider, "anthropic": AnthropicProvider, "responses": OpenAIResponsesProvider}
    provider = providers[api](api_key="k", base_url="http://model.test" + ("" if api == "anthropic" else "/v1"),
                              http_client=_http_client(api, stream_body(api, "text", 1)))
    request = ModelRequest(model="bench", messages=(UserMessage.of("go"),), stall_timeout=30)

    async def call() -> None:
        stream = provider.stream(request)
        async for _ in stream.bare():  # as the turn reads it (``host.runtime.agents.turn``)
            pass
        assert stream.message().parts, "the call's answer has its text"

    for _ in range(WARM_UP):
        await call()
    instrument(True)
    for _ in range(calls):
        await call()
    instrument(False)
    await provider.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="anthropic,chat,responses")
    parser.add_argument("--calls", default="20,60", help="the two call counts whose difference is measured")
    args = parser.parse_args()
    require_valgrind()
    short, long = (int(n) for n in args.calls.split(","))
    print(f"instructions per model call (callgrind, user space), {long} minus {short} calls of one text chunk each; {machine_note()}")
    print(f"command: {command_line()}")
    print(f"{'API':<12}{'kept':>14}{'plain (SDK post)':>20}{'kept / plain':>14}")
    for api in args.api.split(","):
        figures = []
        for templates in ("1", "0"):
            os.environ["AGENT_HOST_REQUEST_TEMPLATES"] = templates  # the child inherits it
            counts = [count(__file__, api, n, what=f"the {api} run of {n} calls") for n in (short, long)]
            figures.append((counts[1] - counts[0]) / (long - short))
        print(f"{api:<12}{figures[0]:>14,.0f}{figures[1]:>20,.0f}{figures[0] / figures[1]:>14.2f}", flush=True)
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        asyncio.run(_child(sys.argv[2], int(sys.argv[3])))
    else:
        main()
