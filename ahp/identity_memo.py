"""A pure function of an object that is never changed, worked out once per object.

``IdentityMemo(fn, held)`` is ``fn`` for callers that ask it again and again about the same
objects: a long session's completed turns projected for every 0.2.0 summary and check, its
messages turned into a provider's wire entries or a token estimate for every request. Each such
object is never changed once made (a completed turn in a state: reducers build new states and
share what they keep; a frozen message model), so ``fn(obj)`` is kept by the object's identity.

Contract:

* ``memo(obj) == fn(obj)`` for every object that was not changed in place since ``memo`` first saw
  it; callers pass only such objects, and must not change what ``memo`` returns (it is shared).
* The object is held with its value, so its ``id`` cannot be reused by another object while the
  value is kept; the ``held`` objects asked about latest are kept (the oldest let go first).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["IdentityMemo"]

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    """``fn`` kept per object identity; see the module docstring."""

    __slots__ = ("_fn", "_held", "_values")

    def __init__(self, fn: Callable[[K], V], held: int) -> None:
        self._fn = fn
        self._held = held
        self._values: dict[int, tuple[K, V]] = {}
        """``id(obj) -> (obj, fn(obj))``, first asked first."""

    def __call__(self, obj: K) -> V:
        kept = self._values.get(id(obj))
        if kept is not None and kept[0] is obj:
            return kept[1]
        value = self._fn(obj)
        values = self._values
        values[id(obj)] = (obj, value)
        if len(values) > self._held:
            del values[next(iter(values))]
        return value

    def __len__(self) -> int:
        return len(self._values)
