"""Walking a directory tree for `glob` and `grep`.

Contract: `walk_files(base)` yields `(absolute_path, relative_posix_path)` for regular
files under `base`, sorted within each directory, never descending into `.git` (or the
other names in `SKIPPED_DIRECTORIES`) and never following directory symlinks, so the walk
cannot leave the sandbox or loop. File symlinks are yielded only if their target stays
inside `roots`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["SKIPPED_DIRECTORIES", "walk_files"]

SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn"})
"""Version-control internals: never what a search is about, often huge."""


def _inside(path: str, roots: list[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == root or real.is_relative_to(root) for root in roots)


def walk_files(base: Path, roots: list[Path]) -> Iterator[tuple[Path, str]]:
    """Regular files under `base` (see module contract)."""
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRECTORIES)
        for name in sorted(filenames):
            full = os.path.join(directory, name)
            if os.path.islink(full) and not _inside(full, roots):
                continue
            if not os.path.isfile(full):
                continue
            yield Path(full), os.path.relpath(full, base).replace(os.sep, "/")
