"""``host.cluster.consumer.InOrder`` on a real nats-server: every message of its subjects from a
sequence on, in order, none twice, none skipped, also when a message is lost on the way to the
client or the server loses the consumer; and no timer of nats-py's ordered consumer left running."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext, api

from host.cluster.consumer import InOrder
from host.cluster.nats_server import EmbeddedNats

STREAM = "T"


@pytest.fixture
async def js(nats_server: EmbeddedNats) -> AsyncIterator[JetStreamContext]:
    client = await nats.connect(nats_server.url)
    context = client.jetstream()
    await context.add_stream(api.StreamConfig(name=STREAM, subjects=["t.>"], storage=api.StorageType.FILE))
    yield context
    await client.close()


async def _publish(js: JetStreamContext, *subjects: str) -> list[int]:
    return [(await js.publish(subject, subject.encode())).seq for subject in subjects]


async def _until(condition: Any, timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.02)):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("not within the time")


async def test_the_messages_of_its_filters_come_from_the_start_in_order_then_those_stored_later(js: JetStreamContext) -> None:
    await _publish(js, "t.a", "t.b", "t.a", "t.c", "t.a")
    got: list[tuple[int, str]] = []
    reader = await InOrder.open(js, STREAM, "t.>", lambda message, seq, pending: got.append((seq, message.subject)),
                                start=2, filter_subjects=["t.a", "t.c"], heartbeat=1.0)
    try:
        later = await _publish(js, "t.b", "t.c")
        await _until(lambda: len(got) == 4)
        assert got == [(3, "t.a"), (4, "t.c"), (5, "t.a"), (later[1], "t.c")]
        assert reader.last == later[1] and reader.remakes == 0
        tasks = {task.get_coro().__qualname__ for task in asyncio.all_tasks()}  # type: ignore[union-attr]
        assert not any("check_flow_control_response" in name for name in tasks)  # the ordered consumer's poll
    finally:
        await reader.stop()


async def test_a_message_lost_on_the_way_is_read_again_and_none_comes_twice(js: JetStreamContext,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[int] = []
    reader = await InOrder.open(js, STREAM, "t.>", lambda message, seq, pending: got.append(seq))
    try:
        # The client drops the first delivery of the second message (as a client's full queue would).
        real = Client._process_msg
        dropped: list[bytes] = []

        async def lossy(self: Client, sid: int, subject: bytes, reply: bytes, data: bytes, headers: bytes) -> None:
            if data == b"t.two" and not dropped:
                dropped.append(data)
                return
            await real(self, sid, subject, reply, data, headers)

        monkeypatch.setattr(Client, "_process_msg", lossy)
        seqs = await _publish(js, "t.one", "t.two", "t.three")
        await _until(lambda: len(got) >= 3)
        seqs += await _publish(js, "t.four")
        await _until(lambda: len(got) >= 4)
        await asyncio.sleep(0.2)
        assert dropped and got == seqs
        assert reader.remakes == 1
    finally:
        await reader.stop()


async def test_a_consumer_the_server_lost_is_made_again_after_two_silent_heartbeats(js: JetStreamContext) -> None:
    got: list[int] = []
    reader = await InOrder.open(js, STREAM, "t.>", lambda message, seq, pending: got.append(seq), heartbeat=0.2)
    try:
        first = await _publish(js, "t.one")
        await _until(lambda: got == first)
        subscription = reader.subscription
        assert subscription is not None
        info = await subscription.consumer_info()
        await js.delete_consumer(STREAM, info.name)
        await _until(lambda: reader.remakes == 1)
        later = await _publish(js, "t.two", "t.three")
        await _until(lambda: len(got) == 3)
        assert got == first + later
    finally:
        await reader.stop()


async def test_stopped_it_hands_nothing_more_over(js: JetStreamContext) -> None:
    got: list[Msg] = []

    def take(message: Msg, seq: int, pending: int) -> None:
        got.append(message)

    reader = await InOrder.open(js, STREAM, "t.>", take, heartbeat=0.2)
    await reader.stop()
    await _publish(js, "t.one")
    await asyncio.sleep(0.6)
    assert got == [] and reader.subscription is None
