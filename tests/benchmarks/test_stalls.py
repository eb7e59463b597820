"""The event-loop probe of ``capacity.py --stalls`` / ``--tail`` (``benchmarks/_stalls.py``): it sees
the loop's iterations with the host's tick-end hook on the loop (which shadows the selector's
``select`` itself), leaves both as they were, and says what late chunks waited through."""

from __future__ import annotations

import asyncio
import time

import pytest

from benchmarks._stalls import StallProbe
from host.state import tick_end


def _busy(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


@pytest.mark.parametrize("callbacks", [True, False], ids=["named", "light"])
async def test_the_probe_sees_iterations_through_the_tick_end_hook_and_restores_it(callbacks: bool) -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    tick_end.at_tick_end(lambda: ran.append("before"))  # the hook exists before the probe, as in capacity.py
    await asyncio.sleep(0)
    assert tick_end.hooked(loop)
    selector = loop._selector  # type: ignore[attr-defined]
    select_before = type(selector).__dict__.get("select")

    probe = StallProbe(5.0, callbacks=callbacks)
    probe.install()
    loop.call_soon(_busy, 0.02)
    await asyncio.sleep(0.01)
    for _ in range(3):  # tick-end callbacks while installed: the hook takes its attribute off each time
        tick_end.at_tick_end(lambda: ran.append("during"))
        await asyncio.sleep(0.001)
    written = time.perf_counter()
    loop.call_soon(_busy, 0.02)  # a chunk written now leaves after it
    await asyncio.sleep(0)
    left = time.perf_counter()
    probe.uninstall()

    assert type(selector).__dict__.get("select") is select_before
    assert "select" not in vars(selector)
    tick_end.at_tick_end(lambda: ran.append("after"))
    await asyncio.sleep(0.001)
    assert ran == ["before", "during", "during", "during", "after"]
    assert probe.marks and len(probe.marks) % 3 == 0
    ticks = probe.ticks()
    assert max(wall for _, wall, _, _ in ticks) >= 15  # the busy callbacks' iterations
    if callbacks:
        assert any(stall.wall_ms >= 15 for stall in probe.stalls)
    lines = probe.late_report([(written, left)], 10.0, phases={"all": 0.0})
    assert lines[0].startswith("chunks later than 10 ms: 1 of 1")
    assert "loop's work" in lines[1]
