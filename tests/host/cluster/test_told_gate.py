"""The gate told in order (``ClusterLog._watch_told``): on a real nats-server, a process whose
frames go to connections that also follow the root (run by another process) lets them leave as
soon as its follower handed over every record of the root's group and every owner marker the
stream told it of as it stored them, without asking the server; it asks where it cannot know (a
stream made before without the stream's ``republish``, records before the watch began, a marker
below the frame, a reconnect)."""

from __future__ import annotations

import asyncio
from typing import Any

import nats
from nats.js import api

from host.cluster._wire import subscribe_at_once
from host.cluster.jetstream_log import told_config
from host.cluster.nats_server import EmbeddedNats
from host.cluster.ordered_log import ClusterLog
from host.cluster.subjects import Subjects
from host.state.log import LogRecord
from tests.host.cluster.conftest import Relay

ROOT = "ahp-root://"
HERE = "ahp-session:/here"


def action(channel: str, i: int) -> dict[str, Any]:
    return {"channel": channel, "action": {"type": "root/sessionsChanged", "i": i}, "serverSeq": 0}


async def following(url: str, logs: list[ClusterLog], holder: str) -> tuple[ClusterLog, list[LogRecord]]:
    log = ClusterLog(url, holder=holder)
    logs.append(log)
    await log.recover()
    taken: list[LogRecord] = []
    await log.follow(taken.append)
    return log, taken


def counting_questions(log: ClusterLog) -> list[int]:
    asked: list[int] = []
    core = log.core
    ask = core.next_on

    def next_on(questions: Any) -> Any:
        asked.append(len(questions))
        return ask(questions)

    core.next_on = next_on  # type: ignore[method-assign]
    return asked


def seq_of(frame: str) -> int:
    return int(frame.split('"serverSeq":')[1].split(",")[0].rstrip("}"))


async def settled_gate(log: ClusterLog, seq: int) -> None:
    waiting = log.caught_up(seq, [ROOT])
    if waiting is not None:
        await asyncio.wait_for(waiting, 10)


async def rounds(here: ClusterLog, there: ClusterLog, count: int, start: int) -> tuple[int, int]:
    """``count`` rounds of a root record by ``there`` and then a frame of ``here``'s, the gate
    asked as the frame's acknowledgement is read: never open before the follower handed the root
    record over. Returns how many rounds found it open at once, and how many waited."""
    at_once = waited = 0
    for i in range(count):
        root = await there.append(ROOT, 0, action(ROOT, start + i))
        r = seq_of(root)
        # Two frames: the gate of the second is asked about the record below it that is its own
        # (not handed over by the follower, which skips it), so the follower's place alone never says.
        await here.append(HERE, 0, {"channel": HERE, "action": {"type": "session/x", "i": i}, "serverSeq": 0})
        frame = await here.append(HERE, 0, {"channel": HERE, "action": {"type": "session/y", "i": i}, "serverSeq": 0})
        f = seq_of(frame)
        assert r and f > r + 1
        waiting = here.caught_up(f, [ROOT])
        if waiting is None:
            assert here._followed >= r  # open only once the root's record was handed over
            at_once += 1
        else:
            await asyncio.wait_for(waiting, 10)
            assert here._followed >= r
            waited += 1
    return at_once, waited


async def test_a_frame_waits_for_the_root_record_told_before_it_without_asking_the_server(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    here, _ = await following(nats_server.url, logs, "here")
    there, _ = await following(nats_server.url, logs, "there")
    assert here.core.tells and here._told_since is not None
    await there.append(ROOT, 0, action(ROOT, 0))  # "there" runs the root (its marker: asked about once)
    await here.append(HERE, 0, action(HERE, 0))
    frame = await here.append(HERE, 0, action(HERE, 1))
    await settled_gate(here, seq_of(frame))
    asked = counting_questions(here)
    at_once, waited = await rounds(here, there, 40, 1)
    assert at_once + waited == 40
    assert asked == []  # every answer from what the stream told, none from a question


async def test_a_follower_behind_is_waited_for_without_asking_the_server(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    here, _ = await following(nats_server.url, logs, "here")
    there, _ = await following(nats_server.url, logs, "there")
    await there.append(ROOT, 0, action(ROOT, 0))
    await here.append(HERE, 0, action(HERE, 0))
    frame = await here.append(HERE, 0, action(HERE, 1))
    await settled_gate(here, seq_of(frame))
    take = here._follow_take
    assert take is not None

    async def later(record: Any, generation: int) -> None:
        await asyncio.sleep(0.05)  # every record handed over 50 ms late: well after the frames' acknowledgements
        take(record, generation)

    here._follow_take = later  # type: ignore[assignment]
    await here._follow_again()
    asked = counting_questions(here)
    at_once, waited = await rounds(here, there, 10, 1)
    assert waited == 10 and at_once == 0
    assert asked == []


async def test_a_marker_below_the_frame_is_asked_about(nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    here, _ = await following(nats_server.url, logs, "here")
    there, _ = await following(nats_server.url, logs, "there")
    await here.append(HERE, 0, action(HERE, 0))
    asked = counting_questions(here)
    await there.append("ahp-session:/elsewhere", 0, action("ahp-session:/elsewhere", 0))  # a marker of another group
    frame = await here.append(HERE, 0, action(HERE, 1))
    seq = seq_of(frame)
    waiting = here.caught_up(seq, [ROOT])
    if waiting is not None:
        await asyncio.wait_for(waiting, 10)
        assert asked  # the server was asked: a group changed hands below the frame
    assert here._followed >= seq - 2  # the marker and the record after it handed over


async def test_a_stream_made_before_without_republish_opens_and_is_told_from_then_on(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    client = await nats.connect(nats_server.url)
    try:
        subjects = Subjects()
        await client.jetstream().add_stream(api.StreamConfig(
            name="AHP", subjects=[subjects.all], storage=api.StorageType.FILE, allow_atomic=True, allow_direct=True,
            duplicate_window=120.0))
    finally:
        await client.close()
    here, _ = await following(nats_server.url, logs, "here")
    there, _ = await following(nats_server.url, logs, "there")
    assert here.core.tells and here._told_since is not None
    await there.append(ROOT, 0, action(ROOT, 0))
    await here.append(HERE, 0, action(HERE, 0))
    await settled_gate(here, seq_of(await here.append(HERE, 0, action(HERE, 1))))
    asked = counting_questions(here)
    at_once, waited = await rounds(here, there, 10, 1)
    assert asked == []


async def test_a_log_not_told_asks_the_server_and_still_holds_every_frame_behind_the_root_record(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    here = ClusterLog(nats_server.url, holder="here")
    logs.append(here)
    await here.open()
    here.core.tells = False  # (what a stream left without ``republish`` or a server in a cluster gives)
    await here.recover()
    await here.follow(lambda record: None)
    there, _ = await following(nats_server.url, logs, "there")
    assert here._told_since is None
    await there.append(ROOT, 0, action(ROOT, 0))
    asked = counting_questions(here)
    at_once, waited = await rounds(here, there, 10, 1)
    assert asked  # nothing told: the server is asked


async def test_after_a_reconnect_the_gate_asks_until_it_is_told_again(
    nats_server: EmbeddedNats, relay: Relay, logs: list[ClusterLog]) -> None:
    here, _ = await following(relay.url, logs, "here")
    there, _ = await following(nats_server.url, logs, "there")
    assert here.core.tells
    await there.append(ROOT, 0, action(ROOT, 0))
    since = here._told_since
    assert since is not None
    relay.cut()
    await asyncio.sleep(0.3)
    await there.append(ROOT, 0, action(ROOT, 1))  # stored while "here" is away: never told to it
    relay.mend()
    for _ in range(1000):
        if here._told_since is not None and here._told_since > since:
            break
        await asyncio.sleep(0.01)
    assert here._told_since is not None and here._told_since > since  # told again, from past what it missed
    at_once, waited = await rounds(here, there, 10, 2)
    assert at_once + waited == 10


def test_the_streams_republish_is_each_coarse_record_headers_only() -> None:
    config = told_config(Subjects("p.log"))
    assert (config.src, config.headers_only) == ("p.log.*.*", True)
    assert config.dest == "p.log-told.{{wildcard(1)}}.{{wildcard(2)}}"


async def test_a_client_without_the_queue_leaned_on_gets_no_subscription_told_in_order(
        nats_server: EmbeddedNats) -> None:
    client = await nats.connect(nats_server.url)
    try:
        taken: list[Any] = []
        subscription = await subscribe_at_once(client, "told.x", taken.append)
        assert subscription is not None
        await client.publish("told.x", b"one")
        await client.flush()
        await asyncio.sleep(0.05)
        assert [message.data for message in taken] == [b"one"]  # handed on as parsed

        subscribe = client.subscribe

        async def plain(subject: str, **options: Any) -> Any:
            made = await subscribe(subject, **options)
            made._pending_queue = None  # (a client without the internal)
            return made

        client.subscribe = plain  # type: ignore[method-assign]
        assert await subscribe_at_once(client, "told.y", taken.append) is None  # the caller must ask instead
    finally:
        await client.close()
