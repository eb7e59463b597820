"""How many streaming sessions one core holds at p99 ≤ 10 ms: the host beside the best any host could do.

    .venv/bin/python benchmarks/capacity_relay.py [--rate 20] [--seconds 4] [--limit-ms 10] [--start 25] [--max 1600] [--repeat 3] [--side both]

``capacity.py``'s one-process search (the same fake provider, the same pinning, the same figure:
chunk written by the provider → frame written to the client's socket, p99 over every chunk of a
run, the median of ``--repeat`` runs, the same "streams read late" rule and the same CPU per
chunk) run for two servers in one invocation:

* **host**: ``capacity.py``'s run as it is (``provider_stream._through_host``): the host in this
  process, an ``openai-chat`` agent per session, one ``AhpClient`` process subscribed to all.
* **relay** (the ceiling): the minimal relay of ``chunk_end_to_end.py`` in this process: the
  ``openai`` SDK with its aiohttp client reading each stream the fastest way
  (``benchmarks/_bare_sdk.py``), per chunk one envelope-shaped dict encoded with one
  ``orjson.dumps``, framed by the ``websockets`` Sans-I/O protocol and the tick's frames written
  with one ``transport.write`` at its end. No state, no journal, no ASGI. Its client process
  holds one WebSocket connection and starts the streams one after another, spread over the same
  time as the host's turns (``max(1, N / 200)`` seconds, or ``--starts-per-second``).

The two searches run in turns (one count of one side, then one of the other), so that the
machine's load, which moves minute by minute, weighs on both alike; their verdicts and the ratio
host ÷ relay are printed at the end, and for each side what its steady CPU per chunk at the count
it held would allow if it had the whole core (``1e6 / (rate × µs)``). On a loaded machine the
absolute counts say little; the ratio says how far the host is from a relay under the same load.
Where the relay's search ends with its streams read late while its CPU per chunk is low, it is the
load generators (the fake provider and the client process, on the other CPUs with the machine's
other work) that fell behind, not the relay: the relay's count is then a floor, and the CPU line is
the fairer ceiling.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import ChildProcess, command_line, machine_note, median, pin_measured_process
from benchmarks.capacity import STREAM, _one_count, _search, _verdict, search_arguments
from benchmarks.chunk_end_to_end import _Relay
from benchmarks.provider_stream import _through_host, latency_figures

_ENDED = b'"chat/turnComplete"'


class _TimedRelay(_Relay):
    """The minimal relay, each text frame ``MODEL CHANNEL`` a stream of its own; it notes the clock
    at each chunk parsed and at each write, as ``_through_host`` does for the host."""

    def __init__(self, sdk: Any, queued: list[tuple[int, str, str]], written: list[tuple[int, list[bytes]]],
                 cpu_marks: list[tuple[int, float]]) -> None:
        super().__init__(sdk, "openai-chat")  # (its ``stream`` is this class's own: the fake provider's Chat Completions)
        self.queued, self.written, self.cpu_marks = queued, written, cpu_marks

    def end_of_tick(self) -> None:
        tick = self.tick
        if tick:
            self.written.append((time.perf_counter_ns(), tick))  # the list is handed over, never reused
        super().end_of_tick()

    async def stream(self, text: str) -> None:
        import orjson

        from benchmarks._bare_sdk import open_raw, sse_data

        model, channel = text.split()
        body = {"model": model, "messages": [{"role": "user", "content": "go"}]}
        dumps, send, queued, marks = orjson.dumps, self.send, self.queued, self.cpu_marks
        async for chunk in sse_data(await open_raw(self.sdk, "/chat/completions", body)):
            choices = chunk["choices"]
            if choices and (content := choices[0]["delta"].get("content")):
                queued.append((time.perf_counter_ns(), channel, content))
                if len(queued) % 32 == 1:
                    marks.append((len(queued) - 1, time.process_time()))
                self.seq += 1
                send(dumps({"jsonrpc": "2.0", "method": "action", "params": {
                    "channel": channel, "action": {"type": "chat/delta", "turnId": "t", "partId": "p", "content": content},
                    "serverSeq": self.seq}}))
        self.seq += 1
        send(dumps({"jsonrpc": "2.0", "method": "action", "params": {
            "channel": channel, "action": {"type": "chat/turnComplete", "turnId": "t"}, "serverSeq": self.seq}}))


async def _through_relay(base_url: str, model: str, sessions: int, stagger: float) -> dict[str, float]:
    """One paced run of ``sessions`` streams through the relay; the figures ``_through_host`` returns."""
    import openai

    from host.runtime.memory import settle

    queued: list[tuple[int, str, str]] = []
    written: list[tuple[int, list[bytes]]] = []
    cpu_marks: list[tuple[int, float]] = []
    sdk = openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, http_client=openai.DefaultAioHttpClient())
    relays: list[_TimedRelay] = []

    def accept() -> _TimedRelay:
        relays.append(_TimedRelay(sdk, queued, written, cpu_marks))
        return relays[-1]

    server = await asyncio.get_running_loop().create_server(accept, "127.0.0.1", 0)
    settle()  # the host's collector policy, so that both sides run under the same one
    child = ChildProcess(__file__, "clients", f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/", model, sessions, stagger)
    try:
        result: dict[str, Any] = {"sessions": int(await child.expect("result", timeout=900))}
        if queued:
            cpu_marks.append((len(queued) - 1, time.process_time()))  # the client saw the last stream end
        await child.wait()
    finally:
        child.kill()
        server.close()
        for relay in relays:
            if relay.transport is not None:
                relay.transport.close()
        await sdk.close()
    texts = [(now, [message.decode() for message in messages]) for now, messages in written]
    return latency_figures(result, queued, texts, cpu_marks)


async def _clients(url: str, model: str, sessions: int, stagger: float) -> None:
    """The relay's client process: one connection, ``sessions`` streams started one after another
    over ``stagger`` seconds; prints ``result N`` once every stream's end was received."""
    from websockets.asyncio.client import connect

    async with connect(url, max_size=None, compression=None) as ws:
        async def start() -> None:
            for index in range(sessions):
                await ws.send(f"{model} bench:/relay/{index}")
                await asyncio.sleep(stagger / sessions)

        starting = asyncio.create_task(start())
        ended = 0
        while ended < sessions:
            message = await ws.recv(decode=False)
            if _ENDED in message:
                ended += 1
        await starting
    print(f"result {ended}", flush=True)


async def main() -> None:
    parser = search_arguments(__doc__.splitlines()[0], most=1600)
    parser.add_argument("--side", default="both", choices=("both", "host", "relay"))
    args = parser.parse_args()
    placement = pin_measured_process()
    server = ChildProcess(STREAM, "sse")
    sides = {"relay": _through_relay, "host": _through_host}
    if args.side != "both":
        sides = {args.side: sides[args.side]}
    try:
        base_url = await server.expect("url")
        print(f"capacity at p99 chunk → frame written ≤ {args.limit_ms:g} ms, {args.rate:g} chunks/s per session, "
              f"median of {args.repeat}, {' and '.join(sides)} in turns; {machine_note()}; {placement}")
        print(f"command: {command_line()}")
        for serve in sides.values():  # untimed: the first streams of a process import the SDK (and the turn loop)
            await serve(base_url, f"paced-{round(args.rate)}-{args.rate:g}", 5, 0.1)
        print(f"{'side':>5} {'sessions':>8} | {'p99 ms':>9} | {'steady p99':>10} | {'CPU µs/chunk':>7} {'steady':>7} | {'streamed s / planned':>19} |")
        turn = asyncio.Lock()  # one count at a time; the lock is fair, so the two searches alternate

        steady_cpu: dict[tuple[str, int], list[float]] = {}
        """Each side's and count's steady CPU µs per chunk, one per run."""

        async def measure(side: str, sessions: int) -> tuple[bool, str]:
            async def serve(*arguments: Any) -> dict[str, float]:
                run = await sides[side](*arguments)
                steady_cpu.setdefault((side, sessions), []).append(run.get("steady_cpu_us", run["cpu_us"]))
                return run

            async with turn:
                held, line = await _one_count(base_url, sessions, args, serve)
            return held, f"{side:>5} {line}"

        async def search(side: str) -> tuple[int, int | None]:
            return await _search(lambda n: measure(side, n), args)

        results = dict(zip(sides, await asyncio.gather(*(search(side) for side in sides))))
        for side, (held_at, missed_at) in results.items():
            print(_verdict(f"one core, {side}", held_at, missed_at, args))
            if held_at:
                # Where the machine's other work (or the load generators on the other CPUs) ends the
                # search before this process's CPU does: what its CPU per chunk alone would allow.
                cpu = median(steady_cpu[side, held_at])
                print(f"  {side}: steady CPU {cpu:.1f} µs per chunk at {held_at} sessions: a core's worth of it feeds "
                      f"{1e6 / (args.rate * cpu):.0f} sessions at {args.rate:g} chunks/s")
        if len(results) == 2 and results["relay"][0]:
            print(f"host ÷ relay sessions held: {results['host'][0] / results['relay'][0]:.2f}")
        print(f"load average after the run: {machine_note()}")
    finally:
        server.kill()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child" and sys.argv[2] == "clients":
        asyncio.run(_clients(sys.argv[3], sys.argv[4], int(sys.argv[5]), float(sys.argv[6])))
        sys.exit(0)
    asyncio.run(main())
