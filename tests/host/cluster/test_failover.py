"""Failover: three real ``agent-host serve --cluster`` processes on one real nats-server (the
wheel's). The process that runs two sessions is killed with SIGKILL while a turn streams in each;
a live process takes them over once their leases lapse: the streaming turns end with a resumable
error, ``chat/turnResume`` (AHP 0.9.0) runs one again on the new owner, the message queued behind
the other runs there; an AHP 0.9.0 client and AHP 0.2.0 clients on the live processes converge
(the project's reducers), and a 0.2.0 client of the dead process, reconnecting to a live one with
its last ``serverSeq``, is replayed what it missed with no gap. Nothing a client saw is lost. Every
frame the 0.9.0 client and a 0.7.0 client watching the session get fits its version's schema,
among them what only a takeover sends (``TAKEOVER_ONLY``: the session's customizations listed
again, and ``chat/turnResume``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from ahp import state as internal
from ahp.state import default_chat_uri
from cli.serve_process import ServeProcess
from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from host.runtime.agents.offline import answer_for
from tests.conftest import TOKEN
from tests.host.cluster._hosts import (
    ROOT,
    cluster_host,
    processes,
    root_client,
    unclocked,
    until_listed,
    until_turns_ended,
)
from tests.host.cluster.conftest import Relay
from tests.host.runtime.agents.test_faults import fake_agent_toml
from tests.host.test_vscode import Peer
from tests.host.transport.dialects._clients import TAKEOVER_ONLY, Client, assert_every_frame_fits, assert_sent
from tests.host.transport.dialects.test_three_versions import mirrored, without_clock
from tests.providers.fake_server import FakeProviderServer, Reply, chat_sse, sse


def slow_config(tmp_path: Path) -> Path:
    """A host config whose sessions run the offline agent, a word every 0.2 s (a turn of about 12 s)."""
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0.2\ndefault_directory = "{tmp_path}"\n')
    return config


async def subscribed(peer: Peer, channel: str) -> dict[str, Any]:
    """``peer``'s snapshot of ``channel`` once its process has taken the channel in (10 s at most)."""
    for _ in range(200):
        reply = await peer.request("subscribe", {"channel": channel})
        if reply.get("error") is None:
            return dict(reply["result"]["snapshot"])
        await asyncio.sleep(0.05)
    raise AssertionError(f"{channel} never reached the peer's process: {reply}")


def of_turn(peer: Peer, chat: str, turn_id: str, action_type: str) -> list[dict[str, Any]]:
    return [envelope["action"] for envelope in peer.actions()
            if envelope["channel"] == chat and envelope["action"]["type"] == action_type
            and envelope["action"].get("turnId") == turn_id and "rejectionReason" not in envelope]


async def start_turn(peer: Peer, chat: str, client_seq: int, text: str) -> str:
    turn_id = str(uuid.uuid4())
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": chat, "clientSeq": client_seq,
        "action": {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-11-26T00:00:00.000Z",
                   "message": {"text": text, "origin": {"kind": "user"}}}}})
    return turn_id


async def test_three_processes_take_over_the_sessions_of_one_killed_mid_turn_and_their_clients_converge(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    peers: list[Peer] = []
    clients: list[AhpClient] = []
    # The first started writes the root channel, so sessions are created through it.
    async with processes(tmp_path, nats_server, 3, config=slow_config(tmp_path)) as (owner, second, third):
        ident, queued_ident = str(uuid.uuid4()), str(uuid.uuid4())
        session, old_name = f"offline:/{ident}", f"ahp-session:/{ident}"
        queued_session, old_queued = f"offline:/{queued_ident}", f"ahp-session:/{queued_ident}"
        chat, queued_chat = default_chat_uri(session), default_chat_uri(queued_session)

        creator = Peer(await connect(owner.url, max_size=None))  # AHP 0.9.0, on the process to be killed
        peers.append(creator)
        await creator.initialize("creator-09", ["0.9.0"])
        for uri in (session, queued_session):
            created = await creator.request("createSession", {"channel": uri})
            assert created.get("error") is None, created

        new = Client(await connect(second.url, max_size=None))  # AHP 0.9.0 on the second process
        mid = Client(await connect(second.url, max_size=None))  # AHP 0.7.0 there too, watching the session
        peers += [new, mid]
        await new.join("client-09", "0.9.0")
        await mid.join("client-07", "0.7.0")
        chat_snapshot = await subscribed(new, chat)
        for peer in (new, mid):
            await subscribed(peer, session)

        old = await AhpClient.connect(third.url)  # AHP 0.2.0 on the third
        clients.append(old)
        await old.initialize(subscriptions=[ROOT], protocol_versions=("0.2.0",))
        for name in (old_name, old_queued):
            await until_listed(old, name)
            await old.subscribe(name)

        gone = await AhpClient.connect(owner.url)  # AHP 0.2.0 on the owner: it will reconnect elsewhere
        clients.append(gone)
        await gone.initialize(subscriptions=[ROOT, old_name, old_queued], protocol_versions=("0.2.0",))

        turn = await start_turn(creator, chat, 1, "Keep going after the crash")
        first_of_queue = await start_turn(creator, queued_chat, 2, "The first message")
        await creator.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": queued_chat, "clientSeq": 3, "action": {
                "type": "chat/pendingMessageSet", "kind": "queued", "id": "queued-1",
                "message": {"text": "Queued behind it", "origin": {"kind": "user"}}}}})

        # Mid-turn: the 0.9.0 client on the second process has seen some of the streamed text,
        # the 0.2.0 client of the owner some too, and the message is queued.
        await new.until(lambda: len(of_turn(new, chat, turn, "chat/delta")) >= 5, timeout=30)
        await gone.wait_for(lambda m, e: bool(((gone.state(old_queued) or {}).get("activeTurn") or {}).get("responseParts")),
                            timeout=30)
        await old.wait_for(lambda m, e: bool((old.state(old_queued) or {}).get("queuedMessages")), timeout=30)
        await gone.ping()
        seen_by_gone = gone.server_seq
        owner.kill()
        seen_text = "".join(action["content"] for action in of_turn(new, chat, turn, "chat/delta"))
        assert seen_text and not of_turn(new, chat, turn, "chat/turnComplete")  # killed mid-turn

        # Taken over within the lease: the turn ends with a resumable error, written by a live process.
        errors = await new.until(lambda: of_turn(new, chat, turn, "chat/error"), timeout=30)
        assert errors[0]["part"]["resumable"] is True and errors[0]["part"]["kind"] == "error"

        # The owner's 0.2.0 client reconnects to a live process with its last serverSeq: a replay
        # (not snapshots), from just after what it saw, then what follows live.
        gone.move_to(second.url, TOKEN)
        resumed = await gone.resume()
        assert resumed.kind == "replay"
        replayed = [envelope["serverSeq"] for envelope in resumed.replayed]
        assert replayed and replayed == sorted(replayed) and replayed[0] > seen_by_gone

        # chat/turnResume from the 0.9.0 client runs the turn again on the new owner (here, or
        # forwarded to it) and it completes.
        await new.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
            "channel": chat, "clientSeq": 1, "action": {"type": "chat/turnResume", "turnId": turn}}})
        await new.until(lambda: of_turn(new, chat, turn, "chat/turnComplete"), timeout=30)
        assert not [e for e in new.actions() if "rejectionReason" in e and e["channel"] == chat]

        # The queued message ran on the new owner of its session, after the interrupted turn.
        await old.wait_for(lambda m, e: [t.get("state") for t in (old.state(old_queued) or {}).get("turns") or []]
                           == ["error", "complete"], timeout=30)
        assert [t["userMessage"]["text"] for t in old.state(old_queued)["turns"]] == [  # type: ignore[index]
            "The first message", "Queued behind it"]
        assert not (old.state(old_queued) or {}).get("queuedMessages")
        await old.wait_for(lambda m, e: len((old.state(old_name) or {}).get("turns") or []) == 1
                           and not (old.state(old_name) or {}).get("activeTurn"), timeout=30)
        await gone.wait_for(lambda m, e: len((gone.state(old_name) or {}).get("turns") or []) == 1
                            and not (gone.state(old_name) or {}).get("activeTurn"), timeout=30)
        for peer in (new, mid):
            await peer.request("ping", {"channel": ROOT})
        # The takeover re-lists the session's customizations, and the turn was resumed: what only a
        # takeover sends, each frame fitting its version's schema.
        assert_every_frame_fits((new, mid), {ROOT: "root", session: "session", chat: "chat"}.get)
        assert_sent(TAKEOVER_ONLY, new, (mid,))

        # Convergence (the project's reducers). 0.9.0: the client's mirror on the second process
        # equals a snapshot taken on the third. 0.2.0: the third's client, the reconnected one, and
        # a fresh client's snapshot on the second hold the same.
        afar = Peer(await connect(third.url, max_size=None))
        peers.append(afar)
        await afar.initialize("client-09-afar", ["0.9.0"])
        held_there = (await afar.request("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        mirror = mirrored(new, chat, chat_snapshot, lambda kind, state, action: internal.reduce(kind, state, action, 0))
        assert mirror == held_there
        fresh = await AhpClient.connect(second.url)
        clients.append(fresh)
        await fresh.initialize(subscriptions=[ROOT, old_name, old_queued], protocol_versions=("0.2.0",))
        for name in (old_name, old_queued):
            assert without_clock(old.state(name)) == without_clock(fresh.state(name)), name
            assert without_clock(gone.state(name)) == without_clock(fresh.state(name)), name

        # Nothing a client saw is lost: the text streamed before the kill opens the turn's answer,
        # then the resumable error, then the resumed answer.
        resumed_turn = mirror["turns"][-1]
        assert resumed_turn["id"] == turn and resumed_turn["state"] == "complete"
        kinds = [part["kind"] for part in resumed_turn["responseParts"]]
        assert kinds == ["markdown", "error", "markdown"], kinds
        assert resumed_turn["responseParts"][0]["content"].startswith(seen_text)
        assert resumed_turn["responseParts"][2]["content"].startswith('You said: "Keep going after the crash"')
        assert first_of_queue == old.state(old_queued)["turns"][0]["id"]  # type: ignore[index]
        for peer in peers:
            await peer.close()
        for client in clients:
            await client.close()


async def closed_with(peer: Peer) -> tuple[int | None, str | None]:
    """The close code and reason of ``peer``'s connection once the host closed it (10 s at most)."""
    await asyncio.wait_for(asyncio.gather(peer._reader, return_exceptions=True), 10)
    return peer.ws.close_code, peer.ws.close_reason


async def accepted_again(url: str, peers: list[Peer]) -> Peer:
    """A 0.9.0 client of the process at ``url``, which refuses clients (closes at once) until it is
    connected to NATS again: tried until one is initialized."""
    for _ in range(100):
        back = Peer(await connect(url, max_size=None))
        peers.append(back)
        answer = asyncio.ensure_future(back.initialize("back-09", ["0.9.0"]))
        await asyncio.wait([answer, back._reader], timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if answer.done() and answer.exception() is None and answer.result().get("error") is None:
            return back
        answer.cancel()
        await asyncio.sleep(0.1)
    raise AssertionError(f"{url} refused every client for 100 tries")


@dataclasses.dataclass
class Watched:
    """A session created through one process and watched from another, a 0.9.0 client on each."""

    near_process: ServeProcess
    """The process the session was created through: it runs it."""
    far_process: ServeProcess
    near: Peer
    """The 0.9.0 client that created the session, subscribed to its chat."""
    far: Peer
    """A 0.9.0 client of the other process, subscribed to the chat."""
    session: str
    chat: str
    near_snapshot: dict[str, Any]
    far_snapshot: dict[str, Any]
    peers: list[Peer]
    """Every client the test opened (closed at the end): ``near``, ``far`` and those it adds."""


@contextlib.asynccontextmanager
async def watched_from_afar(tmp_path: Path, config: Path, near_url: str, far_url: str, provider: str) -> AsyncIterator[Watched]:
    """A process on ``near_url`` (the nats-server, or a relay to it that can cut it off) and one on
    ``far_url``, both as ``config`` says; a ``provider`` session created through the first by a
    0.9.0 client and subscribed by it and by a 0.9.0 client of the second. At the end the clients
    are closed, the processes stopped, and neither printed a traceback."""
    near_process = cluster_host(tmp_path / "one", config, near_url)
    far_process = cluster_host(tmp_path / "two", config, far_url)
    printed = ""
    peers: list[Peer] = []
    try:
        await near_process.start()
        await far_process.start()
        session = f"{provider}:/{uuid.uuid4()}"
        chat = default_chat_uri(session)
        near = Peer(await connect(near_process.url, max_size=None))
        peers.append(near)
        await near.initialize("near-09", ["0.9.0"])
        assert (await near.request("createSession", {"channel": session})).get("error") is None
        near_snapshot = (await near.request("subscribe", {"channel": chat}))["result"]["snapshot"]
        far = Peer(await connect(far_process.url, max_size=None))
        peers.append(far)
        await far.initialize("far-09", ["0.9.0"])
        far_snapshot = await subscribed(far, chat)
        yield Watched(near_process, far_process, near, far, session, chat, near_snapshot, far_snapshot, peers)
    finally:
        for peer in peers:
            await peer.close()
        # (The near process in a thread: the relay it may stop through runs on this loop, and that
        # process gives its lease back on the way out.)
        printed = await asyncio.to_thread(near_process.stop) + far_process.stop()
    assert "Traceback" not in printed, printed


async def test_a_process_cut_off_from_nats_stops_writing_tells_its_clients_and_converges_once_back(
        tmp_path: Path, nats_server: EmbeddedNats, relay: Relay) -> None:
    # The first process reaches NATS through the relay.
    async with watched_from_afar(tmp_path, slow_config(tmp_path), relay.url, nats_server.url, "offline") as watched:
        cut, near, far, chat, peers = watched.near_process, watched.near, watched.far, watched.chat, watched.peers
        turn = await start_turn(near, chat, 1, "Cut me off")
        await far.until(lambda: len(of_turn(far, chat, turn, "chat/delta")) >= 3, timeout=30)

        relay.cut()
        # Its clients are told: their connections close with 1013 and the reason; a new one is refused.
        code, reason = await closed_with(near)
        assert code == 1013 and "lost its cluster's log" in str(reason)
        late = Peer(await connect(cut.url, max_size=None))
        peers.append(late)
        assert (await closed_with(late))[0] == 1013

        # It stops writing: the live process takes the session over and ends the turn, resumably.
        errors = await far.until(lambda: of_turn(far, chat, turn, "chat/error"), timeout=30)
        assert errors[0]["part"]["resumable"] is True
        await far.request("ping", {"channel": ROOT})
        written = [envelope["serverSeq"] for envelope in far.actions()]
        assert written == sorted(written) and len(written) == len(set(written))

        # Back on NATS, it takes in what the other wrote instead of diverging: a client of it holds
        # what the other process's client holds.
        relay.mend()
        back = await accepted_again(cut.url, peers)
        held_here: dict[str, Any] = {}
        for _ in range(200):
            held_here = (await back.request("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
            if [t["id"] for t in held_here.get("turns") or []] == [turn]:
                break
            await asyncio.sleep(0.05)
        held_there = (await far.request("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        assert held_here == held_there and held_there["turns"][0]["state"] == "error"


async def held_in_time(peer: Peer, chat: str, expected: dict[str, Any]) -> dict[str, Any]:
    """The state of ``chat`` that ``peer``'s process holds once it is ``expected`` (it may still be
    catching up on the stream), or after ten seconds, whatever it holds then."""
    held: dict[str, Any] = {}
    for _ in range(200):
        held = (await peer.request("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        if held == expected:
            break
        await asyncio.sleep(0.05)
    return held


async def resumed_when_accepted(client: AhpClient) -> Any:
    """``client.resume()`` once its process accepts connections again (refused while it is cut off
    from NATS), 20 s at most."""
    for _ in range(100):
        try:
            return await asyncio.wait_for(client.resume(), 10)
        except Exception:  # refused (1013) while the process is not connected to NATS yet
            await asyncio.sleep(0.2)
    raise AssertionError("the process never accepted the client again")


async def test_the_processes_lose_nothing_when_the_nats_server_restarts(tmp_path: Path, nats_server: EmbeddedNats) -> None:
    async with processes(tmp_path, nats_server) as (first, second):
        here = await root_client(first)
        session = await here.create_session()
        chat = default_chat_uri(session)
        here.send_message(session, "before the restart")
        await here.wait_for(lambda m, e: len((here.state(chat) or {}).get("turns") or []) == 1, timeout=30)
        there = await root_client(second)
        await until_listed(there, session)
        await there.subscribe(session)
        await there.subscribe(chat)
        await here.ping()
        seen = here.server_seq

        nats_server.stop()
        nats_server.start()  # the same port and JetStream directory

        # Both processes reconnect; their clients, told and closed meanwhile, come back with their
        # last serverSeq; the session runs a second turn on its owner, seen on the other process.
        for client in (here, there):
            await resumed_when_accepted(client)
        here.send_message(session, "after the restart")
        await until_turns_ended((here, there), session, 2)  # the session's catalogue entry for its chat idle again too
        await here.ping()
        assert here.server_seq > seen
        assert [t["message"]["text"] for t in there.state(chat)["turns"]] == [  # type: ignore[index]
            "before the restart", "after the restart"]
        fresh = await AhpClient.connect(second.url)
        await fresh.initialize(subscriptions=[ROOT, session, chat])
        for channel in (session, chat):
            assert unclocked(fresh.state(channel)) == unclocked(there.state(channel)) == unclocked(here.state(channel)), channel
        for client in (here, there, fresh):
            await client.close()


# -- a process that loses a session mid-turn stops the turn there ----------------------------------

BEFORE = ["Streaming ", "before ", "the ", "cut"]
"""What the model streams before its stream stalls (a provider still sending, slowly)."""


def stalled_turn() -> Reply:
    """A Chat Completions stream that sends ``BEFORE`` and then nothing, holding the connection
    open until the client hangs up (its ``closed`` is set then)."""
    envelope = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake-model"}
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
              *({"choices": [{"index": 0, "delta": {"content": text}}]} for text in BEFORE)]
    return Reply(body=sse(*((None, {**envelope, **chunk}) for chunk in chunks)), stall=asyncio.Event())


def provider_config(tmp_path: Path, base_url: str) -> Path:
    """A host config with the agent ``fake``, an OpenAI Chat Completions endpoint at ``base_url``."""
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_directory = "{tmp_path}"\n' + fake_agent_toml(base_url, retries=0))
    return config


def texts_of(state: dict[str, Any], turn: str) -> list[tuple[str, str]]:
    """Each response part of ``turn`` in a chat state: its kind and its text (an error's message)."""
    found = next(t for t in state.get("turns") or [] if t["id"] == turn)
    return [(part["kind"], part.get("content") or (part.get("error") or {}).get("message", "")) for part in found["responseParts"]]


async def resume_and_complete(peer: Peer, chat: str, turn: str) -> None:
    """``chat/turnResume`` from ``peer`` (AHP 0.9.0), and the resumed turn's end."""
    await peer.send({"jsonrpc": "2.0", "method": "dispatchAction", "params": {
        "channel": chat, "clientSeq": 7, "action": {"type": "chat/turnResume", "turnId": turn}}})
    await peer.until(lambda: of_turn(peer, chat, turn, "chat/turnComplete"), timeout=30)
    assert not [e for e in peer.actions() if "rejectionReason" in e and e["channel"] == chat]


async def test_a_process_cut_off_from_nats_mid_turn_hangs_up_on_its_provider_and_the_live_process_ends_the_turn(
        tmp_path: Path, nats_server: EmbeddedNats, relay: Relay) -> None:
    stalled = stalled_turn()
    async with (
        FakeProviderServer([stalled, Reply(body=chat_sse("Resumed ", "on the live process."))], base_path="/v1") as provider,
        # The first process reaches NATS through the relay.
        watched_from_afar(tmp_path, provider_config(tmp_path, provider.base_url), relay.url, nats_server.url, "fake") as watched,
    ):
        cut, near, far, chat, peers = watched.near_process, watched.near, watched.far, watched.chat, watched.peers
        chat_snapshot = watched.far_snapshot
        turn = await start_turn(near, chat, 1, "Cut me off")
        await far.until(lambda: "".join(a["content"] for a in of_turn(far, chat, turn, "chat/delta")) == "".join(BEFORE),
                        timeout=30)

        relay.cut()
        # Its clients are told (their connections close with 1013 and the reason), and it
        # hangs up on the model's stream, still open, rather than run the turn on unheard.
        code, reason = await closed_with(near)
        assert code == 1013 and "lost its cluster's log" in str(reason)
        await asyncio.wait_for(stalled.closed.wait(), 30)

        # The live process takes the session over and ends the turn, resumably; resumed, it
        # runs there (the second and last request the model gets) and completes.
        errors = await far.until(lambda: of_turn(far, chat, turn, "chat/error"), timeout=30)
        assert errors[0]["part"]["resumable"] is True
        await resume_and_complete(far, chat, turn)
        assert len(provider.requests) == 2
        written = [envelope["serverSeq"] for envelope in far.actions()]
        assert written == sorted(written) and len(written) == len(set(written))
        mirror = mirrored(far, chat, chat_snapshot, lambda kind, state, action: internal.reduce(kind, state, action, 0))
        parts = texts_of(mirror, turn)  # no fork: what the cut-off process streamed, the end, the resumed answer
        assert [kind for kind, _ in parts] == ["markdown", "error", "markdown"], parts
        assert parts[0][1] == "".join(BEFORE) and parts[2][1] == "Resumed on the live process."

        # Back on NATS, the cut-off process holds what the live one wrote.
        relay.mend()
        back = await accepted_again(cut.url, peers)
        assert await held_in_time(back, chat, mirror) == mirror
        assert len(provider.requests) == 2


async def test_a_process_paused_past_its_lease_mid_turn_hangs_up_on_its_provider_when_it_wakes_and_its_client_sees_the_end(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    stalled = stalled_turn()
    async with (
        FakeProviderServer([stalled, Reply(body=chat_sse("Resumed ", "on the live process."))], base_path="/v1") as provider,
        watched_from_afar(tmp_path, provider_config(tmp_path, provider.base_url), nats_server.url, nats_server.url, "fake") as watched,
    ):
        paused, near, far, chat = watched.near_process, watched.near, watched.far, watched.chat
        near_snapshot, far_snapshot = watched.near_snapshot, watched.far_snapshot
        turn = await start_turn(near, chat, 1, "Pause me")
        await far.until(lambda: "".join(a["content"] for a in of_turn(far, chat, turn, "chat/delta")) == "".join(BEFORE),
                        timeout=30)

        # Paused (a loop held up, a machine suspended) past its lease: the other process
        # takes the session over and ends the turn, resumably.
        assert paused.process is not None
        os.kill(paused.process.pid, signal.SIGSTOP)
        try:
            errors = await far.until(lambda: of_turn(far, chat, turn, "chat/error"), timeout=30)
        finally:
            os.kill(paused.process.pid, signal.SIGCONT)
        assert errors[0]["part"]["resumable"] is True

        # Woken, it finds its lease gone and hangs up on the model's stream; its own client,
        # still connected to it, is told through the log: the same resumable end.
        await asyncio.wait_for(stalled.closed.wait(), 30)
        told = await near.until(lambda: of_turn(near, chat, turn, "chat/error"), timeout=30)
        assert told == errors
        await resume_and_complete(far, chat, turn)
        await near.until(lambda: of_turn(near, chat, turn, "chat/turnComplete"), timeout=30)
        assert len(provider.requests) == 2

        # No fork: both clients' mirrors (the project's reducers) hold one turn, the same.
        reducer = lambda kind, state, action: internal.reduce(kind, state, action, 0)  # noqa: E731
        here = mirrored(near, chat, near_snapshot, reducer)
        there = mirrored(far, chat, far_snapshot, reducer)
        assert here == there
        parts = texts_of(there, turn)
        assert [kind for kind, _ in parts] == ["markdown", "error", "markdown"], parts
        assert parts[0][1] == "".join(BEFORE) and parts[2][1] == "Resumed on the live process."


# -- a client that leaves while its session's owner is dead ------------------------------------------


async def test_a_client_that_leaves_while_the_sessions_owner_is_dead_is_no_active_client_once_a_live_process_runs_it(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    async with processes(tmp_path, nats_server, 3) as (owner, second, third):
        here = await root_client(owner)
        session = await here.create_session(provider="offline")
        leaving, staying = await root_client(second), await root_client(third)
        tool = {"name": "vscode_tool", "description": "a tool of the client", "inputSchema": {"type": "object"}}
        for client in (leaving, staying):
            await until_listed(client, session)
            await client.subscribe(session)
            outcome = await client.outcome(client.dispatch(session, {
                "type": "session/activeClientSet", "activeClient": {"clientId": client.client_id, "tools": [tool]}}))
            assert outcome.accepted, outcome.reason

        def active() -> list[dict[str, Any]]:
            return list((staying.state(session) or {}).get("activeClients") or ())

        await staying.wait_for(lambda m, e: {c["clientId"] for c in active()} == {leaving.client_id, staying.client_id},
                               timeout=10)

        owner.kill()
        # The client of the second process leaves while the session's lease is still the dead
        # owner's: the second has no one to hand the client's departure to.
        await leaving.close()

        # Once a live process runs the session, the client connected nowhere is no active client
        # (its tools offered no more); the one still connected keeps its role and its tools.
        await staying.wait_for(lambda m, e: [c["clientId"] for c in active()] == [staying.client_id], timeout=30)
        assert active() == [{"clientId": staying.client_id, "tools": [tool]}]
        renamed = await staying.outcome(staying.dispatch(session, {"type": "session/titleChanged", "title": "run elsewhere"}))
        assert renamed.accepted, renamed.reason
        for client in (here, staying):
            await client.close()


# -- a terminal of a process that dies --------------------------------------------------------------


async def test_a_terminal_of_a_process_killed_ends_exited_with_a_line_saying_why_once_a_live_process_takes_it_over(
        tmp_path: Path, nats_server: EmbeddedNats, monkeypatch: Any) -> None:
    monkeypatch.setenv("SHELL", "/bin/sh")  # no rc files of the user's (the processes inherit it)
    monkeypatch.setenv("ENV", "")
    async with processes(tmp_path, nats_server) as (owner, other):
        here = await root_client(owner)
        terminal = f"ahp-terminal:/{uuid.uuid4()}"
        await here.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": here.client_id}})
        there = await root_client(other)
        for _ in range(200):  # once the other process has taken the terminal in
            try:
                await there.subscribe(terminal)
                break
            except Exception:
                await asyncio.sleep(0.05)
        assert (there.state(terminal) or {}).get("lifecycle") == {"status": "running"}

        owner.kill()
        # Its shell died with it: the live process that takes the terminal over ends it, saying
        # so, rather than leave it running with nothing behind it.
        await there.wait_for(lambda m, e: ((there.state(terminal) or {}).get("lifecycle") or {}).get("status") == "exited",
                             timeout=30)
        text = "".join(part.get("value") or part.get("output") or "" for part in there.state(terminal)["content"])  # type: ignore[index]
        assert "The agent host process running this terminal stopped" in text, there.state(terminal)
        await there.wait_for(lambda m, e: [t["lifecycle"]["status"] for t in (there.state(ROOT) or {}).get("terminals") or []
                                           if t["resource"] == terminal] == ["exited"], timeout=10)
        for client in (here, there):
            await client.close()


# -- a short cut from NATS mid-turn leaves no hole in the answer ------------------------------------

async def test_a_short_cut_from_nats_mid_turn_ends_the_turn_resumably_with_no_hole_in_its_answer(
        tmp_path: Path, nats_server: EmbeddedNats, relay: Relay) -> None:
    message = "Cut me off briefly"
    async with watched_from_afar(tmp_path, slow_config(tmp_path), relay.url, nats_server.url, "offline") as watched:
        cut, peers, near, far, chat = watched.near_process, watched.peers, watched.near, watched.far, watched.chat
        chat_snapshot = watched.far_snapshot
        turn = await start_turn(near, chat, 1, message)
        await far.until(lambda: len(of_turn(far, chat, turn, "chat/delta")) >= 3, timeout=30)

        # A cut of about a second (a NATS server restarted), shorter than the 2 s the lease's
        # renewals leave: the process keeps the session, but what its turn wrote meanwhile was
        # refused. The turn ends with a resumable error instead of streaming on after a hole.
        relay.cut()
        assert (await closed_with(near))[0] == 1013
        await asyncio.sleep(1)  # (the cut's length: the scenario, not a wait for something)
        relay.mend()
        errors = await far.until(lambda: of_turn(far, chat, turn, "chat/error"), timeout=30)
        assert errors[0]["part"]["resumable"] is True
        assert not of_turn(far, chat, turn, "chat/turnComplete")
        ended = mirrored(far, chat, chat_snapshot, lambda kind, state, action: internal.reduce(kind, state, action, 0))
        parts = texts_of(ended, turn)
        assert [kind for kind, _ in parts] == ["markdown", "error"], parts
        answer = answer_for(message)
        assert parts[0][1] and answer.startswith(parts[0][1]) and parts[0][1] != answer  # what was stored, with no hole

        # Resumed, the turn runs again and completes; a client of the cut-off process, back on
        # NATS, and the other process's client hold the same, which is what the stream said.
        await resume_and_complete(far, chat, turn)
        mirror = mirrored(far, chat, chat_snapshot, lambda kind, state, action: internal.reduce(kind, state, action, 0))
        parts = texts_of(mirror, turn)
        assert [kind for kind, _ in parts] == ["markdown", "error", "markdown"], parts
        assert answer.startswith(parts[0][1]) and parts[2][1] == answer
        written = [envelope["serverSeq"] for envelope in far.actions()]
        assert written == sorted(written) and len(written) == len(set(written))
        back = await accepted_again(cut.url, peers)
        assert await held_in_time(back, chat, mirror) == mirror
        held_there = (await far.request("subscribe", {"channel": chat}))["result"]["snapshot"]["state"]
        assert held_there == mirror
