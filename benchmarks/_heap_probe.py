"""``agent-host`` with a heap probe, for ``soak.py --heap``: what the host's Python heap holds, read
from outside while it runs.

    python -m benchmarks._heap_probe OUT.jsonl [agent-host arguments ...]

Runs ``cli.main.main`` with the given arguments. Each ``SIGUSR1`` appends one JSON line to
``OUT.jsonl``: the seconds since start; the objects the garbage collector tracks in each
generation and frozen, and how many of them a full collection then finds to be garbage; the
count of each type among the objects alive after it; the largest containers and who holds each;
and, when ``tracemalloc`` traces (``PYTHONTRACEMALLOC=1`` in the host's environment), the memory
traced and the source lines whose allocations grew most since the first sample. Each sample
unfreezes what ``gc.freeze`` hid (``host.runtime.memory``) and collects, so that everything alive
is counted; that changes the host's collection pauses and what its collector keeps, which is
why this is a benchmark's diagnostic and not part of the host.
"""

from __future__ import annotations

import gc
import json
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
    def __init__(self, out: Path) -> None:
        self.out = out
        self.started = time.monotonic()
        self.baseline: tracemalloc.Snapshot | None = None

    def sample(self, signum: int, frame: Any) -> None:
        tracked = [len(gc.get_objects(generation)) for generation in range(3)]
        frozen = gc.get_freeze_count()
        gc.unfreeze()  # frozen objects are invisible to gc.get_objects
        unreachable = gc.collect()
        objects = gc.get_objects()
        counts = Counter(type(item).__qualname__ for item in objects)
        sized = [item for item in objects if isinstance(item, (dict, list, set, deque))]
        sized.sort(key=len, reverse=True)
        line: dict[str, Any] = {"t": round(time.monotonic() - self.started, 1), "objects": sum(counts.values()),
                                "before": {"generations": tracked, "frozen": frozen, "garbage": unreachable},
                                "types": dict(counts.most_common(TOP_TYPES)),
                                "largest": [[len(item), _owner(item, objects)] for item in sized[:TOP_CONTAINERS]]}
        del objects, sized
        if tracemalloc.is_tracing():
            snapshot = tracemalloc.take_snapshot().filter_traces((tracemalloc.Filter(False, tracemalloc.__file__),))
            line["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 2)
            if self.baseline is None:
                self.baseline = snapshot
            else:
                line["grown"] = [[str(stat.traceback[0]), stat.size_diff, stat.count_diff]
                                 for stat in snapshot.compare_to(self.baseline, "lineno")[:TOP_LINES]]
        with self.out.open("a") as file:
            file.write(json.dumps(line) + "\n")


def main() -> int:
    out, arguments = Path(sys.argv[1]), sys.argv[2:]
    probe = _Probe(out)
    signal.signal(signal.SIGUSR1, probe.sample)
    from cli.main import main as agent_host

    return agent_host(arguments)


if __name__ == "__main__":
    sys.exit(main())
