"""The end of an event-loop tick (``host.state.tick_end``), the way it runs on asyncio's selector
loop (before the next poll) and the plain fallback (``call_soon``): a tick-end callback runs after
the callbacks of the iteration that asked for it, never holds the loop waiting while work is
ready, and one that fails does not stop the others."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from host.state.tick_end import at_tick_end, hooked


@pytest.fixture(params=["hooked", "call_soon"])
def way(request: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "call_soon":
        monkeypatch.setenv("AGENT_HOST_TICK_END", "call_soon")
    return str(request.param)


async def _ticks(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_the_selector_loop_is_hooked_and_the_fallback_is_not(way: str) -> None:
    assert hooked(asyncio.get_running_loop()) is (way == "hooked")


async def test_a_tick_end_callback_runs_after_the_iteration_that_asked_for_it(way: str) -> None:
    loop = asyncio.get_running_loop()
    order: list[str] = []

    def first() -> None:
        order.append("first")
        at_tick_end(lambda: order.append("tick end"))
        at_tick_end(lambda: order.append("tick end, second"))

    loop.call_soon(first)
    loop.call_soon(lambda: order.append("second, same iteration"))
    await _ticks(3)
    assert order == ["first", "second, same iteration", "tick end", "tick end, second"]


async def test_the_tick_end_costs_no_iteration_of_its_own() -> None:
    # Asked for together with a ``call_soon``, it runs first: at the poll that ends this
    # iteration, not in the next iteration behind what was queued before it.
    loop = asyncio.get_running_loop()
    order: list[str] = []

    def step() -> None:
        loop.call_soon(lambda: order.append("queued first, next iteration"))
        at_tick_end(lambda: order.append("tick end"))

    loop.call_soon(step)
    await _ticks(3)
    assert order == ["tick end", "queued first, next iteration"]


async def test_work_a_tick_end_callback_makes_ready_runs_without_waiting_for_io(way: str) -> None:
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    again = loop.create_future()

    def tick_end() -> None:
        loop.call_soon(done.set_result, "queued by the tick end")
        at_tick_end(lambda: again.set_result("asked for by the tick end"))

    # From a timer's callback, with nothing else to run: a poll that waited would wait the 30 s.
    loop.call_later(0.001, lambda: at_tick_end(tick_end))
    assert await asyncio.wait_for(done, 2) == "queued by the tick end"
    assert await asyncio.wait_for(again, 2) == "asked for by the tick end"


async def test_a_failing_tick_end_callback_is_reported_and_the_others_still_run(way: str) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    ran: list[str] = []

    def fails() -> None:
        raise ValueError("broken")

    try:
        loop.call_soon(lambda: (at_tick_end(fails), at_tick_end(lambda: ran.append("after"))))
        await _ticks(3)
    finally:
        loop.set_exception_handler(None)
    assert ran == ["after"]
    assert [type(context["exception"]) for context in reported] == [ValueError]


async def test_the_loop_runs_on_after_a_tick_end(way: str) -> None:
    # The poll is the selector's own again once the callbacks ran: timers and I/O as before.
    loop = asyncio.get_running_loop()
    seen: list[int] = []
    for index in range(3):
        loop.call_soon(at_tick_end, lambda index=index: seen.append(index))
        await asyncio.sleep(0.002)
    server = await _echo_server()
    reader, writer = await asyncio.open_connection(*server.sockets[0].getsockname()[:2])
    writer.write(b"ping\n")
    assert await asyncio.wait_for(reader.readline(), 2) == b"ping\n"
    writer.close()
    server.close()
    assert seen == [0, 1, 2]


async def _echo_server() -> asyncio.Server:
    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    return await asyncio.start_server(echo, "127.0.0.1", 0)


def test_without_a_running_loop_it_says_so() -> None:
    with pytest.raises(RuntimeError):
        at_tick_end(lambda: None)
