"""Glob matching for rule ``globs`` / ``applyTo`` patterns.

Contract:
- ``**`` matches any number of path segments (including none), ``*`` any run of characters
  within one segment, ``?`` one character, ``[...]`` a character class, ``{a,b}`` alternatives.
- A pattern without ``/`` matches a file's basename at any depth (``*.py`` matches
  ``src/x.py``), as in Cursor and .gitignore; a pattern with ``/`` is anchored at the root
  (the session's working directory). A leading ``./`` or ``/`` is ignored.
- Paths are compared with POSIX separators, case-sensitively. Absolute paths must be given
  with ``root`` so they can be made relative; a path outside ``root`` never matches.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path, PurePosixPath

__all__ = ["glob_matches", "any_glob_matches"]


@lru_cache(maxsize=512)
def _compile(pattern: str) -> re.Pattern[str]:
    pattern = pattern.strip()
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if "/" not in pattern and pattern != "**":
        pattern = "**/" + pattern
    return re.compile(_translate(pattern) + r"\Z", re.DOTALL)


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append(r"(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(r".*")
            i += 2
        elif char == "*":
            out.append(r"[^/]*")
            i += 1
        elif char == "?":
            out.append(r"[^/]")
            i += 1
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                body = pattern[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        elif char == "{":
            end = pattern.find("}", i + 1)
            if end == -1:
                out.append(re.escape(char))
                i += 1
            else:
                options = pattern[i + 1 : end].split(",")
                out.append("(?:" + "|".join(_translate(option) for option in options) + ")")
                i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    return "".join(out)


def _relative(path: str | Path, root: str | Path | None) -> str | None:
    candidate = Path(path)
    if candidate.is_absolute():
        if root is None:
            return None
        try:
            candidate = candidate.relative_to(Path(root))
        except ValueError:
            return None
    text = PurePosixPath(*candidate.parts).as_posix() if candidate.parts else ""
    while text.startswith("./"):
        text = text[2:]
    return text or None


def glob_matches(pattern: str, path: str | Path, root: str | Path | None = None) -> bool:
    """True when ``path`` (relative, or absolute under ``root``) matches ``pattern``."""
    relative = _relative(path, root)
    if relative is None or not pattern.strip():
        return False
    return _compile(pattern).match(relative) is not None


def any_glob_matches(patterns: Iterable[str], path: str | Path, root: str | Path | None = None) -> bool:
    """True when any pattern matches."""
    return any(glob_matches(pattern, path, root) for pattern in patterns)
