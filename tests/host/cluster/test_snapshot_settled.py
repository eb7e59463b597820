"""What a client of one process of a cluster sees when it subscribes to a channel while an action
of that process on it waits for the log's number (``Store.settle``, ``host.state.awaiting``): its
snapshot and the frames after it, on a real nats-server. The snapshot holds each action once: the
frames numbered above its ``fromSeq``, applied to it, give the store's state."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest

from host.cluster.nats_server import EmbeddedNats
from host.cluster.ordered_log import ClusterLog
from host.state.channels import reduce
from host.state.log import LogRecord
from host.state.store import Store
from tests.host.cluster.conftest import Relay
from tests.host.cluster.test_taken_in_order import (
    ELSEWHERE,
    HERE,
    Connection,
    a_store,
    delta,
    durable,
    logs,
    start_streaming,
    until,
)

__all__ = ["logs"]  # (the fixture, used by name)


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
    relay.stall()  # this process's acknowledgements come late
    stored = await there.log.core.last_seq()  # type: ignore[attr-defined]
    delta(here, chat_here, "mine ")
    here.flush()
    for _ in range(1000):
        if await there.log.core.last_seq() > stored:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.01)
    theirs = delta(there, chat_there, "theirs ")
    await durable(there)
    [record] = await there.log.core.read(theirs["serverSeq"] - 1, [chat_there])  # type: ignore[attr-defined]
    here.take_in(LogRecord("action", record.channel, record.seq, record.now, record.body))
    later = Connection()
    snapshot = await subscribed(here, chat_there, later)  # while the record is held
    assert first.frames == [] and text(snapshot["state"]) == "theirs "
    relay.flow()
    await until(lambda: len(first.frames) == 1)
    await asyncio.sleep(0.1)
    assert later.frames == []
    assert text(mirrored(snapshot, later.frames, "chat")) == "theirs "
    assert mirrored(snapshot, later.frames, "chat") == here.state(chat_there) == there.state(chat_there)
