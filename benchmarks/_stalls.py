"""Event-loop stalls of the process it runs in, each with what caused it (``capacity.py --stalls``).

A stall is an event-loop iteration whose work (from the selector's return to its next call: the
ready callbacks, timers due, everything they ran) lasted longer than a threshold: a chunk whose
bytes arrive meanwhile waits that long before the loop reads them. For each such iteration the
probe keeps:

* its wall time and the loop thread's CPU time in it (a stall with far less CPU than wall time is
  the thread waiting: for a CPU the machine's other work holds, the GIL another thread holds, or a
  system call), and the thread's context switches in it (``getrusage``): involuntary ones say the
  kernel ran something else on its CPU (preempted), voluntary ones that it slept in the kernel
  (blocked: the GIL, a lock, the disk);
* the collector's pauses in it (``gc.callbacks``: each collection's generation and duration; the
  report also sums every pause by generation, in wall and CPU time);
* the callbacks in it that took longer than ``CALLBACK_NOTE_MS``, each named by what it ran (a
  task's coroutine and where it is suspended after the step, a transport's read, a timer's
  function), with their own wall and CPU time;
* where the loop's thread was, sampled by a watcher thread while a callback ran past the
  threshold (the innermost frames of this repository; a watcher needs the GIL, so a callback that
  holds it, pure Python, is sampled only at the interpreter's switch interval, 5 ms).

The probe patches ``asyncio.events.Handle._run`` (class-wide: every loop of the process) and the
running loop's selector's ``select`` (on its class, and in the host's tick-end hook, which calls
the class's ``select`` it noted: ``host.state.tick_end``); ``uninstall`` restores them. It costs
the host CPU (two clock readings of each kind and a Python call per callback, ``getrusage`` per
iteration, a watcher thread waking every millisecond): 20-35 % more CPU per chunk in
``capacity.py`` at 25-100 sessions, so its runs' p99 is not the figure of record: run it beside the
plain search, not instead of it.

The probe's records are plain tuples kept in lists; ``report`` sums them up after a run.
"""

from __future__ import annotations

import asyncio
import gc
import resource
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._runs import REPO
from host.state import tick_end

CALLBACK_NOTE_MS = 0.5
"""A callback of a stalled iteration is named when it took longer than this."""


@dataclass
class Stall:
    """One event-loop iteration that lasted longer than the threshold."""

    at: float
    """``time.perf_counter()`` when the iteration began (the selector returned)."""
    wall_ms: float
    cpu_ms: float
    callbacks: int
    """Callbacks the iteration ran."""
    preempted: int = 0
    """Involuntary context switches of the loop's thread in it: the kernel gave its CPU to another
    thread (the machine's other work) while it could run."""
    blocked: int = 0
    """Voluntary ones: it waited in the kernel (the GIL another thread held, a lock, the disk)."""
    gc: list[tuple[int, float]] = field(default_factory=list)
    """The collector's pauses in it: (generation, ms)."""
    slow: list[tuple[float, float, str]] = field(default_factory=list)
    """Its callbacks longer than ``CALLBACK_NOTE_MS``: (wall ms, CPU ms, what)."""
    where: list[str] = field(default_factory=list)
    """Where the watcher saw the loop's thread, if it looked."""

    def cause(self) -> str:
        """The stall's largest part, in a few words."""
        gc_ms = sum(ms for _, ms in self.gc)
        if self.cpu_ms < 0.5 * self.wall_ms:
            why = "preempted" if self.preempted and not self.blocked else "blocked" if self.blocked and not self.preempted else "waiting"
            kind = f"{why} (CPU {self.cpu_ms:.1f} of {self.wall_ms:.1f} ms, switches {self.preempted} involuntary, {self.blocked} voluntary)"
            return kind + (f"; in {self.slow[0][2]}" if self.slow else "")
        if gc_ms >= 0.5 * self.wall_ms:
            return f"collector gen {max(g for g, _ in self.gc)} ({gc_ms:.1f} ms)"
        if self.slow:
            top = max(self.slow)
            if top[0] >= 0.5 * self.wall_ms:
                return top[2] + (f" (collector {gc_ms:.1f} ms in it)" if gc_ms >= 1 else "")
        return f"{self.callbacks} callbacks" + (f", collector {gc_ms:.1f} ms" if gc_ms >= 1 else "")


def describe(callback: Any) -> str:
    """What an event-loop callback runs, for a person: a task's coroutine and where it waits now,
    a transport's read with its protocol, or the function's qualified name."""
    owner = getattr(callback, "__self__", None)
    if isinstance(owner, asyncio.Task):
        coro = owner.get_coro()
        return f"task {getattr(coro, '__qualname__', coro)!s} → {_suspended_at(coro)}"
    func = getattr(callback, "func", callback)  # functools.partial
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    protocol = getattr(getattr(func, "__self__", None), "_protocol", None)
    if protocol is not None:
        name += f" ({type(protocol).__qualname__})"
    return name


def _suspended_at(coro: Any) -> str:
    """The innermost awaited frame of a coroutine chain, as ``file:line function``."""
    where = "?"
    depth = 0
    while coro is not None and depth < 50:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "ag_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None:
            where = f"{_short(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}"
        coro = getattr(coro, "cr_await", None) or getattr(coro, "ag_await", None) or getattr(coro, "gi_yieldfrom", None)
        depth += 1
    return where


def _short(filename: str) -> str:
    path = Path(filename)
    if path.is_relative_to(REPO) and "/.venv/" not in filename:
        return str(path.relative_to(REPO))
    return "/".join(path.parts[-2:])


class StallProbe:
    """Install on a running loop, run the workload, ``uninstall``, then ``report``."""

    def __init__(self, threshold_ms: float = 2.0, watch: bool = True, callbacks: bool = True) -> None:
        self.threshold = threshold_ms / 1000
        self.watch = watch and callbacks
        self.callbacks = callbacks
        """Time and name each callback (``Handle._run`` patched: the probe's main cost); without
        it only the iterations, the collector and the thread's CPU are kept (``late_report``)."""
        self.marks: list[float] = []
        """Every poll's start and end, three numbers each (``perf_counter``, the loop thread's CPU,
        the process's CPU): an iteration runs from a poll's end to the next poll's start."""
        self.stalls: list[Stall] = []
        self.gc_pauses: list[tuple[float, int, float, float]] = []
        """Every collection of the loop's thread while installed: (start, generation, wall ms, CPU ms)."""
        self.iterations = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._selector: Any = None
        self._select: tuple[Any, Any, Any] | None = None
        """The selector's class, its own ``select`` (None: inherited) and the one it used."""
        self._run: Any = None
        self._iteration_start = 0.0
        self._iteration_cpu = 0.0
        self._iteration_switches = (0, 0)
        self._callbacks = 0
        self._slow: list[tuple[float, float, str]] = []
        self._gc: list[tuple[int, float]] = []
        self._gc_started = 0.0
        self._gc_started_cpu = 0.0
        self._where: list[str] = []
        self._current_start = 0.0
        """When the callback running now began (0: none runs)."""
        self._current_seen = 0.0
        self._watcher: threading.Thread | None = None
        self._running = False
        self._loop_thread = 0

    def install(self) -> None:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._loop_thread = threading.get_ident()
        probe = self
        original = asyncio.events.Handle._run
        self._run = original
        perf, cpu = time.perf_counter, time.thread_time

        def timed_run(handle: asyncio.Handle) -> None:
            callback = handle._callback  # type: ignore[attr-defined]  # a timer that cancels itself loses it while it runs
            start, start_cpu = perf(), cpu()
            probe._current_start = start
            try:
                original(handle)
            finally:
                probe._current_start = 0.0
                probe._callbacks += 1
                took = perf() - start
                if took * 1000 > CALLBACK_NOTE_MS:
                    what = describe(callback)
                    probe._slow.append((took * 1000, (cpu() - start_cpu) * 1000,
                                        f"timer {what}" if isinstance(handle, asyncio.TimerHandle) else what))

        if self.callbacks:
            asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]  # measured while installed
        else:
            self._run = None
        marks, process = self.marks, time.process_time
        selector = loop._selector  # type: ignore[attr-defined]  # the selector event loop's own
        self._selector = selector
        kind = type(selector)
        select = kind.select
        self._select = (kind, kind.__dict__.get("select"), select)

        def timed_select(self_: Any, timeout: float | None = None) -> Any:
            if self_ is not selector:  # another loop's selector (a thread's): not measured
                return select(self_, timeout)
            probe._end_iteration()
            marks.extend((perf(), cpu(), process()))
            events = select(self_, timeout)
            now, used = perf(), cpu()
            probe._iteration_start, probe._iteration_cpu = now, used
            marks.extend((now, used, process()))
            usage = resource.getrusage(resource.RUSAGE_THREAD)
            probe._iteration_switches = (usage.ru_nivcsw, usage.ru_nvcsw)
            return events

        # On the class, not the instance: the host's tick-end hook (``host.state.tick_end``) puts
        # an attribute of its own on the instance while a tick-end callback waits and deletes it
        # when it runs, and then calls the select it noted when it was made, which is swapped here too.
        kind.select = timed_select
        hook = tick_end._hooks.get(loop)
        if hook is not None and hook.plain is not None:
            hook.plain = timed_select
        gc.callbacks.append(self._on_gc)
        self._iteration_start, self._iteration_cpu = perf(), cpu()
        if self.watch:
            self._running = True
            self._watcher = threading.Thread(target=self._watch, name="stall-probe", daemon=True)
            self._watcher.start()

    def uninstall(self) -> None:
        if self._run is not None:
            asyncio.events.Handle._run = self._run  # type: ignore[method-assign]
            self._run = None
        if self._select is not None:
            kind, own, select = self._select
            if own is None:
                del kind.select  # it was inherited
            else:
                kind.select = own
            hook = tick_end._hooks.get(self._loop) if self._loop is not None else None
            if hook is not None and hook.plain is not None and hook.plain is not select:  # (made before or while installed)
                hook.plain = select
            self._select = None
        self._selector = None
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)
        self._running = False
        if self._watcher is not None:
            self._watcher.join()
            self._watcher = None

    def _end_iteration(self) -> None:
        now = time.perf_counter()
        wall = now - self._iteration_start
        self.iterations += 1
        if wall > self.threshold:
            usage = resource.getrusage(resource.RUSAGE_THREAD)
            involuntary, voluntary = self._iteration_switches
            self.stalls.append(Stall(self._iteration_start, wall * 1000, (time.thread_time() - self._iteration_cpu) * 1000,
                                     self._callbacks, usage.ru_nivcsw - involuntary, usage.ru_nvcsw - voluntary,
                                     self._gc, sorted(self._slow, reverse=True), self._where))
            self._gc, self._where = [], []
        elif self._gc or self._where:
            self._gc, self._where = [], []
        self._slow = []
        self._callbacks = 0

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if threading.get_ident() != self._loop_thread:
            return
        if phase == "start":
            self._gc_started, self._gc_started_cpu = time.perf_counter(), time.thread_time()
            return
        ms = (time.perf_counter() - self._gc_started) * 1000
        self.gc_pauses.append((self._gc_started, info["generation"], ms, (time.thread_time() - self._gc_started_cpu) * 1000))
        self._gc.append((info["generation"], ms))

    def _watch(self) -> None:
        while self._running:
            time.sleep(0.001)
            started = self._current_start
            if started and started != self._current_seen and time.perf_counter() - started > self.threshold:
                self._current_seen = started
                frame = sys._current_frames().get(self._loop_thread)
                where: list[str] = []
                while frame is not None and len(where) < 40:
                    where.append(f"{_short(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}")
                    frame = frame.f_back
                ours = [item for item in where if not item.startswith(("asyncio/", "benchmarks/_stalls"))]
                self._where = ours[:4]

    def report(self, since: float = 0.0, until: float = float("inf"), longest: int = 8) -> list[str]:
        """Lines saying how many stalls began between ``since`` and ``until`` (``perf_counter``
        readings), their causes by count and time, and the ``longest`` ones in full."""
        stalls = [stall for stall in self.stalls if since <= stall.at <= until]
        pauses = [(generation, ms, cpu) for at, generation, ms, cpu in self.gc_pauses if since <= at <= until]
        seconds = max(1e-9, min(until, time.perf_counter()) - since) if since else 0.0
        lines = [f"stalls over {self.threshold * 1000:g} ms: {len(stalls)}"
                 + (f" in {seconds:.1f} s" if seconds else "")
                 + f", {sum(stall.wall_ms for stall in stalls):.0f} ms in all, the longest {max((s.wall_ms for s in stalls), default=0):.1f} ms"]
        by_generation = Counter(generation for generation, _, _ in pauses)
        if pauses:
            gc_text = ", ".join(f"gen {generation}: {count} ({sum(ms for g, ms, _ in pauses if g == generation):.0f} ms, "
                                f"longest {max(ms for g, ms, _ in pauses if g == generation):.1f}; CPU "
                                f"{sum(cpu for g, _, cpu in pauses if g == generation):.0f} ms, "
                                f"longest {max(cpu for g, _, cpu in pauses if g == generation):.1f})"
                                for generation, count in sorted(by_generation.items()))
            lines.append(f"  collector (wall; CPU): {gc_text}")
        causes: Counter[str] = Counter()
        cause_ms: Counter[str] = Counter()
        for stall in stalls:
            cause = _category(stall)
            causes[cause] += 1
            cause_ms[cause] += stall.wall_ms
        for cause, count in cause_ms.most_common(6):
            lines.append(f"  {causes[cause]:>4} stalls, {count:6.0f} ms: {cause}")
        heaviest = [stall for stall in sorted(stalls, key=lambda s: -s.cpu_ms)[:longest] if stall.cpu_ms >= 0.5 * stall.wall_ms]
        if heaviest:  # on a loaded machine the longest are mostly the thread off its CPU: these are the host's own
            shown = {id(stall) for stall in heaviest}
            stalls = heaviest + [stall for stall in sorted(stalls, key=lambda s: -s.wall_ms) if id(stall) not in shown]
            lines.append(f"  the {len(heaviest)} with the most CPU, then the longest:")
        for stall in (stalls if heaviest else sorted(stalls, key=lambda s: -s.wall_ms))[:longest + len(heaviest)]:
            parts = [f"  {stall.wall_ms:6.1f} ms (CPU {stall.cpu_ms:.1f}, {stall.callbacks} callbacks"]
            if stall.gc:
                parts.append(", collector " + " + ".join(f"{ms:.1f} (gen {g})" for g, ms in stall.gc))
            parts.append(f"): {stall.cause()}")
            if stall.slow:
                parts.append("; slowest: " + "; ".join(f"{wall:.1f}/{cpu:.1f} ms {what}" for wall, cpu, what in stall.slow[:3]))
            if stall.where:
                parts.append(f"; seen at {' < '.join(stall.where)}")
            lines.append("".join(parts))
        return lines


    def ticks(self, since: float = 0.0, until: float = float("inf")) -> list[tuple[float, float, float, float]]:
        """The loop's iterations that began between ``since`` and ``until``: (start, wall ms, the
        loop thread's CPU ms, the process's other threads' CPU ms), from the polls' marks."""
        marks = self.marks
        found = []
        # marks: poll start (t, thread, process), poll end (t, thread, process), poll start, ...
        for index in range(3, len(marks) - 3, 6):  # each poll's end and the next poll's start
            start, thread, process = marks[index:index + 3]
            end, thread_end, process_end = marks[index + 3:index + 6]
            if since <= start <= until:
                used = thread_end - thread
                found.append((start, (end - start) * 1000, used * 1000, max(0.0, (process_end - process) - used) * 1000))
        return found

    def late_report(self, pairs: list[tuple[float, float]], limit_ms: float, since: float = 0.0,
                    until: float = float("inf"), phases: dict[str, float] | None = None) -> list[str]:
        """What the chunks later than ``limit_ms`` waited through. ``pairs``: each chunk's (written by
        the provider, its frame written to the client's socket), ``perf_counter`` seconds. For each
        late chunk, its wait split into the loop's thread running (the collector's pauses apart),
        the loop polling (idle, or reading), and the loop's thread off its CPU while it had work:
        the process's other threads' CPU meanwhile (its own worker threads on its core), the rest
        the machine's other processes; and the longest iteration it waited through. Beside them,
        the distribution of every iteration's wall and CPU time between ``since`` and ``until``.
        ``phases``: names and the moments they begin (the turns' starts, the steady streaming, the
        turns' ends): the late chunks are counted by the phase they were written in."""
        import bisect

        marks = self.marks
        times, threads, processes = marks[0::3], marks[1::3], marks[2::3]
        # even positions: poll starts (an iteration ended), odd: poll ends (an iteration began)

        def at(series: list[float], t: float) -> float:
            """A CPU clock's reading at ``t``, linear between the marks around it."""
            i = bisect.bisect_right(times, t)
            if i <= 0:
                return series[0]
            if i >= len(times):
                return series[-1]
            t0, t1 = times[i - 1], times[i]
            return series[i - 1] + (series[i] - series[i - 1]) * ((t - t0) / (t1 - t0) if t1 > t0 else 0.0)

        def polling(a: float, b: float) -> float:
            """Seconds of [a, b] the loop spent in its polls."""
            i = max(0, bisect.bisect_right(times, a) - 1)
            total = 0.0
            while i + 1 < len(times) and times[i] < b:
                if i % 2 == 0:  # a poll: times[i] to times[i + 1]
                    total += max(0.0, min(b, times[i + 1]) - max(a, times[i]))
                i += 1
            return total

        pauses = sorted((at_, ms / 1000, generation) for at_, generation, ms, _ in self.gc_pauses)
        pause_starts = [at_ for at_, _, _ in pauses]
        late = sorted((written - stamp, stamp, written) for stamp, written in pairs
                      if since <= stamp <= until and (written - stamp) * 1000 > limit_ms)
        every = [(written - stamp) for stamp, written in pairs if since <= stamp <= until]
        lines = [f"chunks later than {limit_ms:g} ms: {len(late)} of {len(every)} ({len(late) / max(1, len(every)):.2%})"]
        if phases:
            named = sorted(phases.items(), key=lambda item: item[1])

            def phase(t: float) -> str:
                return next((name for name, begins in reversed(named) if t >= begins), named[0][0])

            written = Counter(phase(stamp) for stamp, written in pairs if since <= stamp <= until)
            in_phase = Counter(phase(stamp) for _, stamp, _ in late)
            lines[0] += "; by the phase they were written in: " + ", ".join(
                f"{name} {in_phase[name]} of {written[name]} ({in_phase[name] / max(1, written[name]):.1%})" for name, _ in named)
        if late and len(times) > 2:
            parts = Counter[str]()
            causes = Counter[str]()
            longest: list[float] = []
            for wait, a, b in late:
                loop_cpu = at(threads, b) - at(threads, a)
                other = max(0.0, at(processes, b) - at(processes, a) - loop_cpu)
                idle = polling(a, b)
                collector = 0.0
                j = max(0, bisect.bisect_right(pause_starts, a) - 1)
                while j < len(pauses) and pauses[j][0] < b:
                    start, took, _ = pauses[j]
                    collector += max(0.0, min(b, start + took) - max(a, start))
                    j += 1
                off = max(0.0, wait - idle - loop_cpu)
                own = min(off, other)
                share = {"loop's work": max(0.0, loop_cpu - collector), "collector": min(collector, loop_cpu),
                         "polling": idle, "own threads": own, "machine": off - own}
                for name, value in share.items():
                    parts[name] += value
                causes[max(share, key=lambda name: share[name])] += 1
                # the longest iteration that overlapped the wait
                i = max(0, bisect.bisect_right(times, a) - 1)
                worst = 0.0
                while i + 1 < len(times) and times[i] < b:
                    if i % 2 == 1:
                        worst = max(worst, times[i + 1] - times[i])
                    i += 1
                longest.append(worst * 1000)
            total = sum(wait for wait, _, _ in late)
            lines.append("  their waits, in all: " + ", ".join(f"{name} {value / total:.0%}" for name, value in parts.most_common()))
            lines.append("  the largest part of each: " + ", ".join(f"{name} {count}" for name, count in causes.most_common()))
            longest.sort()
            lines.append(f"  the longest iteration each waited through: median {longest[len(longest) // 2]:.1f} ms, "
                         f"max {longest[-1]:.1f}")
        pauses_in = [(generation, ms, cpu) for at_, generation, ms, cpu in self.gc_pauses if since <= at_ <= until]
        if pauses_in:
            lines.append("collector CPU ms: " + ", ".join(
                f"gen {g}: {sum(1 for x in pauses_in if x[0] == g)} pauses, {sum(c for x, _, c in pauses_in if x == g):.0f} in all, "
                f"longest {max(c for x, _, c in pauses_in if x == g):.1f}" for g in sorted({x[0] for x in pauses_in})))
        ticks = self.ticks(since, until)
        if ticks:
            walls = sorted(wall for _, wall, _, _ in ticks)
            cpus = sorted(cpu for _, _, cpu, _ in ticks)
            seconds = max(1e-9, min(until, ticks[-1][0]) - max(since, ticks[0][0]))

            def spread(values: list[float]) -> str:
                return " / ".join(f"{values[min(len(values) - 1, int(len(values) * q))]:.2f}" for q in (0.5, 0.9, 0.99, 0.999)) + f" / {values[-1]:.1f}"

            lines.append(f"iterations: {len(ticks)} ({len(ticks) / seconds:.0f} a second), the loop's thread busy "
                         f"{sum(walls) / 1000 / seconds:.0%} of the time (CPU {sum(cpus) / 1000 / seconds:.0%}); other threads' CPU "
                         f"{sum(o for _, _, _, o in ticks) / 1000 / seconds:.1%}")
            lines.append(f"  wall ms p50 / p90 / p99 / p99.9 / max: {spread(walls)};  CPU ms: {spread(cpus)}")
        return lines


def _category(stall: Stall) -> str:
    """A stall's cause with line numbers and waits left out, to count stalls of one kind together."""
    cause = stall.cause()
    for why in ("preempted", "blocked", "waiting"):
        if cause.startswith(why):
            return f"{why} (the loop's thread had under half the wall time on a CPU)"
    if cause.startswith("collector"):
        return cause.split(" (")[0]
    return cause.split(" → ")[0].split(" (collector")[0]
