"""What a process joining a cluster prepares of the sessions it recovers from the shared log:
only its own. A session another live process runs is in every process's store, but its MCP
servers (and hooks) run on its owner alone: a second process started after it (a ``--workers``
worker started again, a cluster started again) starts no copy of them when a client of that
process subscribes to the session, and writes nothing to it at start that the log refuses.

The server is the kitchen-sink fixture over stdio, started with the session (``[mcp] start =
"session"``), as a user's ``mcp-server-time`` from PyPI or ``server-everything`` from npm is:
its ``--marker`` file gets one pid per start.

A session restored when its process starts again is resumed (its servers started, its SessionStart
hooks run, its trust question asked) once a client subscribes to it, and that client may be
connected to another process: the process that runs it is told so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ahp.state import default_chat_uri
from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from tests.host.cluster._hosts import processes, root_client, until_listed, until_turns_ended
from tests.host.runtime.customizations.test_mcp_sessions import started_pids
from tests.tools.mcp.conftest import KITCHEN_SINK, eventually


def config_with_a_server(tmp_path: Path, marker: Path) -> Path:
    """Sessions on the offline agent, each starting one stdio MCP server as it opens."""
    config = tmp_path / "host.toml"
    args = json.dumps([str(KITCHEN_SINK), "stdio", "--marker", str(marker)])
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0\ndefault_directory = "{tmp_path}"\n'
                      f'[mcp]\nstart = "session"\n[mcp.servers.sink]\ncommand = {json.dumps(sys.executable)}\n'
                      f'args = {args}\n')
    return config


def server_state(client: AhpClient, session: str) -> str | None:
    """The state the session's customizations show for the ``sink`` server."""
    for container in (client.state(session) or {}).get("customizations") or ():
        for item in container.get("children") or ():
            if item.get("type") == "mcpServer" and item.get("name") == "sink":
                return str((item.get("state") or {}).get("kind"))
    return None


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


async def test_a_process_started_after_a_session_was_made_elsewhere_starts_none_of_its_mcp_servers(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    marker = tmp_path / "starts.txt"
    config = config_with_a_server(tmp_path, marker)
    # Nothing of the session written by a process that does not run it ("may not write to it").
    async with processes(tmp_path, nats_server, never_printed=("Traceback", "may not write to it"), config=config,
                         started=1) as (first, second):
        here = await root_client(first)
        session = await here.create_session()
        chat = default_chat_uri(session)
        await here.wait_for(lambda m, e: server_state(here, session) == "ready", timeout=60)
        [server] = started_pids(marker)
        assert first.process is not None and parent_of(server) == first.process.pid

        await second.start()  # recovers the session from the stream: the first runs it
        there = await root_client(second)
        await until_listed(there, session)
        await there.subscribe(session)
        await there.subscribe(chat)
        # A turn from the second process's client: forwarded to the first, with its server.
        there.send_message(session, "run where the server runs")
        await until_turns_ended((here, there), session, 1)
        assert server_state(there, session) == "ready"
        assert started_pids(marker) == [server]  # no second copy, on the second process
        await here.close()
        await there.close()


async def test_a_client_of_another_process_resuming_a_restored_session_starts_its_servers_where_it_runs(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    marker = tmp_path / "starts.txt"
    config = config_with_a_server(tmp_path, marker)
    async with processes(tmp_path, nats_server, config=config, started=1) as (first, second):
        here = await root_client(first)
        session = await here.create_session()
        await here.wait_for(lambda m, e: server_state(here, session) == "ready", timeout=60)
        await here.close()
        first.stop()  # a clean stop: the session is restored when it starts again
        [before] = started_pids(marker)

        await first.start()  # the same name: it runs the session again, restored, its server not started
        await second.start()
        there = await root_client(second)
        await until_listed(there, session)
        await there.subscribe(session)  # resumed through the second process only
        await there.subscribe(default_chat_uri(session))
        await there.wait_for(lambda m, e: server_state(there, session) == "ready", timeout=60)
        [again] = started_pids(marker)[1:]
        assert again != before and first.process is not None and parent_of(again) == first.process.pid
        await there.close()


async def test_a_process_taking_over_a_session_its_clients_watch_resumes_it_at_once(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    marker = tmp_path / "starts.txt"
    config = config_with_a_server(tmp_path, marker)
    async with processes(tmp_path, nats_server, config=config) as (first, second):
        here = await root_client(first)
        session = await here.create_session()
        await here.wait_for(lambda m, e: server_state(here, session) == "ready", timeout=60)
        there = await root_client(second)
        await until_listed(there, session)
        await there.subscribe(session)  # watched through the second process, run by the first
        await there.subscribe(default_chat_uri(session))
        first.kill()  # its lease lapses: the second takes the session over, its server with it
        assert second.process is not None
        assert await eventually(lambda: any(parent_of(pid) == second.process.pid  # type: ignore[union-attr]
                                            for pid in started_pids(marker) if Path(f"/proc/{pid}").exists()), timeout=60)
        await there.wait_for(lambda m, e: server_state(there, session) == "ready", timeout=60)
        await there.close()
