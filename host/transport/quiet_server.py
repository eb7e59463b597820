"""uvicorn's server, waking once a second instead of ten times while it serves, and soon after asked to stop.

``uvicorn.Server.main_loop`` sleeps 0.1 s between two calls of ``on_tick`` (which refreshes the
``Date`` header once a second, calls ``callback_notify``, and returns whether to stop: set
``should_exit``, or ``limit_max_requests`` reached). That wakes an idle host ten times a second, and
a busy one pays it at every streamed chunk's share of the wall time (``benchmarks/README.md``,
"the send path"). ``QuietServer`` calls ``on_tick`` once every ``TICK`` seconds, as the one call of
ten that did the once-a-second work, and, since a stop can no longer wait for the next tick,
wakes the loop ``STOP_AFTER`` seconds (uvicorn's tick) after ``should_exit`` is set (by ``RunningHost.stop_soon``, uvicorn's own
signal handler, or the host's: from a signal handler too, so through ``call_soon_threadsafe``).
What ``on_tick`` does, and when a stop is noticed, is otherwise uvicorn's.

**The seam.** This overrides ``main_loop`` and wraps the ``should_exit`` attribute of
``uvicorn.Server`` (uvicorn is pinned to a range in ``pyproject.toml``); ``server(config)`` gives a
plain ``uvicorn.Server`` where those are not there (``tests/host/transport/test_quiet_server.py``
runs both).
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import uvicorn

__all__ = ["QuietServer", "TICK", "server"]

TICK = 1.0
"""Seconds between two calls of ``on_tick`` (uvicorn: 0.1, its once-a-second work every tenth)."""
STOP_AFTER = 0.1
"""Seconds from ``should_exit`` to the stop: uvicorn's longest (its tick), which what is in flight
when a host is stopped has always had (a test restarting a host lost a session's trust answer's
effects when the stop came at once)."""
_UVICORN_TICKS = 10
"""uvicorn's ticks a second: ``on_tick``'s counter grows by this much a ``TICK``."""


class QuietServer(uvicorn.Server):
    _should_exit = False
    _woken: asyncio.Future[None] | None = None
    _loop: asyncio.AbstractEventLoop | None = None

    @property
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        woken, loop = self._woken, self._loop
        if value and woken is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(loop.call_later, STOP_AFTER, _wake, woken)

    async def main_loop(self) -> None:
        loop = self._loop = asyncio.get_running_loop()
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + _UVICORN_TICKS) % 864000  # (uvicorn's: once-a-second work at every tick)
            woken = self._woken = loop.create_future()
            if self._should_exit:  # (set between the last check and now)
                woken.set_result(None)
            timer = loop.call_later(TICK, _wake, woken)
            try:
                await woken
            finally:
                timer.cancel()
                self._woken = None
            should_exit = await self.on_tick(counter)


def _wake(woken: asyncio.Future[None]) -> None:
    if not woken.done():
        woken.set_result(None)


def _fits() -> bool:
    """Whether uvicorn's server has what ``QuietServer`` replaces, as it had when it was written."""
    main_loop, on_tick = getattr(uvicorn.Server, "main_loop", None), getattr(uvicorn.Server, "on_tick", None)
    return (inspect.iscoroutinefunction(main_loop) and inspect.iscoroutinefunction(on_tick)
            and not isinstance(inspect.getattr_static(uvicorn.Server, "should_exit", None), property))


def server(config: uvicorn.Config, quiet: bool | None = None) -> Any:
    """The server for ``config``: a ``QuietServer`` where it fits uvicorn (``quiet`` None), else
    (or ``quiet`` False) uvicorn's own."""
    if quiet is None:
        quiet = _fits()
    return QuietServer(config) if quiet else uvicorn.Server(config)
