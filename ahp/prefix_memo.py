"""The parts of a sequence that grows at its end, worked out once per element.

``PrefixMemo(parts, held)`` is ``[part for item in items for part in parts(item)]`` for callers that
ask again and again about sequences of unchanging objects, each beginning as one asked about before
and then going its own way: a long session's conversation, sent whole on every model call, for its
token estimate and its provider entries. The parts of the longest prefix shared with the sequence
asked about before (by identity) are reused; ``parts`` is called for the elements after it only.

Contract:

* ``memo(items)`` equals the concatenation of ``parts(item)`` over ``items`` when ``parts`` is a
  pure function of an element and no element was changed in place since ``memo`` saw it (callers
  pass frozen objects); callers must not change the list ``memo`` returns (it is kept and shared).
* The shared prefix is found by identity, element by element, in C: it costs far less than
  ``parts``. One sequence is kept per first element (the latest asked), for the ``held`` first
  elements asked about latest; each is held with its parts, so no ``id`` is reused while kept.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["PrefixMemo"]

T = TypeVar("T")
V = TypeVar("V")


class PrefixMemo(Generic[T, V]):
    """See the module docstring."""

    __slots__ = ("_parts", "_held", "_kept")

    def __init__(self, parts: Callable[[T], Sequence[V]], held: int) -> None:
        self._parts = parts
        self._held = held
        self._kept: dict[int, tuple[tuple[T, ...], list[V], list[int]]] = {}
        """``id(first element) -> (the latest sequence asked that began with it, its parts, and
        for each of its elements the number of parts up to and including it)``."""

    def __call__(self, items: Sequence[T]) -> list[V]:
        if not items:
            return []
        items = tuple(items)
        key = id(items[0])
        kept = self._kept.pop(key, None)
        shared = 0
        flat: list[V] = []
        ends: list[int] = []
        if kept is not None:
            seen, seen_flat, seen_ends = kept
            # The first index where the two differ, or the shorter's length (all in C).
            shared = next(itertools.compress(itertools.count(), map(operator.is_not, items, seen)), min(len(items), len(seen)))
            if shared == len(items) == len(seen):
                self._kept[key] = kept
                return seen_flat
            if shared:
                flat, ends = seen_flat[:seen_ends[shared - 1]], seen_ends[:shared]
        parts = self._parts
        for item in items[shared:]:
            flat += parts(item)
            ends.append(len(flat))
        self._kept[key] = (items, flat, ends)
        if len(self._kept) > self._held:
            del self._kept[next(iter(self._kept))]
        return flat

    def __len__(self) -> int:
        return len(self._kept)
