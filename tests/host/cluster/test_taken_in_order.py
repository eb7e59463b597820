"""What a connection of one process sees of two sessions, one run there and one run by another
process (its records taken in by the follower, ``Store.take_in``), on a real nats-server: every
frame in strictly increasing ``serverSeq``, none skipped, so that a reconnect with the last
``serverSeq`` it saw misses nothing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest

from ahp.state.channels import default_chat_uri
from host.cluster.nats_server import EmbeddedNats
from host.cluster.ordered_log import ClusterLog
from host.state.log import LogRecord
from host.state.store import Store
from tests.host.cluster.conftest import Relay

HERE = "ahp-session:/here"
"""Run by the process the connection is on."""
ELSEWHERE = "ahp-session:/elsewhere"
"""Run by the other process; taken in by the connection's."""


async def a_store(nats_server: EmbeddedNats, logs: list[ClusterLog], holder: str, url: str | None = None) -> Store:
    log = ClusterLog(url or nats_server.url, holder=holder)
    logs.append(log)
    store = Store({"agents": []}, clock=lambda: 3, log=log)
    await store.recover()
    return store


class Connection:
    """A subscriber as a transport is one: ``seqs`` is every frame's ``serverSeq`` in the order it
    was handed to the connection (the order the client reads them in)."""

    def __init__(self) -> None:
        self.frames: list[dict[str, Any]] = []

    def send(self, text: str) -> None:
        self.frames.append(json.loads(text)["params"])

    def seqs(self) -> list[int]:
        return [frame["serverSeq"] for frame in self.frames]


def start_streaming(store: Store, session: str) -> str:
    chat = default_chat_uri(session)
    store.create(session, "session", {"title": session, "defaultChat": chat})
    store.create(chat, "chat", {"resource": chat, "title": "t", "status": 1, "modifiedAt": "1970-01-01T00:00:00.001Z",
                                "turns": []})
    store.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "1970-01-01T00:00:00.002Z",
                          "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(chat, {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown", "id": "m", "content": ""}})
    return chat


async def until(condition: Any, seconds: float = 20) -> None:
    for _ in range(int(seconds * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never came")


async def durable(store: Store) -> None:
    settled = asyncio.get_running_loop().create_future()
    store.when_durable(lambda: settled.set_result(None))
    await asyncio.wait_for(settled, 10)


async def two_processes_streaming(nats_server: EmbeddedNats, logs: list[ClusterLog]) -> tuple[Store, Store, str, str, Connection]:
    """Process "here" runs HERE, "there" runs ELSEWHERE, each with a turn streaming; a connection on
    "here" subscribed to both sessions and their chats."""
    here, there = await a_store(nats_server, logs, "here"), await a_store(nats_server, logs, "there")
    assert await here.follow()
    chat_there = start_streaming(there, ELSEWHERE)
    await durable(there)
    chat_here = start_streaming(here, HERE)
    await durable(here)
    await until(lambda: chat_there in here)
    await here.hold([chat_there])  # what a subscription does first (host.transport.connection)
    connection = Connection()
    for channel in (HERE, chat_here, ELSEWHERE, chat_there):
        here.subscribe(channel, connection)
    return here, there, chat_here, chat_there, connection


async def test_two_processes_streaming_a_connection_on_one_gets_both_sessions_frames_in_serverseq_order_none_skipped(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    """Acknowledgements and the follower race: the follower often brings the other process's
    records after this process read the acknowledgement of a later one of its own."""
    here, there, chat_here, chat_there, connection = await two_processes_streaming(nats_server, logs)
    sent: list[dict[str, Any]] = []
    for round in range(150):
        sent.append(delta(here, chat_here, f"h{round} "))
        sent.append(delta(there, chat_there, f"e{round} "))
        if round % 10 == 0:  # titles too: frames that take the general way
            sent.append(title(here, HERE, f"h{round}"))
            sent.append(title(there, ELSEWHERE, f"e{round}"))
        here.flush()
        there.flush()
        await asyncio.sleep(0)
    await durable(here)
    await durable(there)
    await until(lambda: len(connection.frames) >= len(sent))
    assert connection.seqs() == sorted(envelope["serverSeq"] for envelope in sent)  # strictly increasing, every one
    assert here.state(chat_there) == there.state(chat_there)
    # A client cut off anywhere reconnects with the last serverSeq it read and misses nothing.
    channels = [HERE, chat_here, ELSEWHERE, chat_there]
    for cut in (len(connection.frames) // 3, len(connection.frames) // 2):
        replayed = await here.replay_settled(connection.frames[cut]["serverSeq"], channels)
        assert replayed is not None
        assert [envelope["serverSeq"] for envelope in replayed] == connection.seqs()[cut + 1:]


def delta(store: Store, chat: str, word: str) -> dict[str, Any]:
    return store.dispatch_streamed(chat, {"type": "chat/delta", "turnId": "t1", "partId": "m", "content": word})


def title(store: Store, session: str, text: str) -> dict[str, Any]:
    return store.dispatch(session, {"type": "session/titleChanged", "title": text})


async def taken_in_while_late(here: Store, there: Store, relay: Relay, chat_there: str,
                              dispatch_mine: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """With the acknowledgements to ``here`` held back (``relay``, which ``here``'s log goes
    through), ``dispatch_mine()`` on ``here``, stored before ``there`` appends a delta to
    ``chat_there``, which ``here`` then takes in as its follower would hand it over: both envelopes,
    mine first (numbered lower, not acknowledged to ``here`` yet)."""
    relay.stall()  # what the server sends "here" comes late: its acknowledgements too
    stored = await there.log.core.last_seq()  # type: ignore[attr-defined]
    mine = dispatch_mine()
    here.flush()
    for _ in range(1000):  # stored, numbered before what "there" appends next
        if await there.log.core.last_seq() > stored:  # type: ignore[attr-defined]
            break
        await asyncio.sleep(0.01)
    theirs = delta(there, chat_there, "theirs ")
    await durable(there)
    [record] = await there.log.core.read(theirs["serverSeq"] - 1, [chat_there])  # type: ignore[attr-defined]
    here.take_in(LogRecord("action", record.channel, record.seq, record.now, record.body))
    return mine, theirs


@pytest.mark.parametrize("mine_is", ["a streamed chunk", "a title"])
async def test_a_record_taken_in_waits_for_this_process_s_action_numbered_before_it_whose_acknowledgement_is_late(
        nats_server: EmbeddedNats, relay: Relay, logs: list[ClusterLog], mine_is: str) -> None:
    there = await a_store(nats_server, logs, "there")
    chat_there = start_streaming(there, ELSEWHERE)
    await durable(there)
    here = await a_store(nats_server, logs, "here", url=relay.url)  # (recovers the session run there)
    chat_here = start_streaming(here, HERE)
    await durable(here)
    connection = Connection()
    for channel in (HERE, chat_here, ELSEWHERE, chat_there):
        here.subscribe(channel, connection)

    mine, theirs = await taken_in_while_late(
        here, there, relay, chat_there, lambda: delta(here, chat_here, "mine ") if mine_is == "a streamed chunk" else title(here, HERE, "mine"))
    await asyncio.sleep(0.05)
    assert connection.frames == []  # sent now, it would come before the action numbered before it

    relay.flow()
    await until(lambda: len(connection.frames) == 2)
    assert mine["serverSeq"] < theirs["serverSeq"]
    assert connection.seqs() == [mine["serverSeq"], theirs["serverSeq"]]
    assert here.state(chat_there) == there.state(chat_there)


async def test_a_record_taken_in_goes_at_once_when_no_action_of_this_process_waits(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    there = await a_store(nats_server, logs, "there")
    chat_there = start_streaming(there, ELSEWHERE)
    await durable(there)
    here = await a_store(nats_server, logs, "here")
    start_streaming(here, HERE)
    await durable(here)
    connection = Connection()
    here.subscribe(chat_there, connection)
    theirs = delta(there, chat_there, "theirs ")
    await durable(there)
    [record] = await there.log.core.read(theirs["serverSeq"] - 1, [chat_there])  # type: ignore[attr-defined]
    here.take_in(LogRecord("action", record.channel, record.seq, record.now, record.body))
    assert connection.seqs() == [theirs["serverSeq"]]  # in the same step



class Writing(Connection):
    """A connection as the WebSocket transport is one (``host.transport.ws_protocol``): what it is
    sent waits and is written when the store says (``at_end_of_tick``, asked for by the first
    frame of each write); ``written`` holds each write's frames' ``serverSeq`` and whether
    ``other`` (an append's future) was done then."""

    def __init__(self, store: Store, other: list[Any]) -> None:
        super().__init__()
        self.store = store
        self.other = other
        self.pending: list[int] = []
        self.written: list[tuple[list[int], bool]] = []

    def send(self, text: str) -> None:
        super().send(text)
        self.pending.append(self.frames[-1]["serverSeq"])
        if len(self.pending) == 1:
            assert self.store.at_end_of_tick is not None
            self.store.at_end_of_tick(self.write)

    def write(self) -> None:
        self.written.append((self.pending, bool(self.other) and self.other[0].done()))
        self.pending = []


@pytest.mark.parametrize("mine_is", ["a title", "a turn's end"])
async def test_a_frame_that_is_not_streamed_is_written_without_waiting_for_another_session_s_tick_in_flight(
        nats_server: EmbeddedNats, logs: list[ClusterLog], mine_is: str) -> None:
    here = await a_store(nats_server, logs, "here")
    chat_here = start_streaming(here, HERE)
    await durable(here)
    other: list[Any] = []
    connection = Writing(here, other)
    here.subscribe(HERE, connection)
    here.subscribe(chat_here, connection)

    def observe(channel: str, before: Any, after: Any, envelope: dict[str, Any]) -> None:
        if envelope["action"]["type"] in ("session/titleChanged", "chat/turnComplete") and channel in (HERE, chat_here):
            # What an observer sends reads states that may hold actions not durable yet.
            connection.send(json.dumps({"params": {"serverSeq": -1, "channel": "reply"}}))

    here.change_observers.append(observe)
    if mine_is == "a title":
        mine = title(here, HERE, "mine")
    else:
        mine = here.dispatch(chat_here, {"type": "chat/turnComplete", "turnId": "t1"})
    here.flush()  # its tick leaves now
    # Another session's tick leaves next and is acknowledged later: it claims its session first
    # (a lease, the group's last sequence and a marker: round trips before its append).
    second = "ahp-session:/second"
    here.create(second, "session", {"title": "second"})
    title(here, second, "claims first")
    assert here._awaiting is not None
    other.append(here._awaiting.newest_answer())  # the log's answer for it
    here.flush()
    await other[0]
    await until(lambda: len(connection.written) == 2)
    assert connection.written[0] == ([mine["serverSeq"]], False)  # written before the other tick was acknowledged
    assert connection.written[1] == ([-1], True)  # what its observer sent: once every tick before it is
