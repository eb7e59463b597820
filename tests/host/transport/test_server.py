"""The host's start over a real WebSocket on 127.0.0.1 port 0: the handshake is answered before the
session services are in (``host.session_services``), and every other request waits for them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from client import PROTOCOL_VERSIONS, AhpClient
from host.service import AgentHost
from host.transport import server
from host.transport.server import RunningHost, start_host
from tests.conftest import TOKEN, host_config

ROOT = "ahp-root://"


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The worker thread's import of the session services, held until the event is set."""
    release = threading.Event()
    original: Callable[[], None] = server._import_session_services

    def held_import() -> None:
        release.wait(30)
        original()

    monkeypatch.setattr(server, "_import_session_services", held_import)
    return release


@pytest.fixture
async def starting_host(tmp_path: Path, held: threading.Event) -> AsyncIterator[RunningHost]:
    host = AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    yield running
    held.set()
    await running.stop()


async def _client(running: RunningHost) -> AhpClient:
    return await AhpClient.connect(running.url.split("?")[0], token=TOKEN)


async def test_the_first_initialize_is_answered_before_the_session_services_are_in(starting_host: RunningHost) -> None:
    client = await _client(starting_host)
    try:
        result = await client.initialize(subscriptions=[ROOT], protocol_versions=PROTOCOL_VERSIONS)
        assert result["protocolVersion"] == "1.0.0"
        [root] = result["snapshots"]
        assert "offline" in [agent["provider"] for agent in root["state"]["agents"]]  # the root as a started host has it
        assert starting_host.host.sessions_started is False
        assert starting_host.host.services_built is None  # the answer did not build them on the event loop
    finally:
        await client.close()
    async with asyncio.timeout(10):
        while starting_host.connections:  # the host has seen the connection end
            await asyncio.sleep(0.01)
    assert starting_host.host.services_built is None  # nor did the connection's end


async def test_a_session_created_while_the_session_services_load_waits_for_them_and_is_made(
        starting_host: RunningHost, held: threading.Event) -> None:
    client = await _client(starting_host)
    other = await _client(starting_host)
    try:
        await client.initialize(subscriptions=[ROOT], protocol_versions=PROTOCOL_VERSIONS)
        creating = asyncio.create_task(client.create_session())
        # Another client's handshake is answered meanwhile: the createSession sent before it is held.
        await other.initialize(subscriptions=[ROOT], protocol_versions=PROTOCOL_VERSIONS)
        await other.ping()
        assert not creating.done()
        assert starting_host.host.sessions_started is False
        held.set()
        session = await asyncio.wait_for(creating, 30)
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("lifecycle") == "ready", timeout=30)
        assert starting_host.host.sessions_started is True
        assert [listed["resource"] for listed in await client.list_sessions()] == [session]
    finally:
        await client.close()
        await other.close()


async def test_a_session_created_right_after_the_host_listens_is_made(tmp_path: Path) -> None:
    # Nothing held: whatever the worker thread has done when the request comes, it is answered.
    host = AgentHost(host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline"))
    running = await start_host(host, token=TOKEN)
    client = await _client(running)
    try:
        await client.initialize(subscriptions=[ROOT], protocol_versions=PROTOCOL_VERSIONS)
        session = await client.create_session()
        await client.wait_for(lambda m, e: (client.state(session) or {}).get("lifecycle") == "ready", timeout=30)
        assert host.sessions_started is True
    finally:
        await client.close()
        await running.stop()


async def test_an_initialize_that_subscribes_to_a_session_waits_for_the_sessions_to_start(
        tmp_path: Path, held: threading.Event) -> None:
    data = tmp_path / "data"
    first = AgentHost(host_config(data, default_directory=str(tmp_path), default_agent="offline"))
    running = await start_host(first, token=TOKEN)
    held.set()
    client = await _client(running)
    await client.initialize(subscriptions=[ROOT], protocol_versions=PROTOCOL_VERSIONS)
    session = await client.create_session()
    await client.wait_for(lambda m, e: (client.state(session) or {}).get("lifecycle") == "ready", timeout=30)
    await client.close()
    await running.stop()
    held.clear()

    again = AgentHost(host_config(data, default_directory=str(tmp_path), default_agent="offline"))
    running = await start_host(again, token=TOKEN)
    client = await _client(running)
    other = await _client(running)
    try:
        initializing = asyncio.create_task(client.initialize(subscriptions=[ROOT, session], protocol_versions=PROTOCOL_VERSIONS))
        # A handshake that subscribes to the root alone is answered meanwhile; the session's waits.
        await other.initialize(subscriptions=[ROOT], protocol_versions=PROTOCOL_VERSIONS)
        assert not initializing.done()
        assert not again.sessions_started
        held.set()
        result = await asyncio.wait_for(initializing, 30)
        assert again.sessions_started is True
        assert [snapshot["resource"] for snapshot in result["snapshots"]] == [ROOT, session]
        assert result["snapshots"][1]["state"]["lifecycle"] == "ready"
    finally:
        await client.close()
        await other.close()
        await running.stop()
