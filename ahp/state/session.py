"""Pure reducer for the session channel (``SessionState``, AHP 0.9.0; 1.0.0 ``state.schema.json``).

Since 0.4.0 a session holds metadata and a catalogue of chats; the conversation lives on the chat
channels (``chat.py``). The session reducer never reads a clock (``now`` is accepted for the common
signature and ignored).

* Lifecycle: ``session/ready`` sets ``ready`` and nothing else (a provisional session may already
  be busy); ``session/creationFailed`` sets ``failed`` [0.9.0; ``creationFailed`` before] and
  ``creationError``.
* Chat catalogue: ``chatAdded`` upserts by ``summary.resource``; ``chatRemoved`` removes one and
  clears ``defaultChat`` when it named that chat; ``chatUpdated`` merges ``changes`` (never
  ``resource``; a null change clears the field) into one; ``chatsReordered`` [0.9.0] takes a complete new order and is ignored
  unless it lists every current chat exactly once; ``defaultChatChanged`` sets or clears the hint
  (whether the chat exists is the host's check, not the reducer's).
* Metadata setters: ``titleChanged``, ``activityChanged``, ``metaChanged``,
  ``serverToolsChanged`` (absent deletes); ``isReadChanged`` / ``isArchivedChanged`` flip one
  status flag; ``changesetsChanged`` sets the catalogue (absent or null removes it);
  ``configChanged`` merges into ``config.values`` (or replaces them), a no-op without ``config``.
* ``activeClientSet`` upserts by ``clientId``; ``activeClientRemoved`` removes one.
* Working directories: ``workingDirectorySet`` appends a URI not yet listed,
  ``workingDirectoryRemoved`` removes one, ``workingDirectoryReplaced`` [0.8.0] swaps one in place
  and de-duplicates (a replacement listed earlier keeps its place and the target goes; one listed
  later moves to the target's place).
* ``inputNeededSet`` upserts by ``request.id``; ``inputNeededRemoved`` removes one (the list is
  absent rather than empty). Both recompute the activity: InputNeeded while any entry other than
  ``toolClientExecution`` remains [0.8.0]; otherwise only bit 4 is cleared.
* Customizations and MCP servers: see ``_customizations``.

Invariants (every handler): inputs are never mutated and untouched sub-objects are shared; an
unknown or malformed action returns ``state`` itself and nothing raises; no ``None`` is written.
The chat-derived part of the session's status is :func:`ahp.state.status.session_status_from_chats`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ahp.state._customizations as _customizations
from ahp.state._dispatch import dispatch
from ahp.state._js import as_dict, as_list, assign, clean, clean_large, payload, truthy
from ahp.state._lists import index_by, remove_at, upsert_by, without_value
from ahp.state.status import SessionStatus, input_needed_status, with_flag

__all__ = ["SESSION_ACTION_TYPES", "reduce_session"]

Handler = Callable[[dict[str, Any], dict[str, Any], int], dict[str, Any]]


def _ready(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return {**state, "lifecycle": "ready"}


def _creation_failed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    return assign(state, lifecycle="failed", creationError=payload(action, "error"))


def _set(field: str, source: str | None = None) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        return assign(state, **{field: payload(action, source or field)})

    return handler


def _server_tools_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    # Every tool's input schema, every session: looked at in C first (``clean_large``).
    return assign(state, serverTools=clean_large(action.get("tools")))


def _flag(flag: SessionStatus, field: str) -> Handler:
    def handler(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
        return {**state, "status": with_flag(state.get("status"), flag, truthy(action.get(field)))}

    return handler


def _chat_added(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    summary = payload(action, "summary")
    if not isinstance(summary, dict):
        return state
    return {**state, "chats": upsert_by(as_list(state.get("chats")), "resource", summary)}


def _chat_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    chats = as_list(state.get("chats"))
    chat = action.get("chat")
    index = index_by(chats, "resource", chat)
    if index < 0:
        return state
    nxt = {**state, "chats": remove_at(chats, index)}
    if state.get("defaultChat") == chat:
        nxt.pop("defaultChat", None)  # the routing hint cannot name a chat that is gone
    return nxt


def _chat_updated(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    chats = as_list(state.get("chats"))
    index = index_by(chats, "resource", action.get("chat"))
    if index < 0:
        return state
    # `resource` is the entry's identity and never changes; a null change clears the field.
    changes = {key: clean(value) for key, value in as_dict(action.get("changes")).items() if key != "resource"}
    updated = list(chats)
    updated[index] = assign(as_dict(chats[index]), **changes)
    return {**state, "chats": updated}


def _chats_reordered(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    order = action.get("chats")
    chats = as_list(state.get("chats"))
    if not isinstance(order, list) or len(order) != len(chats):
        return state
    by_resource = {}
    for chat in chats:
        resource = as_dict(chat).get("resource")
        if not isinstance(resource, str) or resource in by_resource:
            return state  # a catalogue whose entries cannot be told apart cannot be reordered
        by_resource[resource] = chat
    if (
        not all(isinstance(uri, str) for uri in order)
        or set(order) != set(by_resource)
        or len(set(order)) != len(order)
    ):
        return state
    reordered = [by_resource[uri] for uri in order]
    if all(new is old for new, old in zip(reordered, chats)):
        return state
    return {**state, "chats": reordered}


def _changesets_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    changesets = payload(action, "changesets")
    # An empty catalogue is still a catalogue (JS truthiness); absent or null removes the key.
    return assign(state, changesets=changesets if truthy(changesets) else None)


def _config_changed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    config = state.get("config")
    if not truthy(config):
        return state
    config = as_dict(config)
    update = as_dict(payload(action, "config"))
    values = dict(update) if truthy(action.get("replace")) else {**as_dict(config.get("values")), **update}
    return {**state, "config": {**config, "values": values}}


def _active_client_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    client = payload(action, "activeClient")
    if not isinstance(client, dict):
        return state
    return {**state, "activeClients": upsert_by(as_list(state.get("activeClients")), "clientId", client)}


def _active_client_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    clients = as_list(state.get("activeClients"))
    index = index_by(clients, "clientId", action.get("clientId"))
    if index < 0:
        return state
    return {**state, "activeClients": remove_at(clients, index)}


def _working_directory_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    directory = action.get("directory")
    if not isinstance(directory, str):
        return state
    directories = as_list(state.get("workingDirectories"))
    if directory in directories:
        return state
    return {**state, "workingDirectories": [*directories, directory]}


def _working_directory_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    directories, removed = without_value(as_list(state.get("workingDirectories")), action.get("directory"))
    return {**state, "workingDirectories": directories} if removed else state


def _working_directory_replaced(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    directories = as_list(state.get("workingDirectories"))
    target, replacement = action.get("directory"), action.get("replacement")
    if not isinstance(target, str) or not isinstance(replacement, str) or target not in directories:
        return state
    index = directories.index(target)
    if replacement in directories[:index]:
        replaced = remove_at(directories, index)  # an earlier replacement keeps its place
    else:
        replaced = [
            replacement if position == index else directory
            for position, directory in enumerate(directories)
            if position == index or directory != replacement
        ]
    if replaced == directories:
        return state
    return {**state, "workingDirectories": replaced}


def _input_needed_set(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    request = payload(action, "request")
    if not isinstance(request, dict):
        return state
    requests = upsert_by(as_list(state.get("inputNeeded")), "id", request)
    return {**state, "inputNeeded": requests, "status": input_needed_status(state.get("status"), requests)}


def _input_needed_removed(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    requests = as_list(state.get("inputNeeded"))
    index = index_by(requests, "id", action.get("id"))
    if index < 0:
        return state
    remaining = remove_at(requests, index)
    return assign(state, inputNeeded=remaining or None, status=input_needed_status(state.get("status"), remaining))


_HANDLERS: dict[str, Handler] = {
    "session/ready": _ready,
    "session/creationFailed": _creation_failed,
    "session/chatAdded": _chat_added,
    "session/chatRemoved": _chat_removed,
    "session/chatUpdated": _chat_updated,
    "session/chatsReordered": _chats_reordered,
    "session/defaultChatChanged": _set("defaultChat"),
    "session/titleChanged": _set("title"),
    "session/activityChanged": _set("activity"),
    "session/metaChanged": _set("_meta"),
    "session/serverToolsChanged": _server_tools_changed,
    "session/isReadChanged": _flag(SessionStatus.IsRead, "isRead"),
    "session/isArchivedChanged": _flag(SessionStatus.IsArchived, "isArchived"),
    "session/changesetsChanged": _changesets_changed,
    "session/configChanged": _config_changed,
    "session/activeClientSet": _active_client_set,
    "session/activeClientRemoved": _active_client_removed,
    "session/workingDirectorySet": _working_directory_set,
    "session/workingDirectoryRemoved": _working_directory_removed,
    "session/workingDirectoryReplaced": _working_directory_replaced,
    "session/inputNeededSet": _input_needed_set,
    "session/inputNeededRemoved": _input_needed_removed,
    "session/customizationsChanged": _customizations.on_customizations_changed,
    "session/customizationToggled": _customizations.on_customization_toggled,
    "session/customizationUpdated": _customizations.on_customization_updated,
    "session/customizationRemoved": _customizations.on_customization_removed,
    "session/mcpServerStateChanged": _customizations.on_mcp_state_changed,
    "session/mcpServerStartRequested": _customizations.on_mcp_start_requested,
    "session/mcpServerStopRequested": _customizations.on_mcp_stop_requested,
    "session/mcpServerBackgroundRequested": _customizations.on_mcp_background_requested,
}

SESSION_ACTION_TYPES = frozenset(_HANDLERS)
"""Every action type the session reducer understands (the schema's names)."""


def reduce_session(state: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    """The session state after ``action``; ``state`` itself for unknown or malformed actions."""
    return dispatch(_HANDLERS, state, action, now)
