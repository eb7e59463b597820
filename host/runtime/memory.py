"""The host process's garbage-collector policy.

CPython's cyclic collector stops the whole process (the event loop, so every streaming session)
for a time proportional to the objects it walks, and a young collection walks every container
allocated since the last one that is still alive. Two kinds of allocation make those pauses long
and find nothing: start-up (imports, recovered sessions) and importing a provider's SDK on first
use (tens of thousands of classes, functions and pydantic field objects that live as long as the
process). The pauses measured, and the thresholds tried, are in ``benchmarks/README.md``
("Figures moved out of docstrings").

* :func:`starting`, around a command's start (``cli.main``): the collector is held off while the
  host imports its modules and builds its models (long-lived containers a young collection would
  walk and never free), until :func:`settle` or the end of the block, whichever comes first.
* :func:`settle`, once the host has started: everything alive moves out of the collector's sight
  (``gc.freeze``), the thresholds become ``GC_THRESHOLDS`` and a collector held off by
  :func:`starting` runs again.
* ``GC_THRESHOLDS`` keep each pause short rather than pauses rare. While many turns stream, each
  holds a few hundred live containers (coroutines, async generators, request objects, tool
  definitions), so most young objects survive a young collection and are walked again by the next
  generation's; frequent young collections and a middle one every second young one gave the
  shortest longest pause at the same collector time. What a collection walks grows with the time
  since the last one (what turns starting and streaming keep alive meanwhile), and the young
  threshold counts containers kept: once a streamed chunk kept none in the journal or the replay
  window, 2,000 of them took 1.5 times as long and the longest middle collection grew by as much,
  so the young threshold went to 1,000 (``benchmarks/README.md``, "The collector while streaming,
  third round"). Full collections stay rare (the collector also waits for the old generation to
  grow by a quarter), and walk only what is not frozen: the stored states are mostly leaf dicts
  the collector untracks.
* :func:`import_out_of_sight`: runs a heavy import (the SDKs are imported in a worker thread when a
  session is created) with the collector held off, then freezes what it created. Done once per
  import function per process. :func:`import_ahead` is the same for an import made before its
  first use (the SDK and the turn loop when a session is created, the wire models and the plugin
  loader once the host listens: the start-up plan, ``host.startup``): a failure is only logged, and the first real use raises it where
  it can be reported.

The cost: frozen objects are never examined again, so a reference cycle among them that later
becomes garbage is never freed. Freezes happen at start and once per SDK, so what can be kept that
way is bounded by what was alive at those few moments. And full collections are rare (a 10,000-session
soak ran thousands of sessions before the first), so garbage in reference cycles waits long for
one: what a disposed session held (its customizations, containers, tools) must be freed by
reference counting, which no closure kept by an object it closes over may prevent
(``tests/host/runtime/test_memory.py``).
"""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["GC_THRESHOLDS", "import_ahead", "import_out_of_sight", "settle", "starting"]

logger = logging.getLogger(__name__)

GC_THRESHOLDS = (1_000, 2, 100)
"""Young collections every 1,000 net allocations of containers, a middle one every second young one
(CPython's default: 700, 10, 10)."""

_lock = threading.Lock()
_holding = 0
"""Imports running under :func:`import_out_of_sight` (the collector is held off while any is)."""
_was_enabled = True
_done: set[Callable[[], None]] = set()
_starting = False
"""The collector is held off by :func:`starting` and :func:`settle` has not run since."""


@contextmanager
def starting() -> Iterator[None]:
    """Hold the collector off until :func:`settle` (the host has started) or the end of the block
    (a command that never starts a host, or one that failed to). A collector that was already
    off stays off."""
    global _starting
    held = gc.isenabled()
    if held:
        gc.disable()
        _starting = True
    try:
        yield
    finally:
        if held:
            _stop_starting()


def settle() -> None:
    """After start-up: freeze everything alive, collect the young generation less often, and let
    a collector held off by :func:`starting` run again."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    _stop_starting()


def _stop_starting() -> None:
    """End :func:`starting`'s hold (once): the collector runs again, or, while an import runs out
    of sight, once that import ends."""
    global _starting, _was_enabled
    with _lock:
        if not _starting:
            return
        _starting = False
        if _holding:
            _was_enabled = True
        else:
            gc.enable()


def import_out_of_sight(load: Callable[[], None]) -> None:
    """Run ``load`` (imports that live as long as the process) with the collector off, then freeze
    what it made. Safe from several threads at once; ``load``'s exceptions propagate."""
    global _holding, _was_enabled
    with _lock:
        again = load in _done
        if not again and _holding == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        if not again:
            _holding += 1
    if again:
        load()  # already imported: only the module lookups are left
        return
    try:
        load()
    finally:
        with _lock:
            _done.add(load)
            _holding -= 1
            if _holding == 0:
                gc.freeze()
                if _was_enabled:
                    gc.enable()


def import_ahead(load: Callable[[], None], what: str) -> None:
    """:func:`import_out_of_sight` ahead of first use: a failure is logged (``what`` names the
    import), not raised; the first real use raises it where it can be reported."""
    try:
        import_out_of_sight(load)
    except Exception:
        logger.debug("importing %s ahead of its first use failed", what, exc_info=True)
