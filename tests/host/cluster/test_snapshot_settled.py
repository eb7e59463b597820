"""What a client of one process of a cluster sees when it subscribes to a channel while an action
of that process on it waits for the log's number (``Store.settle``, ``host.state.awaiting``): its
snapshot and the frames after it, on a real nats-server. The snapshot holds each action once: the
frames numbered above its ``fromSeq``, applied to it, give the store's state."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import AhpClient
from host.cluster.nats_server import EmbeddedNats
from host.cluster.ordered_log import ClusterLog
from host.state.channels import reduce
from host.state.store import Store
from tests.host.cluster._hosts import processes, root_client, until_turns_ended
from tests.host.cluster.conftest import Relay
from tests.host.cluster.test_taken_in_order import (
    ELSEWHERE,
    HERE,
    Connection,
    a_store,
    delta,
    durable,
    start_streaming,
    taken_in_while_late,
    until,
)


def mirrored(snapshot: dict[str, Any], frames: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    """What a client mirrors: the snapshot, with every frame numbered above its ``fromSeq`` applied."""
    state = copy.deepcopy(snapshot["state"])
    for frame in frames:
        if frame["serverSeq"] > snapshot["fromSeq"]:
            state = reduce(kind, state, frame["action"], 3)
    return state


def text(state: dict[str, Any] | None) -> str:
    return str((state or {})["activeTurn"]["responseParts"][0]["content"])


async def subscribed(store: Store, channel: str, connection: Connection) -> dict[str, Any]:
    """As a connection subscribes (``host.transport.connection``): settled, then in the same step."""
    await store.settle([channel])
    return store.subscribe(channel, connection)


async def test_a_client_subscribing_while_its_chunk_waits_for_its_number_sees_the_text_once(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    here = await a_store(nats_server, logs, "here")
    chat = start_streaming(here, HERE)
    await durable(here)
    chunk = delta(here, chat, "once ")  # reduced into the chat's state; its number not come yet
    connection = Connection()
    snapshot = await subscribed(here, chat, connection)
    await durable(here)
    later = delta(here, chat, "then ")
    await durable(here)
    await until(lambda: connection.frames and connection.frames[-1]["serverSeq"] == later["serverSeq"])
    assert chunk["serverSeq"] <= snapshot["fromSeq"]
    assert text(snapshot["state"]) == "once "
    assert connection.seqs() == [later["serverSeq"]]
    assert text(mirrored(snapshot, connection.frames, "chat")) == "once then "
    assert mirrored(snapshot, connection.frames, "chat") == here.state(chat)


async def test_a_client_subscribing_while_the_chat_streams_converges_on_the_store_s_state(
        nats_server: EmbeddedNats, logs: list[ClusterLog], caplog: pytest.LogCaptureFixture) -> None:
    here = await a_store(nats_server, logs, "here")
    chat = start_streaming(here, HERE)
    other = start_streaming(here, "ahp-session:/other")  # another session streaming: it does not hold the subscriber
    await durable(here)
    words = [f"w{n} " for n in range(300)]
    streaming = True

    async def stream() -> None:
        for index, word in enumerate(words):
            if not streaming:
                break
            delta(here, chat, word)
            delta(here, other, word)
            here.flush()
            await asyncio.sleep(0.002 if index % 3 else 0)

    streamer = asyncio.ensure_future(stream())
    connections: list[tuple[dict[str, Any], Connection]] = []
    for _ in range(5):
        await asyncio.sleep(0.03)
        connection = Connection()
        connections.append((await subscribed(here, chat, connection), connection))
    await streamer
    await durable(here)
    final = here.state(chat)
    assert text(final) == "".join(words)
    for snapshot, connection in connections:
        await until(lambda s=snapshot, c=connection: mirrored(s, c.frames, "chat") == final, 10)  # type: ignore[misc]
        assert 0 < len(text(snapshot["state"])) < len(text(final))  # subscribed mid-stream
    assert "may get it twice" not in caplog.text  # each found a moment with no chunk of its chat in flight


async def test_a_record_taken_in_and_held_reaches_a_later_subscriber_once(
        nats_server: EmbeddedNats, relay: Relay, logs: list[ClusterLog]) -> None:
    """A record of another process held (an action of this process that may be numbered lower is
    not sent yet) goes to those subscribed when it was taken in; a client subscribing meanwhile
    has it in its snapshot, not again as a frame."""
    there = await a_store(nats_server, logs, "there")
    chat_there = start_streaming(there, ELSEWHERE)
    await durable(there)
    here = await a_store(nats_server, logs, "here", url=relay.url)
    chat_here = start_streaming(here, HERE)
    await durable(here)
    first = Connection()
    here.subscribe(chat_there, first)
    await taken_in_while_late(here, there, relay, chat_there, lambda: delta(here, chat_here, "mine "))  # this process's acknowledgements come late
    later = Connection()
    snapshot = await subscribed(here, chat_there, later)  # while the record is held
    assert first.frames == [] and text(snapshot["state"]) == "theirs "
    relay.flow()
    await until(lambda: len(first.frames) == 1)
    await asyncio.sleep(0.1)
    assert later.frames == []
    assert text(mirrored(snapshot, later.frames, "chat")) == "theirs "
    assert mirrored(snapshot, later.frames, "chat") == here.state(chat_there) == there.state(chat_there)


async def test_clients_of_a_host_process_subscribing_mid_stream_see_each_chunk_once(
        tmp_path: Path, nats_server: EmbeddedNats) -> None:
    """A real ``agent-host serve --cluster`` process runs a turn streaming word by word; clients
    that subscribe to its chat at moments along the stream end with the same chat as a client
    subscribed from the start."""
    config = tmp_path / "host.toml"
    config.write_text(f'[sessions]\ndefault_agent = "offline"\noffline_delay = 0.004\ndefault_directory = "{tmp_path}"\n')
    async with processes(tmp_path, nats_server, count=1, config=config) as (host,):
        first = await root_client(host)
        session = await first.create_session()
        chat = default_chat_uri(session)
        await first.subscribe(session)
        await first.subscribe(chat)
        late: list[AhpClient] = []
        for turn in range(2):
            first.send_message(session, " ".join(f"word{n}" for n in range(40)))
            for _ in range(4):
                await asyncio.sleep(0.05)
                client = await root_client(host)
                await client.subscribe(session)
                await client.subscribe(chat)
                late.append(client)
            await until_turns_ended([first, *late], session, turn + 1)
        turns = (first.state(chat) or {})["turns"]
        assert len(turns) == 2 and "You said" in str(turns[0]["responseParts"])
        for client in late:
            assert (client.state(chat) or {})["turns"] == turns
        for client in [first, *late]:
            await client.close()


async def test_a_subscriber_waits_for_its_own_channels_only_and_not_past_the_bound(
        nats_server: EmbeddedNats, relay: Relay, logs: list[ClusterLog], caplog: pytest.LogCaptureFixture) -> None:
    """With this process's acknowledgements held back, a subscription to another channel is taken
    at once; one to the channel whose chunk waits is taken once the bound passed, with a warning
    saying its subscriber may get the chunk twice."""
    here = await a_store(nats_server, logs, "here", url=relay.url)
    chat = start_streaming(here, HERE)
    other = start_streaming(here, "ahp-session:/other")
    await durable(here)
    relay.stall()
    chunk = delta(here, chat, "waiting ")
    here.flush()
    await here.settle([other])
    assert chunk["serverSeq"] == 0 and "may get it twice" not in caplog.text  # not held by another channel's action
    await here.settle([chat], within=0.2)
    assert chunk["serverSeq"] == 0 and "may get it twice" in caplog.text
    relay.flow()
    await durable(here)
