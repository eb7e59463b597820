"""CPU instructions per streamed chunk, provider and turn mapping, against the bare SDK: a figure the machine's load does not move.

    .venv/bin/python benchmarks/provider_instructions.py [--api chat,anthropic,responses] [--chunks 1000,3000]
        [--stream text,reasoning,tool-arguments]

Timings on a shared machine move with everyone else's work (the same run gave ratios from 0.31
to 0.50 on a machine at load 14); instructions do not. This runs the in-process streams of
``benchmarks/provider_parsing.py`` (the same SSE bodies, served by an ``httpx2.MockTransport``)
under valgrind's callgrind, counting instructions only while a stream is read:

* **host**: ``provider.stream(request)`` (the SDK's raw response, ``providers._sse``, orjson, the
  translator, the neutral events) read as the turn reads it (``ModelStream.bare()``: streamed
  chunks as bare deltas) with every event mapped to the turn's actions
  (``host.runtime.agents._mapping.CallMapper`` into a ``TurnContext`` whose dispatch does
  nothing: the store is not measured here);
* **baseline**: the bare SDK at its best (``benchmarks/_bare_sdk.py``: raw response, lines split,
  orjson).

``--stream`` picks what the streams carry (``benchmarks/_part_streams.py``): ``text`` (the
default), ``reasoning`` (Chat Completions' ``reasoning_content``, Anthropic thinking, a Responses
reasoning summary) or ``tool-arguments`` (one tool call's JSON arguments); one row per API and kind.
Each is run for two stream lengths; the difference divided by the difference in chunks is the
cost of one chunk, without start-up, imports and the stream's opening. Needs ``valgrind`` (Debian's
package); user-space instructions only (no system calls, no waiting).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._callgrind import count, instrument, require_valgrind
from benchmarks._runs import command_line, machine_note


async def _child(api: str, chunks: int, bare: bool, kind: str) -> None:
    """Runs under callgrind: one short untimed stream, then ``chunks`` chunks instrumented."""
    from benchmarks._bare_sdk import open_raw, sse_data
    from benchmarks._part_streams import body as stream_body
    from benchmarks.provider_parsing import _http_client
    from host.runtime.agents._mapping import CallMapper, TurnToolIds
    from host.runtime.agents.base import TurnContext
    from providers import AnthropicProvider, ModelRequest, OpenAIChatProvider, OpenAIResponsesProvider, UserMessage

    part_kind = {"text": "text", "reasoning": "reasoning", "tool-arguments": "tool_call"}[kind]
    providers = {"chat": OpenAIChatProvider, "anthropic": AnthropicProvider, "responses": OpenAIResponsesProvider}
    paths = {"chat": "/chat/completions", "anthropic": "/v1/messages", "responses": "/responses"}
    request = ModelRequest(model="bench", messages=(UserMessage.of("go"),))

    async def host(n: int, measured: bool) -> None:
        provider = providers[api](api_key="k", http_client=_http_client(stream_body(api, kind, n)))
        ctx = TurnContext(session="s", turn_id="t1", message={}, _dispatch=lambda channel, action: None,
                          _state=dict, chat="c", _active_turn_id=lambda: "t1",
                          _dispatch_streamed=lambda channel, action, key, turn: action)
        mapper = CallMapper(ctx, TurnToolIds(), {})
        if measured:
            instrument(True)
        stream = provider.stream(request)
        async for event in stream.bare():  # as the turn reads it (``host.runtime.agents.turn``)
            if isinstance(event, str):
                mapper.bare(event)
                continue
            mapper.apply(event)
        message = stream.message()
        if measured:
            instrument(False)
        # What was measured is what was meant: one part of the kind, every chunk of it.
        parts = message.parts
        assert len(parts) == 1 and parts[0].kind == part_kind, parts
        streamed = parts[0].arguments if part_kind == "tool_call" else parts[0].text  # type: ignore[union-attr]
        assert len(streamed) >= 2 * n, (len(streamed), n)  # every chunk's piece has 2 characters or more

    async def baseline(n: int, measured: bool) -> None:
        import anthropic
        import openai

        http = _http_client(stream_body(api, kind, n))
        messages = [{"role": "user", "content": "go"}]
        params: dict = {"model": "bench", "messages": messages}
        if api == "anthropic":
            client = anthropic.AsyncAnthropic(api_key="k", http_client=http, max_retries=0)
            params["max_tokens"] = 10
        else:
            client = openai.AsyncOpenAI(api_key="k", http_client=http, max_retries=0)
        if measured:
            instrument(True)
        async for _ in sse_data(await open_raw(client, paths[api], params)):
            pass
        if measured:
            instrument(False)

    run = baseline if bare else host
    await run(50, False)  # imports, first-use caches
    await run(chunks, True)


def _count(api: str, chunks: int, bare: bool, kind: str) -> int:
    side = "bare" if bare else "host"
    return count(__file__, api, chunks, side, kind, what=f"the {api} {kind} {side} run of {chunks} chunks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api", default="chat,anthropic,responses")
    parser.add_argument("--chunks", default="1000,3000", help="the two stream lengths whose difference is measured")
    parser.add_argument("--stream", default="text", help="what the streams carry: text, reasoning, tool-arguments (comma-separated)")
    args = parser.parse_args()
    require_valgrind()
    short, long = (int(n) for n in args.chunks.split(","))
    print(f"instructions per streamed chunk (callgrind, user space), {long} minus {short} chunks; {machine_note()}")
    print(f"command: {command_line()}")
    print(f"{'API':<12}{'stream':<16}{'baseline: raw + orjson':>24}{'host: provider + turn mapping':>32}{'ratio':>8}")
    for kind in args.stream.split(","):
        for api in args.api.split(","):
            bare = (_count(api, long, True, kind) - _count(api, short, True, kind)) / (long - short)
            host = (_count(api, long, False, kind) - _count(api, short, False, kind)) / (long - short)
            print(f"{api:<12}{kind:<16}{bare:>24,.0f}{host:>32,.0f}{bare / host:>8.2f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        asyncio.run(_child(sys.argv[2], int(sys.argv[3]), sys.argv[4] == "bare", sys.argv[5]))
    else:
        main()
