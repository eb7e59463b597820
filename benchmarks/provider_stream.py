"""Provider streams through the whole host: throughput and chunk-to-frame latency, in processes.

Run:  .venv/bin/python benchmarks/provider_stream.py [--deltas 4000] [--sessions 1,50,200] [--rate 20] [--seconds 3] [--repeat 3] [--busy 0] [--no-pin]

Three processes, all on 127.0.0.1, no keys: a fake OpenAI Chat Completions server streaming SSE
(its own process), the host (this process: the real ``openai`` SDK in an ``openai-chat`` agent,
turn loop, store, journal, WebSocket), and the clients (``AhpClient``, their own process).

1. Throughput. The fake server streams ``--deltas`` text chunks as fast as it can. Baseline: the
   ``openai`` SDK at its best, consuming that stream in this process as the host's providers
   read it: the same HTTP client (the SDK's aiohttp-backed ``DefaultAioHttpClient``), the body
   posted as orjson bytes, the raw SSE split into lines and each ``data`` parsed with orjson, no
   typed models. Host: the same stream through the host to one subscribed client in the client
   process (message sent → ``turnComplete`` seen). Runs alternate; the medians of ``--repeat``,
   their ratio and the range of the pairs' ratios are printed. The SDK as it comes (default httpx
   client, typed chunks) is printed too, for information only: it is not the baseline.
2. Latency at a model's pace. ``N`` sessions (``--sessions``) each stream ``--rate`` chunks a
   second for ``--seconds``; their turns start spread over one second and each stream's first
   chunk at a random point of one chunk interval (staggered). Each chunk
   carries the monotonic clock reading (``perf_counter_ns``, shared by the processes of one
   machine) at which the server wrote it. Baseline: the bare SDK consuming the N streams in this
   process (at its best, as above), chunk written → chunk parsed. Host: chunk written → its ``session/delta`` dispatched
   (the frame handed to every subscriber's socket buffer in the same call), chunk written → frame
   written to the client's socket (after the journal commit that makes it durable; measured by
   wrapping the connection's ``_write_buffered`` in this process), and chunk written →
   frame received by the client process (which adds the operating system waking a third process
   on a shared machine). Median and p99 of every chunk of every session, and the p99 of the
   "steady" chunks (written once every session was streaming: without the first second's turn
   starts), each the median of ``--repeat`` runs. Beside them, the CPU this process spends per
   chunk (``time.process_time``) from the first chunk to the last, for the baseline and the host,
   and for the host also over the steady part alone.
   ``--busy N`` runs N more processes that only spin on the CPU during the latency runs (other
   work on the machine, the same for the baseline and the host).

Placement: on a machine with two or more CPUs this process (the host, and the bare SDK baseline)
runs on the first CPU and every other process (the fake provider, the clients, ``--busy``
spinners) on the rest (``--no-pin`` lets them share every CPU). The load generators need about half
a CPU at 200 sessions; sharing cores, the host's process waits for their time slices, which on a
2-core machine doubled its p99 (measured both ways; the README has the figures).

The host runs as ``agent-host serve`` runs it: after start-up its memory is settled
(``host.runtime.memory.settle``: ``gc.freeze()`` and the host's collector thresholds). The client
process is an ``AhpClient`` speaking AHP 0.2.0 (the terminal client's version), so its frames go
through the host's 0.2.0 projection.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._fake_chat import Reply, host_config, serve_chat
from benchmarks._runs import ChildProcess, command_line, machine_note, median, percentile, pin_measured_process

TOKEN = "bench-token-0123456789"
_STAGGER = 1.0
"""Seconds over which the paced sessions' turns start (the bare SDK's streams start the same way)."""


# -- the fake provider (its own process) -----------------------------------------------------------


async def _serve_sse() -> None:
    """Every POST gets a streamed completion; the model name says how: ``fast-N`` or ``paced-N-RATE``."""

    async def respond(body: bytes, reply: Reply) -> None:
        mode, count, *rate = json.loads(body)["model"].split("-")
        reply.role()
        if mode == "paced":
            # Each chunk written by a timer's callback (no task woken per chunk: this process
            # shares the machine with the host), on a fixed schedule from a random phase.
            interval = 1 / float(rate[0])
            loop = asyncio.get_running_loop()
            start = loop.time() + random.uniform(0, interval)  # staggered starts
            written: asyncio.Future[None] = loop.create_future()

            def write(index: int) -> None:
                if written.done():  # cancelled: the benchmark is ending
                    return
                if index == int(count):
                    written.set_result(None)
                    return
                reply.text(f"{time.perf_counter_ns()};")
                loop.call_at(start + (index + 1) * interval, write, index + 1)

            loop.call_at(start, write, 0)
            await written
        else:
            for index in range(int(count)):
                reply.text("tok ")
                if index % 64 == 0:
                    await reply.drain()

    _, url = await serve_chat(respond)
    print(f"url {url}", flush=True)
    await asyncio.Event().wait()


# -- the client process ----------------------------------------------------------------------------


_TURN_ENDS = frozenset({"session/turnComplete", "session/turnCancelled", "session/error"})


async def _clients(url: str, model: str, sessions: int, stagger: float) -> None:
    """Create ``sessions`` sessions on the host, send each a message, report what was measured."""
    from client import AhpClient

    arrivals: list[tuple[int, str]] = []
    ended: set[str] = set()

    def hook(frame: dict, answered: str | None) -> None:
        if frame.get("method") == "action":
            action = frame["params"]["action"]
            kind = action.get("type")
            if kind == "session/delta":
                arrivals.append((time.perf_counter_ns(), action["content"]))
            elif kind in _TURN_ENDS:
                ended.add(frame["params"]["channel"])

    client = await AhpClient.connect(url, token=TOKEN, frame_hook=hook)
    client.request_timeout = 120
    await client.initialize(subscriptions=["ahp-root://"], protocol_versions=("0.2.0",))
    channels = [await client.create_session(provider="bench", model=model) for _ in range(sessions)]
    await client.wait_for(lambda m, e: all(client.state(c)["lifecycle"] == "ready" for c in channels), timeout=120)
    started = time.perf_counter()
    spread = 0 if model.startswith("fast") else stagger
    for channel in channels:
        client.send_message(channel, "go")
        await asyncio.sleep(spread / len(channels))  # sessions start one after another, not all at once

    def finished(mirror, event) -> bool:
        # Asked after every frame: O(1), not a look at every session's state (which made this
        # process, not the host, the bottleneck of the client column).
        return len(ended) == len(channels)

    await client.wait_for(finished, timeout=600)
    elapsed = time.perf_counter() - started
    errors = [c for c in channels if client.state(c)["turns"][0]["state"] != "complete"]
    await client.close()
    if errors:
        raise SystemExit(f"{len(errors)} turns did not complete")
    if model.startswith("fast"):
        print(f"result {json.dumps({'deltas': len(arrivals), 'seconds': elapsed})}", flush=True)
        return
    samples = sorted((arrived - int(stamp)) / 1e6 for arrived, content in arrivals for stamp in content.split(";") if stamp)
    print(f"result {json.dumps({'median': median(samples), 'p99': percentile(samples, 0.99), 'count': len(samples)})}", flush=True)


# -- this process: the host, and the bare SDK baseline ---------------------------------------------


async def _bare_sdk(base_url: str, model: str, sessions: int, *, typed: bool = False) -> dict[str, float]:
    """The baseline: the ``openai`` SDK at its best, as the host uses it (its aiohttp-backed client,
    the body posted as orjson bytes, the raw SSE read with orjson), or with ``typed`` as it comes
    (default httpx client, ``create(stream=True)`` and its typed chunks)."""
    import openai

    from benchmarks._bare_sdk import open_raw, sse_data

    http = None if typed else openai.DefaultAioHttpClient()
    client = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, http_client=http)
    paced = model.startswith("paced")
    samples: list[float] = []
    seen = 0
    cpu_first = cpu_last = 0.0

    def got(content: str) -> None:
        nonlocal seen, cpu_first, cpu_last
        if not seen:
            cpu_first = time.process_time()
        seen += 1
        if paced:
            now = time.perf_counter_ns()
            samples.extend((now - int(stamp)) / 1e6 for stamp in content.split(";") if stamp)
            cpu_last = time.process_time()

    async def typed_stream() -> None:
        stream = await client.chat.completions.create(model=model, messages=[{"role": "user", "content": "go"}], stream=True)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                got(chunk.choices[0].delta.content)

    async def raw_stream() -> None:
        body = {"model": model, "messages": [{"role": "user", "content": "go"}]}
        async for chunk in sse_data(await open_raw(client, "/chat/completions", body)):
            choices = chunk["choices"]
            if choices and (content := choices[0]["delta"].get("content")):
                got(content)

    async def staggered(index: int) -> None:
        if paced:
            await asyncio.sleep(_STAGGER * index / sessions)
        await (typed_stream() if typed else raw_stream())

    started = time.perf_counter()
    await asyncio.gather(*(staggered(index) for index in range(sessions)))
    elapsed = time.perf_counter() - started
    await client.close()
    if not paced:
        return {"deltas": seen, "seconds": elapsed}
    samples.sort()
    return {"median": median(samples), "p99": percentile(samples, 0.99), "count": len(samples),
            "cpu_us": (cpu_last - cpu_first) * 1e6 / max(1, seen - 1)}


async def _through_host(base_url: str, model: str, sessions: int, stagger: float = _STAGGER) -> dict[str, float]:
    from host.runtime.memory import settle
    from host.service import AgentHost
    from host.transport.server import start_host
    from host.transport.ws_protocol import TickBatchingWebSocketProtocol

    with tempfile.TemporaryDirectory() as data_dir:
        host = AgentHost(host_config(data_dir, base_url, model, TOKEN))
        paced = model.startswith("paced")
        # The host's own loop runs these hooks: they only note the clock and keep a reference;
        # the stamps are read after the run, so that measuring costs the host next to nothing.
        # A chunk's dispatch is kept in three flat lists (ints and strings, which the garbage
        # collector never tracks), not a tuple a chunk: thousands of those, young and alive, were
        # half of what every young collection of the host walked at 140 sessions.
        queued_at: list[int] = []
        queued_channel: list[str] = []
        queued_content: list[str] = []
        written_raw: list[tuple[int, list[str]]] = []

        cpu_marks: list[tuple[int, float]] = []  # (index in queued_raw, process CPU time) every 32 deltas, and the last

        def at_dispatch(channel: str, envelope: dict) -> None:
            # The frame is handed to every subscriber's socket buffer in this same call.
            if paced:
                action = envelope["action"]
                if action.get("type") == "chat/delta":
                    queued_at.append(time.perf_counter_ns())
                    queued_channel.append(channel)
                    queued_content.append(action["content"])
                    if len(queued_at) % 32 == 1:
                        cpu_marks.append((len(queued_at) - 1, time.process_time()))

        host.store.token_observers.append(at_dispatch)  # tokens only, without rebuilding states
        write_buffered = TickBatchingWebSocketProtocol._write_buffered

        def timed_write(protocol: TickBatchingWebSocketProtocol, force: bool = False, durable: bool = False) -> None:
            if paced and protocol._pending:
                written_raw.append((time.perf_counter_ns(), protocol._pending))  # the list is handed over, never reused
            write_buffered(protocol, force, durable)

        TickBatchingWebSocketProtocol._write_buffered = timed_write  # type: ignore[method-assign]  # timed for the run
        running = await start_host(host, token=TOKEN)
        settle()  # as `agent-host serve` does once started
        child = ChildProcess(__file__, "clients", running.url.split("?")[0], model, sessions, stagger)
        try:
            result = json.loads(await child.expect("result", timeout=900))
            if queued_at:
                cpu_marks.append((len(queued_at) - 1, time.process_time()))  # the client saw the last turn end
            await child.wait()
        finally:
            child.kill()
            await running.stop()
            TickBatchingWebSocketProtocol._write_buffered = write_buffered  # type: ignore[method-assign]  # restored
    return latency_figures(result, list(zip(queued_at, queued_channel, queued_content)), written_raw, cpu_marks)


def latency_figures(result: dict, queued_raw: list[tuple[int, str, str]], written_raw: list[tuple[int, list[str]]],
                    cpu_marks: list[tuple[int, float]]) -> dict:
    """``result`` with what one paced run measured: chunk written → frame dispatched (``queued_``)
    and → frame written (``written_``), median, p99 and steady p99; the CPU per chunk over the run
    and its steady part; the chunks seen and the seconds from the first to the last (``window``:
    their ``time.perf_counter`` readings).
    ``queued_raw``: (clock, channel, the chunk's text) at each chunk's dispatch; ``written_raw``:
    (clock, the frames' texts) at each socket write; ``cpu_marks``: (index in ``queued_raw``,
    process CPU time) every 32 chunks and at the last."""
    # "Steady": chunks the provider wrote once every session was streaming (after the last
    # session's first chunk), without the turn starts of the first second.
    first: dict[str, int] = {}
    for _, channel, content in queued_raw:
        first.setdefault(channel, int(content.split(";")[0]))
    steady_from = max(first.values(), default=0)
    stamps = re.compile(r'"content":"([0-9;]+)"')
    written_pairs = [(now, int(stamp)) for now, texts in written_raw for text in texts
                     for found in stamps.finditer(text) for stamp in found.group(1).split(";") if stamp]
    queued_pairs = [(now, int(stamp)) for now, _, content in queued_raw for stamp in content.split(";") if stamp]
    for name, pairs in (("written_", written_pairs), ("queued_", queued_pairs)):
        if pairs:
            every = sorted((now - stamp) / 1e6 for now, stamp in pairs)
            steady = sorted((now - stamp) / 1e6 for now, stamp in pairs if stamp >= steady_from) or [0.0]
            result.update({name + "median": median(every), name + "p99": percentile(every, 0.99),
                           name + "steady_p99": percentile(steady, 0.99)})
    if queued_raw:
        # CPU per chunk from the first chunk to the last (turn starts and ends included), and over
        # the steady part (from the first mark at or after the last session's first chunk).
        (first_index, first_cpu), (last_index, last_cpu) = cpu_marks[0], cpu_marks[-1]
        result["cpu_us"] = (last_cpu - first_cpu) * 1e6 / max(1, last_index - first_index)
        steady_marks = [(index, cpu) for index, cpu in cpu_marks if int(queued_raw[index][2].split(";")[0]) >= steady_from]
        if len(steady_marks) >= 2:
            (first_index, first_cpu), (last_index, last_cpu) = steady_marks[0], steady_marks[-1]
            result["steady_cpu_us"] = (last_cpu - first_cpu) * 1e6 / max(1, last_index - first_index)
        result["chunks"] = len(queued_raw)
        result["seconds"] = (queued_raw[-1][0] - queued_raw[0][0]) / 1e9
        result["window"] = (queued_raw[0][0] / 1e9, queued_raw[-1][0] / 1e9)  # ``time.perf_counter`` readings
    return result


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deltas", type=int, default=4000)
    parser.add_argument("--sessions", default="1,50,200")
    parser.add_argument("--rate", type=float, default=20, help="chunks per second per session in the latency runs")
    parser.add_argument("--seconds", type=float, default=3, help="how long each paced session streams")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--busy", type=int, default=0, help="processes spinning on the CPU during the latency runs")
    parser.add_argument("--no-pin", action="store_true", help="let the processes share every CPU (see the module docstring)")
    args = parser.parse_args()
    placement = "not pinned" if args.no_pin else pin_measured_process()

    busy: list[ChildProcess] = []
    server = ChildProcess(__file__, "sse")
    try:
        base_url = await server.expect("url")
        print(f"provider streams, median of {args.repeat}; {machine_note()}; {placement}")
        print(f"command: {command_line()}")
        fast = f"fast-{args.deltas}"
        # Untimed: the first stream of a process imports the SDK, its HTTP client and the turn loop.
        await _bare_sdk(base_url, "fast-100", 1)
        await _through_host(base_url, "fast-100", 1)
        sdk_rates, typed_rates, host_rates = [], [], []
        for _ in range(args.repeat):
            bare = await _bare_sdk(base_url, fast, 1)
            sdk_rates.append(bare["deltas"] / bare["seconds"])
            hosted = await _through_host(base_url, fast, 1)
            assert hosted["deltas"] == args.deltas, hosted
            host_rates.append(hosted["deltas"] / hosted["seconds"])
            typed = await _bare_sdk(base_url, fast, 1, typed=True)
            typed_rates.append(typed["deltas"] / typed["seconds"])
        sdk, host, typed_sdk = median(sdk_rates), median(host_rates), median(typed_rates)
        pairs = [h / b for h, b in zip(host_rates, sdk_rates)]
        print(f"{'stream of ' + str(args.deltas) + ' deltas':<58}{'deltas/s':>12}")
        print(f"{'baseline: openai SDK, aiohttp client, raw SSE + orjson':<58}{sdk:>12,.0f}")
        print(f"{'SDK → host → WebSocket → client process':<58}{host:>12,.0f}")
        print(f"{'ratio host / baseline (range over the pairs)':<58}{host / sdk:>12.2f}  ({min(pairs):.2f}-{max(pairs):.2f})")
        print(f"{'(not a baseline) openai SDK as it comes: httpx, typed chunks':<58}{typed_sdk:>12,.0f}")
        print()
        count = round(args.rate * args.seconds)
        paced = f"paced-{count}-{args.rate:g}"
        busy.extend(ChildProcess(__file__, "busy") for _ in range(args.busy))
        print(f"{args.rate:g} chunks/s per session for {args.seconds:g} s, starts staggered"
              f"{f', {args.busy} processes spinning on the CPU' if busy else ''}; ms from chunk written by the fake provider to:")
        print("(median and p99 over every chunk; 'steady' is the p99 of the chunks written once every session was streaming;")
        print(" CPU: µs of the measured process's CPU per chunk, from the first chunk to the last, and while every session streamed)")
        print(f"{'sessions':>8} | {'baseline: parsed':>16} {'p99':>7} {'CPU':>6} | {'host: frame queued':>18} {'p99':>7} {'steady':>7} | "
              f"{'host: frame written':>19} {'p99':>7} {'steady':>7} | {'client process: frame':>21} {'p99':>7} | {'host CPU':>8} {'steady':>7}")
        for sessions in (int(n) for n in args.sessions.split(",")):
            bare_runs, host_runs = [], []
            for _ in range(args.repeat):
                bare_runs.append(await _bare_sdk(base_url, paced, sessions))
                host_runs.append(await _through_host(base_url, paced, sessions))

            def both(runs: list[dict], key: str = "") -> str:
                text = f"{median([r[key + 'median'] for r in runs]):.2f} {median([r[key + 'p99'] for r in runs]):>7.2f}"
                if key + "steady_p99" in runs[0]:
                    text += f" {median([r[key + 'steady_p99'] for r in runs]):>7.2f}"
                return text

            bare_cpu, host_cpu = median([r["cpu_us"] for r in bare_runs]), median([r["cpu_us"] for r in host_runs])
            steady_cpu = median([r.get("steady_cpu_us", r["cpu_us"]) for r in host_runs])
            written = sorted(r["written_p99"] for r in host_runs)
            print(f"{sessions:>8} | {both(bare_runs):>24} {bare_cpu:>6.1f} | {both(host_runs, 'queued_'):>34} | "
                  f"{both(host_runs, 'written_'):>35} | {both(host_runs):>29} | {host_cpu:>8.1f} {steady_cpu:>7.1f}", flush=True)
            print(f"{'':>8}   frame written p99 of each run: {', '.join(f'{value:.2f}' for value in written)} ms", flush=True)
        print(f"load average after the run: {machine_note()}")
    finally:
        server.kill()
        for spinner in busy:
            spinner.kill()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        if sys.argv[2] == "sse":
            asyncio.run(_serve_sse())
        elif sys.argv[2] == "busy":
            while True:  # other work on the machine
                pass
        else:
            asyncio.run(_clients(sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])))
        sys.exit(0)
    asyncio.run(main())
