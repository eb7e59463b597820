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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Hashable

from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor
from tools import processes
from tools.base import ToolContext
from tools.pty import PtyProcess

__all__ = ["BackgroundContributor", "BackgroundProcesses", "REAP_INTERVAL"]

logger = logging.getLogger(__name__)

REAP_INTERVAL = 2.0


class BackgroundProcesses:
    def __init__(self, grace: float = 2.0) -> None:
        self.grace = grace
        self._kept: dict[Hashable, list[PtyProcess]] = {}
        self._ending: set[asyncio.Task[None]] = set()
        self._releasing: set[asyncio.Task[None]] = set()
        self._reaper: asyncio.Task[None] | None = None
        self._subreaper = False

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        self._subreaper = processes.become_subreaper()
        if not self._subreaper:
            logger.debug("not a child subreaper here: daemonised jobs are found by their environment alone")
        self._reaper = asyncio.get_running_loop().create_task(self._reap_periodically())

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
        processes.reap_orphans()
        if self._subreaper:
            processes.stop_being_subreaper()
            self._subreaper = False

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


class BackgroundContributor(Contributor):
    """Gives each tool call a ``keep_background`` that keeps processes for the call's session."""

    def __init__(self, background: BackgroundProcesses) -> None:
        self._background = background

    def tool_context(self, ctx: TurnContext, context: ToolContext) -> ToolContext:
        background, session = self._background, ctx.session
        context.keep_background = lambda process: background.keep(session, process)
        return context
