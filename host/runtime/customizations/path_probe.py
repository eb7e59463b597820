"""Whether the paths a session's customization refresh asks about exist, with few system calls a turn.

Before every turn the refresh (``SessionTree.refresh_directories``) looks at the same paths of the
working directory again (``.claude/commands``, ``.github/agents``, ``AGENTS.md``, ...), and in most
projects most of them do not exist. ``PathProbe`` remembers, for each absent path, its *witness*:
the nearest folder above it (up to the working directory, the ``root`` given) that exists, with
that folder's inode, modification and change times. While the witness still shows the same three,
the path is still absent and is not looked up again: creating it, or any folder between it and the
witness, adds an entry to the witness (changing both times); replacing the witness, or a folder
above it, gives its path another inode; a change of its permissions changes its change time.

Invariants:

* A path that exists is always looked up again (an edit in place changes the file's own times, not
  its folder's), so what ``Probe.stat`` returns for it is what ``os.stat`` returns now.
* A witness is kept only when both its times were older than ``RACY_NS`` when read (git's "racily
  clean" rule): a file system stamps times with a coarse clock (a few milliseconds on Linux, up to
  2 s on FAT), so an entry added within the same tick as the time read could leave it unchanged.
  Such a path is looked up again at the next round, until its witness is old enough.
* Within one round (``PathProbe.round``: one refresh of one session) each path is looked up at most
  once. The witnesses are shared by every session of the host (most share a working directory),
  at most ``KEPT`` of them (beyond that they are forgotten, and looked up again).

Outside the root nothing is remembered. Pure of asyncio; the clock is injectable for tests.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable

__all__ = ["KEPT", "PathProbe", "Probe", "RACY_NS"]

RACY_NS = 2_000_000_000
"""How old (ns) both times of a witness must be, when read, for it to be trusted."""

KEPT = 20_000
"""Absent paths whose witness ``PathProbe`` keeps at most."""

_Witness = tuple[str, int, int, int]
"""(the witness folder's path, its inode, modification time, change time)."""


class PathProbe:
    """The witnesses of absent paths, shared by the host's sessions (see the module docstring)."""

    def __init__(self, clock: Callable[[], int] = time.time_ns) -> None:
        self._clock = clock
        self._absent: dict[str, _Witness] = {}

    def round(self) -> Probe:
        """A round of lookups (one refresh): each path looked up at most once in it."""
        return Probe(self._absent, self._clock)


class Probe:
    """One round of ``PathProbe`` lookups."""

    __slots__ = ("_absent", "_clock", "_seen")

    def __init__(self, absent: dict[str, _Witness], clock: Callable[[], int]) -> None:
        self._absent = absent
        self._clock = clock
        self._seen: dict[str, os.stat_result | None] = {}

    def stat(self, path: str, root: str) -> os.stat_result | None:
        """``os.stat(path)`` (symlinks followed), None where it fails; ``path`` is absolute, under
        ``root`` (the working directory) or ``root`` itself."""
        if path in self._seen:
            return self._seen[path]
        witness = self._absent.get(path)
        if witness is not None:
            where, inode, modified, changed = witness
            info = self._lookup(where)
            if info is not None and (info.st_ino, info.st_mtime_ns, info.st_ctime_ns) == (inode, modified, changed):
                self._seen[path] = None
                return None
            del self._absent[path]
        info = self._lookup(path)
        if info is None:
            self._witness(path, root)
        return info

    def is_dir(self, path: str, root: str) -> bool:
        info = self.stat(path, root)
        return info is not None and stat.S_ISDIR(info.st_mode)

    def is_file(self, path: str, root: str) -> bool:
        info = self.stat(path, root)
        return info is not None and stat.S_ISREG(info.st_mode)

    def _lookup(self, path: str) -> os.stat_result | None:
        if path in self._seen:
            return self._seen[path]
        try:
            info: os.stat_result | None = os.stat(path)
        except (OSError, ValueError):
            info = None
        self._seen[path] = info
        return info

    def _witness(self, path: str, root: str) -> None:
        """Remember the nearest existing folder above the absent ``path``, if it is under ``root``
        and old enough."""
        if path == root or not path.startswith(root.rstrip(os.sep) + os.sep):
            return
        folder = os.path.dirname(path)
        while True:
            info = self._lookup(folder)
            if info is not None:
                if stat.S_ISDIR(info.st_mode) and max(info.st_mtime_ns, info.st_ctime_ns) < self._clock() - RACY_NS:
                    if len(self._absent) >= KEPT:
                        self._absent.clear()
                    self._absent[path] = (folder, info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
                return
            if folder == root or len(folder) <= len(root):
                return
            folder = os.path.dirname(folder)
