"""The JetStream log against a real nats-server and real writer processes: one order with no
holes across processes, fencing, takeover after SIGKILL, replay from a sequence, a server restart,
and a process cut off from NATS."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import pytest

from ahp.jsonrpc import action_frame
from ahp.state.channels import chat_uri, default_chat_uri
from host.cluster.jetstream_log import JetStreamLog, Record, Stamped, _stored_seqs, ack_head
from host.cluster.nats_server import EmbeddedNats
from host.cluster.subjects import untoken
from host.state.log import LogError, LogUnavailable, NotOwner
from tests.host.cluster.conftest import Relay

ROOT_DIR = Path(__file__).resolve().parents[3]
SESSION = "ahp-session:/one"


def step(i: int) -> dict:
    return {"action": {"type": "test/step", "i": i}, "serverSeq": 0}


def steps(records: list[Record], channel: str | None = None) -> list[int]:
    return [r.body["action"]["i"] for r in records if r.kind == "action" and (channel is None or r.channel == channel)]


def start_writer(url: str, session: str, count: int, ttl: float = 6.0) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "tests.host.cluster._writer", url, session, str(count), str(ttl)],
                            cwd=ROOT_DIR, stdout=subprocess.PIPE, text=True)


async def read_line(process: subprocess.Popen[str], want: str, timeout: float = 30) -> list[str]:
    """The lines the writer printed up to the first starting with ``want``."""
    assert process.stdout is not None
    lines: list[str] = []
    while True:
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), timeout)
        assert line, f"the writer ended before printing {want!r}: {lines[-3:]}"
        lines.append(line.strip())
        if line.startswith(want):
            return lines


async def three_unanswered(writer: JetStreamLog, log: JetStreamLog, relay: Relay,
                           lose: Literal["deafen", "hold"]) -> list[asyncio.Future[Stamped]]:
    """``writer`` (connected through ``relay``) claims the session and stores step 0; then steps 1, 2
    and 3 are appended with their answers lost: ``deafen``, the server stores them and its answers
    are lost on the way back (returns once ``log`` holds them); ``hold``, the relay keeps them back
    on their way to the server (returns once it holds all three). Their answers, pending."""
    chat = default_chat_uri(SESSION)
    await writer.claim(SESSION)
    await writer.append(chat, 0, step(0))
    stored_before = await log.last_seq()
    getattr(relay, lose)()
    pending = [writer.append(chat, 0, step(i)) for i in (1, 2, 3)]
    if lose == "deafen":
        while await log.last_seq() < stored_before + 3:  # stored, unacknowledged
            await asyncio.sleep(0.02)
    else:
        while sum(data.count(b"HPUB ") for _, data in relay.held) < 3:  # on their way, not arrived
            await asyncio.sleep(0.02)
    return pending


def told_seqs(frames: list[Stamped]) -> list[int]:
    """The sequences the stamped JSONs of ``frames`` were told."""
    return [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in frames]


@pytest.fixture
async def log(nats_server: EmbeddedNats) -> AsyncIterator[JetStreamLog]:
    log = await JetStreamLog.connect(nats_server.url, holder="test")
    yield log
    await log.close()


async def test_writers_in_several_processes_share_one_order_without_holes(nats_server: EmbeddedNats,
                                                                       log: JetStreamLog) -> None:
    sessions = [f"ahp-session:/w{n}" for n in range(3)]
    writers = [start_writer(nats_server.url, session, 200) for session in sessions]
    try:
        printed = [await read_line(writer, "done") for writer in writers]
    finally:
        for writer in writers:
            writer.kill()
            writer.wait()
    records = await log.read(0)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    for session, lines in zip(sessions, printed):
        mine = steps(records, default_chat_uri(session))
        assert mine == list(range(200))
        # what each writer was told is what the log holds
        told = [(int(line.split()[1]), int(line.split()[2])) for line in lines if line.startswith("seq")]
        held = [(r.seq, r.body["action"]["i"]) for r in records if r.channel == default_chat_uri(session)]
        assert told == held
    assert len([r for r in records if r.kind == "action"]) == 600


async def test_a_writer_killed_with_sigkill_is_taken_over_within_its_lease(nats_server: EmbeddedNats) -> None:
    ttl = 2.0
    writer = start_writer(nats_server.url, SESSION, 30, ttl)
    successor = await JetStreamLog.connect(nats_server.url, holder="successor", lease_ttl=ttl)
    try:
        await read_line(writer, "done")
        with pytest.raises(NotOwner, match="writer-"):
            await successor.claim(SESSION)
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        killed = time.monotonic()
        while True:
            try:
                await successor.claim(SESSION)
                break
            except NotOwner:
                assert time.monotonic() - killed < ttl + 3, "the session was not taken over after its lease lapsed"
                await asyncio.sleep(0.2)
        await asyncio.gather(*(successor.append(default_chat_uri(SESSION), 0, step(30 + i)) for i in range(5)))
        assert steps(await successor.read(0)) == list(range(35))
    finally:
        writer.kill()
        await successor.close()


async def _taken_over(stale: JetStreamLog, fresh: JetStreamLog) -> None:
    """``stale``'s lease renewer paused past its lease (a stopped process, a long GC), so it never
    learns; ``fresh`` claims the session once the lease has lapsed."""
    assert stale._renewer is not None
    stale._renewer.cancel()
    while True:
        try:
            await fresh.claim(SESSION)
            return
        except NotOwner:
            await asyncio.sleep(0.2)


async def test_a_writer_that_lost_its_session_is_refused_by_the_fence(nats_server: EmbeddedNats) -> None:
    stale = await JetStreamLog.connect(nats_server.url, holder="stale", lease_ttl=1.0)
    fresh = await JetStreamLog.connect(nats_server.url, holder="fresh", lease_ttl=1.0)
    chat = default_chat_uri(SESSION)
    try:
        await stale.claim(SESSION)
        await stale.append(chat, 0, step(0))
        await _taken_over(stale, fresh)
        assert stale.owns(SESSION)  # it still believes it owns the session
        with pytest.raises(NotOwner, match="fresh"):
            await stale.append(chat, 0, step(1))
        assert not stale.owns(SESSION)
        await fresh.append(chat, 0, step(2))
        assert steps(await fresh.read(0)) == [0, 2]
    finally:
        await stale.close()
        await fresh.close()


async def test_the_leases_of_many_sessions_are_renewed_spread_over_the_interval_not_all_at_once(
        nats_server: EmbeddedNats) -> None:
    # All at once, the renewals of every session a process runs held its loop and the NATS server up
    # together every ttl / 3, and the chunks streamed meanwhile waited (docs/cluster.md).
    holder = await JetStreamLog.connect(nats_server.url, holder="holder", lease_ttl=1.5)  # renewed every 0.5 s
    watcher = await holder.leases.bucket.watchall()
    groups = [f"ahp-session:/spread-{i}" for i in range(20)]
    try:
        for group in groups:
            await holder.claim(group)
        claimed = {group: holder._groups[group].lease.revision for group in groups}
        renewed: dict[str, float] = {}
        loop = asyncio.get_running_loop()

        async def watch() -> None:
            async for entry in watcher:
                if entry is None:
                    continue
                group = untoken(entry.key)
                if group in claimed and entry.revision > claimed[group] and group not in renewed:
                    renewed[group] = loop.time()
                    if len(renewed) == len(groups):
                        return

        await asyncio.wait_for(watch(), 5)  # each one renewed within an interval (and some slack)
        spread = max(renewed.values()) - min(renewed.values())
        assert spread >= 0.2, f"the {len(groups)} renewals left within {spread * 1000:.0f} ms of each other"
        assert all(holder.owns(group) for group in groups)
    finally:
        await watcher.stop()
        await holder.close()


async def test_sessions_claimed_while_the_renewer_waits_for_another_s_step_are_renewed_at_their_own_steps(
        nats_server: EmbeddedNats) -> None:
    # The renewer sleeps until the next step at which some session is due; a claim wakes it, so a
    # session claimed meanwhile is renewed at its own step of this interval, not after the other's.
    holder = await JetStreamLog.connect(nats_server.url, holder="holder", lease_ttl=3.0)  # every 1 s, 20 steps
    watcher = await holder.leases.bucket.watchall()
    first, others = "ahp-session:/first", [f"ahp-session:/later-{i}" for i in range(8)]
    loop = asyncio.get_running_loop()
    renewed: dict[str, float] = {}
    claimed: dict[str, int] = {}
    everyone_renewed = asyncio.Event()
    first_renewed = asyncio.Event()

    async def watch() -> None:
        async for entry in watcher:
            group = untoken(entry.key) if entry is not None else None
            if group in claimed and entry.revision > claimed[group] and group not in renewed:
                renewed[group] = loop.time()
                if group == first:
                    first_renewed.set()
                if len(renewed) == 1 + len(others):
                    everyone_renewed.set()

    watching = asyncio.ensure_future(watch())
    try:
        await holder.claim(first)
        claimed[first] = holder._groups[first].lease.revision
        await asyncio.wait_for(first_renewed.wait(), 5)  # the renewer now waits about 1 s for its next step
        at = loop.time()
        for group in others:  # their steps are the next 8 after the first's: within this interval
            await holder.claim(group)
            claimed[group] = holder._groups[group].lease.revision
        await asyncio.wait_for(everyone_renewed.wait(), 5)
        late = {group: round(renewed[group] - at, 2) for group in others if renewed[group] - at > 0.9}
        assert not late, f"renewed only after the first session's next step: {late}"
    finally:
        watching.cancel()
        await watcher.stop()
        await holder.close()


async def test_a_stale_writer_s_tick_of_several_records_is_refused_whole_by_the_fence(nats_server: EmbeddedNats) -> None:
    # A tick's records leave at once, each acknowledged on its own: each is fenced, not only the first.
    stale = await JetStreamLog.connect(nats_server.url, holder="stale", lease_ttl=1.0)
    fresh = await JetStreamLog.connect(nats_server.url, holder="fresh", lease_ttl=1.0)
    chat = default_chat_uri(SESSION)
    try:
        await stale.claim(SESSION)
        numbered = [step(i) for i in range(3)]
        await asyncio.gather(*(stale.append(chat, 0, envelope) for envelope in numbered))
        seqs = [envelope["serverSeq"] for envelope in numbered]
        assert seqs == list(range(seqs[0], seqs[0] + 3))  # each record its own stream sequence, in order
        await _taken_over(stale, fresh)
        told = await asyncio.gather(*(stale.append(chat, 0, step(10 + i)) for i in range(4)), return_exceptions=True)
        assert all(isinstance(outcome, NotOwner) and "fresh" in str(outcome) for outcome in told), told
        await fresh.append(chat, 0, step(20))
        assert steps(await fresh.read(0)) == [0, 1, 2, 20]  # nothing of the refused tick
    finally:
        await stale.close()
        await fresh.close()


async def test_a_record_too_large_fails_alone_and_the_tick_s_others_are_told_the_numbers_they_were_stored_with(
        log: JetStreamLog) -> None:
    chat = default_chat_uri(SESSION)
    await log.claim(SESSION)
    huge = {"action": {"type": "test/step", "i": 1, "text": "x" * 2_000_000}, "serverSeq": 0}
    told = await asyncio.gather(log.append(chat, 0, step(0)), log.append(chat, 0, huge), log.append(chat, 0, step(2)),
                                return_exceptions=True)
    assert isinstance(told[1], LogError) and not isinstance(told[1], NotOwner)
    records = await log.read(0)
    assert steps(records) == [0, 2]  # what was told stored is what the log holds, nothing more
    assert [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in (told[0], told[2])] == \
        [r.seq for r in records if r.kind == "action"]


async def test_a_tick_s_records_are_each_told_the_number_they_were_stored_with_while_another_process_appends(
        nats_server: EmbeddedNats, log: JetStreamLog) -> None:
    other = await JetStreamLog.connect(nats_server.url, holder="other")
    try:
        await log.claim(SESSION)
        await other.claim("ahp-session:/two")
        mine, theirs = default_chat_uri(SESSION), default_chat_uri("ahp-session:/two")
        told: dict[str, list[int]] = {mine: [], theirs: []}
        for round_ in range(5):
            stamped = await asyncio.gather(*(log.append(mine, 0, step(round_ * 100 + i)) for i in range(40)),
                                           *(other.append(theirs, 0, step(round_ * 100 + i)) for i in range(40)))
            told[mine] += [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in stamped[:40]]
            told[theirs] += [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in stamped[40:]]
        records = await log.read(0)
        for chat in (mine, theirs):
            held = [(r.seq, r.body["action"]["i"]) for r in records if r.channel == chat]
            assert [i for _, i in held] == [r * 100 + i for r in range(5) for i in range(40)]  # in order, once each
            assert [seq for seq, _ in held] == told[chat]  # each told the number it was stored with
        assert [r.seq for r in records] == list(range(1, len(records) + 1))
    finally:
        await other.close()


class Tick:
    """A caller's tick counted in one outcome (``jetstream_log.Counted``), as ``ClusterLog``'s."""

    def __init__(self, size: int) -> None:
        self.results: list[object] = [None] * size
        self.left = size
        self.ended: asyncio.Future[list[object]] = asyncio.get_running_loop().create_future()
        self.times = 0

    def counted(self) -> None:
        self.times += 1
        self.ended.set_result(list(self.results))


async def test_a_tick_counted_in_one_outcome_gets_each_record_s_frame_number_or_refusal_in_its_slot(
        log: JetStreamLog) -> None:
    other, unowned = "ahp-session:/two", "ahp-session:/nobody"
    await log.claim(SESSION)
    await log.claim(other)
    mine, theirs, nobody = default_chat_uri(SESSION), default_chat_uri(other), default_chat_uri(unowned)
    envelopes = [{"channel": chat, **step(i)} for i, chat in enumerate((mine, theirs, nobody, mine))]
    tick = Tick(5)
    log.queue_tick([("action", mine, 0, envelopes[0], None), ("action", theirs, 0, envelopes[1], None),
                    ("action", nobody, 0, envelopes[2], None), ("created", chat_uri(other, "second"), 0,
                                                                {"kind": "chat", "state": {}}, None),
                    ("action", mine, 0, envelopes[3], None)], tick)
    results = await asyncio.wait_for(tick.ended, 10)
    assert tick.times == 1 and tick.left == 0
    assert isinstance(results[2], NotOwner)  # its slot only: the others are stored
    records = {r.seq: r for r in await log.read(0)}
    for slot, envelope in ((0, envelopes[0]), (1, envelopes[1]), (4, envelopes[3])):
        assert results[slot] == action_frame(envelope)[1]  # the frame, numbered as stored
        assert records[envelope["serverSeq"]].body == envelope
    assert isinstance(results[3], int) and records[results[3]].kind == "created"
    assert envelopes[2]["serverSeq"] == 0


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
async def test_a_tick_of_streamed_text_and_other_actions_is_stored_each_on_its_subject_with_its_own_number(
        nats_server: EmbeddedNats, fast: bool) -> None:
    log = await JetStreamLog.connect(nats_server.url, holder="texts", fast_wire=fast)
    try:
        await log.claim(SESSION)
        chat = default_chat_uri(SESSION)
        turn = {"turnId": "t1"}
        actions = [  # (action, streamed text: what ahp.state.appends.run_key says)
            ({"type": "chat/delta", **turn, "partId": "p", "content": "héllo"}, True),
            ({"type": "chat/reasoning", **turn, "partId": "r", "content": "so"}, True),
            ({"type": "chat/toolCallDelta", **turn, "toolCallId": "c", "content": "{\"a\""}, True),
            ({"type": "chat/toolCallDelta", **turn, "toolCallId": "c", "content": "1", "invocationMessage": "m"}, False),
            ({"type": "chat/delta", **turn, "partId": "p", "content": None}, False),
            ({"type": "test/step", "i": 5}, False)]
        envelopes: list[dict] = []
        for n, (action, _) in enumerate(actions):  # serverSeq last and 0 (the store's), or not
            if n % 3 == 0:
                envelopes.append({"channel": chat, "action": action, "serverSeq": 0})
            elif n % 3 == 1:
                envelopes.append({"channel": chat, "serverSeq": 0, "action": action})
            else:
                envelopes.append({"channel": chat, "action": action, "serverSeq": 0, "origin": {"clientId": "c"}})
        coarse: list[Record] = []
        stop = await log.follow(0, coarse.append, subjects=[log.subjects.coarse])
        tick = Tick(len(envelopes))
        log.queue_tick([("action", chat, 7, envelope, None) for envelope in envelopes], tick)
        results = await asyncio.wait_for(tick.ended, 10)
        seqs = [envelope["serverSeq"] for envelope in envelopes]
        assert seqs == sorted(set(seqs)) and seqs[0] > 0  # each its own number, in order
        records = await log.read(seqs[0] - 1)
        assert [(r.seq, r.body, r.now) for r in records] == [(e["serverSeq"], e, 7) for e in envelopes]
        # One serialisation: the frame is the text a reader of the stream rebuilds (serverSeq last).
        assert results == [action_frame(record.body)[1] for record in records]
        for _ in range(100):
            if any(r.seq >= seqs[-1] for r in coarse) or coarse and actions[-1][1]:
                break
            await asyncio.sleep(0.02)
        await stop()
        # The coarse filter leaves streamed text out: the server chose by each record's subject.
        assert [r.seq for r in coarse if r.kind == "action"] == [
            seq for seq, (_, streamed) in zip(seqs, actions) if not streamed]
    finally:
        await log.close()


async def test_a_reader_from_a_sequence_sees_the_same_tail_as_a_reader_from_the_start(log: JetStreamLog) -> None:
    other = "ahp-session:/other"
    await log.claim(SESSION)
    await log.claim(other)
    for tick in range(10):
        await asyncio.gather(*(log.append(default_chat_uri(s), tick, step(tick * 10 + i)) for s in (SESSION, other) for i in range(5)))
    everything = await log.read(0)
    middle = everything[len(everything) // 2].seq
    assert await log.read(middle) == [r for r in everything if r.seq > middle]
    chat = default_chat_uri(other)
    assert await log.read(middle, [chat]) == [r for r in everything if r.seq > middle and r.channel == chat]
    assert await log.read(everything[-1].seq) == []


async def test_the_log_goes_on_losing_nothing_when_the_nats_server_restarts(nats_server: EmbeddedNats,
                                                                           log: JetStreamLog) -> None:
    chat = default_chat_uri(SESSION)
    await log.claim(SESSION)
    before = await asyncio.gather(*(log.append(chat, 0, step(i)) for i in range(50)))
    nats_server.kill()  # a crash, not a clean stop
    while log.client.is_connected:
        await asyncio.sleep(0.02)
    with pytest.raises(LogUnavailable):
        await log.append(chat, 0, step(-1))
    nats_server.start()
    while not log.client.is_connected:
        await asyncio.sleep(0.05)
    after = await asyncio.gather(*(log.append(chat, 0, step(50 + i)) for i in range(50)))
    records = await log.read(0)
    assert steps(records) == list(range(100))
    seqs = [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in before + after]
    assert seqs == [r.seq for r in records if r.kind == "action"]
    assert seqs == sorted(seqs) and len(set(seqs)) == 100


async def test_a_process_cut_off_from_nats_stops_writing_and_cannot_write_after_a_takeover(
        nats_server: EmbeddedNats, relay: Relay) -> None:
    chat = default_chat_uri(SESSION)
    cut_off = await JetStreamLog.connect(relay.url, holder="cut-off", lease_ttl=1.5)
    other = await JetStreamLog.connect(nats_server.url, holder="other", lease_ttl=1.5)
    lost: list[str] = []
    cut_off.on_lost = lost.append
    try:
        await cut_off.claim(SESSION)
        await cut_off.append(chat, 0, step(0))
        relay.cut()
        while cut_off.client.is_connected:
            await asyncio.sleep(0.02)
        with pytest.raises(LogUnavailable):
            await cut_off.append(chat, 0, step(1))
        while True:  # the others go on: its session is taken over once its lease lapses
            try:
                await other.claim(SESSION)
                break
            except NotOwner:
                await asyncio.sleep(0.2)
        await other.append(chat, 0, step(2))
        relay.mend()
        while not cut_off.client.is_connected:
            await asyncio.sleep(0.05)
        with pytest.raises(NotOwner):
            await cut_off.append(chat, 0, step(3))
        assert lost == [SESSION]
        assert steps(await other.read(0)) == [0, 2]
    finally:
        await cut_off.close()
        await other.close()


async def test_a_process_cut_off_from_nats_gives_up_each_of_its_sessions_before_another_process_may_take_it(
        nats_server: EmbeddedNats, relay: Relay) -> None:
    # What runs in a session stops when its process gives the session up (``on_lost``): that must
    # come before another process can claim it, for every session it ran, however many.
    sessions = [f"ahp-session:/cut-{index}" for index in range(3)]
    cut_off = await JetStreamLog.connect(relay.url, holder="cut-off", lease_ttl=3)
    other = await JetStreamLog.connect(nats_server.url, holder="other", lease_ttl=3)
    lost: list[str] = []
    cut_off.on_lost = lost.append
    try:
        for session in sessions:
            await cut_off.claim(session)
            await cut_off.append(default_chat_uri(session), 0, step(0))
        relay.cut()
        for session in sessions:
            while True:
                try:
                    await other.claim(session)
                    break
                except NotOwner:
                    await asyncio.sleep(0.05)
            assert session in lost, f"{session} was taken over before the cut-off process gave it up"
        assert sorted(lost) == sessions
    finally:
        await cut_off.close()
        await other.close()


async def test_a_batch_whose_acknowledgement_was_lost_while_its_lease_lapsed_is_read_back_not_refused(
        nats_server: EmbeddedNats, relay: Relay, log: JetStreamLog) -> None:
    # Its process reduced those records and every other process holds them: told "refused", it
    # would undo them (over what it took in from the new owner since).
    chat = default_chat_uri(SESSION)
    writer = await JetStreamLog.connect(relay.url, holder="writer", timeout=1.0, lease_ttl=1.5)
    other = await JetStreamLog.connect(nats_server.url, holder="other", lease_ttl=1.5)
    try:
        pending = await three_unanswered(writer, log, relay, "deafen")
        relay.cut()  # and the writer is cut off past its lease: another process takes the session
        while True:
            try:
                await other.claim(SESSION)
                break
            except NotOwner:
                await asyncio.sleep(0.1)
        await other.append(chat, 0, step(4))
        relay.mend()
        frames = await asyncio.wait_for(asyncio.gather(*pending), 30)  # stored: their numbers, not a refusal
        records = await log.read(0)
        assert steps(records) == [0, 1, 2, 3, 4]
        assert [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in frames] == \
            [r.seq for r in records if r.kind == "action"][1:4]
        with pytest.raises(NotOwner):  # and the writer cannot write there any more
            await writer.append(chat, 0, step(5))
    finally:
        await writer.close()
        await other.close()


async def test_a_snapshot_larger_than_a_message_is_kept_and_read_back(log: JetStreamLog) -> None:
    state = {"title": "big", "text": "x" * 3_000_000}
    await log.put_snapshot(SESSION, 41, {SESSION: {"kind": "session", "state": state}})
    assert await log.read_snapshots() == {SESSION: (41, {SESSION: {"kind": "session", "state": state}})}


async def test_appending_to_a_session_not_claimed_is_refused(log: JetStreamLog) -> None:
    with pytest.raises(NotOwner):
        await log.append(default_chat_uri(SESSION), 0, step(0))
    assert await log.read(0) == []


async def test_a_follower_receives_every_process_s_appends_in_order_as_they_are_stored(
        nats_server: EmbeddedNats, log: JetStreamLog) -> None:
    seen: list[Record] = []
    arrived = asyncio.Event()

    def take(record: Record) -> None:
        seen.append(record)
        if len(steps(seen)) == 40:
            arrived.set()

    stop = await log.follow(0, take)
    writers = [start_writer(nats_server.url, f"ahp-session:/f{n}", 20) for n in range(2)]
    try:
        for writer in writers:
            await read_line(writer, "done")
        await asyncio.wait_for(arrived.wait(), 10)
    finally:
        await stop()
        for writer in writers:
            writer.kill()
            writer.wait()
    assert [r.seq for r in seen] == list(range(1, len(seen) + 1))
    for n in range(2):
        assert steps(seen, default_chat_uri(f"ahp-session:/f{n}")) == list(range(20))
    assert seen == await log.read(0)


async def test_a_batch_whose_acknowledgement_was_lost_is_settled_by_what_the_log_holds(
        nats_server: EmbeddedNats, relay: Relay, log: JetStreamLog) -> None:
    chat = default_chat_uri(SESSION)
    writer = await JetStreamLog.connect(relay.url, holder="writer", timeout=1.0)
    try:
        pending = await three_unanswered(writer, log, relay, "deafen")
        relay.cut()  # the connection breaks; the writer reconnects and asks what the log holds
        relay.mend()
        frames = await asyncio.wait_for(asyncio.gather(*pending), 30)
        records = await log.read(0)
        assert steps(records) == [0, 1, 2, 3]  # stored once, not sent again
        assert [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in frames] == \
            [r.seq for r in records if r.kind == "action"][1:]
        await writer.append(chat, 0, step(4))  # still the owner, still fenced right
        assert steps(await log.read(0)) == [0, 1, 2, 3, 4]
    finally:
        await writer.close()


async def test_a_batch_that_never_reached_the_server_is_sent_again_once_reconnected(
        nats_server: EmbeddedNats, relay: Relay, log: JetStreamLog) -> None:
    chat = default_chat_uri(SESSION)
    writer = await JetStreamLog.connect(relay.url, holder="writer", timeout=1.0)
    try:
        await writer.claim(SESSION)
        await writer.append(chat, 0, step(0))
        relay.mute()  # what the writer sends is lost on the way: nothing is stored, nothing answered
        pending = [writer.append(chat, 0, step(i)) for i in (1, 2, 3)]
        await asyncio.sleep(1.5)  # past the writer's timeout: it asks the log, which it cannot reach
        assert steps(await log.read(0)) == [0]
        relay.cut()
        relay.mend()
        frames = await asyncio.wait_for(asyncio.gather(*pending), 30)
        records = await log.read(0)
        assert steps(records) == [0, 1, 2, 3]  # sent again, stored once
        assert [int(text.rsplit(":", 1)[1].rstrip("}")) for text, _ in frames] == \
            [r.seq for r in records if r.kind == "action"][1:]
    finally:
        await writer.close()


async def test_a_record_sent_again_while_its_first_sending_was_still_on_its_way_is_stored_once(
        nats_server: EmbeddedNats, relay: Relay, log: JetStreamLog) -> None:
    # The first sending reaches the server only after the writer reconnected, found the records
    # nowhere in the log and sent them again: the server drops it as a copy (the same Nats-Msg-Id,
    # within the stream's duplicate window), although its fence on the owner marker still holds.
    chat = default_chat_uri(SESSION)
    writer = await JetStreamLog.connect(relay.url, holder="writer", timeout=1.0)
    try:
        pending = await three_unanswered(writer, log, relay, "hold")
        relay.cut()  # the connection breaks with them still on their way
        relay.mend()
        frames = await asyncio.wait_for(asyncio.gather(*pending), 30)  # found nowhere: sent again
        relay.release()  # and the first sending arrives after all
        while relay.late.count(b'"stream":"AHP"') < 3:  # answered, each of the three
            await asyncio.sleep(0.02)
        records = await log.read(0)
        assert steps(records) == [0, 1, 2, 3]  # stored once
        assert told_seqs(frames) == [r.seq for r in records if r.kind == "action"][1:]
        await writer.append(chat, 0, step(4))  # still the owner, still fenced right
        assert steps(await log.read(0)) == [0, 1, 2, 3, 4]
    finally:
        await writer.close()


class ToldTick(Tick):
    """A caller's tick the core may tell record by record (``jetstream_log.Told``), as ``ClusterLog``'s."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.steps: list[object] = []

    def telling(self) -> None:
        self.steps.append("telling")

    def told(self, last: int) -> None:
        self.steps.append(("told", last))
        self.ended.set_result(list(self.results))


class Told:
    """One record's outcome (``jetstream_log.Outcome``), as the store's ``Pending``."""

    def __init__(self, tick: ToldTick) -> None:
        self.tick = tick
        self.frame: str | None = None

    def done(self) -> bool:
        return self.frame is not None

    def set_result(self, frame: str) -> None:
        assert self.tick.steps == ["telling"]  # told between telling() and told(last)
        self.frame = frame

    def set_exception(self, error: BaseException) -> None:
        raise AssertionError(f"told an error: {error!r}")


def streamed(chat: str, count: int, first: int = 0) -> list[dict]:
    """Streamed text envelopes as the store makes them (``serverSeq`` 0, last)."""
    return [{"channel": chat, "action": {"type": "chat/delta", "turnId": "t1", "partId": "p",
                                         "content": f"chunk {first + i} é"}, "serverSeq": 0} for i in range(count)]


@pytest.mark.parametrize("piece", [None, 37])
async def test_a_streamed_tick_sent_in_one_pass_tells_each_record_its_frame_as_stored(
        nats_server: EmbeddedNats, relay: Relay, log: JetStreamLog, piece: int | None) -> None:
    # 37: the tick's acknowledgements arrive split across many reads of the connection.
    relay.piece = piece
    writer = await JetStreamLog.connect(relay.url, holder="writer")
    chat = default_chat_uri(SESSION)
    try:
        await writer.claim(SESSION)
        for size in (10, 1):
            envelopes = streamed(chat, size)
            tick = ToldTick(size)
            outcomes = [Told(tick) for _ in envelopes]
            assert writer.send_told([("action", chat, 7, e, o) for e, o in zip(envelopes, outcomes)], tick)
            await asyncio.wait_for(tick.ended, 10)
            seqs = [envelope["serverSeq"] for envelope in envelopes]
            assert seqs == list(range(seqs[0], seqs[0] + size)) and seqs[0] > 0
            assert tick.steps == ["telling", ("told", seqs[-1])]
            records = await log.read(seqs[0] - 1)
            assert [(r.seq, r.body, r.now) for r in records] == [(e["serverSeq"], e, 7) for e in envelopes]
            assert [o.frame for o in outcomes] == [action_frame(r.body)[1] for r in records]
    finally:
        await writer.close()


async def test_a_tick_the_one_pass_cannot_take_is_left_to_queue_tick_with_nothing_sent(
        nats_server: EmbeddedNats, log: JetStreamLog) -> None:
    plain = await JetStreamLog.connect(nats_server.url, holder="plain", fast_wire=False)
    chat, other = default_chat_uri(SESSION), default_chat_uri("ahp-session:/two")
    try:
        await log.claim(SESSION)
        await log.claim("ahp-session:/two")
        before = await log.last_seq()

        def refused(envelopes: list[dict], channels: list[str] | None = None, on: JetStreamLog = log) -> bool:
            """Whether ``on`` leaves this tick to ``queue_tick`` (``send_told`` says False)."""
            tick = ToldTick(len(envelopes))
            return not on.send_told([("action", (channels or [e["channel"] for e in envelopes])[i], 0, e, Told(tick))
                                     for i, e in enumerate(envelopes)], tick)

        assert refused(streamed(chat, 2), [chat, other])  # two sessions
        not_last = [{"channel": chat, "serverSeq": 0, "action": {"type": "test/step", "i": 1}}]
        assert refused(not_last)  # serverSeq not its last key
        too_large = streamed(chat, 2)
        too_large[1]["action"]["content"] = "x" * (1 << 21)
        assert refused(too_large)
        assert refused(streamed(default_chat_uri("ahp-session:/nobody"), 1))  # not this process's
        await plain.claim("ahp-session:/three")
        assert refused(streamed(default_chat_uri("ahp-session:/three"), 1), on=plain)  # the plain wire
        await asyncio.sleep(0.2)
        assert await log.last_seq() == before + 1  # only plain's marker: nothing of the ticks left
        assert all(e["serverSeq"] == 0 for e in not_last + too_large)
    finally:
        await plain.close()


async def test_a_stale_writer_s_one_pass_tick_is_refused_in_each_slot_and_told_nothing(nats_server: EmbeddedNats) -> None:
    stale = await JetStreamLog.connect(nats_server.url, holder="stale", lease_ttl=1.0)
    fresh = await JetStreamLog.connect(nats_server.url, holder="fresh", lease_ttl=1.0)
    chat = default_chat_uri(SESSION)
    try:
        await stale.claim(SESSION)
        await _taken_over(stale, fresh)
        envelopes = streamed(chat, 3)
        tick = ToldTick(3)
        outcomes = [Told(tick) for _ in envelopes]
        assert stale.send_told([("action", chat, 0, e, o) for e, o in zip(envelopes, outcomes)], tick)
        results = await asyncio.wait_for(tick.ended, 10)
        assert tick.times == 1 and tick.steps == []  # counted as a Counted, not told
        assert all(isinstance(result, NotOwner) and "fresh" in str(result) for result in results), results
        assert all(o.frame is None for o in outcomes) and all(e["serverSeq"] == 0 for e in envelopes)
        assert [r for r in await fresh.read(0) if r.kind == "action"] == []
    finally:
        await stale.close()
        await fresh.close()


async def test_a_one_pass_tick_whose_acknowledgements_were_lost_is_settled_by_what_the_log_holds(
        nats_server: EmbeddedNats, relay: Relay, log: JetStreamLog) -> None:
    chat = default_chat_uri(SESSION)
    writer = await JetStreamLog.connect(relay.url, holder="writer", timeout=1.0)
    try:
        await writer.claim(SESSION)
        stored_before = await log.last_seq()
        relay.deafen()  # stored, and the answers lost on the way back
        envelopes = streamed(chat, 3)
        tick = ToldTick(3)
        assert writer.send_told([("action", chat, 0, e, Told(tick)) for e in envelopes], tick)
        while await log.last_seq() < stored_before + 3:
            await asyncio.sleep(0.02)
        relay.cut()
        relay.mend()
        results = await asyncio.wait_for(tick.ended, 30)
        records = [r for r in await log.read(0) if r.kind == "action"]
        assert [r.body for r in records] == envelopes  # stored once, not sent again
        assert results == [action_frame(r.body)[1] for r in records]  # each in its slot, counted
        more = streamed(chat, 2, 3)
        tick = ToldTick(2)
        assert writer.send_told([("action", chat, 0, e, Told(tick)) for e in more], tick)  # still the owner
        await asyncio.wait_for(tick.ended, 10)
        assert [r.body for r in await log.read(0) if r.kind == "action"] == envelopes + more
    finally:
        await writer.close()


# The server's acknowledgements of a batch, read into sequence numbers (``_stored_seqs``): a plain
# acknowledgement is read by hand, any other shape by orjson, and anything short of every message
# stored sends the batch message by message (None).
_HEAD = ack_head("AHP")


@pytest.mark.parametrize(("replies", "seqs"), [
    ([b'{"stream":"AHP","seq":7}'], [7]),
    ([b'{"stream":"AHP","seq":7}', b'{"stream":"AHP","seq":8}', b'{"stream":"AHP","seq":12}'], [7, 8, 12]),
    ([b'{"stream":"AHP","seq":7,"duplicate":true}'], [7]),
    ([b'{"stream":"AHP","seq":7}', b'{"stream":"AHP","seq":8,"duplicate":true}'], [7, 8]),
    ([b'{"stream":"AHP","domain":"hub","seq":9}', b'{"stream":"AHP","seq":10}'], [9, 10]),
    ([b'{"stream":"AHP","seq":7}', b'{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 6"}}'], None),
    ([b'{"error":{"code":503,"description":"unavailable"}}'], None),
    ([b'{"stream":"AHP","seq":7}', TimeoutError()], None),
    ([TimeoutError()], None),
])
def test_a_batchs_acknowledgements_give_each_message_its_sequence_or_none_unless_all_were_stored(
        replies: list[bytes | BaseException], seqs: list[int] | None) -> None:
    assert _stored_seqs(replies, _HEAD) == seqs


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "plain"])
async def test_the_next_record_on_each_of_several_subjects_is_asked_in_one_round_on_either_wire(
        nats_server: EmbeddedNats, fast: bool) -> None:
    log = await JetStreamLog.connect(nats_server.url, holder="asker", fast_wire=fast)
    try:
        other = "ahp-session:/other"
        marker = await log.claim(SESSION)
        await log.claim(other)
        mine = [await log.append(default_chat_uri(SESSION), 0, step(i)) for i in range(3)]
        theirs = await log.append(default_chat_uri(other), 0, step(9))
        seqs = told_seqs(mine)
        group = log.subjects.group_filter(SESSION)
        records = {record.seq: record for record in await log.read(0)}
        answers = await log.next_on([
            (log.subjects.marker(SESSION), 1),  # the session's owner marker
            (group, marker + 1),  # its first record after the marker
            (group, seqs[-1] + 1),  # none after its last
            (log.subjects.group_filter(other), seqs[0]),  # the other session's record, past a record of this one
        ])
        assert [number for number, _ in answers] == [marker, seqs[0], 0, told_seqs([theirs])[0]]
        assert answers[0][1] == log.subjects.marker(SESSION) and answers[2] == (0, "")
        assert records[seqs[0]].channel == default_chat_uri(SESSION)
    finally:
        await log.close()
