"""Soak: thousands of short sessions, a long terminal and a long streamed turn against one host, its
journal on disk (database + WAL) and its memory printed over time, to see whether they level off.

    .venv/bin/python benchmarks/soak.py [--sessions 3000] [--keep 50] [--terminals 0] [--terminal-mb 30]
                                        [--turn-deltas 2000] [--rate 100] [--every 5] [--max-seconds 900]
                                        [--heap [--tracemalloc]]

Everything runs on 127.0.0.1 and stops by itself. The host runs as ``agent-host serve`` in its own
process (a fresh data directory, the offline agent, ``/bin/sh`` for terminals); this process runs a
fake OpenAI Chat Completions server and three clients, one per workload, all at once:

* sessions, one after another: created, sent one message (the offline agent streams its answer word
  by word), and disposed once ``--keep`` newer ones exist, as a user's sessions come and go;
* terminals, one after another (``--terminals``): created, one ``echo`` run in it, disposed;
* a terminal prints ``--terminal-mb`` megabytes, one command of 1 MB at a time, at a build log's
  pace (lines of 3 kB a millisecond apart);
* one session on the fake provider streams a turn of ``--turn-deltas`` deltas at ``--rate`` a second
  (each delta committed on its own, as at a model's pace).

Every ``--every`` seconds a line: seconds, sessions done, terminal MB printed, deltas streamed, what
the journal holds (millions of characters of its rows: entries, run texts, state parts), its
database and WAL files' sizes, and the host's resident memory. It stops when the three are done
or after ``--max-seconds``, stops the host cleanly, and prints the database's size after the stop.

``--heap`` runs the host under ``benchmarks/_heap_probe.py`` and adds to each line the objects its
garbage collector tracks outside the frozen generation (garbage not collected yet included; with
``--heap-collect``, a full collection first) and its resident memory once the C allocator gave
back what it held free (``malloc_trim``; "RSS MB" is read before the probe); at the end it prints the types whose count grew most and the
largest containers with who holds them (``--tracemalloc``: also the source lines whose
allocations grew most). The trim (and ``--heap-collect``) change the host's memory: measure RSS
without ``--heap``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._fake_chat import Reply, serve_chat
from benchmarks._runs import REPO, machine_note

TOKEN = "bench-token-0123456789"
MB = 1_000_000


async def _fake_provider(deltas: int, rate: float) -> tuple[asyncio.Server, str]:
    """An OpenAI Chat Completions endpoint streaming ``deltas`` words at ``rate`` a second."""

    async def respond(body: bytes, reply: Reply) -> None:
        start = time.monotonic()
        for index in range(deltas):
            await asyncio.sleep(max(0.0, start + index / rate - time.monotonic()))
            reply.text(f"word{index} ")
            await reply.drain()

    return await serve_chat(respond)


class Host:
    """``agent-host serve`` in its own process on a fresh data directory."""

    def __init__(self, data_dir: Path, config: Path, heap: Path | None = None, trace: bool = False,
                 collect: bool = False) -> None:
        self.journal = data_dir / "journal.sqlite3"
        env = {**os.environ, "SHELL": "/bin/sh", "ENV": "", "AGENT_HOST_TOKEN": TOKEN}
        if trace:
            env["PYTHONTRACEMALLOC"] = "1"
        if collect:
            env["AGENT_HOST_PROBE_COLLECT"] = "1"
        self.heap = heap
        self.samples: list[dict[str, Any]] = []
        program = ["-m", "cli.main"] if heap is None else ["-m", "benchmarks._heap_probe", str(heap)]
        self.process = subprocess.Popen(
            [sys.executable, *program, "serve", "--port", "0", "--data-dir", str(data_dir), "--config", str(config)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO, env=env,
        )
        self.url = ""

    async def started(self) -> str:
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), 60)  # type: ignore[union-attr]  # stdout=PIPE
        match = re.search(r"(ws://\S+)", line)
        if match is None:
            raise SystemExit(f"the host did not print its URL: {line!r}")
        self.url = match.group(1)
        # Keep reading its output so that it never blocks on a full pipe.
        asyncio.get_running_loop().run_in_executor(None, self.process.stdout.read)  # type: ignore[union-attr]  # stdout=PIPE
        return self.url

    def rss_mb(self) -> float:
        try:
            status = Path(f"/proc/{self.process.pid}/status").read_text()
        except OSError:
            return 0.0
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        return int(found.group(1)) / 1024 if found else 0.0

    def sizes_mb(self) -> tuple[float, float]:
        def size(path: Path) -> float:
            try:
                return path.stat().st_size / MB
            except FileNotFoundError:
                return 0.0
        return size(self.journal), size(Path(f"{self.journal}-wal"))

    def held_mb(self) -> float:
        """Characters of entries, run texts and state parts the journal holds (what it needs), read
        through a read-only connection of this process."""
        total = 0
        try:
            with contextlib.closing(sqlite3.connect(f"file:{self.journal}?mode=ro", uri=True)) as db:
                for table, column in (("entries", "body"), ("run_texts", "content"), ("channel_state_parts", "body")):
                    with contextlib.suppress(sqlite3.OperationalError):  # an older build has no run_texts
                        total += db.execute(f"SELECT COALESCE(SUM(length({column})), 0) FROM {table}").fetchone()[0]
        except sqlite3.Error:
            return 0.0
        return total / MB

    async def heap_sample(self, last: bool = False) -> dict[str, Any] | None:
        """Ask the probe for a sample of the host's heap (``--heap``) and wait for it (the last
        one also compares allocations with the first, with ``--tracemalloc``)."""
        if self.heap is None or self.process.poll() is not None:
            return None
        self.process.send_signal(signal.SIGUSR2 if last else signal.SIGUSR1)
        for _ in range(600):
            await asyncio.sleep(0.05)
            lines = self.heap.read_text().splitlines() if self.heap.exists() else []
            if len(lines) > len(self.samples):
                self.samples.append(json.loads(lines[len(self.samples)]))
                return self.samples[-1]
        return None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


class Progress:
    sessions = 0
    terminals = 0
    terminal_mb = 0
    deltas = 0


async def _connect(url: str) -> Any:
    from client import AhpClient

    client = await AhpClient.connect(url, token=TOKEN)
    client.request_timeout = 120
    await client.initialize(subscriptions=["ahp-root://"], protocol_versions=("0.2.0",))
    return client


def _turn_done(client: Any, channel: str, turn: str) -> bool:
    return any(item.get("id") == turn for item in (client.state(channel) or {}).get("turns") or [])


async def _sessions(url: str, count: int, keep: int, progress: Progress) -> None:
    client = await _connect(url)
    kept: deque[str] = deque()
    try:
        for index in range(count):
            channel = await client.create_session()
            turn = client.send_message(channel, f"short session {index}: say hello")
            await client.wait_for(lambda m, e: _turn_done(client, channel, turn), timeout=60)  # noqa: B023  (awaited in this iteration)
            kept.append(channel)
            if len(kept) > keep:
                await client.dispose_session(kept.popleft())
            progress.sessions = index + 1
    finally:
        await client.close()


async def _terminals(url: str, count: int, progress: Progress) -> None:
    """Terminals one after another: created, a command run in each (its output seen), disposed."""
    client = await _connect(url)
    try:
        for index in range(count):
            terminal = f"ahp-terminal:/{uuid.uuid4()}"
            await client.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": client.client_id}})
            await client.subscribe(terminal)
            client.dispatch(terminal, {"type": "terminal/input", "data": f"echo term-mark-$(({index} + 1))\n"})
            mark = f"term-mark-{index + 1}"
            await client.wait_for(lambda m, e: mark in _terminal_text(client.state(terminal)), timeout=60)  # noqa: B023  (awaited in this iteration)
            await client.unsubscribe(terminal)
            await client.request("disposeTerminal", {"channel": terminal})
            progress.terminals = index + 1
    finally:
        await client.close()


def _terminal_text(state: dict[str, Any] | None) -> str:
    content = (state or {}).get("content")
    if isinstance(content, str):
        return content
    return "".join(str(part.get("value") or part.get("output") or "") for part in content or [] if isinstance(part, dict))


async def _terminal(url: str, megabytes: int, progress: Progress) -> None:
    client = await _connect(url)
    terminal = f"ahp-terminal:/{uuid.uuid4()}"
    try:
        await client.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": client.client_id}})
        await client.subscribe(terminal)
        # A megabyte at a build log's pace (3 kB lines, a millisecond apart): each 16 ms burst fits
        # the scrollback, so the host journals all of it (a faster flood is cut to the scrollback
        # before it is journaled, which would make this too easy).
        printer = "import sys, time\nfor i in range(333):\n    sys.stdout.write('x' * 3000 + chr(10)); sys.stdout.flush(); time.sleep(0.001)"
        for index in range(megabytes):
            # The mark is computed by the shell, so the echoed command line never matches it.
            command = f"{sys.executable} -c \"{printer}\"; echo soak-mark-$(({index} + 1))\n"
            client.dispatch(terminal, {"type": "terminal/input", "data": command})
            mark = f"soak-mark-{index + 1}"
            await client.wait_for(lambda m, e: mark in _terminal_text(client.state(terminal))[-4_000:], timeout=120)  # noqa: B023  (awaited in this iteration)
            progress.terminal_mb = index + 1
    finally:
        await client.close()


async def _long_turn(url: str, progress: Progress) -> None:
    client = await _connect(url)
    try:
        channel = await client.create_session(provider="bench", model="paced")
        await client.wait_for(lambda m, e: (client.state(channel) or {}).get("lifecycle") == "ready", timeout=60)
        turn = client.send_message(channel, "a long answer, please")

        def streamed(m: Any, e: Any) -> bool:
            state = client.state(channel) or {}
            active = state.get("activeTurn") or {}
            parts = active.get("responseParts") or []
            progress.deltas = sum(len(re.findall(r"word\d+ ", str(p.get("content") or ""))) for p in parts[-1:]) if parts else progress.deltas
            return _turn_done(client, channel, turn)

        await client.wait_for(streamed, timeout=3_600)
        finished = next(item for item in client.state(channel)["turns"] if item["id"] == turn)
        text = "".join(str(p.get("content") or "") for p in finished.get("responseParts") or [])
        progress.deltas = len(re.findall(r"word\d+ ", text))
    finally:
        await client.close()


def _print_heap_growth(samples: list[dict[str, Any]]) -> None:
    """The types whose count grew most from the sample a third of the way in (imports and caches
    made by the first sessions are done by then) to the last, and the source lines whose
    allocations grew most since the first sample (``--tracemalloc``)."""
    if len(samples) < 3:
        return
    first, last = samples[max(1, len(samples) // 3)], samples[-1]
    grown = sorted(((count - first["types"].get(name, 0), name) for name, count in last["types"].items()), reverse=True)
    print(f"# heap: collections of each generation by the end {last['before']['collections']}, "
          f"frozen {last['before']['frozen']}", flush=True)
    print(f"# heap: {first['objects']} objects at {first['t']:g} s, {last['objects']} at {last['t']:g} s; "
          "types that grew most: " + ", ".join(f"{name} +{count}" for count, name in grown[:12] if count > 0), flush=True)
    print("# heap: largest containers at the end: " + ", ".join(f"{where} {size}" for size, where in last["largest"]), flush=True)
    for where, size, count in last.get("grown", [])[:10]:
        print(f"#   {size / 1e6:+8.2f} MB {count:+8d} blocks  {where}", flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3_000)
    parser.add_argument("--keep", type=int, default=50)
    parser.add_argument("--terminals", type=int, default=0, help="terminals created, used once and disposed, one after another")
    parser.add_argument("--terminal-mb", type=int, default=30)
    parser.add_argument("--turn-deltas", type=int, default=2_000)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--max-seconds", type=float, default=900.0)
    parser.add_argument("--heap", action="store_true",
                        help="sample the host's Python heap every --every seconds (benchmarks/_heap_probe.py): "
                             "objects the collector tracks, and at the end the types that grew most")
    parser.add_argument("--heap-collect", action="store_true",
                        help="with --heap: a full collection before each sample, so that only live objects are counted "
                             "(this changes what the host's memory does)")
    parser.add_argument("--tracemalloc", action="store_true",
                        help="with --heap: trace allocations too (slower) and print the source lines that grew most")
    args = parser.parse_args()

    print(f"# soak: {args.sessions} sessions (keeping {args.keep}), a terminal printing {args.terminal_mb} MB, "
          f"a {args.turn_deltas}-delta turn at {args.rate:g}/s; {machine_note()}", flush=True)
    provider, base_url = await _fake_provider(args.turn_deltas, args.rate)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        config = root / "host.toml"
        config.write_text(
            f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0\ndefault_directory = "{root}"\n\n'
            f'[agents.bench]\nkind = "openai-chat"\nbase_url = "{base_url}"\napi_key = "bench"\n'
            f'title = "first-words"\nmodels = [{{id = "paced"}}]\n'
        )
        host = Host(root / "data", config, root / "heap.jsonl" if args.heap else None, args.tracemalloc, args.heap_collect)
        progress = Progress()
        try:
            url = await host.started()
            work = [asyncio.create_task(job) for job in (
                _sessions(url, args.sessions, args.keep, progress),
                _terminals(url, args.terminals, progress),
                _terminal(url, args.terminal_mb, progress),
                _long_turn(url, progress),
            )]
            started = time.monotonic()
            print(f"{'s':>6} {'sessions':>8} {'terms':>6} {'term MB':>7} {'deltas':>6} {'held MB':>7} {'db MB':>7} {'WAL MB':>7} {'RSS MB':>7}"
                  + (f" {'objects':>9} {'trimmed':>7}" + (f" {'traced MB':>9}" if args.tracemalloc else "") if args.heap else ""),
                  flush=True)
            while True:
                done, _ = await asyncio.wait(work, timeout=args.every)
                elapsed = time.monotonic() - started
                db, wal = host.sizes_mb()
                rss = host.rss_mb()
                sample = await host.heap_sample()
                heap = "" if sample is None else f" {sample['objects']:9d} {sample.get('rss_trimmed_mb', 0.0):7.1f}" + (
                    f" {sample['traced_mb']:9.1f}" if "traced_mb" in sample else "")
                print(f"{elapsed:6.0f} {progress.sessions:8d} {progress.terminals:6d} {progress.terminal_mb:7d} {progress.deltas:6d} "
                      f"{host.held_mb():7.1f} {db:7.1f} {wal:7.1f} {rss:7.1f}{heap}", flush=True)
                if all(task.done() for task in work):
                    break
                if elapsed > args.max_seconds:
                    print(f"# stopped after {args.max_seconds:g} s", flush=True)
                    break
            for task in work:
                task.cancel()
            results = await asyncio.gather(*work, return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError)]
            for failure in failures:
                print(f"# a workload failed: {failure!r}", flush=True)
            if args.heap:
                await host.heap_sample(last=True)
            _print_heap_growth(host.samples)
        finally:
            rss = host.rss_mb()
            host.stop()
            provider.close()
        db, wal = host.sizes_mb()
        print(f"# after a clean stop: db {db:.1f} MB, WAL {wal:.1f} MB (host RSS before the stop {rss:.1f} MB)", flush=True)
        print("result " + json.dumps({"sessions": progress.sessions, "terminals": progress.terminals, "terminal_mb": progress.terminal_mb,
                                      "deltas": progress.deltas, "db_mb": round(db, 1)}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
