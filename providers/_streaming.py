"""The one loop every SDK-backed provider runs: open a stream, translate it, map its errors.

``sdk_events`` opens the vendor stream, feeds each raw item to the vendor translator and yields
the neutral events; any SDK exception (opening or mid-stream) becomes the provider's typed
``ProviderError`` through ``map_error``; the vendor stream is closed whatever happens; and a
stream that ends before the translator saw the response finish is a dropped connection
(``ProviderUnavailableError``, retryable), never a silently truncated answer.

``stall_timeout`` bounds every wait: for the response to open and for each raw stream item
(keep-alive pings count: they prove the connection lives). A wait that passes it ends the call with
``ProviderStalledError`` (retryable, so the turn loop retries it like any failure before anything
streamed) instead of hanging until the SDK's own 600 s read timeout. While streaming, one timer per
stream watches the waits (``_StallWatch``): a timer per item (``asyncio.timeout``) cost a timer
handle pushed on and cancelled from the loop's heap for every chunk. Time the consumer spends
between items (the generator is suspended at ``yield``) is not a wait and never counts.

A raw event stream (``providers._sse.RawEventStream``) is not iterated but read here: its bytes
awaited and split into events by its own ``split`` (the same events as its ``async for``), so no
async generator of its own is resumed per chunk; a wait is then one read of bytes. A stream with a
``bare`` reader (pieces picked out of their events' bytes by the translator's prefix) ends a read's
list at each event given whole; those are fed, then ``resume`` gives the rest of the read, so the
prefix is never read before the events ahead of it were fed.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, TypeVar

from providers._sse import RawEventStream
from providers.errors import ProviderError, ProviderStalledError, ProviderUnavailableError
from providers.events import StreamEvent

__all__ = ["sdk_events"]

T = TypeVar("T")


def _stalled(timeout: float, provider: str, what: str) -> ProviderStalledError:
    return ProviderStalledError(
        f"The model's provider sent nothing for {timeout:g} s while {what}; the call was stopped. "
        "Try again; if this model often thinks that long in silence, raise stall_timeout in the agent's config.",
        provider=provider,
    )


async def _within(waiting: Awaitable[T], timeout: float | None, provider: str, what: str) -> T:
    if timeout is None:
        return await waiting
    try:
        # asyncio.timeout, not wait_for: wait_for wraps each wait in a new task, once per chunk.
        async with asyncio.timeout(timeout):
            return await waiting
    except TimeoutError:
        raise _stalled(timeout, provider, what) from None


class _StallWatch:
    """Cancels the task when one wait for an item lasts ``timeout`` s; re-armed only when it fires."""

    __slots__ = ("_loop", "_task", "_timeout", "_handle", "since", "expired", "clock")

    @property
    def timeout(self) -> float:
        return self._timeout

    def __init__(self, timeout: float) -> None:
        self._loop = loop = asyncio.get_running_loop()
        self.clock: Callable[[], float] = time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        """The loop's clock (``loop.time()``, which asyncio's own loops read from ``time.monotonic``:
        called directly for them, as it is read once per item)."""
        self._task = asyncio.current_task()
        self._timeout = timeout
        self.since: float | None = None
        """When the current wait for an item began; None while the consumer has the item."""
        self.expired = False
        self._handle = self._loop.call_at(self._loop.time() + timeout, self._check)

    def _check(self) -> None:
        now = self._loop.time()
        since = self.since
        if since is not None and now - since >= self._timeout:
            self.expired = True
            assert self._task is not None
            self._task.cancel()
            return
        due = (since if since is not None else now) + self._timeout
        self._handle = self._loop.call_at(due, self._check)

    def stalled(self) -> bool:
        """After a CancelledError: True if it was this watch's (and no one else's) cancellation."""
        return self.expired and self._task is not None and self._task.uncancel() == 0

    def close(self) -> None:
        self._handle.cancel()


async def sdk_events(
    open_stream: Callable[..., Awaitable[Any]],
    feed: Callable[[Any], Iterable[StreamEvent] | str],
    map_error: Callable[[BaseException], ProviderError],
    *,
    finished: Callable[[], bool],
    dropped: str,
    provider: str,
    close: bool = True,
    stall_timeout: float | None = None,
    prepare: Callable[[], Any] | None = None,
    then: Callable[[], Iterable[StreamEvent]] | None = None,
    data_only: bool = False,
) -> AsyncIterator[StreamEvent | str]:
    """``close=False`` for streams that own no connection to release (LiteLLM's wrapper).
    ``feed(item)`` gives the events of one raw item, or a ``str``: a bare delta
    (``providers.stream``), yielded as it is (its stream is a ``ModelStream`` made ``bare``).

    So that a provider's ``stream`` can hand this generator out as it is (one generator less for
    every event to pass through): ``prepare()``, when given, runs first, outside the error mapping
    and the stall timeout (building the request: its errors are the caller's, as they are raised),
    and ``open_stream`` is called with what it returned; ``then()`` gives the events that follow a
    finished stream (a translator's closing events). ``data_only`` feeds ``item[1]`` of each raw
    item (the ``data`` of an ``(event name, data)`` pair) instead of the item."""
    prepared = prepare() if prepare is not None else None
    try:
        opening = open_stream(prepared) if prepare is not None else open_stream()
        stream = await _within(opening, stall_timeout, provider, "waiting for its response")
    except ProviderError:
        raise
    except Exception as exc:
        raise map_error(exc) from exc
    watch = _StallWatch(stall_timeout) if stall_timeout is not None else None
    try:
        if type(stream) is RawEventStream:
            # A raw event stream (``providers._sse.RawEventStream``): its bytes read and split
            # here, so that no async generator of its own is resumed per chunk between the bytes
            # and this one. The same events as its ``async for``; a wait is one read of bytes.
            step, errors = stream.reading()
            split = stream.split
            resumed = stream.bare is not None  # (see the module docstring)
        else:
            # ``__anext__`` itself, not ``anext(items, default)``: no wrapper awaitable per item.
            step, errors, split, resumed = aiter(stream).__anext__, contextlib.nullcontext(), None, False
        with errors:
            while True:
                try:
                    if watch is None:
                        got = await step()
                    else:
                        watch.since = watch.clock()
                        try:
                            got = await step()
                        except asyncio.CancelledError:
                            if watch.stalled():
                                raise _stalled(watch.timeout, provider, "streaming") from None
                            raise
                        watch.since = None
                except StopAsyncIteration:  # the SDK's stream ended
                    break
                # One raw item of the SDK's stream, or the events of a read of bytes (those at
                # the body's end when the read is empty).
                items: Iterable[Any] = (got,) if split is None else split(got) if got else stream.last()
                while True:
                    for raw in items:
                        out = feed(raw[1] if data_only else raw)
                        if type(out) is str:  # a bare delta (``providers.stream``): yielded as it is
                            yield out
                        else:
                            for event in out:
                                yield event
                    if not resumed or stream.held is None:
                        break
                    # A raw stream with a ``bare`` reader ended the read's list at an event given
                    # whole, now fed: the rest of the read, with the reader's prefix read again.
                    items = stream.resume()
                if split is not None and (not got or stream.ended):
                    if got:
                        stream.ended_with()  # the error payload that ended it, if one did
                    break
    except ProviderError:
        raise
    except Exception as exc:
        raise map_error(exc) from exc
    finally:
        if watch is not None:
            watch.close()
        if close:
            await stream.close()
    if not finished():
        raise ProviderUnavailableError(dropped, provider=provider)
    if then is not None:
        for event in then():
            yield event
