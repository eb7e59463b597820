"""What each SDK costs per streamed chunk, against the host's lean path for the same chunks.

    .venv/bin/python benchmarks/provider_parsing.py [--chunks 20000] [--repeat 3]

1. Parsing alone. For one typical text-delta event of each API (OpenAI Chat Completions, OpenAI
   Responses, Anthropic Messages) it times what the SDK does with an SSE ``data`` line:
   ``json.loads`` then the SDK's own ``construct_type`` into its typed model (what ``AsyncStream``
   does per event), against ``orjson.loads`` alone (what ``providers._sse`` does).
2. The whole stream, in this process. A stream of ``--chunks`` text deltas (with the events that
   open and finish a real response) is served by an ``httpx2.MockTransport``, one SSE event per
   network read, to the host's provider (``provider.stream()``: the SDK's raw response,
   ``providers._sse``, orjson, the translator, the neutral events the turn loop consumes), against
   the bare SDK at its best (``benchmarks/_bare_sdk.py``: the raw response, lines split, orjson,
   the text picked out), the baseline of the ratio. The SDK iterating its typed events
   (``create(stream=True)``) is printed beside them for information.
   Microseconds per chunk, including the HTTP client's own per-read cost.

Median of ``--repeat``; ratios say how much of a token's cost parsing is.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import orjson

from benchmarks._runs import command_line, machine_note, median

CHAT = json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
                   "system_fingerprint": "fp", "choices": [{"index": 0, "delta": {"content": " token"}, "logprobs": None,
                                                           "finish_reason": None}]})
RESPONSES = json.dumps({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0,
                        "delta": " token", "sequence_number": 7, "logprobs": []})
ANTHROPIC = json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": " token"}})


def _time(parse, line: str, chunks: int) -> float:
    started = time.perf_counter()
    for _ in range(chunks):
        parse(line)
    return (time.perf_counter() - started) / chunks * 1e6


def _sse(events: list[tuple[str | None, dict | str]]) -> list[bytes]:
    return [((f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n").encode()
            for name, data in events]


def _chat_stream(chunks: int) -> list[bytes]:
    envelope = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1", "system_fingerprint": "fp"}
    events: list[tuple[str | None, dict | str]] = [
        (None, {**envelope, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})]
    events += [(None, json.loads(CHAT))] * chunks
    events += [(None, {**envelope, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), (None, "[DONE]")]
    return _sse(events)


def _responses_stream(chunks: int) -> list[bytes]:
    response = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5", "output": [], "status": "in_progress",
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "in_progress", "content": []}
    done_item = {**item, "status": "completed", "content": [{"type": "output_text", "text": "x", "annotations": []}]}
    usage = {"input_tokens": 5, "output_tokens": chunks, "total_tokens": chunks + 5,
             "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}
    events: list[tuple[str | None, dict | str]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": response}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item}),
    ]
    events += [("response.output_text.delta", json.loads(RESPONSES))] * chunks
    events += [
        ("response.output_item.done", {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": done_item}),
        ("response.completed", {"type": "response.completed", "sequence_number": 3,
                                "response": {**response, "status": "completed", "output": [done_item], "usage": usage}}),
    ]
    return _sse(events)


def _anthropic_stream(chunks: int) -> list[bytes]:
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}
    events: list[tuple[str | None, dict | str]] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    events += [("content_block_delta", json.loads(ANTHROPIC))] * chunks
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": chunks}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return _sse(events)


def _http_client(body: list[bytes]):
    """An ``httpx2.AsyncClient`` whose every request gets ``body``, one piece per read."""
    import httpx2

    class Pieces(httpx2.AsyncByteStream):
        async def __aiter__(self):
            for piece in body:
                yield piece

    return httpx2.AsyncClient(transport=httpx2.MockTransport(
        lambda request: httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Pieces())))


async def _whole_streams(chunks: int, repeat: int) -> None:
    import anthropic
    import openai

    from benchmarks._bare_sdk import open_raw, sse_data
    from providers import AnthropicProvider, ModelRequest, OpenAIChatProvider, OpenAIResponsesProvider, UserMessage

    request = ModelRequest(model="bench", messages=(UserMessage.of("go"),))
    messages = [{"role": "user", "content": "go"}]
    def openai_client(http):
        return openai.AsyncOpenAI(api_key="k", http_client=http, max_retries=0)

    def anthropic_client(http):
        return anthropic.AsyncAnthropic(api_key="k", http_client=http, max_retries=0)

    def chat_text(event: dict) -> str | None:
        choices = event.get("choices")
        return choices[0]["delta"].get("content") if choices else None

    def responses_text(event: dict) -> str | None:
        return event.get("delta") if event.get("type") == "response.output_text.delta" else None

    def anthropic_text(event: dict) -> str | None:
        return event["delta"].get("text") if event.get("type") == "content_block_delta" else None

    cases = [
        ("OpenAI Chat Completions", _chat_stream(chunks),
         lambda http: openai_client(http).chat.completions.create(model="bench", messages=messages, stream=True),
         lambda http: open_raw(openai_client(http), "/chat/completions", {"model": "bench", "messages": messages}), chat_text,
         lambda http: OpenAIChatProvider(api_key="k", http_client=http)),
        ("OpenAI Responses", _responses_stream(chunks),
         lambda http: openai_client(http).responses.create(model="bench", input="go", stream=True),
         lambda http: open_raw(openai_client(http), "/responses", {"model": "bench", "input": "go"}), responses_text,
         lambda http: OpenAIResponsesProvider(api_key="k", http_client=http)),
        ("Anthropic Messages", _anthropic_stream(chunks),
         lambda http: anthropic_client(http).messages.create(model="bench", max_tokens=10, messages=messages, stream=True),
         lambda http: open_raw(anthropic_client(http), "/v1/messages", {"model": "bench", "max_tokens": 10, "messages": messages}),
         anthropic_text,
         lambda http: AnthropicProvider(api_key="k", http_client=http)),
    ]

    async def raw(body: list[bytes], open_response, text_of) -> float:
        started = time.perf_counter()
        deltas = 0
        async for event in sse_data(await open_response(_http_client(body))):
            deltas += bool(text_of(event))
        elapsed = time.perf_counter() - started
        assert deltas == chunks, (deltas, chunks)
        return elapsed / chunks * 1e6

    async def bare(body: list[bytes], create) -> float:
        started = time.perf_counter()
        async for _ in await create(_http_client(body)):
            pass
        return (time.perf_counter() - started) / chunks * 1e6

    async def hosted(body: list[bytes], make) -> float:
        provider = make(_http_client(body))
        started = time.perf_counter()
        deltas = 0
        async for event in provider.stream(request):
            deltas += event.kind == "part_delta"
        elapsed = time.perf_counter() - started
        assert deltas == chunks, (deltas, chunks)
        return elapsed / chunks * 1e6

    print()
    print(f"whole stream of {chunks} text deltas through an in-process httpx2 transport, µs per chunk:")
    print("(baseline: the bare SDK at its best, raw SSE + orjson; ratio: host speed / baseline speed, i.e. baseline µs /")
    print(" host µs, 1.0 as fast, lower slower; the SDK's typed events are printed for information, not as a baseline)")
    print(f"{'API':<26}{'baseline: raw + orjson':>23}{'host provider, neutral events':>31}{'ratio':>7}{'SDK typed events':>18}")
    for name, body, create, open_response, text_of, make in cases:
        raw_runs, host_runs, sdk_runs = [], [], []
        for _ in range(repeat):
            raw_runs.append(await raw(body, open_response, text_of))
            host_runs.append(await hosted(body, make))
            sdk_runs.append(await bare(body, create))
        r, h, s = median(raw_runs), median(host_runs), median(sdk_runs)
        print(f"{name:<26}{r:>23.1f}{h:>31.1f}{r / h:>7.2f}{s:>18.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import anthropic.types
    import openai.types.chat
    import openai.types.responses
    from anthropic._models import construct_type as anthropic_construct
    from openai._models import construct_type as openai_construct

    cases = [
        ("OpenAI Chat Completions", CHAT,
         lambda line: openai_construct(type_=openai.types.chat.ChatCompletionChunk, value=json.loads(line))),
        ("OpenAI Responses", RESPONSES,
         lambda line: openai_construct(type_=openai.types.responses.ResponseStreamEvent, value=json.loads(line))),
        ("Anthropic Messages", ANTHROPIC,
         lambda line: anthropic_construct(type_=anthropic.types.RawMessageStreamEvent, value=json.loads(line))),
    ]
    print(f"per streamed chunk, {args.chunks} chunks, median of {args.repeat}; {machine_note()}")
    print(f"command: {command_line()}")
    print(f"{'API':<26}{'SDK model (us)':>15}{'orjson dict (us)':>18}{'ratio':>8}")
    for name, line, sdk in cases:
        sdk_runs, lean_runs = [], []
        for _ in range(args.repeat):
            sdk_runs.append(_time(sdk, line, args.chunks))
            lean_runs.append(_time(orjson.loads, line, args.chunks))
        s, lean = median(sdk_runs), median(lean_runs)
        print(f"{name:<26}{s:>15.1f}{lean:>18.2f}{s / lean:>8.0f}")
    asyncio.run(_whole_streams(args.chunks, args.repeat))


if __name__ == "__main__":
    main()
