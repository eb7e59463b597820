"""Leases in a real JetStream key-value bucket: one holder at a time, renewal, expiry, release."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats
import pytest
from nats.js.kv import KeyValue

from host.cluster.leases import Lease, Leases, Seen, lapsed
from host.cluster.nats_server import EmbeddedNats

GROUP = "ahp-session:/one"


@pytest.fixture
async def bucket(nats_server: EmbeddedNats) -> AsyncIterator[KeyValue]:
    client = await nats.connect(nats_server.url)
    yield await client.jetstream().create_key_value(bucket="LEASES", history=1)
    await client.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_of_processes_racing_for_a_group_exactly_one_holds_it(bucket: KeyValue) -> None:
    results = await asyncio.gather(*(Leases(bucket, f"p{n}").acquire(GROUP) for n in range(6)))
    winners = [r for r in results if isinstance(r, Lease)]
    assert len(winners) == 1
    holder = await Leases(bucket, "observer").holder_of(GROUP)
    assert [r for r in results if isinstance(r, str)] == [holder] * 5


async def test_a_lease_is_taken_over_only_once_it_has_lapsed_unrenewed(bucket: KeyValue) -> None:
    clock = Clock()
    first, second = Leases(bucket, "first", 6.0, clock), Leases(bucket, "second", 6.0, clock)
    lease = await first.acquire(GROUP)
    assert isinstance(lease, Lease)
    clock.now += 5
    assert await second.acquire(GROUP) == "first"
    assert await first.renew(lease)
    clock.now += 5
    assert await second.acquire(GROUP) == "first"  # renewed: good for 6 s from the renewal
    clock.now += 2
    assert isinstance(await second.acquire(GROUP), Lease)
    assert not await first.renew(lease)  # lost: someone else's revision is there
    assert await first.holder_of(GROUP) == "second"


async def test_a_released_lease_can_be_taken_at_once(bucket: KeyValue) -> None:
    first, second = Leases(bucket, "first"), Leases(bucket, "second")
    lease = await first.acquire(GROUP)
    assert isinstance(lease, Lease)
    await first.release(lease)
    assert await second.holder_of(GROUP) is None
    assert isinstance(await second.acquire(GROUP), Lease)


def test_a_lease_another_process_let_lapse_is_free_to_take_and_one_in_force_or_ours_is_not() -> None:
    seen = {"a": Seen("dead", 99.0), "b": Seen("live", 101.0), "c": Seen("me", 50.0), "d": Seen("dead", 100.0)}
    assert lapsed(seen, 100.0, "me") == ["a", "d"]


def _watcher(bucket: KeyValue, way: str, clock: Clock) -> Leases:
    """A ``Leases`` that watches through the bucket's stream (``consumer``: the log's way) or through
    nats-py's key watcher (``plain``: the fallback)."""
    stream = (bucket._js, "LEASES") if way == "consumer" else None
    return Leases(bucket, "watcher", clock=clock, stream=stream)


@pytest.mark.parametrize("way", ["consumer", "plain"])
async def test_a_watch_of_an_empty_bucket_returns_at_once_and_shows_a_lease_taken_later(bucket: KeyValue, way: str) -> None:
    clock = Clock()
    watcher = _watcher(bucket, way, clock)
    seen: dict[str, Seen] = {}
    stop = await asyncio.wait_for(watcher.watch(seen), 5)
    try:
        assert seen == {}
        assert isinstance(await Leases(bucket, "holder", ttl=6, clock=clock).acquire(GROUP), Lease)
        for _ in range(100):
            if seen:
                break
            await asyncio.sleep(0.02)
        assert seen == {GROUP: Seen("holder", 1006.0)}
    finally:
        await stop()


@pytest.mark.parametrize("way", ["consumer", "plain"])
async def test_a_watch_shows_every_lease_as_the_bucket_holds_it_and_forgets_a_released_one(bucket: KeyValue, way: str) -> None:
    clock = Clock()
    holder, watcher = Leases(bucket, "holder", ttl=6, clock=clock), _watcher(bucket, way, clock)
    released = await Leases(bucket, "gone", ttl=6, clock=clock).acquire("ahp-session:/gone")
    assert isinstance(released, Lease)
    await Leases(bucket, "gone", ttl=6, clock=clock).release(released)  # (a delete in the bucket's history)
    lease = await holder.acquire(GROUP)
    assert isinstance(lease, Lease)
    seen: dict[str, Seen] = {}
    stop = await watcher.watch(seen)
    try:
        assert seen == {GROUP: Seen("holder", 1006.0)}  # there once the watch returns
        assert lapsed(seen, watcher.now(), "watcher") == []
        clock.now = 1004.0
        assert await holder.renew(lease)
        for _ in range(100):
            if seen[GROUP].until == 1010.0:
                break
            await asyncio.sleep(0.02)
        assert seen[GROUP] == Seen("holder", 1010.0)
        clock.now = 1011.0  # the holder stopped renewing: its lease lapsed
        assert lapsed(seen, watcher.now(), "watcher") == [GROUP]
        await holder.release(lease)
        for _ in range(100):
            if not seen:
                break
            await asyncio.sleep(0.02)
        assert seen == {}  # released: nobody's to take over
    finally:
        await stop()


async def test_a_release_after_a_renewal_whose_answer_was_lost_stops_cleanly_and_leaves_the_lease_to_lapse(
        bucket: KeyValue) -> None:
    clock = Clock()
    leases = Leases(bucket, "first", 6.0, clock)
    lease = await leases.acquire(GROUP)
    assert isinstance(lease, Lease)
    stale = Lease(lease.group, lease.revision, lease.until)
    assert await leases.renew(lease)  # stored; ``stale`` is the holder that never heard the answer
    await leases.release(stale)  # a stop: no error
    assert await Leases(bucket, "second", 6.0, clock).acquire(GROUP) == "first"  # still in force
    clock.now += 7
    assert isinstance(await Leases(bucket, "second", 6.0, clock).acquire(GROUP), Lease)
