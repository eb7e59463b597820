"""Changed blocks of lines: finding the ones a line range touches, undoing and keeping them."""

from __future__ import annotations

from host.resources.changesets.hunks import Hunk, hunks, keep, touching, undo

BEFORE = b"one\ntwo\nthree\nfour\nfive\n"
AFTER = b"ONE\ntwo\nthree\nfour\nfive\nsix\n"  # line 0 changed, line 5 added


def test_blocks_and_the_ones_a_range_touches() -> None:
    found = hunks(BEFORE, AFTER)
    assert found == [Hunk(0, 1, 0, 1), Hunk(5, 5, 5, 6)]
    assert touching(found, "after", 0, 0) == [Hunk(0, 1, 0, 1)]
    assert touching(found, "after", 5, 5) == [Hunk(5, 5, 5, 6)]
    assert touching(found, "after", 1, 4) == []
    assert touching(found, "before", 0, 4) == [Hunk(0, 1, 0, 1)]
    assert hunks(b"\xff\xfe", AFTER) is None


def test_undoing_or_keeping_one_block_leaves_the_other() -> None:
    [first, added] = hunks(BEFORE, AFTER)
    assert undo(BEFORE, AFTER, [first]) == b"one\ntwo\nthree\nfour\nfive\nsix\n"
    assert undo(BEFORE, AFTER, [added]) == b"ONE\ntwo\nthree\nfour\nfive\n"
    assert keep(BEFORE, AFTER, [first]) == b"ONE\ntwo\nthree\nfour\nfive\n"
    assert keep(BEFORE, AFTER, [first, added]) == AFTER
    assert undo(BEFORE, AFTER, [first, added]) == BEFORE
