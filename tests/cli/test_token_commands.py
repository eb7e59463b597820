"""``agent-host token ...`` as a person types it (a real ``agent-host`` process), against a real host
running on the same data directory: the secret printed once, listed never, accepted with its
level, and refused once revoked."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from client import AhpClient
from client.errors import AhpError, ConnectionClosedError
from host.service import AgentHost
from host.transport.server import start_host
from host.transport.tokens import TOKENS_FILE
from tests.conftest import TOKEN, FrameChecker, host_config

ROOT = Path(__file__).resolve().parents[2]


def agent_host(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    command = [sys.executable, "-m", "cli.main", "token", *args, "--data-dir", str(tmp_path / "data")]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)


async def test_create_list_and_revoke_from_the_command_line_against_a_running_host(tmp_path: Path, frame_checker: FrameChecker) -> None:
    running = await start_host(AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path))), token=TOKEN)
    try:
        created = await asyncio.to_thread(agent_host, tmp_path, "create", "alice", "--level", "read")
        assert created.returncode == 0, created.stderr
        [secret] = created.stdout.splitlines()  # the secret alone on stdout, what it is on stderr
        assert "'alice', level read" in created.stderr and "not shown again" in created.stderr
        listed = await asyncio.to_thread(agent_host, tmp_path, "list")
        assert listed.stdout.startswith("alice\tread\t") and secret not in listed.stdout
        assert secret not in (tmp_path / "data" / TOKENS_FILE).read_text()

        client = await AhpClient.connect(running.url.split("?")[0], token=secret, frame_hook=frame_checker.client_hook())
        await client.initialize(subscriptions=["ahp-root://"])
        with pytest.raises(AhpError, match="needs a token of level full"):
            await client.request("createSession", {"channel": "offline:/x"})
        ended = client.subscribe_events()
        revoked = await asyncio.to_thread(agent_host, tmp_path, "revoke", "alice")
        assert revoked.returncode == 0 and "revoked token 'alice'" in revoked.stdout
        while await asyncio.wait_for(ended.get(), 10) is not None:
            pass  # the host closes the connection of the revoked token
        await client.close()
        with pytest.raises(ConnectionClosedError):
            await AhpClient.connect(running.url.split("?")[0], token=secret)
    finally:
        await running.stop()


def test_mistakes_exit_1_with_what_to_do(tmp_path: Path) -> None:
    assert agent_host(tmp_path, "create", "alice", "--level", "full").returncode == 0
    again = agent_host(tmp_path, "create", "alice", "--level", "read")
    assert again.returncode == 1 and "exists already: revoke it first" in again.stderr and again.stdout == ""
    unknown = agent_host(tmp_path, "revoke", "bob")
    assert unknown.returncode == 1 and "no token named 'bob' (tokens: alice)" in unknown.stderr
    level = agent_host(tmp_path, "create", "carol", "--level", "admin")
    assert level.returncode == 1 and "not one of read, full" in level.stderr
    empty = agent_host(tmp_path / "other", "list")
    assert empty.returncode == 0 and "no named tokens" in empty.stdout
