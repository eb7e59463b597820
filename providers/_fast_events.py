"""The one streamed event built per chunk, without pydantic validating what is already known: one seam,
with pydantic's own constructor as its fallback.

Every streamed chunk of every provider becomes one :class:`providers.events.PartDelta`, made by
``StreamAccumulator.delta`` from values it has just checked itself (the part's index and kind, the
vendor's content string). ``PartDelta(index=..., part_kind=..., content=...)`` validates them again:
pydantic's validator is about a fifth of what the provider path spends per chunk
(``benchmarks/provider_instructions.py``). :func:`part_delta` makes the same frozen model the way
``BaseModel.model_construct`` does (``object.__new__`` and the four attributes pydantic keeps on an
instance: ``__dict__``, ``__pydantic_fields_set__``, ``__pydantic_extra__``,
``__pydantic_private__``), which is pydantic's internals, not its documented API.

So the fast way is taken only if it gives what pydantic gives: when this module is imported it
builds one event both ways and compares them (equality, the fields set, the JSON dump and the
``StreamEventAdapter`` round trip); if anything differs (a pydantic upgrade changed how a model
keeps its fields) :func:`part_delta` is the validating constructor itself, logged once. Either
way the caller gets an equal ``PartDelta``; ``tests/providers/test_fast_events.py`` checks both.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .events import PartDelta, PartKind, StreamEventAdapter

__all__ = ["FAST", "part_delta", "plain_part_delta"]

logger = logging.getLogger(__name__)

_new = object.__new__
_set = object.__setattr__


def plain_part_delta(index: int, part_kind: PartKind, content: str) -> PartDelta:
    """The fallback: pydantic's validating constructor."""
    return PartDelta(index=index, part_kind=part_kind, content=content)


def _constructed_part_delta(index: int, part_kind: PartKind, content: str) -> PartDelta:
    event = _new(PartDelta)
    _set(event, "__dict__", {"kind": "part_delta", "index": index, "part_kind": part_kind, "content": content})
    _set(event, "__pydantic_fields_set__", {"index", "part_kind", "content"})  # what validation records
    _set(event, "__pydantic_extra__", None)
    _set(event, "__pydantic_private__", None)
    return event


def _same(fast: Callable[[int, PartKind, str], PartDelta]) -> bool:
    """Whether ``fast`` builds what pydantic builds, checked on a sample event."""
    try:
        sample: tuple[int, PartKind, str] = (3, "tool_call", '{"a": "é"}')
        made, validated = fast(*sample), plain_part_delta(*sample)
        dumped: Any = StreamEventAdapter.validate_json(StreamEventAdapter.dump_json(made))
        return (type(made) is PartDelta and made == validated and dumped == validated
                and made.__pydantic_fields_set__ == validated.__pydantic_fields_set__
                and made.model_dump_json() == validated.model_dump_json()
                and made.__dict__ == validated.__dict__ and list(made.__dict__) == list(validated.__dict__))
    except Exception:  # any failure of the fast way means: do not take it
        return False


FAST = _same(_constructed_part_delta)
"""Whether :func:`part_delta` skips validation (the check above passed)."""

if not FAST:
    logger.warning("pydantic no longer keeps a model's fields as this host expects: streamed events are "
                   "validated again (slower, same results)")

part_delta: Callable[[int, PartKind, str], PartDelta] = _constructed_part_delta if FAST else plain_part_delta
"""``PartDelta(index=index, part_kind=part_kind, content=content)`` for values the caller already
checked (see the module docstring)."""
