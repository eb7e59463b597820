"""AhpClient.resume against a fake host: replay, snapshot, missing channels, fallback."""

from __future__ import annotations

import asyncio

import pytest

from ahp.state import default_chat_uri
from client import AhpClient, ConnectionClosedError

from ._fake_host import FakeHost, RpcError
from ._states import (
    OTHER_SESSION,
    ROOT,
    SESSION,
    envelope,
    model_chat_state,
    model_session_state,
    queued_ids,
    title,
)
from ._states import chat_queue as queue

CHAT, OTHER_CHAT = default_chat_uri(SESSION), default_chat_uri(OTHER_SESSION)
"""The sessions' default chats: where the model (AHP 1.0.0, the client's default) keeps pending messages."""


@pytest.fixture
async def host():
    async with FakeHost() as fake:
        fake.states[CHAT] = model_chat_state(CHAT)
        fake.states[OTHER_CHAT] = model_chat_state(OTHER_CHAT)
        fake.states[SESSION] = model_session_state()
        fake.seq = 5
        yield fake


async def _record_only(conn, message):
    """A dispatchAction handler that never echoes (the echo is 'lost' with the socket)."""


async def connected_then_dropped(host: FakeHost, **kwargs) -> AhpClient:
    """A client that saw serverSeq 6, has two unconfirmed actions, then lost its socket."""
    host.handlers["dispatchAction"] = _record_only
    client = await AhpClient.connect(host.url, client_id="me", **kwargs)
    await client.initialize([CHAT, OTHER_CHAT])
    conn = host.connections[0]
    await conn.envelope(CHAT, queue("q0", "seen before the drop"))
    await client.wait_for(lambda m, _e: m.last_server_seq == 6)
    client.dispatch(CHAT, queue("q1", "confirmed by the replay"))
    client.dispatch(CHAT, queue("q2", "never reached the host"))
    await host.next_message("dispatchAction")
    await conn.ws.close()
    with pytest.raises(ConnectionClosedError):
        await client.wait_for(lambda m, _e: False)
    return client


async def test_resume_sends_reconnect_first_and_applies_the_replay(host):
    seen_methods: list[str | None] = []
    client = await connected_then_dropped(host, frame_hook=lambda frame, method: seen_methods.append(method))
    # Pending actions survive the drop until resume decides their fate.
    assert queued_ids(client.state(CHAT)) == ["q0", "q1", "q2"]

    async def replay(conn, message):
        return {
            "type": "replay",
            "actions": [
                envelope(CHAT, queue("x", "from another client"), 7, origin=("other", 3)),
                envelope(CHAT, queue("q1", "confirmed by the replay"), 8, origin=("me", 1)),
            ],
            "missing": [OTHER_CHAT],
        }

    host.handlers["reconnect"] = replay
    try:
        result = await client.resume()

        new_conn = host.connections[1]
        assert new_conn.messages[0]["method"] == "reconnect"
        assert new_conn.messages[0]["params"] == {
            "channel": ROOT,
            "clientId": "me",
            "lastSeenServerSeq": 6,
            "subscriptions": [CHAT, OTHER_CHAT],
            "_meta": {"protocolVersion": "1.0.0"},  # what it negotiated: a process that never saw it learns it here
        }
        assert result.kind == "replay"
        assert result.dropped == [OTHER_CHAT]
        assert [e["serverSeq"] for e in result.replayed] == [7, 8]
        assert [o.client_seq for o in result.lost] == [2]
        assert client.mirror.outcome(1).accepted
        assert client.mirror.outcome(2).status == "lost"
        assert queued_ids(client.state(CHAT)) == ["q0", "x", "q1"]
        assert client.state(OTHER_CHAT) is None
        assert client.subscriptions == [CHAT]
        assert client.server_seq == 8
        assert "reconnect" in seen_methods
        # The new connection is live: requests and dispatch work again, clientSeq continues.
        assert await client.ping() is None
        assert client.dispatch(CHAT, queue("q3", "after")) == 3
    finally:
        await client.close()


async def test_resume_with_a_snapshot_replaces_state_and_drops_channels_without_one(host):
    client = await connected_then_dropped(host)

    async def snapshot(conn, message):
        fresh = {**model_chat_state(CHAT), "queuedMessages": [{"id": "q9", "message": {"text": "newer", "origin": {"kind": "user"}}}]}
        return {"type": "snapshot", "snapshots": [{"resource": CHAT, "state": fresh, "fromSeq": 40}]}

    host.handlers["reconnect"] = snapshot
    try:
        result = await client.resume()

        assert result.kind == "snapshot"
        assert result.dropped == [OTHER_CHAT]
        assert [o.client_seq for o in result.lost] == [1, 2]
        assert queued_ids(client.state(CHAT)) == ["q9"]
        assert client.state(OTHER_CHAT) is None
        assert client.server_seq == 40
    finally:
        await client.close()


async def test_resume_falls_back_to_initialize_when_reconnect_fails(host):
    client = await connected_then_dropped(host)
    del host.states[OTHER_CHAT]  # disposed while we were away

    async def refuse(conn, message):
        raise RpcError(-32601, "Method not found: reconnect")

    host.handlers["reconnect"] = refuse
    try:
        result = await client.resume()

        _, init = await host.next_message("initialize")
        assert init["params"]["initialSubscriptions"] == [CHAT, OTHER_CHAT]
        assert init["params"]["clientId"] == "me"
        assert result.kind == "initialize"
        assert result.dropped == [OTHER_CHAT]
        assert client.state(CHAT) == model_chat_state(CHAT)
        assert client.subscriptions == [CHAT]
        assert client.protocol_version == "1.0.0"
    finally:
        await client.close()


async def test_resume_of_a_live_connection_keeps_event_streams_open(host):
    client = await AhpClient.connect(host.url, client_id="me")
    await client.initialize([SESSION])
    stream = client.events()

    async def replay(conn, message):
        host.seq = 6
        return {"type": "replay", "actions": [envelope(SESSION, title("While switching"), 6)], "missing": []}

    host.handlers["reconnect"] = replay
    try:
        result = await client.resume()
        assert result.kind == "replay" and result.dropped == []

        replayed = await stream.next()
        assert replayed.replayed and replayed.action == title("While switching")
        await host.connections[1].envelope(SESSION, title("Live again"))
        live = await stream.next()
        assert not live.replayed and live.params["serverSeq"] == 7
        assert client.state(SESSION)["title"] == "Live again"
        # The old socket was closed by us.
        await asyncio.wait_for(host.connections[0].ws.wait_closed(), 5)
    finally:
        await client.close()
