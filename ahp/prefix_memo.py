"""The parts of a sequence that grows at its end, worked out once per element.

``PrefixMemo(parts, held)`` is ``joined(items, parts)``, that is
``[part for item in items for part in parts(item)]``, for callers that ask again and again about
sequences of unchanging objects, each beginning as one asked about before and then going its own
way: a long session's conversation, sent whole on every model call, for its token estimate and its
provider entries. The parts of the longest prefix shared with the sequence asked about before (by
identity) are reused; ``parts`` is called for the elements after it only.

``PrefixMemo(parts, held, join)`` is ``joined(items, parts, join)``: an element's first part may be
joined to the part before it (``join(before, first)`` gives the one part replacing both, or None
to keep them apart): Anthropic's messages, where two user messages in a row are sent as one.

Contract:

* ``memo(items)`` equals ``joined(items, parts, join)`` when ``parts`` and ``join`` are pure
  functions that change nothing they are given, and no element was changed in place since ``memo``
  saw it (callers pass frozen objects); callers must not change the list ``memo`` returns, nor the
  parts in it (they are kept and shared).
* The shared prefix is found by identity, element by element, in C: it costs far less than
  ``parts``. On CPython the common case, a sequence that begins with the whole one kept, is one
  ``memcmp`` of the two tuples' element pointers (``_pointers``: the one seam that leans on the
  interpreter's internals, checked at import; without it, and to find where two sequences part,
  a scan that compares each pair, some 350 instructions an element). One sequence is kept per first element (the latest asked), for the ``held`` first
  elements asked about latest; each is held with its parts, so no ``id`` is reused while kept.
  A part that a later element was joined to is kept as it was before, for a sequence that shares
  the prefix up to it only.
"""

from __future__ import annotations

import ctypes
import itertools
import operator
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["PrefixMemo", "joined"]

T = TypeVar("T")
V = TypeVar("V")


def joined(items: Iterable[T], parts: Callable[[T], Sequence[V]],
           join: Callable[[V, V], V | None] | None = None) -> list[V]:
    """The parts of ``items`` one after the other, each element's first part joined to the part
    before it where ``join`` gives one (the plain way, which ``PrefixMemo`` equals)."""
    flat: list[V] = []
    for item in items:
        _extend(flat, parts(item), join)
    return flat


def _extend(flat: list[V], new: Sequence[V], join: Callable[[V, V], V | None] | None) -> None:
    if join is not None and flat and new:
        both = join(flat[-1], new[0])
        if both is not None:
            flat[-1] = both
            flat += new[1:]
            return
    flat += new


def _pointer_reader() -> Callable[[tuple[Any, ...]], bytes] | None:
    """``read(t)``: the bytes of tuple ``t``'s element pointers, the identities of its elements in
    a string that compares in C (CPython lays a tuple's pointers out right after its fixed part);
    None where that does not hold (another interpreter, another layout): the plain scan only."""
    if sys.implementation.name != "cpython":
        return None
    try:
        offset, size = tuple.__basicsize__, tuple.__itemsize__
        if size != ctypes.sizeof(ctypes.c_void_p):
            return None
        string_at = ctypes.string_at

        def read(items: tuple[Any, ...]) -> bytes:
            return string_at(id(items) + offset, size * len(items))

        probe = (object(), object(), 1, "x")
        if read(probe) != b"".join(id(item).to_bytes(size, sys.byteorder) for item in probe) or read(()) != b"":
            return None
        return read
    except Exception:  # no ctypes, or not this layout: the plain scan
        return None


_UNKNOWN: Any = object()

_pointers: Any = _UNKNOWN
"""``_pointer_reader()``, made on first use (``ctypes`` is imported then, not with this module);
tests set it to None for the plain scan."""


def _reader() -> Callable[[tuple[Any, ...]], bytes] | None:
    global _pointers
    if _pointers is _UNKNOWN:
        _pointers = _pointer_reader()
    return _pointers  # type: ignore[no-any-return]


class PrefixMemo(Generic[T, V]):
    """See the module docstring."""

    __slots__ = ("_parts", "_held", "_join", "_kept")

    def __init__(self, parts: Callable[[T], Sequence[V]], held: int,
                 join: Callable[[V, V], V | None] | None = None) -> None:
        self._parts = parts
        self._held = held
        self._join = join
        self._kept: dict[int, tuple[tuple[T, ...], list[V], list[int], list[V | None], bytes | None]] = {}
        """``id(first element) -> (the latest sequence asked that began with it, its parts, and
        for each of its elements the number of parts up to and including it, and the last of
        those parts as it was then, and its element pointers (``_pointers``) or None)``."""

    def __call__(self, items: Sequence[T]) -> list[V]:
        if not items:
            return []
        items = tuple(items)
        key = id(items[0])
        kept = self._kept.pop(key, None)
        shared = 0
        flat: list[V] = []
        ends: list[int] = []
        lasts: list[V | None] = []
        read = _pointers if _pointers is not _UNKNOWN else _reader()
        pointers = read(items) if read is not None else None
        if kept is not None:
            seen, seen_flat, seen_ends, seen_lasts, seen_pointers = kept
            if pointers is not None and seen_pointers is not None and pointers.startswith(seen_pointers):
                shared = len(seen)  # every element of the kept one, the same objects (one memcmp)
            else:
                # The first index where the two differ, or the shorter's length (all in C).
                shared = next(itertools.compress(itertools.count(), map(operator.is_not, items, seen)), min(len(items), len(seen)))
            if shared == len(items) == len(seen):
                self._kept[key] = kept
                return seen_flat
            if shared:
                flat, ends, lasts = seen_flat[:seen_ends[shared - 1]], seen_ends[:shared], seen_lasts[:shared]
                if flat:
                    flat[-1] = lasts[-1]  # type: ignore[assignment]  # (None only when flat is empty)
        parts, join = self._parts, self._join
        for item in items[shared:]:
            _extend(flat, parts(item), join)
            ends.append(len(flat))
            lasts.append(flat[-1] if flat else None)
        self._kept[key] = (items, flat, ends, lasts, pointers)
        if len(self._kept) > self._held:
            del self._kept[next(iter(self._kept))]
        return flat

    def __len__(self) -> int:
        return len(self._kept)
