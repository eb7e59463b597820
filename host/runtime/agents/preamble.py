"""The environment preamble: where the model is working, put in every provider-backed system prompt.

Coding agents work better when told their surroundings up front, as Claude Code and Codex CLI do.
``EnvironmentPreamble`` is a ``Contributor`` whose system-prompt text reads like::

    <environment>
    Working directory: /home/ana/shop
    Platform: linux (Linux 6.8.0)
    Shell: /bin/bash
    Date: 2026-11-25
    Git branch: main
    Git status (short):
     M app.py
    ?? notes.txt
    Instruction files loaded: AGENTS.md, docs/style.md (imported)
    </environment>

* It is gathered once per session and day, in the first turn's ``user_message`` step (async:
  ``git`` runs as a subprocess with a time limit), and then reused, so the prompt prefix stays the
  same from one model call to the next and providers can cache it.
* Sessions in one directory share the ``git`` facts gathered for it within ``git_reuse_seconds``
  (10 s by default; a gather still running is awaited by all of them): starting ``git`` costs the
  event loop a few milliseconds per process, so a hundred sessions started together in one
  project would otherwise stall every stream on the host for a good part of a second.
* ``git`` is optional: outside a repository, or without ``git`` on PATH, the git lines say so. A
  repository with no commit yet is one (``Git branch: main (no commits yet)``).
  The short status is cut at ``status_lines`` lines with a note saying how many more there are.
* ``instruction_files(session)`` is supplied by the customizations service: the always-on
  instruction files it loaded (each real file once) and the files they imported.
* The date comes from the host's clock (``clock()`` in epoch milliseconds), so tests can fix it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import child_processes
from host.resources.workdirs import session_directory
from host.runtime.agents.base import TurnContext
from host.runtime.agents.environment import Contributor

__all__ = ["EnvironmentPreamble", "render_preamble", "git_facts"]

GIT_TIMEOUT = 3.0
GIT_REUSE_SECONDS = 10.0


async def git_facts(directory: Path, status_lines: int) -> tuple[str | None, list[str]]:
    """``(branch, short status lines)`` of the repository at ``directory``; ``(None, [])`` if none.

    One ``git status --branch`` says both, also for a repository with no commit yet (the branch
    then reads ``main (no commits yet)``) and a detached HEAD (``HEAD (detached)``)."""
    status = await _git(directory, "status", "--short", "--branch", "--untracked-files=normal")
    if status is None:
        return None, []
    head, *rest = status.splitlines() or [""]
    lines = [line for line in rest if line.strip()]
    if len(lines) > status_lines:
        lines = [*lines[:status_lines], f"... and {len(lines) - status_lines} more changed files"]
    return _branch(head), lines


def _branch(head: str) -> str:
    """The branch a ``git status --short --branch`` header line (``## main...origin/main [ahead 1]``) names."""
    head = head.removeprefix("## ").strip()
    for unborn in ("No commits yet on ", "Initial commit on "):  # the second: git before 2.14
        if head.startswith(unborn):
            return f"{head[len(unborn):]} (no commits yet)"
    if head.startswith("HEAD (no branch)"):
        return "HEAD (detached)"
    return head.split("...", 1)[0].split(" [", 1)[0] or "HEAD (detached)"


async def _git(directory: Path, *args: str) -> str | None:
    try:
        process = await child_processes.create_subprocess_exec(
            "git", "-C", str(directory), *args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"},
        )
    except OSError:  # no git on PATH
        return None
    try:
        out, _ = await asyncio.wait_for(process.communicate(), GIT_TIMEOUT)
    except TimeoutError:
        process.kill()
        await process.wait()
        return None
    return out.decode("utf-8", errors="replace") if process.returncode == 0 else None


def render_preamble(
    *,
    directory: Path | None,
    date: dt.date,
    branch: str | None,
    status: Sequence[str],
    instruction_files: Sequence[str],
    shell: str | None,
    system: str,
    release: str,
) -> str:
    """The preamble text for these facts (pure)."""
    lines = ["<environment>"]
    lines.append(f"Working directory: {directory}" if directory is not None else "Working directory: none")
    lines.append(f"Platform: {system.lower()} ({system} {release})".rstrip())
    if shell:
        lines.append(f"Shell: {shell}")
    lines.append(f"Date: {date.isoformat()}")
    if branch is not None:
        lines.append(f"Git branch: {branch}")
        lines.append("Git status (short):" if status else "Git status: clean")
        lines.extend(status)
    else:
        lines.append("Git: not a git repository")
    lines.append("Instruction files loaded: " + (", ".join(instruction_files) if instruction_files else "none"))
    lines.append("</environment>")
    return "\n".join(lines)


class EnvironmentPreamble(Contributor):
    """Adds the ``<environment>`` block to every model request of a session."""

    def __init__(
        self,
        clock: Callable[[], int],
        instruction_files: Callable[[str], Sequence[str]],
        *,
        status_lines: int = 20,
        environ: dict[str, str] | None = None,
        git_reuse_seconds: float = GIT_REUSE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.instruction_files = instruction_files
        self.status_lines = status_lines
        self.environ = os.environ if environ is None else environ
        self.git_reuse_seconds = git_reuse_seconds
        self._monotonic = monotonic
        self._cache: dict[str, tuple[dt.date, str]] = {}
        self._git: dict[Path, tuple[float, asyncio.Future[tuple[str | None, list[str]]]]] = {}

    async def user_message(self, ctx: TurnContext, message: dict[str, Any]) -> dict[str, Any]:
        today = self._today()
        cached = self._cache.get(ctx.session)
        if cached is None or cached[0] != today:
            self._cache[ctx.session] = (today, await self._gather(ctx, today))
        return message

    def system_prompt(self, ctx: TurnContext) -> Sequence[str]:
        cached = self._cache.get(ctx.session)
        return (cached[1],) if cached is not None else ()

    def forget(self, session: str) -> None:
        self._cache.pop(session, None)

    async def _shared_git_facts(self, directory: Path) -> tuple[str | None, list[str]]:
        """``git_facts`` of ``directory``, shared with every session asking within the reuse window."""
        now = self._monotonic()
        entry = self._git.get(directory)
        if entry is None or now - entry[0] > self.git_reuse_seconds:
            for stale in [d for d, (at, _) in self._git.items() if now - at > self.git_reuse_seconds]:
                del self._git[stale]
            entry = (now, asyncio.ensure_future(git_facts(directory, self.status_lines)))
            self._git[directory] = entry
        # shield: one session's turn being cancelled must not cancel the gather the others wait on
        return await asyncio.shield(entry[1])

    def _today(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.clock() / 1000).date()

    async def _gather(self, ctx: TurnContext, today: dt.date) -> str:
        directory = session_directory(ctx.state)
        branch: str | None = None
        status: list[str] = []
        if directory is not None and directory.is_dir():
            branch, status = await self._shared_git_facts(directory)
        return render_preamble(
            directory=directory,
            date=today,
            branch=branch,
            status=status,
            instruction_files=list(self.instruction_files(ctx.session)),
            shell=self.environ.get("SHELL") or self.environ.get("COMSPEC"),
            system=platform.system(),
            release=platform.release(),
        )

