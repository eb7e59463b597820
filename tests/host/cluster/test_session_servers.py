"""A session's MCP servers in a cluster: real ``agent-host serve --cluster`` processes on a real
nats-server (the wheel's), each session's servers real stdio subprocesses (the kitchen-sink test
server, which writes its pid to a marker file at each start). A process that loses a session
(cut off from NATS, its lease lapsing) ends the session's servers; the process that takes the
session over starts its own, and a turn there calls a server's tool. A session's servers keep
running past ``[mcp] unwatched_stop`` while a client of another process watches the session,
and stop once none does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ahp.state import default_chat_uri
from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from tests.host.cluster.conftest import Relay
from tests.host.cluster.test_process import ROOT, cluster_host, until_listed
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse
from tests.tools.mcp.conftest import KITCHEN_SINK, eventually, process_gone

PYTHON = sys.executable


def servers_config(tmp_path: Path, marker: Path, *, base_url: str | None = None, unwatched_stop: float | None = None) -> Path:
    """A host config whose sessions start the kitchen-sink MCP server ``sink`` with the session
    (its pid appended to ``marker`` at each start), their agent the OpenAI endpoint at
    ``base_url`` (``fake``) or else the offline agent; tools run without asking."""
    config = tmp_path / "host.toml"
    text = f'[sessions]\ndefault_directory = "{tmp_path}"\n' + ("" if base_url else 'default_agent = "offline"\n')
    # (A turn waits for a server still starting, however long a loaded machine makes its start.)
    text += f"[mcp]\nstart = \"session\"\nstart_wait = 120\n{'' if unwatched_stop is None else f'unwatched_stop = {unwatched_stop}'}\n"
    text += (f"[mcp.servers.sink]\ncommand = {json.dumps(PYTHON)}\n"
             f"args = {json.dumps([str(KITCHEN_SINK), 'stdio', '--marker', str(marker)])}\n")
    text += "[tools]\nenabled = true\nauto_approve = true\n"
    if base_url:
        text += fake_agent_toml(base_url, retries=0)
    config.write_text(text)
    return config


def started_pids(marker: Path) -> list[int]:
    """The pids the kitchen-sink server wrote at each start."""
    return [int(line) for line in marker.read_text().split()] if marker.exists() else []


def server_tools(client: AhpClient, session: str) -> dict[str, str]:
    """The sink server's MCP tool name → the name the session publishes it under."""
    return {t["_meta"]["mcpTool"]: t["name"] for t in (client.state(session) or {}).get("serverTools") or []
            if (t.get("_meta") or {}).get("mcpServer") == "sink"}


def tool_calls(chat: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [part["toolCall"] for turn in (chat or {}).get("turns") or [] for part in turn.get("responseParts") or []
            if part.get("kind") == "toolCall"]


async def test_a_process_that_loses_a_session_ends_its_mcp_servers_and_the_new_owner_runs_its_own(
        tmp_path: Path, nats_server: EmbeddedNats, relay: Relay) -> None:
    marker = tmp_path / "starts.txt"
    printed = ""
    clients: list[AhpClient] = []
    async with FakeProviderServer([], base_path="/v1") as provider:
        config = servers_config(tmp_path, marker, base_url=provider.base_url)
        cut = cluster_host(tmp_path / "one", config, relay.url)  # reaches NATS through the relay
        other = cluster_host(tmp_path / "two", config, nats_server.url)
        try:
            await cut.start()
            await other.start()
            near = await AhpClient.connect(cut.url)
            clients.append(near)
            await near.initialize(subscriptions=[ROOT])
            session = await near.create_session()
            chat = default_chat_uri(session)
            await near.wait_for(lambda m, e: "echo" in server_tools(near, session), timeout=60)
            [first] = started_pids(marker)  # the server of the process that runs the session
            far = await AhpClient.connect(other.url)
            clients.append(far)
            await far.initialize(subscriptions=[ROOT])
            await until_listed(far, session)
            await far.subscribe(session)
            await far.subscribe(chat)
            assert started_pids(marker) == [first]  # a process that does not run the session starts none

            # Cut off, the first process loses the session (its lease lapses unrenewed): its
            # server ends there, though the process runs on; the other process takes the session
            # over and, a client of its watching it, starts a server of its own.
            relay.cut()
            assert await eventually(lambda: process_gone(first), timeout=30), "the server of the process that lost the session still runs"
            assert await eventually(lambda: len(started_pids(marker)) == 2, timeout=30)
            second = started_pids(marker)[1]
            assert not process_gone(second) and cut.process is not None and cut.process.poll() is None

            # A turn on the new owner calls the server's tool (the model asks for it by its published name).
            tool = server_tools(far, session)["echo"]
            provider.replies += [
                Reply(body=chat_sse(tool_calls=[("call-1", tool, json.dumps({"text": "from the new owner"}))])),
                Reply(body=chat_sse("Echoed."))]
            far.send_message(session, "use the server")
            await far.wait_for(lambda m, e: [t.get("state") for t in (far.state(chat) or {}).get("turns") or []] == ["complete"],
                               timeout=60)
            [call] = tool_calls(far.state(chat))
            assert call["toolName"] == tool and call.get("success") is True and "from the new owner" in json.dumps(call), call
            assert started_pids(marker) == [first, second] and not process_gone(second)
        finally:
            for client in clients:
                await client.close()
            printed = cut.stop() + other.stop()
    assert "Traceback" not in printed, printed
    assert process_gone(second)  # (and no server outlives its process's stop)


async def test_a_sessions_servers_keep_running_past_unwatched_stop_while_a_client_of_another_process_watches_it(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    marker = tmp_path / "starts.txt"
    config = servers_config(tmp_path, marker, unwatched_stop=1)
    first = cluster_host(tmp_path / "one", config, nats_server.url)
    second = cluster_host(tmp_path / "two", config, nats_server.url)
    printed = ""
    clients: list[AhpClient] = []
    try:
        await first.start()
        await second.start()
        near = await AhpClient.connect(first.url)
        clients.append(near)
        await near.initialize(subscriptions=[ROOT])
        session = await near.create_session()
        await near.wait_for(lambda m, e: "echo" in server_tools(near, session), timeout=60)
        [server] = started_pids(marker)
        far = await AhpClient.connect(second.url)
        clients.append(far)
        await far.initialize(subscriptions=[ROOT])
        await until_listed(far, session)
        await far.subscribe(session)

        # The first process's client leaves: no client there watches the session, but one of the
        # second does, so its servers run on past unwatched_stop (1 s; 5 s watched here).
        await near.close()
        assert not await eventually(lambda: process_gone(server), timeout=5), "the servers stopped while a client watched"
        # The second's client leaves too: now no client anywhere watches it, and they stop.
        await far.close()
        assert await eventually(lambda: process_gone(server), timeout=30), "the servers ran on with no client watching"
        assert started_pids(marker) == [server]
    finally:
        for client in clients:
            await client.close()
        printed = first.stop() + second.stop()
    assert "Traceback" not in printed, printed
