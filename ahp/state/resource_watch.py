"""Pure reducer for the resource-watch channel (``ResourceWatchState``).

A watch's state ``{root, recursive, excludes?, includes?}`` is fixed when the watch is created.
``resourceWatch/changed`` only carries change notifications to subscribers, so every action,
known or not, returns ``state`` itself.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RESOURCE_WATCH_ACTION_TYPES", "reduce_resource_watch"]

RESOURCE_WATCH_ACTION_TYPES = frozenset({"resourceWatch/changed"})
"""Every action type the resource-watch channel defines."""


def reduce_resource_watch(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """``state`` unchanged: changes are events for subscribers, not state."""
    return state
