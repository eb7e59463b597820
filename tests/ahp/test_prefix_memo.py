"""The parts of a sequence kept for the sequences asked about before are the parts worked out
whole (ahp.prefix_memo), and only the elements after the shared prefix are worked out again."""

from __future__ import annotations

import sys

import pytest

from ahp import prefix_memo
from ahp.prefix_memo import PrefixMemo, joined


@pytest.fixture(autouse=True, params=["pointers", "scan"])
def _way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test both ways: the shared prefix found by one compare of the tuples' element pointers
    (CPython) and by the plain scan."""
    if request.param == "scan":
        monkeypatch.setattr(prefix_memo, "_pointers", None)


class Item:
    def __init__(self, value: int) -> None:
        self.value = value


def _memo(asked: list[int], held: int = 8) -> PrefixMemo[Item, int]:
    def parts(item: Item) -> list[int]:
        asked.append(item.value)
        return [item.value] * (item.value % 3)  # none, one or two parts an element

    return PrefixMemo(parts, held)


def _whole(items: list[Item]) -> list[int]:
    return [part for item in items for part in [item.value] * (item.value % 3)]


def test_a_growing_sequence_works_out_only_what_was_added() -> None:
    asked: list[int] = []
    memo = _memo(asked)
    items = [Item(n) for n in range(1, 7)]
    assert memo(items[:3]) == _whole(items[:3])
    assert memo(items) == _whole(items)
    assert asked == [1, 2, 3, 4, 5, 6]  # the last three only, the second time
    assert memo(items) == _whole(items) and asked == [1, 2, 3, 4, 5, 6]


def test_a_sequence_that_goes_its_own_way_reuses_the_shared_prefix_only() -> None:
    asked: list[int] = []
    memo = _memo(asked)
    items = [Item(n) for n in range(1, 6)]
    memo(items)
    asked.clear()
    other = [*items[:3], Item(5), Item(7)]  # equal-looking, but other objects after the third
    assert memo(other) == _whole(other)
    assert asked == [5, 7]
    asked.clear()
    assert memo(items[:2]) == _whole(items[:2]) and asked == []  # a shorter one: a prefix of what was kept
    assert memo([Item(4), *items]) == _whole([Item(4), *items])  # another first element: worked out whole
    assert memo([]) == []


def test_it_holds_the_latest_first_elements_only() -> None:
    memo = _memo([], held=2)
    for _ in range(5):
        memo([Item(1)])
    assert len(memo) == 2


def _join(before: tuple[int, ...], first: tuple[int, ...]) -> tuple[int, ...] | None:
    """Parts of the same parity in a row are one part (as Anthropic's user messages in a row are)."""
    return before + first if before[0] % 2 == first[0] % 2 else None


def _joined_parts(item: Item) -> list[tuple[int, ...]]:
    return [(item.value,)] * (item.value % 3)


def test_a_joining_memo_is_the_plain_joined_parts_whatever_it_was_asked_before() -> None:
    # Sequences that grow, are cut back to just after a join, go their own way there, and grow
    # again: the memo must give the part before a join as it was, never the joined one.
    memo = PrefixMemo(_joined_parts, 8, _join)
    items = [Item(n) for n in (1, 3, 4, 7, 5, 2, 8, 11, 13, 1, 4)]
    for end in range(len(items) + 1):
        assert memo(items[:end]) == joined(items[:end], _joined_parts, _join)
    assert joined(items[:5], _joined_parts, _join) == [(1,), (4,), (7, 5), (5,)]  # 3: no part; 5: two, its first joined
    for cut in (2, 4, 3, 8, 1, 5):
        other = [*items[:cut], Item(6), Item(10), *items[cut:]]
        assert memo(other) == joined(other, _joined_parts, _join)
        assert memo(items[:cut]) == joined(items[:cut], _joined_parts, _join)
        assert memo(items) == joined(items, _joined_parts, _join)


def test_joined_changes_no_part_it_was_given() -> None:
    kept = {n: [(n,)] for n in (1, 3, 5)}
    assert joined([Item(1), Item(3), Item(5)], lambda item: kept[item.value], _join) == [(1, 3, 5)]
    assert kept == {1: [(1,)], 3: [(3,)], 5: [(5,)]}


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="the pointers of CPython's tuples")
def test_the_pointer_reader_gives_the_elements_identities_in_order() -> None:
    read = prefix_memo._pointer_reader()
    assert read is not None
    one, two = Item(1), Item(2)
    assert read((one, two)) == b"".join(id(item).to_bytes(tuple.__itemsize__, sys.byteorder) for item in (one, two))
    assert read((one, two)).startswith(read((one,))) and not read((two, one)).startswith(read((one,)))


def test_an_element_replaced_by_an_equal_one_is_worked_out_again() -> None:
    # Found by identity, whichever way: an equal-looking object in the middle is another element.
    asked: list[int] = []
    memo = _memo(asked)
    items = [Item(n) for n in range(1, 6)]
    memo(items)
    asked.clear()
    assert memo([*items[:2], Item(3), *items[3:], Item(7)]) == _whole([*items, Item(7)])
    assert asked == [3, 4, 5, 7]
