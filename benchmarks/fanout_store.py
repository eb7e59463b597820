"""The host's per-delta cost in the fan-out, without sockets: what ``fanout.py``'s host pays for
each streamed delta before the WebSocket layer.

    .venv/bin/python benchmarks/fanout_store.py [--deltas 20000] [--repeat 9] [--subscribers 1] [--protocol 0.9.0] [--paced] [--cluster]

The same set-up as ``fanout.py``'s host (a real ``AgentHost`` with its SQLite journal on disk, one
session whose chat's active turn receives ``chat/delta`` actions, no agent running the turn), with
``--subscribers`` in-process subscribers speaking ``--protocol`` through the host's own dialect (the
fan-out group a connection of that version joins); a subscriber only keeps the frames it is given.
Every 64 deltas the journal commits (as the transport's end-of-tick write makes it do). Printed:
this process's CPU µs per delta (``time.process_time``) for each of ``--repeat`` runs of
``--deltas``, their median and their minimum: on a shared machine the minimum is the figure to
compare (what the path costs when nothing else takes the core's caches).

For a figure that the machine's load does not move at all, count instructions: run the script
under ``valgrind --tool=callgrind`` twice, with ``--repeat 1`` and ``--repeat 3``; the difference of
the two totals divided by 2 × ``--deltas`` is the instructions per delta (start-up cancels out).

``--paced``: each delta is its own tick, as at a model's pace: the journal commits after each and the
event loop turns once. ``--cluster`` (paced too): the host is a process of a cluster (``[cluster]
url``), its log the JetStream log on a real ``nats-server`` started here (outside valgrind), and
each delta is awaited until every subscriber has its frame (a networked log sends a frame only once
the stream acknowledged it). The same count with callgrind gives the store path's instructions per
delta at a model's pace, embedded or in cluster mode (the nats-server's own CPU is not in it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._runs import command_line, machine_note
from benchmarks.fanout import open_turn

DELTA_TEXT = "token "
_COMMIT_EVERY = 64


class _Subscriber:
    """Keeps what it is sent, as a connection's buffer does until the end of the tick."""

    def __init__(self, translator: Any) -> None:
        self.translator = translator
        self.frames: list[str] = []
        self.received = 0
        self.waiter: asyncio.Future[None] | None = None
        """Resolved by the next frame (``--cluster``: the benchmark waits for it)."""

    def send(self, text: str) -> None:
        self.frames.append(text)
        self.received += 1
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


async def main(deltas: int, repeat: int, subscribers: int, protocol: str, paced: bool, cluster: bool) -> None:
    from ahp.dialects.negotiation import Negotiated
    from ahp.state.channels import parse_chat_uri
    from host.config import load_config
    from host.service import AgentHost
    from host.transport.dialects import dialect_for

    print(f"store path per delta, {deltas} deltas per run, {subscribers} subscriber(s) speaking {protocol}"
          f"{', one delta per tick' if paced else ''}{', cluster mode (JetStream log)' if cluster else ''}; {machine_note()}")
    print(f"command: {command_line()}")
    with tempfile.TemporaryDirectory() as data, contextlib.ExitStack() as stack:
        overrides: dict[str, Any] = {"server": {"port": 0, "data_dir": data}}
        if cluster:
            from host.cluster.nats_server import EmbeddedNats

            server = EmbeddedNats(Path(data) / "nats").start()
            stack.callback(server.stop)
            overrides["cluster"] = {"url": server.url}
        config = load_config(None, overrides=overrides, environ={})
        host = AgentHost(config)
        await host.open()  # (a cluster's log connects here)
        store = host.store
        public, chat, turn = open_turn(host)
        if cluster:  # the turn runner hears of the turn only once the stream numbered it: stopped then
            assert store._awaiting is not None
            await store._awaiting.idle()
            parsed = parse_chat_uri(chat)
            assert parsed is not None
            host.runner.forget(parsed[1])
        await asyncio.sleep(0.3)  # the session's preparation settles
        dialect = dialect_for(Negotiated(protocol, protocol))
        group = [_Subscriber(dialect.translator) for _ in range(subscribers)]
        channels = dialect.internal_channels(host, public if protocol == "0.2.0" else chat) or [chat]
        for subscriber in group:
            for channel in channels:
                store.subscribe(channel, subscriber, dialect.translator_for(host, public if protocol == "0.2.0" else chat, channel))
        runs: list[float] = []
        for _ in range(repeat):
            started = time.process_time()
            for index in range(deltas):
                store.dispatch(chat, {"type": "chat/delta", "turnId": turn, "partId": "p", "content": DELTA_TEXT})
                if cluster:
                    for subscriber in group:
                        subscriber.waiter = asyncio.get_running_loop().create_future()
                    await asyncio.wait_for(asyncio.gather(*(s.waiter for s in group if s.waiter is not None)), 120)
                elif paced:
                    store.flush()
                    await asyncio.sleep(0)
                if index % _COMMIT_EVERY == _COMMIT_EVERY - 1:
                    store.flush()
                    for subscriber in group:
                        subscriber.frames.clear()
            store.flush()
            runs.append((time.process_time() - started) * 1e6 / deltas)
        assert store.active_turn_id(chat) == turn, "the turn ended: the deltas were not streamed into it"
        assert all(subscriber.received == repeat * deltas for subscriber in group), "a subscriber missed frames"
        await store.close()
    print("CPU µs per delta: " + ", ".join(f"{run:.2f}" for run in runs))
    print(f"median {statistics.median(runs):.2f}, minimum {min(runs):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--subscribers", type=int, default=1)
    parser.add_argument("--protocol", default="0.9.0", choices=("0.9.0", "0.2.0"))
    parser.add_argument("--cluster", action="store_true",
                        help="the host as a process of a cluster, its log on a nats-server started here")
    parser.add_argument("--paced", action="store_true", help="each delta its own tick (a commit and a loop turn each)")
    args = parser.parse_args()
    asyncio.run(main(args.deltas, args.repeat, args.subscribers, args.protocol, args.paced or args.cluster, args.cluster))
