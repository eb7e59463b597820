"""``agent-host serve --workers 2``: two real host processes on one port with the embedded
``nats-server`` (the wheel's). Clients of either worker see every session created through either,
a turn runs in a session run by the other worker, a session is disposed through a worker that does
not run it, one root state; a worker killed with SIGKILL is started again; SIGTERM stops the
workers and the NATS server. Which worker serves a client is read from ``/proc`` (Linux)."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ahp.state import default_chat_uri
from cli import shared_host
from cli.serve_process import ServeProcess, serving_pid
from client import AhpClient
from tests.conftest import TOKEN
from tests.host.cluster._hosts import REPO, offline_config, until_listed

ROOT = "ahp-root://"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to find which worker serves a client")


def workers_host(tmp_path: Path, count: int) -> ServeProcess:
    """``agent-host serve --workers N`` as a process of this test, its sessions run by the offline agent."""
    return ServeProcess(["--workers", str(count), "--data-dir", str(tmp_path / "data"), "--config", str(offline_config(tmp_path)),
                         "--log-level", os.environ.get("CW_LOG", "warning")], token=TOKEN)


def serving_worker(client: AhpClient, host: ServeProcess, pids: list[int]) -> int | None:
    """Which of the workers ``pids`` serves ``client``."""
    return serving_pid(client._conn._ws.local_address[1], host.port, pids)  # type: ignore[union-attr]  # the client's socket


async def one_client_per_worker(host: ServeProcess, count: int) -> dict[int, AhpClient]:
    """Connect until each worker serves a client (at most 40 tries); extra clients are closed."""
    pids = host.workers()
    assert len(pids) == count, host.children()
    chosen: dict[int, AhpClient] = {}
    for _ in range(40):
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        pid = serving_worker(client, host, pids)
        assert pid is not None, "no worker holds the connection"
        if pid in chosen:
            await client.close()
        else:
            chosen[pid] = client
        if len(chosen) == count:
            return chosen
        await asyncio.sleep(0.05)
    raise AssertionError(f"40 connections all went to workers {sorted(chosen)} of {pids}")


async def test_two_workers_serve_one_host_on_one_port(tmp_path: Path) -> None:
    host = workers_host(tmp_path, 2)
    printed = ""
    try:
        await host.start()
        clients = await one_client_per_worker(host, 2)
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
        chat = default_chat_uri(second)
        for client in (here, there):
            await client.subscribe(second)
            await client.subscribe(chat)
        here.send_message(second, "run by the other worker")
        for client in (here, there):
            await client.wait_for(lambda m, e, c=client: len((c.state(chat) or {}).get("turns") or []) == 1, timeout=30)
        assert "run by the other worker" in json.dumps(here.state(chat)["turns"][0])
        assert here.state(chat)["turns"] == there.state(chat)["turns"]
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
            record = shared_host.read(tmp_path / "data") or {}
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
    host = workers_host(tmp_path, 2)
    created = subprocess.run([sys.executable, "-m", "cli.main", "token", "create", "alice", "--level", "full",
                              "--data-dir", str(tmp_path / "data")], capture_output=True, text=True, cwd=REPO, check=True)
    named = created.stdout.strip()
    printed = ""
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        session = await client.create_session()
        before = host.workers()
        victim = serving_worker(client, host, before)
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
        again = await AhpClient.connect(host.address, token=named)
        await again.initialize(subscriptions=[ROOT])
        await until_listed(again, session)
        await again.subscribe(session)
        await again.subscribe(default_chat_uri(session))
        for attempt in range(120):  # the restarted worker answers once it has started (bounded: 60 s)
            renamed = await again.outcome(again.dispatch(session, {"type": "session/titleChanged", "title": f"try {attempt}"}))
            if renamed.accepted:
                break
            await asyncio.sleep(0.5)
        assert renamed.accepted, renamed.reason
        again.send_message(session, "after the restart")
        await again.wait_for(lambda m, e: len((again.state(default_chat_uri(session)) or {}).get("turns") or []) == 1, timeout=60)
        await again.close()
        await client.close()
    finally:
        printed = host.stop()
    assert "exited with status -9; starting it again" in printed, printed


async def test_workers_started_in_a_project_with_a_plugins_folder_import_the_host_not_the_folder(tmp_path: Path) -> None:
    # A user's project, where they run `agent-host serve --workers 2`: a folder of Open Plugins
    # named plugins/ (its config lists it) and a package of their own named tools/, the names of
    # two of the host's packages. The workers run the host's, not the project's.
    project = tmp_path / "project"
    plugin = project / "plugins" / "clock"
    (plugin / ".plugin").mkdir(parents=True)
    (plugin / ".plugin" / "plugin.json").write_text(json.dumps({"name": "clock", "version": "0.1.0", "description": "a clock"}))
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    (project / "tools").mkdir()
    (project / "tools" / "__init__.py").write_text("raise ImportError('the project\\'s own tools package')\n")
    config = offline_config(tmp_path)
    config.write_text(config.read_text() + f'[plugins]\ndirectories = ["{project / "plugins"}"]\n')
    host = ServeProcess(["--workers", "2", "--data-dir", str(tmp_path / "data"), "--config", str(config)], token=TOKEN, cwd=project)
    printed = ""
    try:
        await host.start()
        clients = await one_client_per_worker(host, 2)
        for client in clients.values():
            [agent] = [a for a in (client.state(ROOT) or {}).get("agents") or () if a.get("provider") == "offline"]
            assert [c.get("name") for c in agent.get("customizations") or ()] == ["clock"]
            await client.close()
    finally:
        printed = host.stop()
    assert "Traceback" not in printed, printed


async def test_a_worker_that_cannot_start_is_named_and_nothing_else_is_printed_but_its_messages(tmp_path: Path) -> None:
    lock = tmp_path / "data" / "workers" / "0" / "host.lock"
    lock.parent.mkdir(parents=True)
    with lock.open("w") as held:  # another host on worker 0's folder: the worker refuses to start
        fcntl.flock(held.fileno(), fcntl.LOCK_EX)
        host = workers_host(tmp_path, 2)
        with pytest.raises(RuntimeError) as failed:
            await host.start()
        printed = str(failed.value) + host.stop()
    assert "worker 0 exited with status" in printed, printed
    assert "never retrieved" not in printed and "Traceback" not in printed, printed
