"""Futures keyed by what they wait for (a tool call's confirmation, a client's completion...).

Contract: ``wait(key)`` and ``resolve(key, value)`` may come in either order: whichever comes
first creates the future, so an answer that arrives before anyone waits for it (a client tool
completing while the turn loop is still approving another call) is kept, not lost. A consumed
future is forgotten; ``drop(predicate)`` forgets (and cancels) the ones nobody will consume,
e.g. those of a turn that ended. No polling anywhere: the store's observer calls ``resolve``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Waiters"]


class Waiters:
    def __init__(self) -> None:
        self._futures: dict[Hashable, asyncio.Future[Any]] = {}

    def _future(self, key: Hashable) -> asyncio.Future[Any]:
        future = self._futures.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            self._futures[key] = future
        return future

    def expect(self, key: Hashable) -> None:
        """Start listening for ``key`` now (before publishing what will be answered)."""
        self._future(key)

    async def wait(self, key: Hashable) -> Any:
        future = self._future(key)
        try:
            return await future
        finally:
            if self._futures.get(key) is future:
                del self._futures[key]

    def resolve(self, key: Hashable, value: Any) -> None:
        future = self._future(key)
        if not future.done():
            future.set_result(value)

    def waiting(self, key: Hashable) -> bool:
        future = self._futures.get(key)
        return future is not None and not future.done()

    def drop(self, predicate: Callable[[Hashable], bool]) -> None:
        for key in [key for key in self._futures if predicate(key)]:
            self._futures.pop(key).cancel()
