"""Instructions per short turn, the host against a minimal relay's request: what a turn's start and
end cost beside its streamed text.

    .venv/bin/python benchmarks/turn_cost.py [--turns 10,40] [--protocol 0.9.0] [--side both]
        [--provider openai-chat|anthropic|openai-responses] [--first | --creation] [--profile FILE]

``capacity.py`` runs many short turns per session, so what every turn costs once (the turn's
start and end actions, their journal transactions, the customization refresh before the model
call, the activity and summary actions, the model request itself) is a large share of a core's
work there. This measures it in the setting of ``chunk_end_to_end.py`` (its peer, host and relay
processes, unchanged): the fake model server answers every turn with **one** text chunk, in lock
step with the client; the measured process (host or relay, under valgrind's callgrind) runs a few
untimed turns first, then, with callgrind's instrumentation on, ``N`` turns one after the other
(each sent once the previous one completed, as a user does); with ``--first`` each of them in a
session of its own, created before the count (a session's first turn, as in ``capacity.py``, where
every session streams one turn). Run for the two ``--turns`` counts,
the difference of the totals divided by the difference of the counts is one turn's instructions,
its one chunk included, without start-up or the session's creation.
``--creation`` (host only) measures the sessions' creation instead: ``N`` sessions created one
after another, each until the client sees it ``ready`` (its ``session/serverToolsChanged``,
customizations and catalogue included), with the instrumentation on; no turn is counted.

* **host**: ``agent-host serve`` as it runs (``start_host``), its session created by
  ``client.AhpClient`` speaking ``--protocol`` in the working directory a session gets by default
  (this repository: its ``.github`` folder and instruction files are the customizations a
  session lists), each turn a ``chat/turnStarted`` from the client through to ``chat/turnComplete``.
* **relay**: the minimal relay of ``chunk_end_to_end.py``: per turn one streamed request through
  the same SDK and HTTP client, one envelope per chunk and one for the turn's end, framed and
  written; no state, no journal.

The host's session grows by one turn per turn measured, so ``N`` turns cost a little more each
(``turn_history.py`` measures that growth; at 40 turns it is small). What scales with wall time
(keep-alive pings, timers) is counted too, at valgrind's pace. ``--profile FILE`` runs the host
natively instead, once, with the longer count, and writes a ``cProfile`` of the measured turns
(thread time) to FILE for ``pstats``, printing its top functions; no figure is taken from it.
Needs ``valgrind``.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import io
import os
import pstats
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import chunk_end_to_end
from benchmarks._callgrind import count, host_against_relay, require_valgrind
from benchmarks._runs import REPO, ChildProcess, command_line, machine_note

WARM_UP = 5
"""Untimed turns before the measured ones (imports, first-use caches, the first turn's set-up)."""


async def _short_turns(peer: ChildProcess, connect: str, turns: int, first: bool = False, creation: bool = False) -> None:
    """The peer's client connected, ``WARM_UP`` untimed turns, then ``turns`` turns of one chunk
    each with the instrumentation on; with ``first``, each in a session of its own created before
    (its first turn); with ``creation``, no turn measured: ``turns`` sessions created one after
    another, each until it is ready, with the instrumentation on."""
    peer.send(connect)
    await peer.expect("ready", timeout=3600)
    for _ in range(WARM_UP):
        peer.send("turn 1")
        await peer.expect("done", timeout=3600)
    if creation:
        peer.send("sessions 1")  # (the first creation after the warm-up turns: untimed too)
        await peer.expect("ready", timeout=3600)
        chunk_end_to_end._instrument(True)
        peer.send(f"sessions {turns}")
        await peer.expect("ready", timeout=3600)
        chunk_end_to_end._instrument(False)
        return
    if first:
        peer.send(f"sessions {turns}")
        await peer.expect("ready", timeout=3600)
    chunk_end_to_end._instrument(True)
    for index in range(turns):
        peer.send(f"turn 1 {index + 1}" if first else "turn 1")
        seen = await peer.expect("done", timeout=3600)
        if int(seen) != 1:
            raise SystemExit(f"turn {index + 1}: the client saw {seen} chunks of the turn's one")
    chunk_end_to_end._instrument(False)


def _profile(turns: int, protocol: str, api: str, mode: str, out: str) -> None:
    """The host natively, ``turns`` measured turns (or sessions created) profiled into ``out``; its top functions printed."""
    subprocess.run([sys.executable, __file__, "--child", "host", str(turns), protocol, api, mode], cwd=REPO, check=True,
                   env={**os.environ, "CHUNK_BENCH_PROFILE": out})
    text = io.StringIO()
    stats = pstats.Stats(out, stream=text)
    stats.sort_stats("tottime").print_stats(45)
    stats.sort_stats("cumulative").print_stats(60)
    what = f"{turns} sessions created" if mode == "creation" else f"{turns} {'first ' if mode == 'first' else ''}turns of one chunk"
    print(f"where the host's CPU went over {what} (cProfile, thread time):")
    print(text.getvalue())


def _mode(first: bool, creation: bool = False) -> str:
    return "creation" if creation else "first" if first else "later"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", default="10,40", help="the two turn counts whose difference is measured")
    parser.add_argument("--protocol", default="0.9.0", choices=("0.9.0", "0.2.0"), help="the host's client's AHP version")
    parser.add_argument("--side", default="both", choices=("both", "host", "relay"))
    parser.add_argument("--provider", default="openai-chat", choices=chunk_end_to_end.PROVIDERS,
                        help="the API the fake model server speaks (and the host's agent and the relay use)")
    parser.add_argument("--first", action="store_true",
                        help="each measured turn the first of a session created for it (before the count)")
    parser.add_argument("--creation", action="store_true",
                        help="instead of turns, the sessions' creation: instructions per session created until ready (host only)")
    parser.add_argument("--profile", metavar="FILE", help="profile the host natively instead (no figures)")
    args = parser.parse_args()
    short, long = (int(n) for n in args.turns.split(","))
    mode = _mode(args.first, args.creation)
    if args.creation and args.side != "host":
        parser.error("--creation measures the host only (--side host)")
    if args.profile:
        _profile(long, args.protocol, args.provider, mode, args.profile)
        return
    require_valgrind()
    unit = "session created until ready" if args.creation else "turn of one chunk"
    print(f"instructions per {unit} (callgrind, user space, the measured process's threads), "
          f"{long} minus {short} {'sessions' if args.creation else 'turns'}{', each the first of its session' if args.first and not args.creation else ''}, "
          f"provider API {args.provider}, client speaking {args.protocol}; {machine_note()}")
    print(f"command: {command_line()}")
    host_against_relay(
        ("relay", "host") if args.side == "both" else (args.side,),
        lambda side, n: count(__file__, side, n, args.protocol, args.provider, mode, what=f"the {side} run of {n} {'sessions' if args.creation else 'turns'}"),
        short, long, width=84, labels={
            "relay": "minimal relay: one streamed request, one envelope per chunk and one at the end",
            "host": "host: createSession → session ready" if args.creation else "host: chat/turnStarted → model request → chat/turnComplete"})
    print(f"load average after the run: {machine_note()}")


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        # ``--child host N PROTOCOL API MODE`` or ``--child relay N PROTOCOL API MODE`` (under callgrind)
        side, turns, protocol, api, mode = sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
        if side == "host":
            drive = functools.partial(_short_turns, first=mode == "first", creation=mode == "creation")
            asyncio.run(chunk_end_to_end._host(turns, protocol, None, api, drive=drive))
        else:
            asyncio.run(chunk_end_to_end._relay(turns, api, drive=_short_turns))
        sys.exit(0)
    main()
