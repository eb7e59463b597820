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
