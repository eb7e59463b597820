"""The changed blocks of lines ("hunks") between two versions of a text file, and keeping or
undoing some of them. Pure: no I/O.

``hunks(before, after)`` is None for content that is not UTF-8 text, else the differing blocks in
order, each with its half-open, zero-based line span on both sides (``difflib``; lines keep their
endings, so a missing final newline is a change too). ``touching(hunks, side, first, last)`` picks
the blocks whose lines on ``side`` (``before`` or ``after``) meet the inclusive line span
``first..last``; a block with no lines on that side (lines only added, or only removed) sits at
the line where it would start. ``undo(before, after, chosen)`` is ``after`` with the chosen
blocks put back as in ``before``; ``keep(before, after, chosen)`` is ``before`` with just the chosen
blocks taken from ``after`` (the new baseline once they are kept).
"""

from __future__ import annotations

import difflib
from typing import NamedTuple

__all__ = ["Hunk", "hunks", "keep", "touching", "undo"]


class Hunk(NamedTuple):
    before_start: int
    before_end: int
    after_start: int
    after_end: int


def _lines(data: bytes) -> list[str] | None:
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def hunks(before: bytes, after: bytes) -> list[Hunk] | None:
    old, new = _lines(before), _lines(after)
    if old is None or new is None:
        return None
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    return [Hunk(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def touching(found: list[Hunk], side: str, first: int, last: int) -> list[Hunk]:
    chosen = []
    for hunk in found:
        start, end = (hunk.before_start, hunk.before_end) if side == "before" else (hunk.after_start, hunk.after_end)
        meets = start <= last and end - 1 >= first if end > start else first <= start <= last
        if meets:
            chosen.append(hunk)
    return chosen


def _merge(before: bytes, after: bytes, from_after: list[Hunk]) -> bytes:
    """``before`` and ``after``'s common lines, each block as in ``after`` if it is in
    ``from_after``, else as in ``before``."""
    old, new = _lines(before) or [], _lines(after) or []
    picked = set(from_after)
    out: list[str] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            out += old[i1:i2]
        elif Hunk(i1, i2, j1, j2) in picked:
            out += new[j1:j2]
        else:
            out += old[i1:i2]
    return "".join(out).encode("utf-8")


def undo(before: bytes, after: bytes, chosen: list[Hunk]) -> bytes:
    """``after`` with the chosen blocks as they were in ``before``."""
    return _merge(before, after, [hunk for hunk in hunks(before, after) or [] if hunk not in chosen])


def keep(before: bytes, after: bytes, chosen: list[Hunk]) -> bytes:
    """``before`` with only the chosen blocks as they are in ``after``."""
    return _merge(before, after, chosen)
