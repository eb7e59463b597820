"""Reading the host's own state from a test, and waiting on it without sleeping."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from host.transport.server import RunningHost


def sessions(host: RunningHost) -> list[tuple[str, dict[str, Any]]]:
    """Each session's internal URI and its session-channel state (the internal model)."""
    return list(host.host.store.channels("session"))


def chats(host: RunningHost) -> list[tuple[str, dict[str, Any]]]:
    """Each session's URI (``<agent>:/<id>``, as the chat client names it) and the state of its
    default chat (the model: ``turns`` with their ``message``, ``activeTurn``, pending messages)."""
    store = host.host.store
    return [(uri, store.state(state["defaultChat"]) or {}) for uri, state in store.channels("session")]


async def until_host(host: RunningHost, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait until ``predicate()`` holds on the host's store (woken by each applied action)."""
    if predicate():
        return
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def observer(*_args: Any) -> None:
        if not future.done() and predicate():
            future.set_result(None)

    host.host.store.observers.append(observer)
    try:
        await asyncio.wait_for(future, timeout)
    finally:
        host.host.store.observers.remove(observer)
