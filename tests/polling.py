"""Waiting in tests for what nothing announces (another process's end, a file appearing).

``await eventually(condition, timeout)`` calls ``condition`` every ``interval`` seconds until it
is true and says whether it became so within ``timeout`` seconds; the test asserts on the answer,
so a condition that never holds fails with the test's own message, not a timeout of pytest's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any


async def eventually(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """True once ``condition()`` is truthy, False if ``timeout`` seconds passed first."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(interval)
    return True
