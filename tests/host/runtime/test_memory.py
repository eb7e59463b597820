"""The host's collector policy: heavy imports run with the collector held off and end frozen; what a
disposed session held never waits for a full collection."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading

import pytest

from host.runtime import memory


@pytest.fixture
def collector():
    enabled, thresholds = gc.isenabled(), gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    (gc.enable if enabled else gc.disable)()


def test_an_import_runs_with_the_collector_off_and_what_it_made_is_frozen(collector) -> None:
    seen: list[bool] = []
    made: list[list[int]] = []

    def load() -> None:
        seen.append(gc.isenabled())
        made.append([1, 2, 3])  # a container that lives on, as a module's classes do

    frozen_before = gc.get_freeze_count()
    memory.import_out_of_sight(load)

    assert seen == [False]
    assert gc.isenabled()
    assert gc.get_freeze_count() > frozen_before
    assert all(obj is not made[0] for obj in gc.get_objects())  # in the permanent generation


def test_the_second_call_only_runs_the_import_again_without_freezing(collector) -> None:
    calls: list[bool] = []

    def load() -> None:
        calls.append(gc.isenabled())

    memory.import_out_of_sight(load)
    gc.unfreeze()
    memory.import_out_of_sight(load)

    assert calls == [False, True]
    assert gc.get_freeze_count() == 0


def test_two_imports_in_threads_keep_the_collector_off_until_both_are_done(collector) -> None:
    first_started, release_first = threading.Event(), threading.Event()
    during_second: list[bool] = []

    def slow() -> None:
        first_started.set()
        release_first.wait(5)

    def quick() -> None:
        during_second.append(gc.isenabled())

    worker = threading.Thread(target=memory.import_out_of_sight, args=(slow,))
    worker.start()
    first_started.wait(5)
    memory.import_out_of_sight(quick)
    assert not gc.isenabled()  # the slow import is still running
    release_first.set()
    worker.join(5)

    assert during_second == [False]
    assert gc.isenabled()


def test_a_failing_import_still_turns_the_collector_back_on(collector) -> None:
    def broken() -> None:
        raise ImportError("no module named nowhere")

    with pytest.raises(ImportError):
        memory.import_out_of_sight(broken)
    assert gc.isenabled()


def test_an_import_ahead_of_use_that_fails_is_logged_not_raised(collector, caplog) -> None:
    def broken() -> None:
        raise ImportError("no module named nowhere")

    with caplog.at_level(logging.DEBUG, logger="host.runtime.memory"):
        memory.import_ahead(broken, "the nowhere SDK")
    assert "importing the nowhere SDK ahead of its first use failed" in caplog.text
    assert "no module named nowhere" in caplog.text
    assert gc.isenabled()


def test_settle_freezes_what_is_alive_and_sets_the_thresholds(collector) -> None:
    memory.settle()

    assert gc.get_threshold() == memory.GC_THRESHOLDS
    assert gc.get_freeze_count() > 0


def test_the_collector_is_held_off_while_starting_until_the_host_has_settled(collector) -> None:
    with memory.starting():
        assert not gc.isenabled()
        memory.settle()
        assert gc.isenabled()
        gc.disable()  # whatever happens after settle is not undone by the end of the block
    assert not gc.isenabled()


def test_a_start_that_ends_without_settling_turns_the_collector_back_on(collector) -> None:
    with pytest.raises(RuntimeError):
        with memory.starting():
            raise RuntimeError("config error")
    assert gc.isenabled()


def test_a_collector_already_off_stays_off_after_starting(collector) -> None:
    gc.disable()
    with memory.starting():
        memory.settle()
    assert not gc.isenabled()


def test_settling_during_an_import_out_of_sight_turns_the_collector_on_when_it_ends(collector) -> None:
    started, release = threading.Event(), threading.Event()
    during: list[bool] = []

    def slow() -> None:
        started.set()
        release.wait(5)
        during.append(gc.isenabled())

    with memory.starting():
        worker = threading.Thread(target=memory.import_out_of_sight, args=(slow,))
        worker.start()
        started.wait(5)
        memory.settle()  # the host has started while the wire models are still loading
        assert not gc.isenabled()
        release.set()
        worker.join(5)
    assert during == [False]
    assert gc.isenabled()


async def test_a_disposed_session_is_freed_at_once_not_left_for_a_full_collection(connect, running_host) -> None:
    """The host runs full collections rarely (``GC_THRESHOLDS``: over a 10,000-session soak, none
    for the first thousands of sessions), so what a disposed session held must be freed by
    reference counting: a reference cycle through it (a closure kept by an object it closes over)
    leaves the session's customizations, containers and tools for that collection, and the
    host's memory grows with every session meanwhile."""
    from tests.host.runtime.agents.harness import run_turn

    client = await connect()
    warm = await client.create_session()  # lazy imports and caches of a first session
    await run_turn(client, warm, "hello")
    await client.dispose_session(warm)
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for index in range(3):
            session = await client.create_session()
            await run_turn(client, session, f"hello {index}")
            await client.dispose_session(session)
            await client.wait_for(lambda m, e, s=session: running_host.host.session_uri(s) is None, timeout=10)
        while running_host.host.customizations.sessions:  # its SessionEnd hooks run in the background
            await asyncio.sleep(0.01)
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        ours = sorted({f"{type(item).__module__}.{type(item).__qualname__}" for item in gc.garbage
                       if type(item).__module__.split(".")[0] in ("host", "plugins", "tools", "providers", "ahp")})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()
    assert ours == []



PER_SESSION_BYTES = 2_500
"""What one session created, used and disposed, with a terminal created and disposed beside it, may
leave in the host's Python allocations (bounded bookkeeping not yet recycled, such as sqlite3's list
of cursors, emptied every 200): the creep of issue 33 was about 5 KB per session."""


async def _growth_per_session(tmp_path, frame_checker, keep_disposed: list | None = None) -> float:
    """Two equal rounds of sessions (created, one turn, disposed) and terminals (created,
    disposed) after a warm-up that fills the replay buffer: the bytes the host's own code allocated and still holds after each round, per
    session; the smaller round counts (a dict that resizes in one round is not a leak; a leak grows
    in both). ``keep_disposed`` makes the host keep each disposed session's state: a leak."""
    import tracemalloc
    import uuid

    from ahp.state import default_chat_uri
    from ahp.state.channels import _parse_chat_uri
    from client import AhpClient
    from host.service import AgentHost
    from host.transport.dialects.ahp02 import _chat_names
    from host.transport.server import start_host
    from tests.conftest import TOKEN, host_config

    config = host_config(tmp_path / "data", default_directory=str(tmp_path), default_agent="offline")
    config.server.replay_buffer = 200
    config.server.snapshot_every = 200
    host = AgentHost(config)
    if keep_disposed is not None:
        dispose = host.dispose_session

        def leaking(uri: str) -> None:
            inner = host.session_uri(uri)
            keep_disposed.append([host.store.state(channel) for channel in (inner, *host.session_chats(inner))] if inner else None)
            dispose(uri)
        host.dispose_session = leaking  # type: ignore[method-assign]  # the leak this measure must see
    running = await start_host(host, token=TOKEN)
    client = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, frame_hook=frame_checker.client_hook())
    await client.initialize(subscriptions=["ahp-root://"])

    async def rounds(count: int) -> None:
        for index in range(count):
            session = await client.create_session()
            chat, turn = default_chat_uri(session), client.send_message(session, f"hello {index}")
            await client.wait_for(lambda m, e, c=chat, t=turn: t in [x["id"] for x in (client.state(c) or {}).get("turns") or []],
                                  timeout=20)
            await client.dispose_session(session)
            await client.wait_for(lambda m, e, s=session: running.host.session_uri(s) is None, timeout=10)
            terminal = f"ahp-terminal:/{uuid.uuid4()}"
            await client.request("createTerminal", {"channel": terminal, "claim": {"kind": "client", "clientId": client.client_id}})
            await client.request("disposeTerminal", {"channel": terminal})
        while running.host.customizations.sessions:  # SessionEnd hooks run in the background
            await asyncio.sleep(0.01)

    # The host's own allocations: not this test's, not the client's, not tracemalloc's; nor the
    # journal's row bookkeeping, which grows between snapshots and shrinks when one prunes, at
    # moments the rounds do not line up with (tests/host/state/test_journal_bounds.py bounds it).
    ours = [tracemalloc.Filter(False, pattern, all_frames=True)
            for pattern in ("*/tests/*", "*/client/*", "*/tracemalloc.py", "*/host/state/journal.py")]

    def held() -> int:
        # Caches bounded by design (parsed chat URIs, 4,096 and 1,024 of them) fill over the first
        # thousands of sessions; emptied before each measure, they are not mistaken for a leak.
        _parse_chat_uri.cache_clear()
        _chat_names.cache_clear()
        gc.collect()
        return sum(stat.size for stat in tracemalloc.take_snapshot().filter_traces(ours).statistics("filename"))

    count = 25
    try:
        await rounds(60)
        tracemalloc.start(10)
        try:
            first = held()
            await rounds(count)
            second = held()
            await rounds(count)
            third = held()
        finally:
            tracemalloc.stop()
    finally:
        await client.close()
        await running.stop()
    return min(second - first, third - second) / count


async def test_sessions_and_terminals_created_and_disposed_leave_the_hosts_memory_flat(tmp_path, frame_checker) -> None:
    growth = await _growth_per_session(tmp_path, frame_checker)
    assert growth < PER_SESSION_BYTES, f"the host keeps {growth:.0f} bytes more for every session and terminal disposed"


async def test_the_measure_sees_a_host_that_keeps_what_disposed_sessions_held(tmp_path, frame_checker) -> None:
    kept: list = []
    growth = await _growth_per_session(tmp_path, frame_checker, keep_disposed=kept)
    assert len(kept) == 110 and all(kept) and growth > PER_SESSION_BYTES
