"""Provider streaming through the whole host: throughput, added latency, start-up time.

Run:  .venv/bin/python benchmarks/provider_stream.py  [--deltas 4000] [--sessions 1,50,200] [--paced 40]

What it measures (everything on 127.0.0.1, no network, no keys):

1. Throughput. A local HTTP server streams an OpenAI Chat Completions SSE response of ``--deltas``
   text chunks as fast as it can. The same stream is consumed (a) by the bare ``openai`` SDK and
   (b) through the whole host: SDK → provider → turn loop → store → WebSocket → one subscribed
   ``AhpClient``. Deltas per second for both and their ratio (the host's overhead).
2. Added latency. With 1, 50 and 200 concurrent sessions, the server writes ``--paced`` chunks per
   session, 10 ms apart, each carrying the ``perf_counter_ns`` at which it was written; the client
   computes chunk-written → client-frame-received for every delta (median and p99). Server, host and
   client share one process and event loop, so this is an upper bound that includes their contention.
3. Start-up. Wall time from spawning ``agent-host serve --port 0`` until a WebSocket handshake with
   it succeeds (the host imports providers lazily to keep this short).

The default run takes well under a minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

TOKEN = "bench-token-0123456789"


def _chunk(content: str | None, finish: str | None = None) -> bytes:
    delta = {} if content is None else {"content": content}
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class SseServer:
    """Answers every POST with a streamed completion; the model name says how: ``fast-N`` or ``paced-N``."""

    def __init__(self) -> None:
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in head.decode().split("\r\n")[1:] if ":" in l)}
                body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
                mode, count = body["model"].split("-")
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")

                def send(data: bytes) -> None:
                    writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

                send(b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"bench","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n')
                for i in range(int(count)):
                    if mode == "paced":
                        await asyncio.sleep(0.01)
                        send(_chunk(f"{time.perf_counter_ns()};"))
                    else:
                        send(_chunk("tok "))
                        if i % 64 == 0:
                            await writer.drain()
                send(_chunk(None, "stop"))
                send(b"data: [DONE]\n\n")
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()


async def bare_sdk(base_url: str, deltas: int) -> float:
    import openai

    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0)
    start = time.perf_counter()
    seen = 0
    stream = await client.chat.completions.create(model=f"fast-{deltas}", messages=[{"role": "user", "content": "go"}], stream=True)
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            seen += 1
    elapsed = time.perf_counter() - start
    await client.close()
    assert seen == deltas, seen
    return deltas / elapsed


async def start_host(base_url: str, data_dir: str, models: list[str]):
    from host.config import load_config
    from host.server import start_host as start
    from host.service import AgentHost

    path = Path(data_dir) / "bench.toml"
    model_list = ", ".join(f'{{id = "{m}"}}' for m in models)
    path.write_text(
        f'[agents.bench]\nkind = "openai-chat"\nbase_url = "{base_url}"\napi_key = "bench"\ntitle = "first-words"\nmodels = [{model_list}]\n'
    )
    config = load_config(path, overrides={"server": {"port": 0, "data_dir": data_dir, "token": TOKEN}, "sessions": {"offline_agent": False}}, environ={})
    return await start(AgentHost(config, in_memory=True), token=TOKEN)


async def through_host(base_url: str, deltas: int) -> float:
    from client import AhpClient

    with tempfile.TemporaryDirectory() as data_dir:
        running = await start_host(base_url, data_dir, [f"fast-{deltas}"])
        client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
        await client.initialize(subscriptions=["ahp-root://"])
        session = await client.create_session(provider="bench")
        await client.wait_for(lambda m, e: client.state(session)["lifecycle"] == "ready")
        seen = 0
        done = asyncio.Event()

        def count(mirror, event) -> bool:
            nonlocal seen
            if event is not None and event.method == "action":
                kind = event.params["action"]["type"]
                if kind == "session/delta":
                    seen += 1
                elif kind in ("session/turnComplete", "session/error"):
                    done.set()
            return done.is_set()

        start = time.perf_counter()
        client.send_message(session, "go")
        await client.wait_for(count, timeout=120)
        elapsed = time.perf_counter() - start
        await client.close()
        await running.stop()
    assert seen == deltas, seen
    return deltas / elapsed


async def latency(base_url: str, sessions: int, paced: int) -> tuple[float, float]:
    from client import AhpClient

    samples: list[float] = []
    with tempfile.TemporaryDirectory() as data_dir:
        running = await start_host(base_url, data_dir, [f"paced-{paced}"])
        client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN)
        await client.initialize(subscriptions=["ahp-root://"])
        channels = [await client.create_session(provider="bench") for _ in range(sessions)]
        await client.wait_for(lambda m, e: all(client.state(c)["lifecycle"] == "ready" for c in channels), timeout=60)
        finished: set[str] = set()

        def collect(mirror, event) -> bool:
            if event is not None and event.method == "action":
                action = event.params["action"]
                if action["type"] == "session/delta":
                    now = time.perf_counter_ns()
                    for stamp in action["content"].split(";"):
                        if stamp:
                            samples.append((now - int(stamp)) / 1e6)
                elif action["type"] in ("session/turnComplete", "session/error"):
                    finished.add(event.params["channel"])
            return len(finished) == len(channels)

        for channel in channels:
            client.send_message(channel, "go")
        await client.wait_for(collect, timeout=120)
        await client.close()
        await running.stop()
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(len(samples) * 0.99))]


def startup_time() -> float:
    """Seconds from spawning ``agent-host serve`` to a completed WebSocket handshake."""
    import websockets.sync.client as ws

    with tempfile.TemporaryDirectory() as data_dir:
        start = time.perf_counter()
        process = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "agent-host"), "serve", "--port", "0", "--data-dir", data_dir, "--token", TOKEN],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            url = line.strip().split(" ")[-1]
            with ws.connect(url.replace("http", "ws", 1), additional_headers={"Authorization": f"Bearer {TOKEN}"}):
                elapsed = time.perf_counter() - start
        finally:
            process.terminate()
            process.wait(10)
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=4000)
    parser.add_argument("--sessions", default="1,50,200")
    parser.add_argument("--paced", type=int, default=40, help="paced chunks per session for the latency runs")
    args = parser.parse_args()

    server = SseServer()
    base_url = await server.start()
    sdk_rate = await bare_sdk(base_url, args.deltas)
    host_rate = await through_host(base_url, args.deltas)
    print(f"{'stream of ' + str(args.deltas) + ' deltas':<34}{'deltas/s':>12}")
    print(f"{'bare openai SDK':<34}{sdk_rate:>12,.0f}")
    print(f"{'through the host to one client':<34}{host_rate:>12,.0f}")
    print(f"{'ratio host / bare SDK':<34}{host_rate / sdk_rate:>12.2f}")
    print()
    print(f"{'concurrent sessions':<22}{'median ms':>12}{'p99 ms':>12}   (chunk written → client frame)")
    for count in (int(n) for n in args.sessions.split(",")):
        median, p99 = await latency(base_url, count, args.paced)
        print(f"{count:<22}{median:>12.2f}{p99:>12.2f}")
    await server.stop()
    print()
    print(f"{'agent-host serve → first accepted connection':<46}{startup_time():>8.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
