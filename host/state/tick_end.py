"""The end of an event-loop tick: a callback run once the callbacks ready in this iteration of the
event loop have all run, before the loop next waits for I/O, without an iteration of its own.

``at_tick_end(callback)`` is what the embedded log's end-of-tick commit (and so every connection's
end-of-tick write, ``host.transport.ws_protocol``) is queued with. ``loop.call_soon`` would do it
too, but a callback queued with it runs in the *next* iteration, which costs a whole iteration of
the event loop (its bookkeeping, a ``select`` that returns at once, the handle) on top of the
iteration that appended: at a model's pace, once per streamed chunk, about a twentieth of what
the host spends on one (``benchmarks/README.md``, "the send path"). Here the callback runs when
the loop next polls, right after the iteration that asked for it.

Order: every callback of the iteration that asked runs first (those after the asking one in that
iteration's batch too); then the tick-end callbacks, in the order they were asked for; then, in
the next iteration, what was queued with ``call_soon`` meanwhile (by the iteration's callbacks or
by the tick-end ones). Unlike a ``call_soon`` made at the same moment, the tick's end comes before
callbacks queued earlier in the iteration, not after them: what must join the tick's commit may
not be left to a ``call_soon`` (the log's ``commit_with_next_step`` asks for one iteration more
instead). A tick-end callback asked for while they run runs at the next poll, which then does not
wait; so does the poll after one that made a callback ready. One that raises is reported to the
loop's exception handler, as a handle's would be, and the others still run.

**The seam.** asyncio has no hook for "before the next poll", so this leans on the selector
event loop's internals (``BaseSelectorEventLoop._selector``, the ``select`` its ``_run_once`` calls
once per iteration with a timeout worked out from ``_ready``, ``_stopping`` and the timers in
``_scheduled``): while a tick-end callback waits, the selector object's ``select`` is shadowed by
an attribute of the instance that takes itself off, runs the waiting callbacks and calls the
class's ``select``, with no timeout when they made a callback ready or stopped the loop, and with
a shorter one when they added a timer due sooner than every other. Any other loop (uvloop, the proactor, a selector with slots or no ``select``),
or ``AGENT_HOST_TICK_END=call_soon`` in the environment, gets the plain fallback, ``call_soon``
(``tests/host/state/test_tick_end.py`` runs both ways).
"""

from __future__ import annotations

import asyncio
import logging
import os
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["at_tick_end", "hooked"]

logger = logging.getLogger(__name__)

_hooks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _TickEnd] = weakref.WeakKeyDictionary()
"""Each event loop's tick-end hook, made the first time it is asked for (it holds its loop weakly)."""
_last: _TickEnd | None = None
"""The hook asked for last (one event loop, mostly): found without a look-up."""


class _TickEnd:
    """One event loop's waiting tick-end callbacks and the ``select`` that runs them; without a
    ``selector`` (the fallback) each is queued with ``call_soon``."""

    __slots__ = ("loop", "selector", "plain", "ready", "waiting", "__weakref__")

    def __init__(self, loop: Any, selector: Any) -> None:
        self.loop = weakref.ref(loop)
        self.selector = selector
        self.plain: Callable[[Any, float | None], Any] | None = type(selector).select if selector is not None else None
        self.ready: Any = loop._ready if selector is not None else None
        self.waiting: list[Callable[[], None]] = []

    def select(self, timeout: float | None = None) -> Any:
        """The selector's ``select`` while callbacks wait: they run first, then the poll, with the
        timeout the loop worked out before they ran unless they changed what it depends on."""
        selector = self.selector
        del selector.select
        loop: Any = self.loop()
        scheduled = loop._scheduled  # (the loop may replace the list: read each time)
        earliest = scheduled[0] if scheduled else None
        waiting, self.waiting = self.waiting, []
        for callback in waiting:
            try:
                callback()
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                loop.call_exception_handler({"message": f"Exception in tick-end callback {callback!r}", "exception": exc})
        if self.waiting or self.ready or loop._stopping:
            timeout = 0  # a callback asked for more, made something ready or stopped the loop: do not wait
        elif scheduled and scheduled[0] is not earliest:  # a timer due sooner than any before (a group commit's)
            due = max(0.0, scheduled[0].when() - loop.time())
            timeout = due if timeout is None else min(timeout, due)
        assert self.plain is not None
        return self.plain(selector, timeout)


def _hook(loop: asyncio.AbstractEventLoop) -> _TickEnd:
    """The loop's hook, made the first time (without a selector where only the fallback works)."""
    hook = _hooks.get(loop)
    if hook is not None:
        return hook
    selector = getattr(loop, "_selector", None)
    if not (os.environ.get("AGENT_HOST_TICK_END") != "call_soon"
            and isinstance(loop, asyncio.BaseEventLoop) and selector is not None
            and getattr(loop, "_ready", None) is not None and isinstance(getattr(loop, "_scheduled", None), list)
            and hasattr(loop, "_stopping") and callable(getattr(type(selector), "select", None))
            and hasattr(selector, "__dict__") and "select" not in vars(selector)):
        selector = None
    hook = _hooks[loop] = _TickEnd(loop, selector)
    return hook


def at_tick_end(callback: Callable[[], None]) -> None:
    """Run ``callback`` at the end of this event-loop tick (module docstring); raises RuntimeError
    without a running event loop, as ``asyncio.get_running_loop`` does."""
    global _last
    loop = asyncio.get_running_loop()
    hook = _last
    if hook is None or hook.loop() is not loop:
        hook = _last = _hook(loop)
    selector = hook.selector
    if selector is None:  # the fallback
        loop.call_soon(callback)
        return
    waiting = hook.waiting
    waiting.append(callback)
    if len(waiting) == 1:
        selector.select = hook.select  # (an attribute of the instance: see the module docstring)


def hooked(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` runs tick-end callbacks before its polls (else: ``call_soon``, the fallback)."""
    return _hook(loop).selector is not None
