"""Chat pending messages: one ``steeringMessage`` and a FIFO of ``queuedMessages``.

Handlers take ``(state, action, now)`` and return the next chat state.

Invariants:

* ``chat/pendingMessageSet`` with kind ``steering`` replaces the steering message; any other kind
  queues (update in place by id, else append). An entry is ``{id, message}``.
* ``queuedMessages`` is absent rather than empty.
* Removing or reordering something that is not there returns ``state`` itself; a reorder puts the
  listed known ids first (duplicates and unknown ids ignored), then the rest in their old order.
* None of these actions touches ``status`` or ``modifiedAt``.
"""

from __future__ import annotations

from typing import Any

from ahp.state._js import as_dict, as_list, assign, payload, truthy, without_none

__all__ = ["on_pending_message_removed", "on_pending_message_set", "on_queued_messages_reordered"]


def on_pending_message_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entry = without_none({"id": payload(action, "id"), "message": payload(action, "message")})
    if action.get("kind") == "steering":
        return {**state, "steeringMessage": entry}
    queued = as_list(state.get("queuedMessages"))
    for index, message in enumerate(queued):
        if as_dict(message).get("id") == entry.get("id"):
            updated = list(queued)
            updated[index] = entry
            return {**state, "queuedMessages": updated}
    return {**state, "queuedMessages": [*queued, entry]}


def on_pending_message_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    message_id = action.get("id")
    if action.get("kind") == "steering":
        steering = state.get("steeringMessage")
        if not truthy(steering) or as_dict(steering).get("id") != message_id:
            return state
        return assign(state, steeringMessage=None)
    queued = state.get("queuedMessages")
    if not truthy(queued):
        return state
    queued = as_list(queued)
    remaining = [message for message in queued if as_dict(message).get("id") != message_id]
    if len(remaining) == len(queued):
        return state
    return assign(state, queuedMessages=remaining or None)


def _hashable(value: object) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def on_queued_messages_reordered(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    queued = state.get("queuedMessages")
    order = action.get("order")
    if not truthy(queued) or not isinstance(order, list):
        return state
    queued = as_list(queued)
    by_id: dict[Any, Any] = {}
    for message in queued:
        key = as_dict(message).get("id")
        if _hashable(key):
            by_id[key] = message  # like a JS Map built from the list: the last duplicate wins
    placed: set[Any] = set()
    reordered = []
    for message_id in order:
        if _hashable(message_id) and message_id in by_id and message_id not in placed:
            placed.add(message_id)
            reordered.append(by_id[message_id])
    for message in queued:
        key = as_dict(message).get("id")
        if not (_hashable(key) and key in placed):
            reordered.append(message)
    return {**state, "queuedMessages": reordered}
