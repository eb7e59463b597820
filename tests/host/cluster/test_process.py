"""``agent-host serve --cluster``: real host processes on a real nats-server (the wheel's), their
ordered log the JetStream stream. A client runs a turn, the process is killed with SIGKILL and
started again on its data directory, and the client, reconnecting with ``lastSeenServerSeq``, is
replayed what it missed and converges with a new client's snapshot; a second process shows its
clients (AHP 1.0.0, and a 0.9.0 client beside a 0.2.0 one) the sessions and turns the first runs;
a dispatch there for a session the first runs is forwarded to it and answered as if local; a client
of the second that was the active client of such a session gives up that role on the first when it
leaves."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

from websockets.asyncio.client import connect

from ahp import state as internal
from ahp.state import default_chat_uri
from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from host.cluster.process import process_name
from host.config import ClusterConfig
from tests.host.cluster._hosts import (
    REPO,
    ROOT,
    cluster_host,
    offline_config,
    processes,
    root_client,
    titles,
    unclocked,
    until_listed,
    until_turns_ended,
)
from tests.host.test_vscode import Peer
from tests.host.transport.dialects.test_three_versions import mirrored, without_clock


def test_a_process_is_named_by_its_machine_and_data_directory_unless_the_config_names_it(tmp_path: Path) -> None:
    one, other = process_name(ClusterConfig(), tmp_path / "a"), process_name(ClusterConfig(), tmp_path / "b")
    assert one != other and one == process_name(ClusterConfig(), tmp_path / "a")
    assert process_name(ClusterConfig(name="box-1"), tmp_path / "a") == "box-1"


async def test_after_kill_9_a_client_reconnecting_with_its_last_serverseq_is_replayed_what_it_missed(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    config = offline_config(tmp_path)
    host = cluster_host(tmp_path / "data", config, nats_server.url)
    try:
        await host.start()
        client = await root_client(host)
        session = await client.create_session()
        chat = default_chat_uri(session)
        client.dispatch(session, {"type": "session/titleChanged", "title": "On the stream"})
        client.send_message(session, "persist me")
        await client.wait_for(lambda m, e: len((client.state(chat) or {}).get("turns") or []) == 1, timeout=30)
        seen = client.server_seq
        await client.ping()
        host.kill()  # the client keeps its mirror and last serverSeq

        await host.start()  # the same data directory: the same name, its sessions taken back at once
        fresh = await root_client(host)
        # The session is back once the restarted process lists it (bounded: never listed fails).
        await until_listed(fresh, session)
        await fresh.subscribe(session)
        await fresh.subscribe(chat)
        assert fresh.state(session)["title"] == "On the stream"  # type: ignore[index]  # recovered from the stream
        fresh.dispatch(session, {"type": "session/titleChanged", "title": "Renamed while you were away"})
        fresh.send_message(session, "a second turn")
        await until_turns_ended([fresh], session, 2)  # its catalogue entry idle too

        client.url = host.url
        result = await client.resume()
        assert result.kind == "replay"  # from the stream, not snapshots
        replayed = [envelope["serverSeq"] for envelope in result.replayed]
        assert replayed and replayed == sorted(replayed) and all(seq > seen for seq in replayed)
        # No gap: the replay brought the mirror where the other client is (but for the clock
        # reading a mirror stamps its summary with).
        for channel in (session, chat, ROOT):
            assert unclocked(client.state(channel)) == unclocked(fresh.state(channel)), channel
        assert [turn["message"]["text"] for turn in client.state(chat)["turns"]] == ["persist me", "a second turn"]  # type: ignore[index]
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


async def test_a_second_process_on_the_same_nats_shows_its_clients_the_sessions_and_turns_run_by_the_first(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    async with processes(tmp_path, nats_server) as (first, second):
        here = await root_client(first)
        session = await here.create_session()
        chat = default_chat_uri(session)
        there = await root_client(second)
        await until_listed(there, session)  # the second process takes it in as the stream delivers it
        assert [s["resource"] for s in await there.list_sessions()] == [session]
        await there.subscribe(session)
        await there.subscribe(chat)
        here.send_message(session, "run on the first, watched from the second")
        # The turn ends, and so does the session's catalogue entry for its chat (an action more): idle again.
        await until_turns_ended((here, there), session, 1)
        for channel in (session, chat):
            assert unclocked(there.state(channel)) == unclocked(here.state(channel)), channel
        assert there.state(ROOT) == here.state(ROOT)  # one root state

        # A dispatch on the second process for the session the first runs is forwarded to the
        # first and answered as if local: the client's echo comes back, both clients see it.
        outcome = await there.outcome(there.dispatch(session, {"type": "session/titleChanged", "title": "from afar"}))
        assert outcome.accepted, outcome.reason
        # The title, and the default chat's catalogue entry that carries it (one action more), reach both.
        for client in (here, there):
            await client.wait_for(lambda m, e, c=client: [(c.state(session) or {})["title"], *titles(c.state(session))]
                                  == ["from afar", "from afar"], timeout=10)
        assert unclocked(there.state(session)) == unclocked(here.state(session))

        # The first process gone, the session's lease still in force: refused, the client told why.
        first.kill()
        refused = await there.outcome(there.dispatch(session, {"type": "session/titleChanged", "title": "too soon"}))
        assert not refused.accepted and process_name(ClusterConfig(), tmp_path / "one") in str(refused.reason)
        await here.close()
        await there.close()


async def test_a_0_9_0_client_on_one_process_and_a_0_2_0_client_on_another_converge_on_one_turn(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    async with processes(tmp_path, nats_server) as (first, second):
        ident = str(uuid.uuid4())
        session, old_name = f"offline:/{ident}", f"ahp-session:/{ident}"
        chat = default_chat_uri(session)
        new = Peer(await connect(first.url, max_size=None))
        await new.initialize("client-09", ["0.9.0"])
        created = await new.request("createSession", {"channel": session})
        assert created.get("error") is None, created
        chat_snapshot = (await new.request("subscribe", {"channel": chat}))["result"]["snapshot"]

        old = await AhpClient.connect(second.url)  # AHP 0.2.0, on the other process
        await old.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        await until_listed(old, old_name)
        await old.subscribe(old_name)

        turn_id = str(uuid.uuid4())
        await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": chat, "clientSeq": 1,
            "action": {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-11-26T00:00:00.000Z",
                       "message": {"text": "Say hello", "origin": {"kind": "user"}}}}})
        await new.until(lambda: any(a["action"]["type"] == "chat/turnComplete" for a in new.actions()) or None, timeout=30)
        await old.wait_for(lambda m, e: len((old.state(old_name) or {}).get("turns") or []) == 1, timeout=30)
        await new.request("ping", {"channel": ROOT})

        # The second process holds what the first does: a 0.9.0 snapshot taken there equals the
        # 0.9.0 client's mirror on the first; the 0.2.0 mirror there equals a 0.2.0 snapshot here.
        afar = Peer(await connect(second.url, max_size=None))
        await afar.initialize("client-09-afar", ["0.9.0"])
        held_there = (await afar.request("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        mirror = mirrored(new, chat, chat_snapshot, lambda kind, state, action: internal.reduce(kind, state, action, 0))
        assert mirror == held_there and mirror["turns"][0]["id"] == turn_id
        near = await AhpClient.connect(first.url)
        await near.initialize(subscriptions=[ROOT, old_name], protocol_versions=("0.2.0",))
        assert without_clock(old.state(old_name)) == without_clock(near.state(old_name))
        assert old.state(old_name)["turns"][0]["userMessage"]["text"] == "Say hello"  # type: ignore[index]
        for peer in (new, afar):
            await peer.close()
        for client in (old, near):
            await client.close()


async def test_a_0_2_0_client_subscribed_in_initialize_on_a_process_that_does_not_run_the_session_gets_its_streamed_text(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    async with processes(tmp_path, nats_server) as (first, second):
        here = await AhpClient.connect(first.url)
        await here.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        session = await here.create_session()
        lister = await AhpClient.connect(second.url)
        await lister.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        await until_listed(lister, session)
        # Subscribed by initialize's initialSubscriptions, not by a subscribe request.
        there = await AhpClient.connect(second.url)
        await there.initialize(subscriptions=[ROOT, session], protocol_versions=("0.2.0",))
        here.send_message(session, "run on the first, watched from the second")
        for client in (here, there):
            await client.wait_for(lambda m, e, c=client: [turn.get("state") for turn in (c.state(session) or {}).get("turns") or []]
                                  == ["complete"], timeout=30)
        assert "".join(str(part.get("content", "")) for part in here.state(session)["turns"][0]["responseParts"])  # type: ignore[index]
        assert without_clock(there.state(session)) == without_clock(here.state(session))
        for client in (here, lister, there):
            await client.close()


async def test_a_client_of_one_process_that_leaves_gives_up_its_active_role_in_a_session_another_process_runs(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    # VS Code on one process sets itself the active client (its tools) of a session another
    # process runs; when it disconnects, the owner must hear of it, or its turns keep offering
    # the tools of a client that is gone.
    async with processes(tmp_path, nats_server, never_printed=("Traceback", "refused by the log")) as (first, second):
        here = await root_client(first)
        session = await here.create_session(provider="offline")
        there = await root_client(second)
        await until_listed(there, session)
        await there.subscribe(session)

        def active() -> list[str]:
            return [client["clientId"] for client in (here.state(session) or {}).get("activeClients") or ()]

        tool = {"name": "vscode_tool", "description": "a tool of the client", "inputSchema": {"type": "object"}}
        outcome = await there.outcome(there.dispatch(session, {
            "type": "session/activeClientSet", "activeClient": {"clientId": there.client_id, "tools": [tool]}}))
        assert outcome.accepted, outcome.reason
        await here.wait_for(lambda m, e: active() == [there.client_id], timeout=10)

        await there.close()  # the client of the second process leaves
        await here.wait_for(lambda m, e: active() == [], timeout=10)
        await here.close()
