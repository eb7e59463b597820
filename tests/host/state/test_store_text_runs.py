"""Streamed text held as runs in the store (O(1) per token): every state anyone can read from the
store — ``state()``, ``subscribe`` snapshots, observers, journal snapshots and replay after a crash,
``fetchTurns`` over the wire — is the very JSON the pure reducers produce, action by action."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from ahp.state import default_chat_uri
from client import AhpClient
from host.cluster.ordered_log import ClusterLog
from host.runtime.agents import ModelSpec, ProviderAgent, StaticSource, TurnSettings
from host.state.embedded_log import at_once
from host.state.journal import Journal
from host.state.store import STREAMED, Store, reduce
from host.transport.dialects.ahp02 import v02_session_state
from providers import ScriptedProvider
from providers.scripted import Pause, Script, finish, reasoning
from providers.scripted import text as text_events
from tests.ahp.state._support import CLOCK, vectors_0_7, vectors_0_9
from tests.ahp.state.test_appends import stutter
from tests.conftest import TOKEN, FrameChecker
from tests.host.cluster.conftest import nats_server  # noqa: F401  (the fixture, for the cluster's log)
from tests.host.runtime.agents.harness import config_for, idle, ready_session, serving

from .test_store import Sink

CHAT = default_chat_uri("replay:/text-runs")
CHAT_CASES = [case for case in (*vectors_0_7(), *vectors_0_9()) if case["reducer"] == "chat"]


def fold(kind: str, state: Any, actions: list) -> Any:
    for action in actions:
        state = reduce(kind, state, action, CLOCK)
    return state


def chat_state() -> dict[str, Any]:
    return {"resource": CHAT, "title": "", "status": 1, "modifiedAt": "2026-01-01T00:00:00.000Z", "turns": []}


def text(state: Any) -> str:
    """The JSON text of a state (key order included: that is what goes on the wire)."""
    return json.dumps(state)


def store_with(initial: dict[str, Any], journal: Journal | None = None) -> Store:
    store = Store({"agents": []}, clock=lambda: CLOCK, journal=journal)
    at_once(store.recover())
    store.create(CHAT, "chat", initial)
    return store


def test_chat_vector_streams_full_of_runs_end_in_the_pure_reducers_state() -> None:
    rng = random.Random(3)
    for index, case in enumerate(CHAT_CASES):
        actions = stutter(case["actions"], rng)
        store = store_with(case["initial"])
        for action in actions:
            store.dispatch(CHAT, action)
        assert text(store.state(CHAT)) == text(fold("chat", case["initial"], actions)), f"chat case {index}"


def test_reads_at_any_point_see_the_pure_reducers_state_so_far() -> None:
    rng = random.Random(4)
    for index, case in enumerate(CHAT_CASES):
        actions = stutter(case["actions"], rng)
        store = store_with(case["initial"])
        expected = case["initial"]
        for step, action in enumerate(actions):
            store.dispatch(CHAT, action)
            expected = reduce("chat", expected, action, CLOCK)
            if rng.random() < 0.3:
                read = store.subscribe(CHAT, Sink())["state"] if rng.random() < 0.5 else store.state(CHAT)
                assert text(read) == text(expected), f"chat case {index}, after action {step}"


def test_observers_of_every_action_see_each_token_s_before_and_after() -> None:
    rng = random.Random(5)
    for index, case in enumerate(CHAT_CASES[:400]):
        actions = stutter(case["actions"], rng)
        store = store_with(case["initial"])
        seen: list[tuple[str, str]] = []
        # An observer that joins mid-stream (a test helper waiting for a condition, say).
        join_at = rng.randrange(len(actions) + 1)
        for step, action in enumerate(actions):
            if step == join_at:
                store.observers.append(lambda channel, before, after, envelope: seen.append((text(before), text(after))))  # noqa: B023  (store and seen are both this case's)
            store.dispatch(CHAT, action)
        states = [case["initial"]]
        for action in actions:
            states.append(reduce("chat", states[-1], action, CLOCK))
        assert seen == [(text(a), text(b)) for a, b in zip(states[join_at:], states[join_at + 1:])], f"chat case {index}"


def test_streamed_tokens_reach_token_observers_and_never_change_observers() -> None:
    store = store_with(chat_state())
    tokens: list[str] = []
    changes: list[str] = []
    store.token_observers.append(lambda channel, envelope: tokens.append(envelope["action"]["type"]))
    store.change_observers.append(lambda channel, before, after, envelope: changes.append(envelope["action"]["type"]))
    actions = long_turn(2_000)
    for action in actions:
        store.dispatch(CHAT, action)
    streamed = {"chat/delta", "chat/reasoning", "chat/toolCallDelta"}
    assert set(tokens) == streamed and len(tokens) >= 2_000
    assert changes and not streamed & set(changes)
    assert len(tokens) + len(changes) == len(actions)


def long_turn(deltas: int) -> list[dict[str, Any]]:
    """A turn streaming markdown, reasoning and tool-call input in bursts, with a few actions
    between bursts that end runs (a tool call's new invocation message, usage)."""
    rng = random.Random(deltas)
    turn = "t1"
    actions: list[dict[str, Any]] = [
        {"type": "chat/turnStarted", "turnId": turn, "startedAt": "2026-01-01T00:00:01.000Z",
         "message": {"text": "go", "origin": {"kind": "user"}}},
        {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "reasoning", "id": "r", "content": ""}},
        {"type": "chat/responsePart", "turnId": turn, "part": {"kind": "markdown", "id": "m", "content": ""}},
        {"type": "chat/toolCallStart", "turnId": turn, "toolCallId": "c", "toolName": "echo", "displayName": "Echo"},
    ]
    sent = 0
    while sent < deltas:
        burst = min(deltas - sent, rng.randint(1, 400))
        target = rng.choice(["m", "r", "c"])
        for _ in range(burst):
            piece = rng.choice(["word ", "x", "\u00e9t\u00e9 ", "{\"a\": ", "\n"])
            if target == "c":
                actions.append({"type": "chat/toolCallDelta", "turnId": turn, "toolCallId": "c", "content": piece})
            else:
                kind = "chat/delta" if target == "m" else "chat/reasoning"
                actions.append({"type": kind, "turnId": turn, "partId": target, "content": piece})
        sent += burst
        if rng.random() < 0.2:
            actions.append({"type": "chat/toolCallDelta", "turnId": turn, "toolCallId": "c", "content": "", "invocationMessage": f"Reading {sent}"})
        if rng.random() < 0.1:
            actions.append({"type": "chat/usage", "turnId": turn, "usage": {"inputTokens": sent, "outputTokens": sent}})
    actions.append({"type": "chat/toolCallReady", "turnId": turn, "toolCallId": "c", "toolInput": "{}", "confirmed": "not-needed"})
    actions.append({"type": "chat/turnComplete", "turnId": turn, "duration": 1000})
    return actions


def test_a_long_turn_through_store_snapshots_and_journal_matches_the_pure_reducers(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    actions = long_turn(30_000)
    store = store_with(chat_state(), Journal(path))
    mirrors: list[tuple[Sink, dict[str, Any]]] = []
    cut = len(actions) * 2 // 3
    for step, action in enumerate(actions[:cut]):
        store.dispatch(CHAT, action)
        if step % 7_000 == 6_999:
            # A client subscribing mid-stream: its snapshot plus the frames after it.
            sink = Sink()
            mirrors.append((sink, json.loads(text(store.subscribe(CHAT, sink)["state"]))))
        if step == 15_000:
            at_once(store.snapshot_now())  # a journal snapshot taken mid-run
    store.flush()
    expected_at_cut = fold("chat", chat_state(), actions[:cut])
    # No close(): the process "dies" here; the journal's snapshot and rows are all that remain.
    recovered = store_with_journal(path)
    # Equal, not the same text: a journal snapshot writes ``turns`` last, whatever the key order.
    assert recovered.state(CHAT) == expected_at_cut
    assert recovered.seq == store.seq

    for action in actions[cut:]:
        store.dispatch(CHAT, action)
        recovered.dispatch(CHAT, action)
    expected = fold("chat", chat_state(), actions)
    assert text(store.state(CHAT)) == text(expected)
    assert recovered.state(CHAT) == expected
    assert len(mirrors) >= 2
    for sink, mirror in mirrors:
        for frame in sink.frames:
            mirror = reduce("chat", mirror, frame["params"]["action"], CLOCK)
        assert text(mirror) == text(expected)
    at_once(store.close())
    assert store_with_journal(path).state(CHAT) == expected


def store_with_journal(path: Path) -> Store:
    store = Store({"agents": []}, clock=lambda: CLOCK, journal=Journal(path))
    at_once(store.recover())
    return store


async def test_a_client_subscribing_mid_turn_and_fetch_turns_get_the_streamed_text_whole(tmp_path: Path, frame_checker: FrameChecker) -> None:
    gate = asyncio.Event()
    chunks = [f"w{i} " for i in range(3_000)]
    first = (*reasoning(chunks[:500], index=0), *text_events(chunks, index=1), *finish())
    body = text_events(chunks, index=0)  # start, deltas, end
    second = (*body[:1_501], Pause(event=gate), *body[1_501:], *finish())
    provider = ScriptedProvider([Script(first), Script(second)])
    agent = ProviderAgent("scripted", StaticSource(provider), display_name="Scripted", models=[ModelSpec("m1")],
                          settings=TurnSettings(title="first-words"))
    async with serving(config_for(tmp_path), frame_checker, [agent]) as (running, client):
        session = await ready_session(client)
        await client.subscribe(session)
        first_id = client.send_message(session, "talk")
        await client.wait_for(lambda m, e: len((client.state(session) or {}).get("turns") or []) == 1, timeout=60)
        second_id = client.send_message(session, "again")
        await client.wait_for(lambda m, e: _active_text(client.state(session)) == "".join(chunks[:1_500]), timeout=60)
        late = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=frame_checker.hook)
        try:
            # 0.2.0 on purpose: the streamed text's runs through the 0.2.0 projection (the late client's
            # snapshot, its fetchTurns page) against the host's 0.2.0 view.
            await late.initialize(subscriptions=[session], protocol_versions=("0.2.0",))
            mid_turn = late.state(session)
            gate.set()
            await client.wait_for(lambda m, e: len((client.state(session) or {}).get("turns") or []) == 2, timeout=60)
            await idle(client, session)
            await idle(late, session)
            page = await late.fetch_turns(session, before=second_id, limit=5)
            late_state = late.state(session)
        finally:
            await late.close()
        host_state = v02_session_state(running.host, session)
    assert _active_text(mid_turn) == "".join(chunks[:1_500])
    turns = client.state(session)["turns"]
    assert [turn["id"] for turn in turns] == [first_id, second_id]
    assert [part.get("content") for part in turns[0]["responseParts"]] == ["".join(chunks[:500]), "".join(chunks)]
    assert [part.get("content") for part in turns[1]["responseParts"]] == ["".join(chunks)]
    # Each side's reducer stamps ``modifiedAt`` with its own clock (AHP): everything else is equal.
    assert _unstamped(late_state) == _unstamped(client.state(session)) == _unstamped(host_state)
    assert page == {"turns": turns[:1], "hasMore": False}


def _active_text(state: dict[str, Any] | None) -> str | None:
    parts = ((state or {}).get("activeTurn") or {}).get("responseParts") or []
    return parts[0].get("content") if parts else None


def _unstamped(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "summary": {key: value for key, value in state["summary"].items() if key != "modifiedAt"}}


def _streamed_or_not(store: Store, action: dict[str, Any]) -> None:
    if action.get("type") in STREAMED:
        store.dispatch_streamed(CHAT, action)
    else:
        store.dispatch(CHAT, action)


class _Embedded:
    """The lean way over the embedded log (SQLite journal): each way's store on a journal of its own."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path

    async def store(self, index: int, way: str, initial: dict[str, Any]) -> Store:
        return store_with(initial, Journal(self.tmp_path / f"{index}-{way}.db"))

    async def settled(self, store: Store) -> None:
        store.flush()

    async def replay(self, store: Store) -> Any:
        return store.replay(0, [CHAT])

    async def logged(self, store: Store) -> Any:
        return None  # the journal's rows: what recovery reads back, compared below

    async def recovered(self, index: int, way: str, store: Store) -> tuple[str, int]:
        at_once(store.close())
        again = Store({"agents": []}, clock=lambda: CLOCK, journal=Journal(self.tmp_path / f"{index}-{way}.db"))
        at_once(again.recover())
        recovered = (text(again.state(CHAT)), again.seq)
        at_once(again.close())
        return recovered


class _Cluster:
    """The lean way over the cluster's log (JetStream on a real nats-server): each way's store on a
    stream of its own, written by a process of the same name, so that their numbers and messages
    compare; the lean way's appends counted where the log takes them (``append_told``)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lean_appends = 0

    def log(self, index: int, way: str, holder: str) -> ClusterLog:
        return ClusterLog(self.url, holder=holder, stream=f"RUNS{index}{way}", prefix=f"runs{index}.{way}")

    async def store(self, index: int, way: str, initial: dict[str, Any]) -> Store:
        log = self.log(index, way, "writer")
        told = log.append_told

        def counted(*args: Any) -> bool:
            took: bool = told(*args)
            self.lean_appends += took
            return took

        log.append_told = counted  # type: ignore[method-assign]
        store = Store({"agents": []}, clock=lambda: CLOCK, log=log)
        await store.recover()
        store.create(CHAT, "chat", initial)
        await self.settled(store)  # the session is this process's from here on (claimed)
        return store

    async def settled(self, store: Store) -> None:
        durable = asyncio.get_running_loop().create_future()
        store.when_durable(lambda: durable.set_result(None))
        await asyncio.wait_for(durable, 10)
        await asyncio.sleep(0)

    async def replay(self, store: Store) -> Any:
        return await store.replay(0, [CHAT])  # type: ignore[misc]  # a networked log's replay is awaited

    async def logged(self, store: Store) -> Any:
        return [(r.seq, r.kind, r.channel, r.now, r.body) for r in await store.log.core.read(0)]  # type: ignore[attr-defined]

    async def recovered(self, index: int, way: str, store: Store) -> tuple[str, int]:
        await store.close()
        again = Store({"agents": []}, clock=lambda: CLOCK, log=self.log(index, way, "reader"))
        try:
            await again.recover()
            return text(again.state(CHAT)), again.seq
        finally:
            await again.close()


@pytest.mark.parametrize("log", ["embedded", "cluster"])
async def test_the_lean_way_for_streamed_appends_sends_states_logs_and_replays_what_dispatch_does(
        log: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Over either log, ``dispatch_streamed`` and ``dispatch`` give the same frames, states,
    replay, log contents and state after recovery. Over the cluster's log (its appends numbered by
    the stream once acknowledged) the actions are dispatched in ticks of a few each, and only the
    cases with streamed appends are run (the lean way differs only there)."""
    ways = _Embedded(tmp_path) if log == "embedded" else _Cluster(request.getfixturevalue("nats_server").url)
    rng = random.Random(5)
    streamed_cases = streamed = 0
    for index, case in enumerate(CHAT_CASES):
        actions = stutter(case["actions"], rng)
        ticks = [rng.random() < 0.3 for _ in actions]  # where a tick ends (the cluster's log numbers by tick)
        if log == "cluster" and not any(action.get("type") in STREAMED for action in actions):
            continue
        streamed_cases += 1
        streamed += sum(action.get("type") in STREAMED for action in actions)
        stores, sinks = [], []
        for way in ("dispatch", "lean"):
            store = await ways.store(index, way, case["initial"])
            sink = Sink()
            store.subscribe(CHAT, sink)
            for action, tick_ends in zip(actions, ticks):
                _streamed_or_not(store, action) if way == "lean" else store.dispatch(CHAT, action)
                if tick_ends and log == "cluster":
                    await asyncio.sleep(0)
            await ways.settled(store)
            stores.append(store)
            sinks.append(sink)
        general, lean = stores
        assert sinks[1].texts == sinks[0].texts, f"chat case {index}"
        assert text(lean.state(CHAT)) == text(general.state(CHAT)) == text(fold("chat", case["initial"], actions))
        assert await ways.replay(lean) == await ways.replay(general)
        assert await ways.logged(lean) == await ways.logged(general)
        recovered = [await ways.recovered(index, way, store) for way, store in zip(("dispatch", "lean"), stores)]
        assert recovered[1] == recovered[0], f"chat case {index} after recovery"
        assert recovered[0][1] == general.seq
    assert streamed_cases >= 17
    if isinstance(ways, _Cluster):
        assert ways.lean_appends == streamed > 50  # the lean way was taken, not ``dispatch`` under its name


def test_the_lean_way_for_streamed_appends_still_shows_them_to_observers_and_translators_that_want_the_states() -> None:
    case = next(case for case in CHAT_CASES if any(a.get("type") in STREAMED for a in case["actions"]))
    store = store_with(case["initial"])
    seen: list[tuple[str, str]] = []
    store.observers.append(lambda channel, before, after, envelope: seen.append((envelope["action"]["type"], text(after))))
    tokens: list[int] = []
    store.token_observers.append(lambda channel, envelope: tokens.append(envelope["serverSeq"]))
    for action in case["actions"]:
        _streamed_or_not(store, action)
    state = case["initial"]
    expected = []
    for action in case["actions"]:
        state = reduce("chat", state, action, CLOCK)
        expected.append((action["type"], text(state)))
    assert seen == expected
    assert len(tokens) == sum(a.get("type") in STREAMED for a in case["actions"]) > 0

    class Wanting:
        def __init__(self) -> None:
            self.changes: list[Any] = []

        def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
            return True

        def envelope(self, kind: str, envelope: dict[str, Any], change: Any) -> Any:
            self.changes.append(change.after)
            return envelope

        def notification(self, kind: str, method: str, params: dict[str, Any], store: Any) -> dict[str, Any] | None:
            return params

    store = store_with(case["initial"])
    wanting = Wanting()
    store.subscribe(CHAT, Sink(), wanting)
    for action in case["actions"]:
        _streamed_or_not(store, action)
    assert [text(after) for after in wanting.changes] == [after for _, after in expected]


def test_a_turn_s_streamed_append_is_dispatched_only_while_that_turn_is_the_chat_s_active_one(tmp_path: Path) -> None:
    """``dispatch_streamed(..., turn=...)`` (a turn's appender per token): while ``turn`` runs, the
    append is dispatched as without it; once another turn runs, the turn ended or the chat is gone,
    nothing is dispatched (no serverSeq, no frame, no state change) and the answer is None."""
    store = store_with(chat_state(), Journal(tmp_path / "journal.db"))
    sink = Sink()
    store.subscribe(CHAT, sink)
    store.dispatch(CHAT, {"type": "chat/turnStarted", "turnId": "t1", "startedAt": "2026-01-01T00:00:00.000Z",
                          "message": {"text": "go", "origin": {"kind": "user"}}})
    store.dispatch(CHAT, {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown", "id": "p", "content": ""}})

    def delta(turn: str, content: str) -> dict[str, Any]:
        return {"type": "chat/delta", "turnId": turn, "partId": "p", "content": content}

    sent = store.dispatch_streamed(CHAT, delta("t1", "Hel"), None, "t1")
    assert sent is not None and sent["serverSeq"] == store.seq
    seq, frames, before = store.seq, len(sink.frames), text(store.state(CHAT))
    assert store.dispatch_streamed(CHAT, delta("t1", "lo"), None, "t2") is None  # not the active turn
    assert (store.seq, len(sink.frames), text(store.state(CHAT))) == (seq, frames, before)
    assert _active_text(store.state(CHAT)) == "Hel"
    store.dispatch(CHAT, {"type": "chat/turnCancelled", "turnId": "t1", "duration": 1.0})
    seq, frames = store.seq, len(sink.frames)
    assert store.dispatch_streamed(CHAT, delta("t1", "lo"), None, "t1") is None  # the turn is over
    assert (store.seq, len(sink.frames)) == (seq, frames)
    assert store.dispatch_streamed("ahp-chat:/gone", delta("t1", "lo"), None, "t1") is None  # no such chat
    at_once(store.close())
