"""Shared action dispatch for the channel reducers.

Invariant: ``dispatch`` never raises and never mutates. A non-dict state or action, an unknown
``type`` or a payload whose shape a handler cannot use all yield ``state`` itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["dispatch"]

_State = TypeVar("_State")


def dispatch(handlers: Mapping[str, Callable[..., dict[str, Any]]], state: _State, action: Any,
             *context: Any) -> _State | dict[str, Any]:
    """Run the handler registered for ``action["type"]``; ``state`` itself when there is none."""
    if not isinstance(state, dict) or not isinstance(action, dict):
        return state
    action_type = action.get("type")
    handler = handlers.get(action_type) if isinstance(action_type, str) else None
    if handler is None:
        return state
    try:
        return handler(state, action, *context)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError):
        # A payload of a shape no handler anticipated: the reference reducer would throw and the
        # action would be dropped. Handlers never mutate, so the old state is still intact.
        return state
