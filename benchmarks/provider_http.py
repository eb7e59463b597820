"""CPU per streamed chunk of the HTTP client under the SDK: its default httpx stack against its aiohttp client.

    .venv/bin/python benchmarks/provider_http.py [--sessions 200] [--rate 20] [--seconds 3] [--repeat 3]

The fake OpenAI Chat Completions server of ``benchmarks/provider_stream.py`` (its own process)
streams ``--sessions`` concurrent completions at ``--rate`` chunks a second each, starts staggered
over one second, one network read per chunk as a model's pace gives. This process reads them the
way the host's providers do (the raw response and ``providers._sse`` with orjson, no typed
models), once through ``openai.AsyncOpenAI``'s default httpx client (httpcore, anyio) and once
through ``openai.DefaultAioHttpClient`` (the ``openai[aiohttp]`` extra, which the providers use).
It prints this process's CPU time per chunk and the chunk-written-to-parsed latency (median and
p99), the median of ``--repeat`` alternating runs.

Opening a stream: the CPU this process spends from the call until the response headers are in, per
request, for a Chat Completions request of the size a turn sends (the host's system prompt and its
nine built-in tools, about 8 KB of JSON), through the aiohttp client. Once as the SDK comes
(``chat.completions.with_raw_response.create(**params, stream=True)``: its transform of every
argument, the standard library's ``json``), once as the providers do (``providers._request_body``:
the body serialised once with orjson and posted through the same client). ``--requests`` of each,
alternating, median of ``--repeat``.

Then, for the question whether streaming should move to worker processes: what it costs the main
process to receive one parsed event from another process instead (a child writes ``--sessions`` x
``--rate`` small pickled events a second, each on its own as they would leave a worker, through a
pipe; this process reads them with asyncio and unpickles them): CPU per event.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pickle
import struct
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import ChildProcess, machine_note, median, percentile

STREAM = str(Path(__file__).resolve().parent / "provider_stream.py")


async def _read(base_url: str, client_kind: str, sessions: int, count: int, rate: float) -> dict[str, float]:
    import openai

    from providers.openai.chat import open_chunk_stream

    http = openai.DefaultAioHttpClient() if client_kind == "aiohttp" else None
    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, http_client=http)
    params = {"model": f"paced-{count}-{rate:g}", "messages": [{"role": "user", "content": "go"}]}
    samples: list[float] = []

    async def one(index: int) -> None:
        await asyncio.sleep(index / sessions)
        stream = await open_chunk_stream(client, params)
        try:
            async for _, chunk in stream:
                choices = chunk.get("choices") or []
                content = choices[0]["delta"].get("content") if choices else None
                if content:
                    now = time.perf_counter_ns()
                    samples.extend((now - int(stamp)) / 1e6 for stamp in content.split(";") if stamp)
        finally:
            await stream.close()

    started = time.process_time()
    await asyncio.gather(*(one(index) for index in range(sessions)))
    cpu = time.process_time() - started
    await client.close()
    samples.sort()
    return {"cpu_us": cpu / len(samples) * 1e6, "median": median(samples), "p99": percentile(samples, 0.99)}


def _turn_params() -> dict:
    """The Chat Completions parameters of a turn's first model call, built as the provider builds them."""
    from providers import ModelRequest, ToolDefinition, UserMessage
    from providers.openai.chat import build_params
    from tools.builtin import builtin_tools

    tools = tuple(ToolDefinition(name=t.name, description=t.description, input_schema=t.input_schema) for t in builtin_tools())
    system = "You are a coding agent working in the user's repository. " * 40  # about the host's preamble
    return build_params(ModelRequest(model="fast-1", system=system, messages=(UserMessage.of("go"),), tools=tools))


async def _opening(base_url: str, how: str, requests: int) -> float:
    """CPU ms per request to open a stream ``how`` ("sdk" or "host"); each stream is read to its end."""
    import openai

    from providers.openai.chat import open_chunk_stream

    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, http_client=openai.DefaultAioHttpClient())
    params = _turn_params()
    cpu = 0.0
    for _ in range(requests):
        started = time.process_time()
        if how == "sdk":
            response = (await client.chat.completions.with_raw_response.create(**params, stream=True)).http_response
        else:
            response = (await open_chunk_stream(client, params)).response
        cpu += time.process_time() - started
        await response.aread()
    await client.close()
    return cpu / requests * 1e3


def _write_events(count: int, per_second: float) -> None:
    """Child: ``count`` length-prefixed pickled events on stdout, paced, one write each."""
    fd = sys.stdout.fileno()
    event = ("part_delta", "session-0123", 3, " token")
    start = time.monotonic()
    for index in range(count):
        delay = start + index / per_second - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        body = pickle.dumps(event, protocol=5)
        os.write(fd, struct.pack("<I", len(body)) + body)


async def _receive_events(count: int, per_second: float) -> float:
    """Main-process CPU µs per event read from a child's pipe."""
    child = await asyncio.create_subprocess_exec(sys.executable, __file__, "--child", "pipe", str(count), str(per_second),
                                                 stdout=asyncio.subprocess.PIPE)
    assert child.stdout is not None
    started = time.process_time()
    for _ in range(count):
        size = struct.unpack("<I", await child.stdout.readexactly(4))[0]
        pickle.loads(await child.stdout.readexactly(size))
    cpu = time.process_time() - started
    await child.wait()
    return cpu / count * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--rate", type=float, default=20)
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=200, help="streams opened per run in the opening test")
    args = parser.parse_args()
    server = ChildProcess(STREAM, "sse")
    try:
        base_url = await server.expect("url")
        count = round(args.rate * args.seconds)
        runs: dict[str, list[dict[str, float]]] = {"httpx": [], "aiohttp": []}
        for _ in range(args.repeat):
            for kind in runs:
                runs[kind].append(await _read(base_url, kind, args.sessions, count, args.rate))
        print(f"{args.sessions} sessions x {args.rate:g} chunks/s for {args.seconds:g} s, raw SSE + orjson, median of {args.repeat}; {machine_note()}")
        print(f"{'HTTP client under the openai SDK':<34}{'CPU µs/chunk':>14}{'median ms':>11}{'p99 ms':>9}")
        for kind, label in (("httpx", "default (httpx, httpcore, anyio)"), ("aiohttp", "DefaultAioHttpClient (aiohttp)")):
            rows = runs[kind]
            print(f"{label:<34}{median([r['cpu_us'] for r in rows]):>14.1f}{median([r['median'] for r in rows]):>11.2f}"
                  f"{median([r['p99'] for r in rows]):>9.2f}")
        opened: dict[str, list[float]] = {"sdk": [], "host": []}
        for _ in range(args.repeat):
            for how in opened:
                opened[how].append(await _opening(base_url, how, args.requests))
        sdk, host = median(opened["sdk"]), median(opened["host"])
        print(f"opening a stream ({len(json.dumps(_turn_params())) // 1024} KB request), CPU ms per request: "
              f"SDK create {sdk:.2f}, providers._request_body {host:.2f}, ratio {host / sdk:.2f}")
        per_second = args.sessions * args.rate
        pipe = median([await _receive_events(round(per_second * args.seconds), per_second) for _ in range(args.repeat)])
        print(f"main-process CPU to receive one event from a worker process over a pipe: {pipe:.1f} µs")
    finally:
        server.kill()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        _write_events(int(sys.argv[3]), float(sys.argv[4]))
        sys.exit(0)
    asyncio.run(main())
