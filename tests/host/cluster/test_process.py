"""``agent-host serve --cluster``: a real host process on a real nats-server (the wheel's), its
ordered log the JetStream stream. A client runs a turn, the process is killed with SIGKILL and
started again on its data directory, and the client, reconnecting with ``lastSeenServerSeq``, is
replayed what it missed and converges with a new client's snapshot."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from host.cluster.process import process_name
from host.config import ClusterConfig
from tests.conftest import TOKEN

ROOT = "ahp-root://"
REPO = Path(__file__).resolve().parents[3]


def unclocked(state: dict[str, Any] | None) -> dict[str, Any]:
    """A mirrored state without ``modifiedAt`` (each mirror's own clock reading)."""
    state = dict(state or {})
    state.pop("modifiedAt", None)
    if isinstance(state.get("summary"), dict):
        state["summary"] = {key: value for key, value in state["summary"].items() if key != "modifiedAt"}
    return state


class ClusterHost:
    """``agent-host serve --cluster URL`` as its own process."""

    def __init__(self, data_dir: Path, config: Path, nats_url: str) -> None:
        self.data_dir, self.config, self.nats_url = data_dir, config, nats_url
        self.process: subprocess.Popen[str] | None = None
        self.url = ""

    async def start(self) -> str:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", "0", "--data-dir", str(self.data_dir),
             "--token", TOKEN, "--config", str(self.config), "--cluster", self.nats_url],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
        )
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), 60)  # type: ignore[union-attr]  # stdout=PIPE
        match = re.search(r"(ws://\S+)", line)
        assert match, f"the host did not print its URL: {line!r}"
        self.url = match.group(1)
        return self.url

    def kill(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> str:
        """Stop it (SIGTERM) and return what it printed."""
        if self.process is None:
            return ""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        return self.process.stdout.read() if self.process.stdout else ""


def test_a_process_is_named_by_its_machine_and_data_directory_unless_the_config_names_it(tmp_path: Path) -> None:
    one, other = process_name(ClusterConfig(), tmp_path / "a"), process_name(ClusterConfig(), tmp_path / "b")
    assert one != other and one == process_name(ClusterConfig(), tmp_path / "a")
    assert process_name(ClusterConfig(name="box-1"), tmp_path / "a") == "box-1"


async def test_after_kill_9_a_client_reconnecting_with_its_last_serverseq_is_replayed_what_it_missed(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0\ndefault_directory = "{tmp_path}"\n')
    host = ClusterHost(tmp_path / "data", config, nats_server.url)
    try:
        await host.start()
        client = await AhpClient.connect(host.url)
        await client.initialize(subscriptions=[ROOT])
        session = await client.create_session()
        client.dispatch(session, {"type": "session/titleChanged", "title": "On the stream"})
        client.send_message(session, "persist me")
        await client.wait_for(lambda m, e: len((client.state(session) or {}).get("turns") or []) == 1, timeout=30)
        seen = client.server_seq
        await client.ping()
        host.kill()  # the client keeps its mirror and last serverSeq

        await host.start()  # the same data directory: the same name, its sessions taken back at once
        fresh = await AhpClient.connect(host.url)
        await fresh.initialize(subscriptions=[ROOT, session])
        assert fresh.state(session)["summary"]["title"] == "On the stream"  # type: ignore[index]  # recovered from the stream
        fresh.dispatch(session, {"type": "session/titleChanged", "title": "Renamed while you were away"})
        fresh.send_message(session, "a second turn")
        await fresh.wait_for(lambda m, e: len((fresh.state(session) or {}).get("turns") or []) == 2, timeout=30)

        client.url = host.url
        result = await client.resume()
        assert result.kind == "replay"  # from the stream, not snapshots
        replayed = [envelope["serverSeq"] for envelope in result.replayed]
        assert replayed and replayed == sorted(replayed) and all(seq > seen for seq in replayed)
        # No gap: the replay brought the mirror where the other client is (but for the clock
        # reading a mirror stamps its summary with).
        assert unclocked(client.state(session)) == unclocked(fresh.state(session))
        assert unclocked(client.state(ROOT)) == unclocked(fresh.state(ROOT))
        assert [turn["userMessage"]["text"] for turn in client.state(session)["turns"]] == ["persist me", "a second turn"]  # type: ignore[index]
        assert [s["resource"] for s in await fresh.list_sessions()] == [session]

        # The restarted process writes on: serverSeq grows, a dispatch is accepted.
        outcome = await fresh.outcome(fresh.dispatch(session, {"type": "session/isReadChanged", "isRead": True}))
        assert outcome.accepted and fresh.server_seq > client.server_seq - 1
        await fresh.close()
        await client.close()
    finally:
        printed = host.stop()
    assert "Traceback" not in printed, printed


def run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli.main", "serve", "--port", "0", *args],
                          capture_output=True, text=True, timeout=60, cwd=REPO)


def test_a_cluster_url_that_is_not_nats_names_the_key_and_the_form(tmp_path: Path) -> None:
    result = run_serve("--data-dir", str(tmp_path), "--cluster", "http://127.0.0.1:4222")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cluster.url" in result.stderr and "nats://HOST:PORT" in result.stderr


def test_a_cluster_nats_server_that_cannot_be_reached_is_said_plainly(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "host.toml"
    config.write_text("[cluster]\ntimeout = 2\n")
    result = run_serve("--data-dir", str(tmp_path / "data"), "--config", str(config), "--cluster", f"nats://127.0.0.1:{port}")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"cannot reach NATS at nats://127.0.0.1:{port}" in result.stderr


def test_a_credentials_file_that_does_not_exist_is_named(tmp_path: Path, nats_server: EmbeddedNats) -> None:
    config = tmp_path / "host.toml"
    config.write_text(f'[cluster]\nurl = "{nats_server.url}"\ncredentials = "{tmp_path / "missing.creds"}"\n')
    result = run_serve("--data-dir", str(tmp_path / "data"), "--config", str(config))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "cluster.credentials" in result.stderr and "missing.creds" in result.stderr
