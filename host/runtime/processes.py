"""Processes that outlive the command that started them, and the host as their reaper.

Contract:

* From ``start()`` to ``stop()`` the host process is a child subreaper (``tools.processes``,
  Linux; elsewhere nothing changes and orphans go to ``init``): a command's jobs that were
  daemonised (``nohup``, ``setsid``, a double fork) are re-parented to the host, found as its
  descendants and ended with their family. Their zombies are reaped every ``REAP_INTERVAL``
  seconds and whenever a family is ended.
* ``keep(owner, process)`` takes over a finished command whose background processes still run:
  a ``shell`` tool call's (owner: its session, through ``BackgroundContributor``) or a terminal
  whose shell exited (owner: the terminal's URI). Their output is read and dropped until nobody
  holds the pty any more, then the pty is released: a background server that logs does not fail
  on a closed terminal.
* ``end(owner)`` ends every family kept for ``owner`` (SIGHUP + SIGTERM, SIGKILL after
  ``grace``), in the background; ``stop()`` ends every kept family, waits for them and for the
  ``end`` calls still under way, and stops reaping and being a subreaper.
* A kept family with no live process left is forgotten at the next reaping pass.
* With a ``record`` file (``<data dir>/processes.json``), ``start()`` notes there which host this
  is (its token issuer, pid and start). A host killed without stopping (``kill -9``, a crash)
  cannot end its families; the next ``start()`` on the same data directory finds what is left of
  them (every process carrying that host's tokens, ``tools.processes.end_left_by``) and ends it,
  in the background, unless that host is in fact still running. ``stop()`` removes the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Hashable
from pathlib import Path

from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from host.state.private_files import private_file
from tools import processes
from tools.base import ToolContext
from tools.pty import PtyProcess

__all__ = ["BackgroundContributor", "BackgroundProcesses", "REAP_INTERVAL"]

logger = logging.getLogger(__name__)

REAP_INTERVAL = 2.0


class BackgroundProcesses:
    def __init__(self, grace: float = 2.0, *, record: Path | None = None) -> None:
        self.grace = grace
        self.record = record
        self._kept: dict[Hashable, list[PtyProcess]] = {}
        self._ending: set[asyncio.Task[None]] = set()
        self._releasing: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None
        self._subreaper = False
        self.left_behind: asyncio.Task[int] | None = None
        """Ending what a host killed before this one left running (``start``): how many processes."""

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._subreaper = processes.become_subreaper()
        if not self._subreaper:
            logger.debug("not a child subreaper here: daemonised jobs are found by their environment alone")
        self._reaper = asyncio.get_running_loop().create_task(self._reap_periodically())
        if self.record is not None:
            previous = _read_record(self.record)
            _write_record(self.record)
            if previous is not None:
                self.left_behind = asyncio.get_running_loop().create_task(self._end_left_behind(previous))

    async def _end_left_behind(self, previous: dict[str, object]) -> int:
        issuer, pid, began = previous.get("issuer"), previous.get("pid"), previous.get("started")
        if not isinstance(issuer, str) or issuer == processes.ISSUER:
            return 0
        if isinstance(pid, int) and began is not None and processes.started(pid) == began:
            logger.warning("the host that used this data directory before (pid %s) is still running; "
                           "its processes are left alone", pid)
            return 0
        try:
            ended = await processes.end_left_by(issuer, self.grace)
        except Exception:  # housekeeping: it must never keep the host from starting
            logger.exception("ending the processes a killed host left running failed")
            return 0
        if ended:
            logger.warning("ended %d process(es) the previous host (killed without stopping) left running", ended)
        return ended

    async def stop(self) -> None:
        kept = [process for family in self._kept.values() for process in family]
        self._kept.clear()
        await asyncio.gather(*(self._terminate(process) for process in kept), *self._ending, return_exceptions=True)
        for task in list(self._releasing):  # a process that escaped its family may still hold a pty
            task.cancel()
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
            self._reaper = None
        if self.left_behind is not None:
            self.left_behind.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.left_behind
        processes.reap_orphans()
        if self._subreaper:
            processes.stop_being_subreaper()
            self._subreaper = False
        if self.record is not None:
            with contextlib.suppress(OSError):
                self.record.unlink()  # stopped cleanly: every family was ended above

    # -- keeping and ending --------------------------------------------------------------------

    def keep(self, owner: Hashable, process: PtyProcess) -> None:
        process.listeners.clear()  # read and dropped: nobody shows it any more
        self._kept.setdefault(owner, []).append(process)

        async def release_when_done() -> None:
            try:
                await process.output_closed.wait()
            finally:
                process.close()

        task = asyncio.get_running_loop().create_task(release_when_done())
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    def kept(self, owner: Hashable) -> list[PtyProcess]:
        return list(self._kept.get(owner, ()))

    def end(self, owner: Hashable) -> None:
        for process in self._kept.pop(owner, ()):
            task = asyncio.get_running_loop().create_task(self._terminate(process))
            self._ending.add(task)
            task.add_done_callback(self._ending.discard)

    async def _terminate(self, process: PtyProcess) -> None:
        try:
            await process.terminate(self.grace)
        except Exception:  # one family failing to end must not keep the others alive
            logger.exception("ending the background processes of pid %s failed", process.pid)
        finally:
            process.close()

    # -- reaping -------------------------------------------------------------------------------

    async def _reap_periodically(self) -> None:
        while True:
            await asyncio.sleep(REAP_INTERVAL)
            try:
                processes.reap_orphans()
                self._forget_finished()
            except Exception:  # reaping is housekeeping: it must never take the host down
                logger.exception("reaping orphaned processes failed")

    def _forget_finished(self) -> None:
        for owner, family in list(self._kept.items()):
            alive = [process for process in family if process.members()]
            for process in family:
                if process not in alive:
                    process.close()
            if alive:
                self._kept[owner] = alive
            else:
                del self._kept[owner]


def _read_record(path: Path) -> dict[str, object] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        logger.warning("%s is unreadable; processes a killed host left running are not looked for", path)
        return None
    return value if isinstance(value, dict) else None


def _write_record(path: Path) -> None:
    """Which host issues this data directory's family tokens now (written whole, then renamed)."""
    record = {"issuer": processes.ISSUER, "pid": os.getpid(), "started": processes.started(os.getpid())}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        private_file(partial).write_text(json.dumps(record), encoding="utf-8")  # 0600 from its first byte
        os.replace(partial, path)
    except OSError:
        logger.warning("could not write %s; after a kill -9 the next start cannot end what this host leaves", path)


class BackgroundContributor(Contributor):
    """Gives each tool call a ``keep_background`` that keeps processes for the call's session."""

    def __init__(self, background: BackgroundProcesses) -> None:
        self._background = background

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        background, session = self._background, ctx.session
        context.keep_background = lambda process: background.keep(session, process)
        return context
