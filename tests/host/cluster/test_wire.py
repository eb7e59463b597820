"""How the log's batches leave (``host.cluster._wire``), the fast sender and its plain twin alike,
against a real nats-server: messages in order with their headers, the last one's reply, and the
client's own errors when no one answers, no answer comes, or a message is too large; replies that
arrive among other subscriptions' messages or split across reads (the fast sender takes the
replies it can where they arrive); and the JetStream log appending through the plain twin."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, cast

import nats
import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.errors import MaxPayloadError, NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from ahp.jsonrpc import action_frame
from ahp.state.channels import default_chat_uri
from host.cluster._wire import FastSender, PlainSender, Sender, flushed, sender, sent
from host.cluster.jetstream_log import JetStreamLog
from host.cluster.nats_server import EmbeddedNats
from tests.host.cluster.conftest import Relay

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
    await flushed(client)
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
    await flushed(client)
    with pytest.raises(NatsTimeout):
        await sent(wire, [("silent", {"N": "1"}, b"x")], 0.3)


async def test_a_message_over_the_server_s_limit_is_refused_before_it_leaves(client: Client, wire: Sender) -> None:
    with pytest.raises(MaxPayloadError):
        await sent(wire, [("big", {"N": "1"}, b"x" * (client.max_payload + 1))], 5)


async def test_replies_among_other_subscriptions_messages_reach_their_calls_and_the_messages_their_subscription(
        nats_server: EmbeddedNats, client: Client, wire: Sender) -> None:
    responder = await nats.connect(nats_server.url)
    try:
        async def answer(message: Msg) -> None:
            # Other traffic for the caller's connection after each reply (and before every other
            # one), in one write: a read begins with a reply or with another message.
            if message.data == b"x" or int(message.data) % 2:
                await responder.publish("noise.before", message.data)
            await responder.publish(message.reply, b"re " + message.data)  # no headers, as JetStream acknowledges
            await responder.publish("noise.after", message.data)

        await responder.subscribe("wire.echo", cb=answer)
        await flushed(responder)
        noise: list[tuple[str, bytes]] = []

        async def heard(message: Msg) -> None:
            noise.append((message.subject, message.data))

        await client.subscribe("noise.>", cb=heard)
        await flushed(client)
        for _ in range(3):  # several rounds: in flight together, then one by one
            replies = await asyncio.gather(*(sent(wire, [("wire.echo", {"N": str(i)}, b"%d" % i)], 5) for i in range(50)))
            assert replies == [b"re %d" % i for i in range(50)]
            assert await sent(wire, [("wire.echo", {"N": "x"}, b"x")], 5) == b"re x"
        await flushed(client)
        expected = 3 * (50 + 25 + 2)
        for _ in range(100):
            if len(noise) == expected:
                break
            await asyncio.sleep(0.01)
        assert len(noise) == expected
        for data in {data for _, data in noise}:  # each request's, in the order they were sent
            said = [subject for subject, heard_data in noise if heard_data == data]
            if data != b"x" and int(data) % 2 == 0:
                assert said == ["noise.after"] * 3
            else:
                assert said == ["noise.before", "noise.after"] * 3
    finally:
        await responder.close()


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("piece", [7, 61])
async def test_replies_split_across_reads_reach_their_calls(nats_server: EmbeddedNats, fast: bool, piece: int) -> None:
    relay = await Relay(nats_server.port).start()
    relay.piece = piece  # 61: a read holds a whole reply and the start of the next
    client = await nats.connect(relay.url)
    responder = await nats.connect(nats_server.url)
    try:
        async def answer(message: Msg) -> None:
            await responder.publish(message.reply, b"re " + message.data)

        await responder.subscribe("wire.echo", cb=answer)
        await flushed(responder)
        wire = sender(client, fast)
        await wire.start()
        replies = await asyncio.gather(*(sent(wire, [("wire.echo", {"N": str(i)}, b"%d" % i)], 10) for i in range(20)))
        assert replies == [b"re %d" % i for i in range(20)]
        assert await sent(wire, [("wire.echo", {"N": "x"}, b"x")], 10) == b"re x"
    finally:
        await client.close()
        await responder.close()
        await relay.stop()


async def test_replies_come_again_once_the_client_reconnected_after_the_server_restarted(
        nats_server: EmbeddedNats, wire: Sender) -> None:
    # nats-py connects the same transport object again, with a new reader and writer.
    async def echo(client: Client) -> None:
        async def answer(message: Msg) -> None:
            await client.publish(message.reply, b"re " + message.data)

        await client.subscribe("wire.echo", cb=answer)
        await flushed(client)

    responder = await nats.connect(nats_server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1)
    try:
        await echo(responder)
        assert await sent(wire, [("wire.echo", {"N": "1"}, b"1")], 5) == b"re 1"
        client = cast(Any, wire).client
        nats_server.kill()
        while client.is_connected:
            await asyncio.sleep(0.02)
        nats_server.start()
        while not (client.is_connected and responder.is_connected):
            await asyncio.sleep(0.05)
        await flushed(responder)
        await flushed(client)
        replies = await asyncio.gather(*(sent(wire, [("wire.echo", {"N": str(i)}, b"%d" % i)], 5) for i in range(10)))
        assert replies == [b"re %d" % i for i in range(10)]
    finally:
        await responder.close()


async def test_requests_sent_each_with_its_own_reply_get_theirs_and_one_too_large_fails_alone(
        client: Client, wire: Sender) -> None:
    seen: list[tuple[str, bytes, dict[str, str]]] = []

    async def answer(message: Msg) -> None:
        seen.append((message.subject, message.data, dict(message.headers or {})))
        await message.respond(b"got " + message.data)

    await client.subscribe("wire.>", cb=answer)
    await flushed(client)
    loop = asyncio.get_running_loop()
    batches: list[asyncio.Future[list[bytes | BaseException]]] = [loop.create_future() for _ in range(2)]
    wire.request_batches([
        ([("wire.a", "Ahp-Kind: action\r\nN: 1", "one"), ("wire.b", "N: 2", "x" * (client.max_payload + 1)),
          ("wire.c", "N: 3", "drei \u00e9")], "Id: first.", 0, batches[0].set_result),
        ([("wire.d", "", "four"), ("wire.e", "N: 5", "five")], "Id: second.", 7, batches[1].set_result)], 5)
    first, second = await asyncio.gather(*batches)
    assert first[0] == b"got one" and first[2] == "got drei \u00e9".encode() and isinstance(first[1], MaxPayloadError)
    assert second == [b"got four", b"got five"]
    assert seen == [("wire.a", b"one", {"Ahp-Kind": "action", "N": "1", "Id": "first.0"}),
                    ("wire.c", "drei \u00e9".encode(), {"N": "3", "Id": "first.2"}),
                    ("wire.d", b"four", {"Id": "second.7"}), ("wire.e", b"five", {"N": "5", "Id": "second.8"})]


async def test_replies_with_line_breaks_in_them_reach_their_calls_whole_among_plain_ones(
        client: Client, wire: Sender) -> None:
    # (The fast sender takes a read of replies only by one pattern when each payload's size says it
    # is whole: a reply with a line break in it is taken from the head, one at a time, instead.)
    async def answer(message: Msg) -> None:
        await message.respond(b"line " + message.data + (b"\r\nand more\r\n" if message.data.endswith(b"3") else b""))

    await client.subscribe("wire.>", cb=answer)
    await flushed(client)
    loop = asyncio.get_running_loop()
    batches: list[asyncio.Future[list[bytes | BaseException]]] = [loop.create_future() for _ in range(3)]
    wire.request_batches([([(f"wire.{n}", "N: 1", f"{n}{i}") for i in range(6)], "Id: b.", 0, batch.set_result)
                          for n, batch in enumerate(batches)], 5)
    told = await asyncio.gather(*batches)
    assert told == [[f"line {n}{i}".encode() + (b"\r\nand more\r\n" if i == 3 else b"") for i in range(6)]
                    for n in range(3)]


async def test_a_batch_all_of_whose_requests_are_too_large_is_answered_at_once(client: Client, wire: Sender) -> None:
    told: list[list[bytes | BaseException]] = []
    wire.request_batches([([("wire.big", "N: 1", "x" * (client.max_payload + 1))], "Id: b.", 0, told.append)], 5)
    for _ in range(50):
        if told:
            break
        await asyncio.sleep(0.01)
    assert len(told) == 1 and isinstance(told[0][0], MaxPayloadError)


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


async def test_flushed_returns_after_the_server_read_a_subscription_made_just_before() -> None:
    # A server on 127.0.0.1 that says what it read, in order: the PING that ``flushed`` waits on
    # must come after the SUB made just before it (nats-py's own ``flush`` writes its PING at once,
    # ahead of a SUB still waiting for the client's flusher task: another process's request could
    # then find no responders although the flush had returned).
    read = bytearray()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b'INFO {"server_id":"fake","version":"2.15.1","proto":1,"headers":true,"max_payload":1048576}\r\n')
        while line := await reader.readline():
            read.extend(line)
            if line == b"PING\r\n":
                writer.write(b"PONG\r\n")

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    nc = await nats.connect(f"nats://127.0.0.1:{port}", allow_reconnect=False)
    try:
        read.clear()
        async def take(message: Msg) -> None:
            pass

        await nc.subscribe("ahp.request.someone", cb=take)
        await flushed(nc)
        said = bytes(read)
        assert b"SUB ahp.request.someone" in said and said.rindex(b"PING") > said.index(b"SUB ahp.request.someone"), said
    finally:
        await nc.close()
        server.close()



class _IdleReader:
    """nats-py's stream reader as the fast sender finds it when its read loop waits for data."""

    def __init__(self) -> None:
        self._waiter = object()
        self._buffer = b""


class _IdleParser:
    buf = b""
    state = 1  # between messages


_ACK = b'{"stream":"AHP","seq":'


def _replies(inbox: str, call: str, numbers: list[int], payloads: list[bytes]) -> bytes:
    """``MSG`` frames of replies ``numbers`` of ``call`` on ``inbox``, as the server writes them."""
    return b"".join(b"MSG %s%s-%d 3 %d\r\n%s\r\n" % (inbox.encode(), call.encode(), number, len(payload), payload)
                    for number, payload in zip(numbers, payloads))


@pytest.mark.parametrize(("seqs", "order", "after", "numbered"), [
    ([41 + i for i in range(10)], range(10), b"", True),  # a tick's acknowledgements, one after another
    ([7], range(1), b"", True),  # a chunk a tick
    ([95 + i for i in range(10)], range(10), b"", False),  # their sizes differ (99, then 100)
    ([41, 42, 44], range(3), b"", False),  # another writer's record between two
    ([41, 42, 43], [1, 0, 2], b"", False),  # out of order
    ([41, 42], range(2), b"PING\r\n", False),  # something else after them
])
async def test_acknowledgements_asked_for_as_numbers_come_as_a_range_only_when_the_read_is_exactly_them(
        client: Client, seqs: list[int], order: Any, after: bytes, numbered: bool) -> None:
    wire = FastSender(client)
    await wire.start()
    prefix = wire.reserve()
    assert prefix is not None
    told: list[Any] = []
    wire.write_batch("", len(seqs), told.append, 5, _ACK)
    inbox, call = prefix[:-1].rsplit(".", 1)[0] + ".", prefix[:-1].rsplit(".", 1)[1]
    acks = [_ACK + str(seq).encode() + b"}" for seq in seqs]
    fed: list[bytes] = []
    wire._feed(cast(Any, _IdleReader()), _IdleParser(), fed.append,
               _replies(inbox, call, list(order), [acks[i] for i in order]) + after)
    assert len(told) == 1
    if numbered:
        assert told[0] == range(seqs[0], seqs[0] + len(seqs))
    else:
        assert told[0] == acks  # each reply in its place, read the general way
    assert fed == ([after] if after else [])


async def test_acknowledgements_not_asked_for_as_numbers_come_as_they_are(client: Client) -> None:
    wire = FastSender(client)
    await wire.start()
    prefix = wire.reserve()
    assert prefix is not None
    told: list[Any] = []
    wire.write_batch("", 2, told.append, 5)
    inbox, call = prefix[:-1].rsplit(".", 1)[0] + ".", prefix[:-1].rsplit(".", 1)[1]
    acks = [_ACK + b"41}", _ACK + b"42}"]
    wire._feed(cast(Any, _IdleReader()), _IdleParser(), lambda data: None, _replies(inbox, call, [0, 1], acks))
    assert told == [acks]


@pytest.mark.parametrize("count", [1, 10])
async def test_a_batch_request_asking_for_its_acknowledgements_as_numbers_gets_a_range(client: Client, count: int) -> None:
    wire = FastSender(client)
    await wire.start()
    told: list[Any] = []
    wire.request_batches([([("wire.a", "N: 1", "x")] * count, "Id: b.", 0, told.append)], 5, _ACK)
    call = str(wire._calls)
    acks = [_ACK + str(50 + i).encode() + b"}" for i in range(count)]
    wire._feed(cast(Any, _IdleReader()), _IdleParser(), lambda data: None,
               _replies(wire._inbox, call, list(range(count)), acks))
    assert told == [range(50, 50 + count)]
    told.clear()
    wire.request_batches([([("wire.a", "N: 1", "x")] * count, "Id: c.", 0, told.append)], 5)  # not asked for
    call = str(wire._calls)
    wire._feed(cast(Any, _IdleReader()), _IdleParser(), lambda data: None,
               _replies(wire._inbox, call, list(range(count)), acks))
    assert told == [acks]
