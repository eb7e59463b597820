"""Session customizations and MCP servers: a two-level tree of containers and their children.

Handlers take ``(state, action, now)`` and return the next session state.

The tree: top-level entries are containers (``plugin``, ``directory``) or a bare ``mcpServer``;
containers hold leaves in ``children``. Every lookup by ``id`` searches the top level first and
only then the children; a top-level hit never falls through to the children.

Invariants:

* ``customizationToggled`` [0.8.0] carries the complete ``enablement`` decision list. A plugin or
  MCP server stores it (an empty list removes the key: no explicit decision, enabled by default);
  any other entry sets its ``enabled`` flag to ``enablement[0].enabled`` (``true`` when there is
  no decision). A toggle without a list is a no-op.
* ``customizationUpdated`` replaces an entry by id (children included) or appends it;
  ``customizationRemoved`` removes a top-level entry (children go with it), failing that the first
  matching child of every container.
* The MCP actions act only on an entry of type ``mcpServer`` (top level, else a container's child;
  a top-level id hit of another type is a no-op): ``mcpServerStateChanged`` replaces ``state`` and
  ``channel`` (absent deletes), start/stop requests set ``starting`` / ``stopped`` and drop the
  channel, ``mcpServerBackgroundRequested`` [0.9.0] turns ``blocking`` off on a server that is
  ``starting`` with ``blocking: true`` and is a no-op otherwise.
* Acting on an absent list or an unknown id returns ``state`` itself.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp.state._js import as_dict, as_list, assign, clean_large, payload, truthy
from ahp.state._lists import index_by, remove_at

__all__ = [
    "on_customization_removed",
    "on_customization_toggled",
    "on_customization_updated",
    "on_customizations_changed",
    "on_mcp_background_requested",
    "on_mcp_start_requested",
    "on_mcp_state_changed",
    "on_mcp_stop_requested",
]

Update = Callable[[dict[str, Any]], dict[str, Any]]
"""``entry -> entry``: the updated entry, or the same object when nothing applies."""

KEEPS_DECISIONS = frozenset({"plugin", "mcpServer"})
"""Customization types that store their explicit ``enablement`` decisions [0.8.0]."""


def _update_entry(state: dict[str, Any], entry_id: Any, update: Update, *, only_type: str | None = None) -> dict[str, Any]:
    """Apply ``update`` to the entry ``entry_id`` (top level first, else children)."""
    entries = state.get("customizations")
    if not isinstance(entries, list):
        return state
    index = index_by(entries, "id", entry_id)
    if index >= 0:
        entry = entries[index]
        if only_type is not None and entry.get("type") != only_type:
            return state
        updated = update(entry)
        if updated is entry:
            return state
        new_entries = list(entries)
        new_entries[index] = updated
        return {**state, "customizations": new_entries}
    new_entries = list(entries)
    changed = False
    for position, container in enumerate(entries):
        if not isinstance(container, dict) or container.get("type") == "mcpServer":
            continue
        children = container.get("children")
        if not isinstance(children, list):
            continue
        child_index = index_by(children, "id", entry_id)
        if child_index < 0:
            continue
        child = children[child_index]
        if only_type is not None and child.get("type") != only_type:
            continue
        updated = update(child)
        if updated is child:
            continue
        new_children = list(children)
        new_children[child_index] = updated
        new_entries[position] = {**container, "children": new_children}
        changed = True
        if only_type is None:
            break  # a toggle addresses one entry; the MCP actions update every match
    return {**state, "customizations": new_entries} if changed else state


def on_customizations_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, customizations=clean_large(action.get("customizations")))


def apply_enablement(entry: dict[str, Any], enablement: list[Any]) -> dict[str, Any]:
    """``entry`` after a ``customizationToggled`` carrying ``enablement`` [0.8.0]."""
    if entry.get("type") in KEEPS_DECISIONS:
        return assign(entry, enablement=enablement or None)
    enabled = as_dict(enablement[0]).get("enabled") if enablement else None
    return {**entry, "enabled": True if enabled is None else enabled}


def on_customization_toggled(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    enablement = payload(action, "enablement")
    if not isinstance(enablement, list):
        return state
    return _update_entry(state, action.get("id"), lambda entry: apply_enablement(entry, enablement))


def on_customization_updated(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    customization = clean_large(action.get("customization"))  # (a container's every entry, each session)
    if not isinstance(customization, dict):
        return state
    entries = as_list(state.get("customizations"))
    index = index_by(entries, "id", customization.get("id"))
    if index < 0:
        return {**state, "customizations": [*entries, customization]}
    updated = list(entries)
    updated[index] = customization
    return {**state, "customizations": updated}


def on_customization_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    entries = state.get("customizations")
    if not truthy(entries) or not isinstance(entries, list):
        return state
    target = action.get("id")
    index = index_by(entries, "id", target)
    if index >= 0:
        return {**state, "customizations": remove_at(entries, index)}
    changed = False
    updated = []
    for entry in entries:
        children = as_list(as_dict(entry).get("children"))
        child_index = index_by(children, "id", target)
        if child_index >= 0:
            entry = {**entry, "children": remove_at(children, child_index)}
            changed = True
        updated.append(entry)
    return {**state, "customizations": updated} if changed else state


def on_mcp_state_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    new_state, channel = payload(action, "state"), payload(action, "channel")
    return _update_entry(
        state, action.get("id"), lambda entry: assign(entry, state=new_state, channel=channel), only_type="mcpServer"
    )


def _requested(kind: str) -> Update:
    return lambda entry: assign({**entry, "state": {"kind": kind}}, channel=None)


def on_mcp_start_requested(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return _update_entry(state, action.get("id"), _requested("starting"), only_type="mcpServer")


def on_mcp_stop_requested(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return _update_entry(state, action.get("id"), _requested("stopped"), only_type="mcpServer")


def _backgrounded(entry: dict[str, Any]) -> dict[str, Any]:
    server_state = as_dict(entry.get("state"))
    if server_state.get("kind") != "starting" or server_state.get("blocking") is not True:
        return entry
    return {**entry, "state": {**server_state, "blocking": False}}


def on_mcp_background_requested(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return _update_entry(state, action.get("id"), _backgrounded, only_type="mcpServer")
