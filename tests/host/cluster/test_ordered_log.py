"""The port (``host.state.log.OrderedLog``) on JetStream, against a real nats-server: numbers from
the stream, durability callbacks after the acknowledgement, ownership between two processes'
logs, replay from a sequence, and recovery from per-session snapshots plus what came after."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from typing import Any

import nats
import pytest

from ahp.jsonrpc import action_frame
from ahp.state.channels import default_chat_uri
from host.cluster.nats_server import EmbeddedNats
from host.cluster.ordered_log import ClusterLog
from host.cluster.subjects import token
from host.state.log import LogUnavailable, NotOwner
from host.state.store import ROOT, Store

SESSION = "ahp-session:/one"
CHAT = default_chat_uri(SESSION)
SESSION_TWO = "ahp-session:/two"
CHAT_TWO = default_chat_uri(SESSION_TWO)


class States:
    """What a store hands a log to snapshot: channel states, every one counted as changed."""

    def __init__(self) -> None:
        self.channels: dict[str, tuple[str, dict[str, Any]]] = {}

    def take_changes(self, full: bool) -> tuple[dict[str, tuple[str, dict[str, Any], list[list[int]]]], set[str]]:
        return {uri: (kind, state, []) for uri, (kind, state) in self.channels.items()}, set()

    def restore_changes(self, channels: Iterable[str], removed: Iterable[str]) -> None:
        pass

    def snapshot_written(self, chats: Iterable[str]) -> None:
        pass


async def open_log(nats_server: EmbeddedNats, logs: list[ClusterLog], holder: str, **options: Any) -> ClusterLog:
    log = ClusterLog(nats_server.url, holder=holder, **options)
    logs.append(log)
    await log.open()
    return log


def envelope(i: int) -> dict[str, Any]:
    return {"channel": CHAT, "action": {"type": "chat/delta", "i": i}, "serverSeq": 0}


async def test_a_ticks_envelopes_are_numbered_by_the_stream_and_durable_before_the_callback(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "a")
    log.created(SESSION, "session", {"title": "one"})
    envelopes = [envelope(i) for i in range(5)]
    pending = [log.append(CHAT, 7, e) for e in envelopes]
    durable: list[int] = []
    log.when_durable(lambda: durable.append(log.seq))
    assert durable == []  # nothing is durable before the stream acknowledged it
    frames = await asyncio.gather(*pending)
    await asyncio.sleep(0)
    seqs = [e["serverSeq"] for e in envelopes]
    assert seqs == list(range(seqs[0], seqs[0] + 5))
    assert frames == [action_frame(e)[1] for e in envelopes]
    assert durable == [seqs[-1]] and log.seq == seqs[-1]
    assert log.owner(CHAT) is None


async def test_a_tick_leaves_at_the_end_of_its_loop_iteration_and_the_next_step_joins_it_when_asked(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "a")
    await log.append(CHAT, 7, envelope(0))  # the session is this process's now
    loop = asyncio.get_running_loop()
    handed: list[int] = []
    ticks = log._flushed
    loop.call_soon(lambda: handed.append(log._flushed - ticks))  # queued before the append
    first = log.append(CHAT, 7, envelope(1))
    await first
    assert handed == [1]  # handed to the core before the next iteration's callbacks ran
    # A turn's next step (queued behind this iteration's appends) joins the tick when asked.
    ticks = log._flushed
    envelopes = [envelope(2), envelope(3)]
    later: list[Any] = []
    appended = [log.append(CHAT, 7, envelopes[0])]
    loop.call_soon(lambda: later.append(log.append(CHAT, 7, envelopes[1])))
    log.commit_with_next_step()
    await appended[0]
    await later[0]
    assert log._flushed - ticks == 1  # one tick for both
    assert envelopes[1]["serverSeq"] == envelopes[0]["serverSeq"] + 1


async def test_a_durability_callback_waits_for_the_ticks_handed_over_before_it_not_for_later_ones(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    # With several sessions streaming some tick is nearly always in flight: a frame waiting for
    # "nothing in flight" would wait for other sessions' later ticks, one after another.
    log = await open_log(nats_server, logs, "a")
    await log.append(CHAT, 7, envelope(0))  # the session is this process's now
    first = log.append(CHAT, 7, envelope(1))
    log.flush()
    durable: list[bool] = []
    log.when_durable(lambda: durable.append(later.done()))
    other = "ahp-session:/two"
    later = log.append(default_chat_uri(other), 7, {"channel": default_chat_uri(other), "action": {"type": "chat/delta"},
                                                   "serverSeq": 0})  # claims its session first: round trips
    log.flush()
    await first
    await asyncio.wait_for(later, 10)
    assert durable == [False]  # called once the first was stored, before the later tick was


async def test_ticks_handed_over_while_the_first_still_claims_its_session_are_all_stored_in_order(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    # A session's creation and the actions right after it often leave in ticks of their own
    # before the first tick's claim of the session's group is answered; a second claim in flight
    # used to fence the first tick's records out, losing the session's ``created`` record.
    log = await open_log(nats_server, logs, "a")
    log.created(SESSION, "session", {"title": "one"})
    log.flush()
    envelopes = [envelope(i) for i in range(6)]
    pending = []
    for e in envelopes:
        pending.append(log.append(CHAT, 0, e))
        log.flush()  # each its own tick, handed over at once
    await asyncio.gather(*pending)
    assert log.failures == []
    assert [e["serverSeq"] for e in envelopes] == sorted(e["serverSeq"] for e in envelopes)
    recovered = await (await open_log(nats_server, logs, "b")).recover()
    assert [(r.kind, r.channel) for r in recovered.records] == [("created", SESSION)] + [("action", CHAT)] * 6
    assert [r.body["action"]["i"] for r in recovered.records[1:]] == list(range(6))  # type: ignore[index]
    client = await nats.connect(nats_server.url)
    markers = [await client.jetstream().get_msg("AHP", seq) for seq in range(1, envelopes[-1]["serverSeq"] + 1)]
    await client.close()
    assert sum((m.headers or {}).get("Ahp-Kind") == "owner" for m in markers) == 1  # claimed once


async def test_a_tick_that_claims_holds_back_later_ticks_of_a_session_already_owned(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    # The first tick writes to a session this process owns and to one it must claim first; the
    # second only to the owned one, so it could leave at once: it must not overtake the first.
    log = await open_log(nats_server, logs, "a")
    await log.append(CHAT, 0, envelope(0))
    other_chat = default_chat_uri("ahp-session:/two")
    first = [log.append(CHAT, 0, envelope(1)), log.append(other_chat, 0, envelope(2))]
    log.flush()
    second = log.append(CHAT, 0, envelope(3))
    log.flush()
    await asyncio.gather(*first, second)
    numbers = await log.replay(0, [CHAT])
    assert [e["action"]["i"] for e in numbers] == [0, 1, 3]  # type: ignore[union-attr]


async def test_a_session_run_by_another_process_is_refused_and_its_owner_named(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    first, second = await open_log(nats_server, logs, "first"), await open_log(nats_server, logs, "second")
    await first.append(CHAT, 0, envelope(0))
    with pytest.raises(NotOwner, match="first"):
        await second.append(CHAT, 0, envelope(1))
    assert second.owner(CHAT) == "first" and second.owner(SESSION) == "first"
    assert first.owner(CHAT) is None
    await first.append(CHAT, 0, envelope(2))


async def test_replay_gives_the_envelopes_after_a_sequence_or_none_past_what_the_stream_keeps(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "a")
    envelopes = [envelope(i) for i in range(10)]
    await asyncio.gather(*(log.append(CHAT, 0, e) for e in envelopes))
    since = envelopes[3]["serverSeq"]
    assert await log.replay(since, [CHAT]) == envelopes[4:]
    assert await log.replay(since, ["ahp-chat://default/b3RoZXI"]) == []
    client = await nats.connect(nats_server.url)
    await client.jetstream().purge_stream("AHP", seq=envelopes[6]["serverSeq"])  # retention dropped the older
    await client.close()
    assert await log.replay(since, [CHAT]) is None
    assert await log.replay(envelopes[6]["serverSeq"] - 1, [CHAT]) == envelopes[6:]


async def _bound_with_a_chat(nats_server: EmbeddedNats, logs: list[ClusterLog]) -> tuple[ClusterLog, States]:
    """A process's log ("first") bound to a store's states, with the session and its chat created."""
    first = await open_log(nats_server, logs, "first")
    states = States()
    first.bind(states)
    first.created(SESSION, "session", {"title": "one"})
    first.created(CHAT, "chat", {"turns": []})
    return first, states


async def test_a_new_process_recovers_the_snapshots_and_what_was_logged_after_them(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    first, states = await _bound_with_a_chat(nats_server, logs)
    before = [envelope(i) for i in range(3)]
    await asyncio.gather(*(first.append(CHAT, 5, e) for e in before))
    states.channels = {SESSION: ("session", {"title": "one"}), CHAT: ("chat", {"turns": [], "seen": 3})}
    await first.snapshot_now()
    after = [envelope(3 + i) for i in range(4)]
    await asyncio.gather(*(first.append(CHAT, 9, e) for e in after))
    first.removed(SESSION + "/annotations")
    await asyncio.sleep(0.2)
    logs.remove(first)
    await first.close()

    recovery = await (await open_log(nats_server, logs, "second")).recover()
    assert recovery.from_snapshot
    assert recovery.channels == {SESSION: {"kind": "session", "state": {"title": "one"}},
                                 CHAT: {"kind": "chat", "state": {"turns": [], "seen": 3}}}
    records = list(recovery.records)
    assert [(r.kind, r.seq, r.now, r.body) for r in records if r.kind == "action"] == \
        [("action", e["serverSeq"], 9, e) for e in after]
    assert [(r.kind, r.channel) for r in records if r.kind != "action"] == [("removed", SESSION + "/annotations")]
    assert recovery.seq == before[-1]["serverSeq"]  # what the snapshot is as of
    assert (await open_log(nats_server, logs, "third")).seq >= after[-1]["serverSeq"]


async def test_appends_fail_while_nats_is_down_and_go_on_once_it_is_back(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "a")
    first = envelope(0)
    await log.append(CHAT, 0, first)
    nats_server.kill()
    while log.core.client.is_connected:
        await asyncio.sleep(0.02)
    durable: list[bool] = []
    failed = log.append(CHAT, 0, envelope(1))
    log.when_durable(lambda: durable.append(True))
    with pytest.raises(LogUnavailable):
        await failed
    await asyncio.sleep(0)
    assert durable == [True]  # the callback still comes: what failed is never sent to a client
    nats_server.start()
    while not log.core.client.is_connected:
        await asyncio.sleep(0.05)
    later = envelope(2)
    await log.append(CHAT, 0, later)
    assert await log.replay(0, [CHAT]) == [first, later]


async def test_a_store_over_the_cluster_log_recovers_what_another_process_logged_with_the_reducers(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    writer = await open_log(nats_server, logs, "writer")
    states = States()
    writer.bind(states)
    writer.created(CHAT, "chat", {"turns": [], "summary": {}})
    counts = [{"channel": ROOT, "action": {"type": "root/activeSessionsChanged", "activeSessions": n}, "serverSeq": 0}
              for n in (1, 2)]
    await asyncio.gather(*(writer.append(ROOT, 5, e) for e in counts))
    states.channels = {ROOT: ("root", {"agents": [], "activeSessions": 2})}
    await writer.snapshot_now()
    last = {"channel": ROOT, "action": {"type": "root/activeSessionsChanged", "activeSessions": 7}, "serverSeq": 0}
    await writer.append(ROOT, 6, last)

    reader = await open_log(nats_server, logs, "reader")
    store = Store({"agents": []}, clock=lambda: 9, log=reader)
    await store.recover()
    assert store.state(ROOT)["activeSessions"] == 7  # type: ignore[index]  # the snapshot, then the action after it
    assert store.kind(CHAT) == "chat" and store.state(CHAT) == {"turns": [], "summary": {}}
    assert store.seq == last["serverSeq"]
    assert await store.replay(counts[0]["serverSeq"], [ROOT]) == [counts[1], last]  # type: ignore[misc]


class Sink:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def send(self, text: str) -> None:
        self.texts.append(text)


async def test_a_store_over_the_cluster_log_sends_only_acknowledged_frames_and_undoes_what_another_owner_refuses(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    other = await open_log(nats_server, logs, "other")
    await other.append(CHAT, 0, envelope(0))  # "other" runs the session
    store = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "here"))
    store.create(SESSION, "session", {"title": "old"})
    root_sink, session_sink = Sink(), Sink()
    store.subscribe(ROOT, root_sink)
    store.subscribe(SESSION, session_sink)
    told: list[str] = []
    counted = store.dispatch(ROOT, {"type": "root/activeSessionsChanged", "activeSessions": 4})
    store.dispatch(SESSION, {"type": "session/titleChanged", "title": "new"}, {"clientId": "c", "clientSeq": 1}, told.append)
    assert root_sink.texts == [] and counted["serverSeq"] == 0  # nothing leaves before the stream numbered it
    assert store.state(SESSION)["title"] == "new"  # type: ignore[index]  # reduced at once
    durable = asyncio.get_running_loop().create_future()
    store.when_durable(lambda: durable.set_result(None))
    await asyncio.wait_for(durable, 10)
    await asyncio.sleep(0)
    assert counted["serverSeq"] > 1 and root_sink.texts == [action_frame(counted)[1]]
    assert told and "other" in told[0]  # the session's owner refused it: the client is told who runs it
    assert store.state(SESSION)["title"] == "old" and session_sink.texts == []  # type: ignore[index]  # undone, seen by nobody


async def test_a_store_following_the_cluster_log_takes_in_what_another_process_appends_and_its_subscribers_see_it(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    writer = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "writer"))
    reader = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "reader"))
    await reader.recover()
    assert await reader.follow()
    writer.create(SESSION, "session", {"title": "made elsewhere"})
    sent = [writer.dispatch(SESSION, {"type": "session/titleChanged", "title": f"t{i}"}) for i in range(3)]
    durable = asyncio.get_running_loop().create_future()
    writer.when_durable(lambda: durable.set_result(None))
    await asyncio.wait_for(durable, 10)
    for _ in range(200):  # the reader is told as the stream delivers: wait for the channel to appear
        if SESSION in reader:
            break
        await asyncio.sleep(0.01)
    sink = Sink()
    snapshot = reader.subscribe(SESSION, sink)
    for _ in range(200):
        if reader.seq >= sent[-1]["serverSeq"]:
            break
        await asyncio.sleep(0.01)
    later = writer.dispatch(SESSION, {"type": "session/titleChanged", "title": "seen live"})
    for _ in range(500):
        if reader.state(SESSION)["title"] == "seen live":  # type: ignore[index]
            break
        await asyncio.sleep(0.01)
    assert reader.state(SESSION) == writer.state(SESSION)  # the same reducers over the same records
    assert reader.seq == later["serverSeq"] == writer.seq
    frames = [json.loads(text)["params"] for text in sink.texts]
    assert [f["serverSeq"] for f in frames if f["serverSeq"] > snapshot["fromSeq"]][-1] == later["serverSeq"]
    assert all(f["serverSeq"] > snapshot["fromSeq"] for f in frames)  # nothing at or below what the snapshot holds


async def test_a_store_takes_over_a_session_whose_owner_stopped_renewing_once_it_holds_all_it_logged(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    dead_log, live_log = [await open_log(nats_server, logs, name, lease_ttl=1.5) for name in ("dead", "live")]
    dead = Store({"agents": []}, clock=lambda: 3, log=dead_log)
    live = Store({"agents": []}, clock=lambda: 3, log=live_log)
    await live.recover()
    assert await live.follow()
    taken: list[tuple[str, Any]] = []
    done = asyncio.get_running_loop().create_future()

    def on_taken(group: str) -> None:
        taken.append((group, live.state(group)))
        if not done.done():
            done.set_result(None)

    assert await live.take_over_lapsed(on_taken)
    dead.create(SESSION, "session", {"title": "made by the owner"})
    sent = [dead.dispatch(SESSION, {"type": "session/titleChanged", "title": f"t{i}"}) for i in range(20)]
    durable = asyncio.get_running_loop().create_future()
    dead.when_durable(lambda: durable.set_result(None))
    await asyncio.wait_for(durable, 10)
    # The owner stops renewing its lease, as a process killed with SIGKILL does (nothing released).
    renewer = dead_log.core._renewer
    assert renewer is not None
    renewer.cancel()

    await asyncio.wait_for(done, 15)  # within the lease and a check
    assert taken == [(SESSION, {"title": "t19"})]  # everything the owner logged was folded in first
    mine = live.dispatch(SESSION, {"type": "session/titleChanged", "title": "taken over"})
    refused: list[str] = []
    dead.dispatch(SESSION, {"type": "session/titleChanged", "title": "too late"}, on_refused=refused.append)
    for store in (live, dead):
        settled = asyncio.get_running_loop().create_future()
        store.when_durable(lambda future=settled: future.set_result(None))  # type: ignore[misc]
        await asyncio.wait_for(settled, 10)
    assert mine["serverSeq"] > sent[-1]["serverSeq"] and live.state(SESSION) == {"title": "taken over"}
    assert refused and dead.state(SESSION) == {"title": "t19"}  # fenced by the new owner's marker, undone


async def test_content_stored_by_one_process_is_found_by_another_and_a_reference_nobody_holds_is_not(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    holding = await open_log(nats_server, logs, "host-a")
    asking = await open_log(nats_server, logs, "host-b")
    stored = {"agent-host-content:/sha256/ab12": (b"tool output \x00\xff", "application/octet-stream")}
    await holding.serve_content(stored.get)
    await asking.serve_content({}.get)  # a process that holds nothing stays silent
    assert await asking.find_content("agent-host-content:/sha256/ab12") == (b"tool output \x00\xff", "application/octet-stream")
    assert await asking.find_content("agent-host-content:/sha256/ffff") is None


async def test_a_request_forwarded_to_its_owner_gets_the_owners_answer_and_one_to_a_process_gone_says_so(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    owner = await open_log(nats_server, logs, "host-a")
    asking = await open_log(nats_server, logs, "host-b")
    asked: list[tuple[str, dict[str, Any], str]] = []

    async def handle(method: str, params: dict[str, Any], client_id: str) -> dict[str, Any]:
        asked.append((method, params, client_id))
        if method == "disposeChat":
            return {"error": {"code": -32602, "message": "that is the default chat"}}
        return {"result": {"ok": True}}

    await owner.serve_requests(handle)
    assert await asking.forward_request("host-a", "invokeChangesetOperation", {"channel": "c"}, "client-1") == {"result": {"ok": True}}
    assert await asking.forward_request("host-a", "disposeChat", {"channel": "x"}, "client-1") == {
        "error": {"code": -32602, "message": "that is the default chat"}}
    assert asked == [("invokeChangesetOperation", {"channel": "c"}, "client-1"), ("disposeChat", {"channel": "x"}, "client-1")]
    gone = await asking.forward_request("host-z", "disposeSession", {"channel": "s"}, "client-1")
    assert gone["error"]["code"] is None and "host-z, which runs this session, did not answer" in gone["error"]["message"]


async def test_a_wait_past_the_timeout_is_refused_and_ended_even_if_it_misses_a_cancellation() -> None:
    # The NATS client's connect retries for ever and, on Python 3.11, can miss a cancellation (one
    # that lands as an ``asyncio.wait_for`` inside it completes): the log still gives up on it in
    # time, says so, and ends it.
    log = ClusterLog("nats://127.0.0.1:1", timeout=0.2)
    missed: list[bool] = []

    async def retrying_for_ever() -> None:
        while True:
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                if not missed:  # the first cancellation is lost, as in the client's retry loop
                    missed.append(True)
                    continue
                raise

    waited = asyncio.ensure_future(retrying_for_ever())
    with pytest.raises(LogUnavailable, match="did not answer within 0.2 s"):
        await asyncio.wait_for(log._within(waited), 1)
    await asyncio.wait_for(asyncio.gather(waited, return_exceptions=True), 1)
    assert missed and waited.cancelled()


# -- streamed text: taken in only for the sessions a process serves ------------------------------


def chat_state() -> dict[str, Any]:
    return {"resource": CHAT, "title": "t", "status": 1, "modifiedAt": "1970-01-01T00:00:00.001Z", "turns": []}


def a_session_streaming(store: Store, words: list[str]) -> list[dict[str, Any]]:
    """Session "one" with its chat, created on ``store``, its turn t1 streaming ``words``."""
    store.create(SESSION, "session", {"title": "one", "defaultChat": CHAT})
    store.create(CHAT, "chat", chat_state())
    return stream_a_turn(store, "t1", words)


def stream_a_turn(store: Store, turn: str, words: list[str]) -> list[dict[str, Any]]:
    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": turn, "startedAt": "1970-01-01T00:00:00.002Z",
                          "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(CHAT, {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": ""}})
    return stream(store, turn, words)


def stream(store: Store, turn: str, words: list[str]) -> list[dict[str, Any]]:
    return [store.dispatch(CHAT, {"type": "chat/delta", "turnId": turn, "partId": "m", "content": word}) for word in words]


async def durable(store: Store) -> None:
    settled = asyncio.get_running_loop().create_future()
    store.when_durable(lambda: settled.set_result(None))
    await asyncio.wait_for(settled, 10)


async def until(condition: Any, seconds: float = 10) -> None:
    for _ in range(int(seconds * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never came")


async def following(store: Store) -> list[Any]:
    """Follow the log, keeping every record the store takes in."""
    taken: list[Any] = []
    take_in = store.take_in

    def keep(record: Any) -> None:
        taken.append(record)
        take_in(record)

    store.take_in = keep  # type: ignore[method-assign]
    assert await store.follow()
    return taken


def streamed(taken: list[Any]) -> list[Any]:
    return [record for record in taken if record.kind == "action" and record.body["action"]["type"] == "chat/delta"]


async def test_a_process_takes_in_no_streamed_text_of_a_session_it_does_not_serve_yet_a_later_subscriber_gets_it_whole(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    writer = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "writer"))
    reader = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "reader"))
    await reader.recover()
    taken = await following(reader)
    a_session_streaming(writer, [f"w{i} " for i in range(20)])
    writer.dispatch(SESSION, {"type": "session/titleChanged", "title": "after the text"})
    await durable(writer)
    await until(lambda: (reader.state(SESSION) or {}).get("title") == "after the text")
    assert streamed(taken) == []  # none of the text reached this process
    assert [turn["id"] for turn in [reader.state(CHAT)["activeTurn"]]] == ["t1"]  # type: ignore[index]  # the turn did

    await reader.hold([CHAT])  # what a subscription does first (host.transport.connection)
    sink = Sink()
    snapshot = reader.subscribe(CHAT, sink)
    assert snapshot["state"] == writer.state(CHAT)  # every word streamed before it subscribed
    later = stream(writer, "t1", [f"v{i} " for i in range(5)])
    await durable(writer)
    await until(lambda: len(sink.texts) == 5)
    frames = [json.loads(text)["params"] for text in sink.texts]
    assert [frame["action"]["content"] for frame in frames] == [f"v{i} " for i in range(5)]
    assert [frame["serverSeq"] for frame in frames] == [envelope["serverSeq"] for envelope in later]
    assert reader.state(CHAT) == writer.state(CHAT)
    assert await reader.replay(later[0]["serverSeq"], [CHAT]) == later[1:]  # type: ignore[misc]


async def test_a_process_that_takes_over_a_session_holds_the_streamed_text_its_owner_logged_though_it_took_none_in(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    dead_log, live_log = [await open_log(nats_server, logs, name, lease_ttl=1.5) for name in ("dead", "live")]
    dead = Store({"agents": []}, clock=lambda: 3, log=dead_log)
    live = Store({"agents": []}, clock=lambda: 3, log=live_log)
    await live.recover()
    taken = await following(live)
    held: list[Any] = []
    done = asyncio.get_running_loop().create_future()

    def on_taken(group: str) -> None:
        held.append(live.state(CHAT))
        if not done.done():
            done.set_result(None)

    assert await live.take_over_lapsed(on_taken)
    a_session_streaming(dead, [f"w{i} " for i in range(30)])
    await durable(dead)
    renewer = dead_log.core._renewer  # the owner stops renewing, as a process killed with SIGKILL does
    assert renewer is not None
    renewer.cancel()

    await asyncio.wait_for(done, 15)
    assert streamed(taken) == []  # it took in none of the text while the other process ran the session
    assert held == [dead.state(CHAT)]  # yet holds it all once it runs the session
    mine = stream(live, "t1", ["taken over"])
    await durable(live)
    assert mine[0]["serverSeq"] > 0 and live.state(CHAT)["activeTurn"]["responseParts"][0]["content"] == (  # type: ignore[index]
        "".join(f"w{i} " for i in range(30)) + "taken over")


async def test_a_session_claimed_from_a_process_stays_whole_there_and_its_subscribers_see_the_new_owner_stream(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    first_log, second_log = await open_log(nats_server, logs, "first"), await open_log(nats_server, logs, "second")
    first = Store({"agents": []}, clock=lambda: 3, log=first_log)
    second = Store({"agents": []}, clock=lambda: 3, log=second_log)
    for store in (first, second):
        await store.recover()
        await following(store)
    a_session_streaming(first, ["from the first "])
    await durable(first)
    sink = Sink()
    first.subscribe(CHAT, sink)
    await until(lambda: CHAT in second)
    await first_log.core.release(SESSION)  # the first lets the session go (its lease released)

    # The second writes to it (its append claims the session: it reads the first's text first) ...
    words = ["and ", "from ", "the ", "second"]
    sent = stream(second, "t1", words)
    await durable(second)
    assert all(envelope["serverSeq"] for envelope in sent)
    # ... and the first, whose subscriber watches the chat, takes the second's streamed text in.
    await until(lambda: len(sink.texts) == len(words))
    assert [json.loads(text)["params"]["action"]["content"] for text in sink.texts] == words
    assert first.state(CHAT) == second.state(CHAT)
    assert second.state(CHAT)["activeTurn"]["responseParts"][0]["content"] == "from the first and from the second"  # type: ignore[index]


async def test_a_session_loaded_whole_for_a_subscriber_is_followed_without_its_text_again_once_no_client_here_follows_it(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    writer = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "writer"))
    reader_log = await open_log(nats_server, logs, "reader", release_after=0.3)
    reader = Store({"agents": []}, clock=lambda: 3, log=reader_log)
    await reader.recover()
    taken = await following(reader)
    reader_log.let_go_unserved(reader.served)  # what a cluster's host does (host.service)
    a_session_streaming(writer, ["a ", "b "])
    await durable(writer)
    await until(lambda: CHAT in reader)
    await reader.hold([CHAT])
    sink = Sink()
    reader.subscribe(CHAT, sink)

    async def a_round(name: str, words: list[str]) -> int:
        """Stream ``words`` and then change the title (not streamed text, which every process
        takes in): how many of the words this process took in once the title reached it."""
        count = len(streamed(taken))
        stream(writer, "t1", words)
        writer.dispatch(SESSION, {"type": "session/titleChanged", "title": name})
        await durable(writer)
        await until(lambda: (reader.state(SESSION) or {}).get("title") == name)
        return len(streamed(taken)) - count

    # Subscribed: followed whole for longer than the grace (a few checks of it pass meanwhile).
    for index in range(4):
        await asyncio.sleep(0.3)
        assert await a_round(f"served {index}", ["c "]) == 1
    assert reader.state(CHAT) == writer.state(CHAT)

    # Its last subscriber gone: within the grace and a check, the text is no longer taken in.
    reader.unsubscribe(CHAT, sink)
    for index in range(100):
        if await a_round(f"unserved {index}", ["d "]) == 0:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the streamed text of a session no client here follows was still taken in")
    assert await a_round("partial", ["e ", "f ", "g "]) == 0
    assert reader.state(CHAT) != writer.state(CHAT)  # held without the text it no longer takes in

    # A new subscriber gets it whole again, and its streamed text from then on.
    await reader.hold([CHAT])
    again = Sink()
    assert reader.subscribe(CHAT, again)["state"] == writer.state(CHAT)
    assert await a_round("whole again", ["h "]) == 1
    assert [json.loads(text)["params"]["action"]["content"] for text in again.texts
            if json.loads(text)["params"]["action"]["type"] == "chat/delta"] == ["h "]
    assert reader.state(CHAT) == writer.state(CHAT)


async def test_streamed_appends_the_fence_refuses_on_the_lean_way_are_undone_and_seen_by_nobody(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    first_log, second_log = await open_log(nats_server, logs, "first"), await open_log(nats_server, logs, "second")
    told = first_log.append_told
    lean: list[bool] = []
    first_log.append_told = lambda *args: lean.append(told(*args)) or lean[-1]  # type: ignore[method-assign]
    first = Store({"agents": []}, clock=lambda: 3, log=first_log)
    await first.recover()
    a_session_streaming(first, ["kept "])
    await durable(first)
    sink = Sink()
    first.subscribe(CHAT, sink)
    refused: list[str] = []
    first.rejection_observers.append(lambda channel, action, client: refused.append(action["content"]))

    def delta(word: str) -> dict[str, Any]:
        return first.dispatch_streamed(CHAT, {"type": "chat/delta", "turnId": "t1", "partId": "m", "content": word})

    seen = delta("seen ")
    await durable(first)
    assert lean == [True] and sink.texts == [action_frame(seen)[1]]
    before = json.dumps(first.state(CHAT))
    # The session's lease goes behind the first's back and the second claims it: its marker fences the first out.
    await first_log.core.leases.bucket.purge(token(SESSION))
    await second_log.core.claim(SESSION)
    delta("never ")
    delta("sent")
    assert "never sent" in json.dumps(first.state(CHAT))  # reduced at once, as every dispatch is
    await until(lambda: len(refused) == 2)
    assert lean == [True, True, True]  # both went the lean way, and the log refused them
    assert refused == ["never ", "sent"]
    assert json.dumps(first.state(CHAT)) == before  # undone: back to the state before the first refused one
    assert sink.texts == [action_frame(seen)[1]]  # nobody saw them


class Taker:
    """Where the log hands an append's outcome at once (``append_told``), noting it in ``seen``."""

    def __init__(self, seen: list[Any], then: Any = None) -> None:
        self.seen = seen
        self.then = then
        self.answered = False

    def done(self) -> bool:
        return self.answered

    def set_result(self, frame: str) -> None:
        self.answered = True
        self.seen.append(json.loads(frame)["params"]["action"]["i"])
        if self.then is not None:
            self.then()

    def set_exception(self, error: BaseException) -> None:
        self.answered = True
        self.seen.append(error)


async def test_an_end_of_tick_write_asked_for_as_frames_are_handed_out_runs_after_them_in_the_same_loop_turn(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "writer")
    await log.append(CHAT, 0, envelope(0))  # the session is this process's from here on
    seen: list[Any] = []
    loop = asyncio.get_running_loop()

    def write() -> None:  # as a transport's queue_text asks, once a frame reached it
        loop.call_soon(seen.append, "next loop turn")
        log.at_end_of_tick(lambda: seen.append("write"))

    assert log.append_told(CHAT, 0, envelope(1), Taker(seen, write))
    assert log.append_told(CHAT, 0, envelope(2), Taker(seen))
    await until(lambda: "next loop turn" in seen)
    assert seen == [1, 2, "write", "next loop turn"]  # after the tick's frames, before the loop turns again

    # Asked for outside of that (a reply queued while a tick is gathered): once that tick is durable.
    seen.clear()
    assert log.append_told(CHAT, 0, envelope(3), Taker(seen))
    log.at_end_of_tick(lambda: seen.append("write"))
    await until(lambda: "write" in seen)
    assert seen == [3, "write"]


async def test_an_end_of_tick_write_of_one_session_s_frames_does_not_wait_for_another_session_s_tick_in_flight(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "writer")
    await log.append(CHAT, 0, envelope(0))  # session one is this process's from here on
    seen: list[Any] = []
    other: list[Any] = []  # (the future of session two's append)

    def write() -> None:  # as a transport's queue_text asks, once session one's frame reached it
        log.at_end_of_tick(lambda: seen.append(("write", other[0].done())))

    assert log.append_told(CHAT, 0, envelope(1), Taker(seen, write))
    log.flush()  # its tick leaves now
    # Session two's tick leaves next and is acknowledged later: it claims the session first (a
    # lease, the group's last sequence and a marker: round trips of their own before its append).
    other.append(log.append(CHAT_TWO, 0, {"channel": CHAT_TWO, "action": {"type": "chat/delta", "i": 2}, "serverSeq": 0}))
    log.flush()
    await other[0]
    await until(lambda: len(seen) == 2)
    assert seen == [1, ("write", False)]  # session one's frame was written before session two's tick was acknowledged


class Connection:
    """A subscriber as the WebSocket transport is one (``host.transport.ws_protocol``): what it is
    sent waits, and is written at the end of the tick the store says (``at_end_of_tick``), asked
    for by the first frame of each write; ``written`` holds each write's ``serverSeq``s."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[str] = []
        self.written: list[list[int]] = []
        self.armed = False

    def send(self, text: str) -> None:
        self.pending.append(text)
        if not self.armed:
            self.armed = True
            assert self.store.at_end_of_tick is not None
            self.store.at_end_of_tick(self.write)

    def write(self) -> None:
        self.armed = False
        self.written.append([json.loads(text)["params"]["serverSeq"] for text in self.pending])
        self.pending = []

    def seqs(self) -> list[int]:
        return [seq for write in self.written for seq in write]


async def streaming(nats_server: EmbeddedNats, logs: list[ClusterLog], *sessions: str) -> tuple[Store, Connection]:
    """A store whose log runs ``sessions``, each with a turn started (their deltas take the lean
    way), and a connection subscribed to each session and its chat."""
    store = Store({"agents": []}, clock=lambda: 3, log=await open_log(nats_server, logs, "writer"))
    await store.recover()
    for session in sessions:
        chat = default_chat_uri(session)
        store.create(session, "session", {"title": "one", "defaultChat": chat})
        store.create(chat, "chat", {**chat_state(), "resource": chat})
        store.dispatch(chat, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "1970-01-01T00:00:00.002Z",
                              "message": {"text": "go", "origin": {"kind": "user"}}})
        store.dispatch(chat, {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown", "id": "m", "content": ""}})
    await durable(store)
    connection = Connection(store)
    for session in sessions:
        store.subscribe(session, connection)
        store.subscribe(default_chat_uri(session), connection)
    return store, connection


def delta(store: Store, chat: str, word: str) -> dict[str, Any]:
    return store.dispatch_streamed(chat, {"type": "chat/delta", "turnId": "t1", "partId": "m", "content": word})


async def test_a_connection_subscribed_to_two_sessions_gets_their_frames_in_serverseq_order_when_a_later_tick_is_numbered_first(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    store, connection = await streaming(nats_server, logs, SESSION, SESSION_TWO)
    for round in range(3):
        wanted = 4 * (round + 1)
        first = delta(store, CHAT, f"a{round} ")
        store.flush()  # its tick leaves: session one has a batch in flight
        later = delta(store, CHAT, f"b{round} ")  # waits for it, in session one's queue
        other = delta(store, CHAT_TWO, f"c{round} ")  # session two's leaves at once
        title = store.dispatch(SESSION_TWO, {"type": "session/titleChanged", "title": f"t{round}"})  # not streamed: its observers read states
        store.flush()
        await until(lambda: len(connection.seqs()) == wanted)  # noqa: B023  # (awaited in this round)
        assert first["serverSeq"] < other["serverSeq"] < title["serverSeq"] < later["serverSeq"]  # numbered out of dispatch order
        assert connection.seqs()[-4:] == [first["serverSeq"], other["serverSeq"], title["serverSeq"], later["serverSeq"]]
    assert connection.seqs() == sorted(connection.seqs())
    assert store.state(CHAT_TWO)["activeTurn"]["responseParts"][0]["content"] == "c0 c1 c2 "  # type: ignore[index]


async def test_a_connection_gets_frames_in_serverseq_order_when_the_action_numbered_first_was_dispatched_last(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    three = "ahp-session:/three"
    store, connection = await streaming(nats_server, logs, SESSION, SESSION_TWO, three)
    delta(store, CHAT, "h0 ")
    delta(store, CHAT_TWO, "x0 ")
    store.flush()  # sessions one and two each have a batch in flight
    held = delta(store, CHAT, "held ")  # each a tick of its own, each waiting in its session's queue
    store.flush()
    waits = delta(store, CHAT_TWO, "waits ")
    store.flush()
    lower = delta(store, default_chat_uri(three), "lower ")  # leaves at once: numbered before both
    store.flush()
    await until(lambda: len(connection.seqs()) == 5)
    assert lower["serverSeq"] < held["serverSeq"] < waits["serverSeq"]
    assert connection.seqs()[-3:] == [lower["serverSeq"], held["serverSeq"], waits["serverSeq"]]


async def test_a_lean_append_is_taken_only_for_a_session_this_process_owns(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    log = await open_log(nats_server, logs, "writer")
    seen: list[Any] = []
    assert not log.append_told(CHAT, 0, envelope(1), Taker(seen))  # not claimed yet: the caller takes append's way
    await log.append(CHAT, 0, envelope(0))
    assert log.append_told(CHAT, 0, envelope(1), Taker(seen))
    await until(lambda: seen == [1])


async def test_a_snapshot_taken_while_a_streamed_tick_is_in_flight_is_as_of_that_tick_s_last_record(
        nats_server: EmbeddedNats, logs: list[ClusterLog]) -> None:
    # A tick of actions of an owned session is told record by record by the core (its one pass):
    # a snapshot waiting for it still learns the numbers its records were stored with.
    first, states = await _bound_with_a_chat(nats_server, logs)
    await asyncio.gather(first.append(CHAT, 5, envelope(0)))  # owned from here on
    streamed = [envelope(1 + i) for i in range(6)]
    pending = [first.append(CHAT, 5, e) for e in streamed]
    states.channels = {SESSION: ("session", {"title": "one"}), CHAT: ("chat", {"turns": [], "seen": 7})}
    await first.snapshot_now()  # hands the tick over and waits for it
    await asyncio.gather(*pending)
    assert first.seq == streamed[-1]["serverSeq"]
    logs.remove(first)
    await first.close()
    recovery = await (await open_log(nats_server, logs, "second")).recover()
    assert recovery.from_snapshot and recovery.seq == streamed[-1]["serverSeq"]
    assert [r for r in recovery.records if r.kind == "action"] == []  # every one of them in the snapshot
