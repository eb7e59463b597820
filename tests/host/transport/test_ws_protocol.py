"""Frames written once per event-loop tick (host.ws_protocol) still arrive whole and in order."""

from __future__ import annotations

from client import AhpClient
from host.transport.server import RunningHost
from tests.conftest import Connect


async def open_streamed_turn(connect: Connect, running_host: RunningHost,
                            turn_id: str) -> tuple[AhpClient, AhpClient, str, str]:
    """Two clients subscribed to a new session whose default chat has a turn ``turn_id`` with an
    empty markdown part ``p``, streamed by the test (not an agent): the clients, the session, the chat."""
    first = await connect()
    session = await first.create_session()
    second = await connect(subscriptions=("ahp-root://", session))
    await first.subscribe(session)
    store = running_host.host.store
    internal = running_host.host.session_uri(session)
    chat = store.state(internal)["defaultChat"]
    running_host.host.runner.forget(internal)
    store.dispatch(chat, {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": "2026-11-26T00:00:00.000Z",
                          "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(chat, {"type": "chat/responsePart", "turnId": turn_id, "part": {"kind": "markdown", "id": "p", "content": ""}})
    return first, second, session, chat


def streamed(client: AhpClient, session: str) -> str:
    """The text ``client`` holds of the active turn's first part in ``session``."""
    parts = (client.state(session).get("activeTurn") or {}).get("responseParts") or [{}]
    return parts[0].get("content", "")


async def test_a_burst_of_frames_in_one_tick_reaches_every_client_in_order(connect: Connect, running_host: RunningHost) -> None:
    first, second, session, chat = await open_streamed_turn(connect, running_host, "burst")
    store = running_host.host.store
    words = [f"w{index}é " for index in range(2_000)]
    for word in words:  # all in one tick: the host writes them to each socket together
        last = store.dispatch(chat, {"type": "chat/delta", "turnId": "burst", "partId": "p", "content": word})["serverSeq"]
    expected = "".join(words)

    for client in (first, second):
        await client.wait_for(lambda m, e, client=client: len(streamed(client, session)) >= len(expected), timeout=60)
        assert streamed(client, session) == expected
        assert client.server_seq >= last  # and what followed, that 0.2.0 shows (not all the session bookkeeping)
        await client.ping()  # the connection is still usable after the burst


async def test_frames_to_clients_are_sent_at_once_not_held_for_an_ack(connect: Connect, running_host: RunningHost) -> None:
    """Nagle's algorithm is off on every client connection (TCP_NODELAY): with it on, a small
    frame written while the previous one was unacknowledged waited for the client's delayed ACK,
    10-40 ms per frame once several sessions streamed to one client."""
    import socket

    await connect()
    connections = list(running_host.server.server_state.connections)
    assert connections
    for protocol in connections:
        sock = protocol.transport.get_extra_info("socket")
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
