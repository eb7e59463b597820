"""``agent-host serve --workers 2``: two real host processes on one port with the embedded
``nats-server`` (the wheel's). Clients of either worker see every session created through either,
a turn runs in a session run by the other worker, a session is disposed through a worker that does
not run it, one root state; a worker killed with SIGKILL is started again; SIGTERM stops the
workers and the NATS server. Which worker serves a client is read from ``/proc`` (Linux)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from cli import shared_host
from client import AhpClient
from tests.conftest import TOKEN
from tests.host.cluster.test_process import REPO, offline_config, until_listed

ROOT = "ahp-root://"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find which worker serves a client")


class WorkersHost:
    """``agent-host serve --workers N`` as a process of this test."""

    def __init__(self, tmp_path: Path, count: int) -> None:
        self.data_dir = tmp_path / "data"
        self.count = count
        self.config = offline_config(tmp_path)
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    async def start(self) -> str:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", "0", "--workers", str(self.count),
             "--data-dir", str(self.data_dir), "--config", str(self.config), "--log-level", os.environ.get("CW_LOG", "warning")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
            env={**os.environ, "AGENT_HOST_TOKEN": TOKEN},
        )
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), 120)  # type: ignore[union-attr]  # stdout=PIPE
        match = re.search(r"(ws://\S+)", line)
        assert match, f"serve --workers did not print its URL: {line!r} {self.stop()}"
        self.url = match.group(1)
        return self.url

    @property
    def port(self) -> int:
        return int(self.url.split(":")[2].split("/")[0])

    def children(self) -> dict[int, str]:
        """The processes ``serve --workers`` runs now: pid → command line."""
        assert self.process is not None
        found: dict[int, str] = {}
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue  # a thread of the parent that ended in between
            for pid in children:
                try:
                    found[int(pid)] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    pass  # ended in between
        return found

    def workers(self) -> list[int]:
        return sorted(pid for pid, command in self.children().items() if " serve " in command)

    def stop(self) -> str:
        """SIGTERM (a clean stop) and what it printed on stderr."""
        if self.process is None:
            return ""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.stderr.read() if self.process.stderr else ""


def serving_pid(client: AhpClient, server_port: int, pids: list[int]) -> int | None:
    """Which of ``pids`` holds the server's end of ``client``'s TCP connection."""
    local_port = client._conn._ws.local_address[1]  # type: ignore[union-attr]  # the client's socket
    inode = None
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == server_port and int(fields[2].split(":")[1], 16) == local_port:
            inode = fields[9]
    for pid in pids:
        try:
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
        except OSError:
            continue
    return None


async def one_client_per_worker(host: WorkersHost) -> dict[int, AhpClient]:
    """Connect until each worker serves a client (at most 40 tries); extra clients are closed."""
    pids = host.workers()
    assert len(pids) == host.count, host.children()
    chosen: dict[int, AhpClient] = {}
    for _ in range(40):
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        pid = serving_pid(client, host.port, pids)
        assert pid is not None, "no worker holds the connection"
        if pid in chosen:
            await client.close()
        else:
            chosen[pid] = client
        if len(chosen) == host.count:
            return chosen
        await asyncio.sleep(0.05)
    raise AssertionError(f"40 connections all went to workers {sorted(chosen)} of {pids}")


async def test_two_workers_serve_one_host_on_one_port(tmp_path: Path) -> None:
    host = WorkersHost(tmp_path, 2)
    printed = ""
    try:
        await host.start()
        clients = await one_client_per_worker(host)
        here, there = clients.values()
        # A session created through either worker: run by it, listed by both.
        first = await here.create_session()
        second = await there.create_session()
        for client in (here, there):
            await until_listed(client, first)
            await until_listed(client, second)
            assert sorted(s["resource"] for s in await client.list_sessions()) == sorted([first, second])
            # Each names the machine whose disk its folder is on (docs/cluster.md).
            assert {(s.get("_meta") or {}).get("machine") for s in await client.list_sessions()} == {socket.gethostname()}
        # One root state: each worker's own count reached the root (forwarded to its writer).
        for client in (here, there):
            await client.wait_for(lambda m, e, c=client: (c.state(ROOT) or {}).get("activeSessions") == 2, timeout=15)
        # A turn in a session the other worker runs: forwarded there, streamed back to both.
        await here.subscribe(second)
        await there.subscribe(second)
        here.send_message(second, "run by the other worker")
        for client in (here, there):
            await client.wait_for(lambda m, e, c=client: len((c.state(second) or {}).get("turns") or []) == 1, timeout=30)
        assert "run by the other worker" in json.dumps(here.state(second)["turns"][0])
        assert here.state(second)["turns"] == there.state(second)["turns"]
        # A request about a session the other worker runs: answered there as if here.
        await there.dispose_session(first)
        for client in (here, there):
            for _ in range(200):
                if [s["resource"] for s in await client.list_sessions()] == [second]:
                    break
                await asyncio.sleep(0.05)
            assert [s["resource"] for s in await client.list_sessions()] == [second]
        for client in (here, there):
            await client.wait_for(lambda m, e, c=client: (c.state(ROOT) or {}).get("activeSessions") == 1, timeout=15)
        # SIGHUP (a client that found the config file changed) does not end the host: host.json says
        # the workers keep their config until it is started again.
        host.process.send_signal(signal.SIGHUP)  # type: ignore[union-attr]  # started above
        for _ in range(200):
            record = shared_host.read(host.data_dir) or {}
            if "reload" in record:
                break
            await asyncio.sleep(0.05)
        assert "started again" in record["reload"]["error"] and host.process.poll() is None  # type: ignore[union-attr]
        assert sorted(s["resource"] for s in await here.list_sessions()) == [second]
        await here.close()
        await there.close()
    finally:
        children = host.children() if host.process is not None and host.process.poll() is None else {}
        printed = host.stop()
    assert host.process is not None and host.process.returncode == 0, printed
    assert len(children) == 3 and any("nats-server" in command for command in children.values()), children
    for pid in children:  # the workers and the NATS server ended with it
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
    assert "Traceback" not in printed, printed
    assert "refused" not in printed, printed  # no worker's root change was refused


async def test_a_worker_killed_is_started_again_and_the_port_keeps_serving_named_tokens_too(tmp_path: Path) -> None:
    host = WorkersHost(tmp_path, 2)
    created = subprocess.run([sys.executable, "-m", "cli.main", "token", "create", "alice", "--level", "full",
                              "--data-dir", str(host.data_dir)], capture_output=True, text=True, cwd=REPO, check=True)
    named = created.stdout.strip()
    printed = ""
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        session = await client.create_session()
        before = host.workers()
        victim = serving_pid(client, host.port, before)
        assert victim in before
        os.kill(victim, signal.SIGKILL)  # a worker this test's host started, by its pid
        for _ in range(600):
            now = host.workers()
            if len(now) == 2 and victim not in now:
                break
            await asyncio.sleep(0.05)
        assert len(host.workers()) == 2 and victim not in host.workers()
        # The restarted worker takes its sessions back (its name is its folder's): a new client,
        # on whichever worker, lists the session and runs a turn in it; it presents a named token
        # of the data directory (agent-host token), which every worker accepts.
        again = await AhpClient.connect(host.url.split("?")[0], token=named)
        await again.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        await until_listed(again, session)
        await again.subscribe(session)
        for attempt in range(120):  # the restarted worker answers once it has started (bounded: 60 s)
            renamed = await again.outcome(again.dispatch(session, {"type": "session/titleChanged", "title": f"try {attempt}"}))
            if renamed.accepted:
                break
            await asyncio.sleep(0.5)
        assert renamed.accepted, renamed.reason
        again.send_message(session, "after the restart")
        await again.wait_for(lambda m, e: len((again.state(session) or {}).get("turns") or []) == 1, timeout=60)
        await again.close()
        await client.close()
    finally:
        printed = host.stop()
    assert "exited with status -9; starting it again" in printed, printed
