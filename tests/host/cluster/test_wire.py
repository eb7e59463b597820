"""How the log's batches leave (``host.cluster._wire``), the fast sender and its plain twin alike,
against a real nats-server: messages in order with their headers, the last one's reply, and the
client's own errors when no one answers, no answer comes, or a message is too large; and the
JetStream log appending through the plain twin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import MaxPayloadError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from ahp.jsonrpc import action_frame
from ahp.state.channels import default_chat_uri
from host.cluster._wire import FastSender, PlainSender, Sender, sender, sent
from host.cluster.jetstream_log import JetStreamLog
from host.cluster.nats_server import EmbeddedNats

SESSION = "ahp-session:/wire"


@pytest.fixture
async def client(nats_server: EmbeddedNats) -> AsyncIterator[Client]:
    client = await nats.connect(nats_server.url)
    yield client
    await client.close()


@pytest.fixture(params=["fast", "plain"])
async def wire(request: pytest.FixtureRequest, client: Client) -> Sender:
    chosen = sender(client, fast=request.param == "fast")
    assert isinstance(chosen, FastSender if request.param == "fast" else PlainSender)
    await chosen.start()
    return chosen


async def test_a_batch_arrives_in_order_with_its_headers_and_the_last_message_s_reply_comes_back(
        client: Client, wire: Sender) -> None:
    seen: list[tuple[str, bytes, dict[str, str]]] = []

    async def answer(message: Msg) -> None:
        seen.append((message.subject, message.data, dict(message.headers or {})))
        if message.reply:
            await message.respond(b"got " + message.data)

    await client.subscribe("wire.>", cb=answer)
    await client.flush()
    replies = await asyncio.gather(
        sent(wire, [("wire.a", {"Ahp-Kind": "action", "N": "1"}, b"one"), ("wire.b", {"N": "2"}, b"two")], 5),
        sent(wire, [("wire.c", {"N": "3"}, b"three")], 5))
    assert replies == [b"got two", b"got three"]
    assert seen == [("wire.a", b"one", {"Ahp-Kind": "action", "N": "1"}), ("wire.b", b"two", {"N": "2"}),
                    ("wire.c", b"three", {"N": "3"})]


async def test_a_request_no_one_listens_to_fails_with_no_responders(wire: Sender) -> None:
    with pytest.raises(NoRespondersError):
        await sent(wire, [("nobody.here", {"N": "1"}, b"x")], 5)


async def test_a_request_whose_reply_does_not_come_times_out(client: Client, wire: Sender) -> None:
    async def keep_quiet(message: Msg) -> None:
        pass

    await client.subscribe("silent", cb=keep_quiet)
    await client.flush()
    with pytest.raises(NatsTimeout):
        await sent(wire, [("silent", {"N": "1"}, b"x")], 0.3)


async def test_a_message_over_the_server_s_limit_is_refused_before_it_leaves(client: Client, wire: Sender) -> None:
    with pytest.raises(MaxPayloadError):
        await sent(wire, [("big", {"N": "1"}, b"x" * (client.max_payload + 1))], 5)


async def test_the_log_through_the_plain_sender_numbers_a_tick_and_a_single_append(nats_server: EmbeddedNats) -> None:
    log = await JetStreamLog.connect(nats_server.url, holder="plain", fast_wire=False)
    try:
        chat = default_chat_uri(SESSION)
        await log.claim(SESSION)
        envelopes: list[dict[str, Any]] = [{"channel": chat, "action": {"type": "test/step", "i": i}, "serverSeq": 0}
                                          for i in range(4)]
        stamped = await asyncio.gather(*(log.append(chat, 0, envelope) for envelope in envelopes[:3]))
        stamped.append(await log.append(chat, 0, envelopes[3]))
        seqs = [envelope["serverSeq"] for envelope in envelopes]
        assert seqs == list(range(seqs[0], seqs[0] + 4))
        assert stamped == [action_frame(envelope) for envelope in envelopes]  # one serialisation, same text
        assert [record.body for record in await log.read(seqs[0] - 1)] == envelopes
    finally:
        await log.close()
