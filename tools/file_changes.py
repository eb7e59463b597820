"""Which files a command changed: a snapshot of a directory before, compared with the files after.

Contract: ``DirectorySnapshot.take(base, roots)`` walks ``base`` the way the project sees it
(``tools._walk``: ignored files, dependency folders and VCS internals left out, and any
folder in ``excluded``, such as the host's own data directory) and keeps,
for every file, its size, modification time and inode, plus its bytes while they fit the budgets
(``max_file_bytes`` per file, ``max_total_bytes`` in all). A tree of more than ``max_files`` files
is not tracked (``take`` returns None): walking it around every command would cost more than the
command. ``base`` may also be one file, or a path that does not exist yet (a file or folder a
command is about to create): then the snapshot holds that file, or nothing, and ``changes()``
looks at whatever is there afterwards. ``changes()`` walks again and returns
``(path, before, after)`` for every file created, changed or deleted since (``None`` = absent), in path order. A changed file whose earlier bytes
were not kept (over a budget) is left out: without them it could not be shown or undone.

Both walks do blocking file I/O; callers run them in a thread.

``reporting_changes(ctx, run)`` wraps a tool call whose effects on files the host cannot see
otherwise (an MCP server's tool): a snapshot of the working directory before, the call, then a
``fileEdit`` item (``tools.content.file_edit_content``) added to the result for every file it
created, changed or deleted, so the host records them like the built-in tools' edits. Folders in
``ctx.untracked`` are left out.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from regular_files import read_regular

from ._walk import walk_files
from .content import file_edit_content

if TYPE_CHECKING:
    from .base import ToolContext

__all__ = ["DirectorySnapshot", "reporting_changes"]


@dataclass(frozen=True)
class _Seen:
    size: int
    mtime_ns: int
    inode: int
    data: bytes | None


class DirectorySnapshot:
    def __init__(self, base: Path, roots: tuple[Path, ...], excluded: tuple[Path, ...], files: dict[Path, _Seen],
                 max_files: int, max_file_bytes: int) -> None:
        self.base = base
        self.roots = roots
        self.excluded = excluded
        self.files = files
        self._max_files = max_files
        self._max_file_bytes = max_file_bytes

    @classmethod
    def take(
        cls,
        base: Path,
        roots: tuple[Path, ...] = (),
        *,
        excluded: tuple[Path, ...] = (),
        max_files: int = 10_000,
        max_file_bytes: int = 1_000_000,
        max_total_bytes: int = 32_000_000,
    ) -> DirectorySnapshot | None:
        base = Path(os.path.realpath(base))
        excluded = tuple(Path(os.path.realpath(path)) for path in excluded)
        seen = _scan(base, [base, *roots], excluded, max_files)
        if seen is None:
            return None
        budget = max_total_bytes
        files: dict[Path, _Seen] = {}
        for path, stat in seen.items():
            data = None
            if stat.st_size <= min(max_file_bytes, budget):
                data = _read(path)
                budget -= len(data or b"")
            files[path] = _Seen(stat.st_size, stat.st_mtime_ns, stat.st_ino, data)
        return cls(base, roots, excluded, files, max_files, max_file_bytes)

    def changes(self) -> list[tuple[Path, bytes | None, bytes | None]]:
        now = _scan(self.base, [self.base, *self.roots], self.excluded, self._max_files * 2) or {}
        found: list[tuple[Path, bytes | None, bytes | None]] = []
        for path in sorted(set(self.files) | set(now)):
            old, stat = self.files.get(path), now.get(path)
            if old is not None and stat is not None and (old.size, old.mtime_ns, old.inode) == (stat.st_size, stat.st_mtime_ns, stat.st_ino):
                continue
            if old is not None and old.data is None:
                continue  # changed, but its earlier content was over the budget
            if stat is not None and stat.st_size > self._max_file_bytes:
                continue
            before = old.data if old is not None else None
            after = _read(path) if stat is not None else None
            if before != after:
                found.append((path, before, after))
        return found


def _scan(base: Path, roots: list[Path], excluded: tuple[Path, ...], limit: int) -> dict[Path, os.stat_result] | None:
    seen: dict[Path, os.stat_result] = {}
    if not base.is_dir():
        try:
            stat = base.stat()
        except OSError:
            return seen
        if base.is_file() and not any(base.is_relative_to(folder) for folder in excluded):
            seen[base] = stat
        return seen
    try:
        for path, _ in walk_files(base, roots):
            if any(path.is_relative_to(folder) for folder in excluded):
                continue
            try:
                stat = path.stat()
            except OSError:
                continue
            seen[path] = stat
            if len(seen) > limit:
                return None
    except OSError:
        return None
    return seen


def _read(path: Path) -> bytes | None:
    try:
        return read_regular(path)  # a file swapped for a FIFO since the scan must not block the snapshot
    except OSError:
        return None


async def reporting_changes(ctx: ToolContext, run: Callable[[], Awaitable[dict]]) -> dict:
    """``run()``'s result with a ``fileEdit`` item for every file it changed (see the docstring)."""
    snapshot = None
    if ctx.working_directory.is_dir():
        snapshot = await asyncio.to_thread(DirectorySnapshot.take, ctx.working_directory, ctx.extra_roots, excluded=ctx.untracked)
    result = await run()
    if snapshot is None:
        return result
    changes = await asyncio.to_thread(snapshot.changes)
    edits = [file_edit_content(ctx.content_store, path, before, after) for path, before, after in changes]
    if edits:
        result = {**result, "content": [*(result.get("content") or []), *edits]}
    return result
