"""Walking a directory tree for `glob`, `grep` and `list_dir` (and the file changes a command made,
`tools.file_changes`), the way the project sees it.

Contract: `walk_files(base, roots)` yields `(absolute_path, relative_posix_path)` for regular
files under `base`, sorted within each directory, never following directory symlinks (so the
walk cannot leave the sandbox or loop); file symlinks are yielded only if their target stays
inside `roots`. Unless `include_ignored` is set it also leaves out what the project ignores:

* version-control internals (`.git`, `.hg`, `.svn`) always;
* what `.gitignore` and `.ignore` files say, with git's semantics (nested files apply below their
  folder and override outer ones, `!` re-includes, a trailing `/` means folders only), including
  the files between the repository's top (the nearest folder above `base` holding `.git`) and
  `base`, and `.git/info/exclude`;
* build and dependency folders that are never source (`DEPENDENCY_DIRECTORIES`: `node_modules`,
  `.venv`, `__pycache__`...) even where no ignore file names them, unless the walk starts inside one.

Pattern matching is `pathspec`'s `GitIgnoreSpec`; this module only decides which files apply where.
An ignore file that is not a regular file (a FIFO named `.gitignore`) is skipped, never opened in a
way that could block the walk.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from regular_files import read_regular_text

if TYPE_CHECKING:  # imported on first use: the host builds its tools at start-up, walks later
    import pathspec

__all__ = ["SKIPPED_DIRECTORIES", "DEPENDENCY_DIRECTORIES", "IgnoreRules", "walk_files"]

SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn"})
"""Version-control internals: never what a search is about, often huge."""

DEPENDENCY_DIRECTORIES = frozenset({
    "node_modules", ".venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",
})
"""Installed dependencies and caches: skipped like ignored files even without an ignore file."""

_IGNORE_FILES = (".gitignore", ".ignore")


def _gitignore(lines: list[str]) -> pathspec.GitIgnoreSpec:
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    lines: list[str] = []
    for name in _IGNORE_FILES:
        try:
            lines.extend(read_regular_text(directory / name, errors="replace").splitlines())
        except OSError:
            continue
    return _gitignore(lines) if lines else None


class IgnoreRules:
    """The ignore files in force for one folder, outermost first, each with the folder it sits in."""

    def __init__(self, layers: tuple[tuple[str, pathspec.GitIgnoreSpec], ...] = ()) -> None:
        self.layers = layers

    @classmethod
    def for_directory(cls, base: Path) -> IgnoreRules:
        """The rules that apply inside ``base``: from the repository's top down to ``base``."""
        base = Path(os.path.abspath(base))
        chain = [base]
        top = None
        for parent in (base, *base.parents):
            if (parent / ".git").exists():
                top = parent
                break
        if top is not None:
            chain = [p for p in (base, *base.parents) if p == top or top in p.parents]
        layers: list[tuple[str, pathspec.GitIgnoreSpec]] = []
        if top is not None:
            try:
                exclude = read_regular_text(top / ".git" / "info" / "exclude", errors="replace").splitlines()
            except OSError:
                exclude = []
            if exclude:
                layers.append((str(top), _gitignore(exclude)))
        rules = cls(tuple(layers))
        for directory in reversed(chain):
            rules = rules.entering(directory)
        return rules

    def entering(self, directory: Path | str) -> IgnoreRules:
        """The rules inside a subfolder (its own ignore files added)."""
        spec = _spec(Path(directory))
        return IgnoreRules((*self.layers, (str(directory), spec))) if spec is not None else self

    def ignored(self, path: str, is_dir: bool) -> bool:
        """Whether ``path`` (absolute) is ignored; the innermost file with an opinion decides."""
        for directory, spec in reversed(self.layers):
            relative = os.path.relpath(path, directory).replace(os.sep, "/")
            if relative.startswith("../"):
                continue
            result = spec.check_file(relative + "/" if is_dir else relative)
            if result.include is not None:
                return result.include
        return False


def _inside(path: str, roots: list[Path]) -> bool:
    real = Path(os.path.realpath(path))
    return any(real == root or real.is_relative_to(root) for root in roots)


def walk_files(base: Path, roots: list[Path], *, include_ignored: bool = False) -> Iterator[tuple[Path, str]]:
    """Regular files under `base` (see module contract)."""
    rules = {os.path.abspath(base): None if include_ignored else IgnoreRules.for_directory(base)}
    for directory, dirnames, filenames in os.walk(base, followlinks=False):
        here = rules.pop(directory, None)
        kept = []
        for name in sorted(dirnames):
            if name in SKIPPED_DIRECTORIES:
                continue
            full = os.path.join(directory, name)
            if here is not None and (name in DEPENDENCY_DIRECTORIES or here.ignored(full, True)):
                continue
            kept.append(name)
            if here is not None:
                rules[full] = here.entering(full)
        dirnames[:] = kept
        for name in sorted(filenames):
            full = os.path.join(directory, name)
            if here is not None and here.ignored(full, False):
                continue
            if os.path.islink(full) and not _inside(full, roots):
                continue
            if not os.path.isfile(full):
                continue
            yield Path(full), os.path.relpath(full, base).replace(os.sep, "/")
