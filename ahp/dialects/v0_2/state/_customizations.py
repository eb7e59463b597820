"""Session customizations: top-level containers (plugins, directories) and their children.

Handlers take ``(state, action, now)`` and return the next session state.

Invariants:

* Containers are addressed by their session-unique ``id``; ``customizationToggled`` and
  ``customizationUpdated`` act on top-level entries only.
* ``customizationRemoved`` removes a matching top-level entry (children go with it); failing
  that, the first matching child of every container that has one.
* Toggling or removing on an absent list or an unknown id returns ``state`` itself.
* None of these actions touch ``summary``.
"""

from __future__ import annotations

from typing import Any

from ahp.dialects.v0_2.state._js import as_dict, as_list, assign, payload, truthy

__all__ = [
    "on_customization_removed",
    "on_customization_toggled",
    "on_customization_updated",
    "on_customizations_changed",
]


def _index_of(entries: list[Any], entry_id: object) -> int:
    for index, entry in enumerate(entries):
        if as_dict(entry).get("id") == entry_id:
            return index
    return -1


def on_customizations_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, customizations=payload(action, "customizations"))


def on_customization_toggled(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entries = state.get("customizations")
    if not truthy(entries):
        return state
    entries = as_list(entries)
    index = _index_of(entries, action.get("id"))
    if index < 0:
        return state
    updated = list(entries)
    updated[index] = assign(as_dict(entries[index]), enabled=payload(action, "enabled"))
    return {**state, "customizations": updated}


def on_customization_updated(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    customization = payload(action, "customization")
    if not isinstance(customization, dict):
        return state
    entries = as_list(state.get("customizations"))
    index = _index_of(entries, customization.get("id"))
    if index < 0:
        return {**state, "customizations": [*entries, customization]}
    updated = list(entries)
    updated[index] = customization
    return {**state, "customizations": updated}


def on_customization_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entries = state.get("customizations")
    if not truthy(entries):
        return state
    entries = as_list(entries)
    target = action.get("id")
    index = _index_of(entries, target)
    if index >= 0:
        return {**state, "customizations": entries[:index] + entries[index + 1 :]}
    changed = False
    updated = []
    for entry in entries:
        children = as_list(as_dict(entry).get("children"))
        child_index = _index_of(children, target)
        if child_index >= 0:
            entry = {**entry, "children": children[:child_index] + children[child_index + 1 :]}
            changed = True
        updated.append(entry)
    return {**state, "customizations": updated} if changed else state
