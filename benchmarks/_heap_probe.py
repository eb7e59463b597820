"""``agent-host`` with a heap probe, for ``soak.py --heap``: what the host's Python heap holds, read
from outside while it runs.

    python -m benchmarks._heap_probe OUT.jsonl [agent-host arguments ...]

Runs ``cli.main.main`` with the given arguments. Each ``SIGUSR1`` appends one JSON line to
``OUT.jsonl``: the seconds since start; the objects the garbage collector tracks in each
generation and frozen, and its collections and what they collected so far; the count of each
type among the objects it tracks outside the frozen generation (garbage not collected yet
included); the largest containers and who holds each; the resident memory before and after
asking the C allocator to give back what it holds free (``malloc_trim``: the difference is
fragmentation, not live data); and, when ``tracemalloc`` traces (``PYTHONTRACEMALLOC=1`` in the
host's environment), the memory traced, and at a ``SIGUSR2`` (the last sample) the source lines
whose allocations grew most since the first. A sample only reads, except the trim. With
``AGENT_HOST_PROBE_COLLECT=1`` each sample first unfreezes what ``gc.freeze`` hid
(``host.runtime.memory``) and runs a full collection (noting what it found to be garbage), so
that only what is alive is counted; that changes what the host's collector keeps, which is why
it is a diagnostic's option.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import signal
import sys
import time
import tracemalloc
from collections import Counter, deque
from pathlib import Path
from typing import Any

TOP_TYPES = 200
"""Types written per sample (the most numerous)."""

TOP_CONTAINERS = 12
"""The largest dicts, lists, sets and deques written per sample, with where each is held."""

TOP_LINES = 15
"""Source lines written per sample (the most grown, with ``tracemalloc``)."""


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


_LIBC = ctypes.CDLL(ctypes.util.find_library("c")) if sys.platform == "linux" else None


def _owner(container: Any, objects: list[Any]) -> str:
    """Where a container is held: ``Type.attribute`` of the object whose ``__dict__`` (or slot)
    holds it, the name of a module global, or the holder's type."""
    for holder in gc.get_referrers(container):
        if holder is objects:
            continue
        if isinstance(holder, dict):
            name = next((key for key, value in holder.items() if value is container), "?")
            for owner in gc.get_referrers(holder):
                if getattr(owner, "__dict__", None) is holder:
                    return f"{type(owner).__qualname__}.{name}"
                if isinstance(owner, type(sys)) and owner.__dict__ is holder:
                    return f"{owner.__name__}.{name}"
            return f"dict[{name!r}]"
        if type(holder).__name__ in ("cell", "frame"):
            continue
        names = [*getattr(type(holder), "__slots__", ()), *getattr(holder, "__dict__", {})]
        for name in names:
            if getattr(holder, name, None) is container:
                label = holder.__name__ if isinstance(holder, type(sys)) else type(holder).__qualname__
                return f"{label}.{name}"
        return type(holder).__qualname__
    return type(container).__qualname__


class _Probe:
    def __init__(self, out: Path, collect: bool) -> None:
        self.out = out
        self.collect = collect
        self.started = time.monotonic()
        self.baseline: tracemalloc.Snapshot | None = None

    def sample(self, signum: int, frame: Any) -> None:
        tracked = [len(gc.get_objects(generation)) for generation in range(3)]
        frozen = gc.get_freeze_count()
        before: dict[str, Any] = {"generations": tracked, "frozen": frozen,
                                  "collections": [stats["collections"] for stats in gc.get_stats()],
                                  "collected": [stats["collected"] for stats in gc.get_stats()]}
        if self.collect:
            gc.unfreeze()  # frozen objects are invisible to gc.get_objects
            before["garbage"] = gc.collect()
        objects = gc.get_objects()
        counts = Counter(type(item).__qualname__ for item in objects)
        sized = [item for item in objects if isinstance(item, (dict, list, set, deque))]
        sized.sort(key=len, reverse=True)
        line: dict[str, Any] = {"t": round(time.monotonic() - self.started, 1), "objects": sum(counts.values()),
                                "before": before,
                                "types": dict(counts.most_common(TOP_TYPES)),
                                "largest": [[len(item), _owner(item, objects)] for item in sized[:TOP_CONTAINERS]]}
        del objects, sized
        if tracemalloc.is_tracing():
            line["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 2)
            if self.baseline is None or signum == signal.SIGUSR2:
                snapshot = tracemalloc.take_snapshot().filter_traces((tracemalloc.Filter(False, tracemalloc.__file__),))
                if self.baseline is None:
                    self.baseline = snapshot
                else:
                    line["grown"] = [[str(stat.traceback[0]), stat.size_diff, stat.count_diff]
                                     for stat in snapshot.compare_to(self.baseline, "lineno")[:TOP_LINES]]
        line["rss_mb"] = _rss_mb()
        if _LIBC is not None:
            _LIBC.malloc_trim(0)  # what the C allocator holds free but not returned
            line["rss_trimmed_mb"] = _rss_mb()
        with self.out.open("a") as file:
            file.write(json.dumps(line) + "\n")


def main() -> int:
    out, arguments = Path(sys.argv[1]), sys.argv[2:]
    probe = _Probe(out, collect=os.environ.get("AGENT_HOST_PROBE_COLLECT") == "1")
    signal.signal(signal.SIGUSR1, probe.sample)
    signal.signal(signal.SIGUSR2, probe.sample)
    from cli.main import main as agent_host

    return agent_host(arguments)


if __name__ == "__main__":
    sys.exit(main())
