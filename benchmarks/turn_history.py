"""Host CPU per turn against the session's history: does turn 400 cost what turn 2 did?

    .venv/bin/python benchmarks/turn_history.py [--turns 400] [--chunks 50] [--window 10] [--protocol 0.2.0,0.9.0]
        [--provider openai-chat|anthropic|openai-responses] [--profile]

Three processes on 127.0.0.1, no keys: the fake model server of ``benchmarks._fake_chat`` speaking
``--provider``'s API (its own process; every answer ``--chunks`` chunks of ``"tok "``; OpenAI Chat
Completions by default), the host (this process: that API's real SDK in an agent of its kind whose
model has a context window of 400,000 tokens, as the host's catalogue gives GPT-5, so the context
budget estimates every request; an Anthropic agent marks its prompt for caching, as by default; the
turn loop, store, journal on disk, WebSocket), and one client (its own process, a plain ``websockets``
connection) speaking ``--protocol``, subscribed to the root channel and its session (0.9.0: and
the session's chat), as VS Code (0.9.0) or the terminal client (0.2.0) is. The client sends
``--turns`` messages of about 200 characters one after the other, each once the previous turn
completed, so the session's history grows by one turn each time (the whole of it is sent to the
model every turn, as a provider needs it).

Printed per protocol: the CPU this process (the host) spent per turn (``time.process_time``
between one ``chat/turnComplete`` and the next: the turn's start, its model call, its stream,
its end, its frames and journal), the median over the first ``--window`` turns from turn 2 on and
over the last ``--window`` turns, and their ratio (the figure to read: 1.0 means a turn costs the
same whatever the session's length). Turn 1 is left out (the first turn imports the turn loop
and the SDK). Both figures come from the same run, so the machine's load moves both alike;
``--profile`` also prints where the host's CPU went over the last window (cProfile, top functions
by their own time; profiling slows everything, so no figure is taken from that run), and with
``--profile-out FILE`` writes it to ``FILE.<protocol>`` for ``pstats`` (a run with ``--turns 41
--window 20`` profiles turns 22-41, to set beside the last 20 turns of a long run).
``--instructions`` runs each protocol's session a second time with the host under valgrind's
callgrind, counting the host's instructions (user space) over the same two windows only: a figure
the machine's load does not move, as CPU time on a shared machine is moved by it.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._callgrind import control, require_valgrind
from benchmarks._fake_chat import APIS, Reply, host_config, serve_chat
from benchmarks._runs import REPO, ChildProcess, command_line, machine_note, median

TOKEN = "bench-token-0123456789"
QUESTION = "Please go on with the story and keep it short; " * 4
"""About 200 characters, the user's message of every turn."""


# -- the fake model server (its own process) --------------------------------------------------------


async def _serve(api: str) -> None:
    """Every POST gets a streamed answer in ``api``'s events: the model name ``fast-N`` says N chunks."""

    async def respond(body: bytes, reply: Reply) -> None:
        count = int(json.loads(body)["model"].rpartition("-")[2])
        reply.role()
        for index in range(count):
            reply.text("tok ")
            if index % 64 == 0:
                await reply.drain()

    _, url = await serve_chat(respond, api=api)
    print(f"url {url}", flush=True)
    await asyncio.Event().wait()


# -- the client process ----------------------------------------------------------------------------


async def _client(url: str, protocol: str, model: str, turns: int) -> None:
    from websockets.asyncio.client import connect

    ws = await connect(url, max_size=None, compression=None)
    ident = str(uuid.uuid4())
    pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
    actions: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    next_id = 0

    async def read() -> None:
        async for text in ws:
            frame = json.loads(text)
            if "id" in frame and frame["id"] in pending:
                pending.pop(frame["id"]).set_result(frame)
            elif frame.get("method") == "action":
                actions.put_nowait(frame["params"])

    reader = asyncio.create_task(read())

    async def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        nonlocal next_id
        next_id += 1
        pending[next_id] = asyncio.get_running_loop().create_future()
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}))
        reply = await asyncio.wait_for(pending[next_id], 120)
        if "error" in reply:
            raise SystemExit(f"{method} failed: {reply['error']}")
        return reply["result"]

    async def until(wanted: str, turn_id: str | None = None) -> None:
        while True:
            action = (await asyncio.wait_for(actions.get(), 120))["action"]
            if action.get("type") == wanted and (turn_id is None or action.get("turnId") == turn_id):
                return
            if turn_id is not None and action.get("turnId") == turn_id and action.get("type", "").endswith("/error"):
                raise SystemExit(f"turn failed: {action}")

    await request("initialize", {"channel": "ahp-root://", "protocolVersions": [protocol], "clientId": "bench",
                                 "initialSubscriptions": ["ahp-root://"]})
    if protocol == "0.2.0":
        session = chat = f"ahp-session:/{ident}"
        await request("createSession", {"channel": session, "provider": "bench", "model": {"id": model}})
        snapshot = (await request("subscribe", {"channel": session}))["snapshot"]
        ready = snapshot["state"].get("lifecycle") == "ready"
    else:
        session, chat = f"bench:/{ident}", f"ahp-chat:/bench/{ident}/default"
        await request("createSession", {"channel": session, "model": {"id": model}})
        snapshot = (await request("subscribe", {"channel": session}))["snapshot"]
        chat = snapshot["state"]["defaultChat"]
        ready = snapshot["state"].get("lifecycle") == "ready"
        await request("subscribe", {"channel": chat})
    if not ready:
        await until("session/ready")
    print("ready", flush=True)
    for index in range(turns):
        turn_id = f"turn-{index}"
        text = f"{index}: {QUESTION}"
        if protocol == "0.2.0":
            action = {"type": "session/turnStarted", "turnId": turn_id, "userMessage": {"text": text}}
        else:
            action = {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-12-06T00:00:00.000Z",
                      "message": {"text": text, "origin": {"kind": "user"}}}
        await ws.send(json.dumps({"jsonrpc": "2.0", "method": "dispatchAction",
                                  "params": {"channel": chat, "clientSeq": index + 1, "action": action}}))
        await until("session/turnComplete" if protocol == "0.2.0" else "chat/turnComplete", turn_id)
    print("done", flush=True)
    reader.cancel()
    await ws.close()


# -- this process: the host ------------------------------------------------------------------------


async def _run(base_url: str, protocol: str, turns: int, chunks: int, window: int, profile: bool,
               counted: bool = False, profile_out: str | None = None, api: str = "openai-chat") -> list[float]:
    """CPU seconds of this process per turn (turn 2 on), and with ``profile`` the profile of the
    last window printed. With ``counted`` (under callgrind) instructions are counted over the two
    windows only, each dumped when it ends."""
    from host.runtime.memory import settle
    from host.service import AgentHost
    from host.transport.server import start_host

    model = f"fast-{chunks}"
    marks: list[float] = []
    profiler = cProfile.Profile() if profile else None

    def at_change(channel: str, before: Any, after: Any, envelope: dict[str, Any]) -> None:
        if envelope["action"].get("type") == "chat/turnComplete":
            marks.append(time.process_time())
            if profiler is not None and len(marks) == turns - window:
                profiler.enable()
            if counted and len(marks) in (1, turns - window):
                control("-z")
                control("-i", "on")
            elif counted and len(marks) in (1 + window, turns):
                control("-i", "off")
                control("-d")

    with tempfile.TemporaryDirectory() as data_dir:
        host = AgentHost(host_config(data_dir, base_url, model, TOKEN, context_window=400000, api=api))
        host.store.change_observers.append(at_change)
        running = await start_host(host, token=TOKEN)
        settle()  # as `agent-host serve` does once started
        child = ChildProcess(__file__, "client", running.url, protocol, model, turns)
        try:
            await child.expect("ready", timeout=120)
            await child.expect("done", timeout=3600)
            if profiler is not None:
                profiler.disable()
            await child.wait()
        finally:
            child.kill()
            await running.stop()
    if profiler is not None:
        out = io.StringIO()
        if profile_out:
            profiler.dump_stats(profile_out)
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(40)
        print(f"where the host's CPU went over turns {turns - window + 1}-{turns} ({protocol}), by own time:")
        print(out.getvalue())
    if len(marks) != turns:
        raise SystemExit(f"{len(marks)} of {turns} turns completed")
    return [later - earlier for earlier, later in zip(marks, marks[1:])]


async def _instructions(base_url: str, protocol: str, turns: int, chunks: int, window: int,
                        api: str = "openai-chat") -> tuple[float, float]:
    """Instructions of the host per turn over turns 2 to ``1 + window`` and over the last
    ``window``: this script run again, as the host, under callgrind."""
    with tempfile.TemporaryDirectory() as out:
        process = await asyncio.create_subprocess_exec(
            "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}/counts",
            sys.executable, __file__, "--host", base_url, protocol, str(turns), str(chunks), str(window), api,
            cwd=REPO, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
        _, stderr = await process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"the host under callgrind failed:\n{stderr.decode()[-3000:]}")
        dumps = sorted(Path(out).glob("counts.*"), key=lambda path: int(path.name.rsplit(".", 1)[1]))
        totals = [int(re.search(r"^totals: (\d+)", path.read_text(), re.M).group(1)) for path in dumps]  # type: ignore[union-attr]
    if len(totals) != 2:
        raise SystemExit(f"expected two windows counted, callgrind wrote {len(totals)}")
    return totals[0] / window, totals[1] / window


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--chunks", type=int, default=50, help="chunks of every answer")
    parser.add_argument("--window", type=int, default=10, help="turns whose median is taken at each end")
    parser.add_argument("--protocol", default="0.2.0,0.9.0")
    parser.add_argument("--provider", default="openai-chat", choices=APIS,
                        help="the API the fake model server speaks (and the host's agent uses)")
    parser.add_argument("--profile", action="store_true", help="print a profile of the last window (no figures)")
    parser.add_argument("--profile-out", help="with --profile: also write the profile (pstats) to this file")
    parser.add_argument("--instructions", action="store_true",
                        help="also count the host's instructions per turn in both windows (callgrind; slow)")
    args = parser.parse_args()
    if args.instructions:
        require_valgrind()
    if args.turns < 2 * args.window + 1:
        raise SystemExit("--turns must be at least twice --window, plus one")
    server = ChildProcess(__file__, "sse", args.provider)
    try:
        base_url = await server.expect("url")
        print(f"host CPU per turn against history, {args.turns} turns of {args.chunks} chunks, provider API {args.provider}; "
              f"{machine_note()}")
        print(f"command: {command_line()}")
        print(f"{'protocol':>8} | {'ms turns 2-' + str(1 + args.window):>13} | {'ms turns ' + str(args.turns - args.window + 1) + '-' + str(args.turns):>15} | {'ratio':>6} | ms every 50th turn")
        for protocol in args.protocol.split(","):
            costs = await _run(base_url, protocol, args.turns, args.chunks, args.window, args.profile,
                               profile_out=args.profile_out and f"{args.profile_out}.{protocol}", api=args.provider)
            early, late = median(costs[:args.window]) * 1e3, median(costs[-args.window:]) * 1e3
            every = ", ".join(f"{median(costs[max(0, i - 2):i + 3]) * 1e3:.1f}" for i in range(0, len(costs), 50))
            print(f"{protocol:>8} | {early:>13.2f} | {late:>15.2f} | {late / early:>6.2f} | {every}", flush=True)
            if args.instructions:
                first, last = await _instructions(base_url, protocol, args.turns, args.chunks, args.window, args.provider)
                print(f"{'':>8}   instructions per turn (callgrind, user space): {first:,.0f} over turns 2-{1 + args.window}, "
                      f"{last:,.0f} over turns {args.turns - args.window + 1}-{args.turns}, ratio {last / first:.2f}", flush=True)
        print(f"load average after the run: {machine_note()}")
    finally:
        server.kill()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--host":  # the host under callgrind (``_instructions``)
        url, protocol, *numbers, api = sys.argv[2:]
        turns, chunks, window = map(int, numbers)
        asyncio.run(_run(url, protocol, turns, chunks, window, False, counted=True, api=api))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "--child" and sys.argv[2] == "sse":
        asyncio.run(_serve(sys.argv[3]))
        sys.exit(0)
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        asyncio.run(_client(sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])))
        sys.exit(0)
    asyncio.run(main())
