"""AHP 0.7.0 as a projection of the internal 0.9.0 model (``ahp.state``).

VS Code 1.139.1 offers 0.7.0 next to 0.9.0; a host that negotiates 0.7.0 keeps its state in the
0.9.0 model and translates at the edge:

* ``state_down(kind, state)``: the 0.7.0 view of an internal state (snapshots);
* ``action_down(kind, action)``: the 0.7.0 form of an internal action, ``None`` when 0.7.0 has no
  such action type (``ahp.dialects.catalogue``) or the action means nothing in 0.7.0;
* ``notification_down(method, params)``: the 0.7.0 form of a host → client notification;
* ``action_up(kind, action, channel=)`` / ``state_up(kind, state, channel=)``: the internal form
  of what a 0.7.0 peer sends (``None`` for a type 0.7.0 does not have);
* ``reduce(kind, state, action, now, channel=)``: what a 0.7.0 client's own reducers compute,
  built as up → internal reduce → down plus the 0.7.0 behaviours listed below.

Everything is pure; unknown shapes and keys pass through untouched. ``channel`` (the channel URI)
only serves to name an annotation's session, which 0.7.0 never wrote down; without it the session
is ``""``.

Differences, each with its source (VERSIONS.md §3 and the 0.8.0/0.9.0 client changelogs; field
lists from diffing the 0.7.0 merged schema against the 1.0.0 schemas):

Shapes (the projections)
  1. ``SessionState.lifecycle`` ``failed`` is 0.7.0's ``creationFailed`` [0.9.0].
  2. ``TerminalState`` / ``TerminalInfo``: 0.9.0's ``lifecycle`` ``{status: running}`` |
     ``{status: exited, exitCode?}`` is 0.7.0's optional top-level ``exitCode`` (an exit without a
     code is invisible in 0.7.0) [0.9.0].
  3. ``TerminalSessionClaim.chat`` [0.9.0, required]: dropped going down; going up a 0.7.0 claim
     is given the session's default chat (``ahp.state.channels.default_chat_uri``).
  4. ``Turn.error`` [0.7.0] is 0.9.0's final ``ErrorResponsePart`` ``{kind: "error", error,
     resumable?}``; ``chat/error`` carries ``part`` instead of ``error`` [0.9.0]. Going down every
     error part leaves the turn (0.7.0 has no such part) and the last one becomes ``Turn.error``.
  5. ``Annotation.origin`` ``{session, chat?, turnId?}`` [0.9.0] is 0.7.0's ``turnId``, also in
     ``annotations/updated``.
  6. Plugin and MCP-server customizations carry ``enablement`` decisions [0.8.0] where 0.7.0 has a
     boolean ``enabled``: down, ``enabled = enablement[0].enabled ?? true``; up, ``enabled: x``
     becomes ``[{kind: "session", enabled: x}]``. ``session/customizationToggled`` likewise
     carries ``enablement`` for ``enabled``. ``ClientPluginCustomization.childEnablement``
     [0.8.0] is dropped going down. The same holds for the agents' customizations in
     ``RootState.agents`` and ``root/agentsChanged``.
  7. Fields 0.7.0 does not have are dropped going down: ``ChatState.backgroundWork``,
     ``changesets``, ``movable``, ``changes``, ``canvases``; ``ChatSummary.movable``,
     ``changes``; ``SessionState.origin``; ``McpServerStartingState.blocking``
     [0.9.0/1.0.0 schema].
  8. ``ChangesetStatus`` ``recomputing`` [1.0.0 schema] reads as ``computing``.
  9. ``changeset/contentChanged.error`` [0.7.0] is gone in 0.9.0 (failures travel on
     ``changeset/statusChanged``): dropped going up.
  Notifications: ``SessionSummary`` gained ``chats``, ``defaultChat`` and ``origin`` [1.0.0
  schema], dropped going down (``root/sessionAdded``, ``root/sessionSummaryChanged``);
  ``auth/required.resource`` is complete ``ProtectedResourceMetadata`` since 0.8.0 where 0.7.0
  has the resource identifier: down, its ``resource`` field.

Behaviour (``reduce`` adds what 0.7.0 reducers did and 0.9.0 ones no longer do)
  10. 0.7.0 chat reducers stamp ``modifiedAt`` from the clock (``now``) on turn start and end,
      truncation and the three input actions; 0.9.0 derives it from ``startedAt``/``duration``
      [0.9.0: "Chat reducers now derive modifiedAt from turn action data instead of local wall
      clocks"]. A 0.7.0 client's ``modifiedAt`` therefore never agrees with the host's anyway.
  11. 0.7.0 counts every ``inputNeeded`` entry as InputNeeded; since 0.8.0 ``toolClientExecution``
      entries do not ["work delegated to a client, not a user prompt"].
  12. 0.7.0 ``changeset/contentChanged`` replaces ``error`` too (absent clears it).

Actions with no 0.7.0 form
  Every type introduced after 0.7.0 goes down as ``None``. Most change nothing a 0.7.0 client can
  see (their fields are dropped by rule 7, or they are automation channels, which 0.7.0 lacks: no
  state projection either). Those in :data:`RESYNC_AFTER` may change the 0.7.0 view;
  :func:`catch_up` then gives the 0.7.0 actions that make the same change:
  ``session/workingDirectoryReplaced`` as ``workingDirectoryRemoved`` / ``workingDirectorySet``
  from the first directory that moved, ``session/chatsReordered`` as ``chatRemoved`` /
  ``chatAdded`` from the first chat that moved (and ``defaultChatChanged`` when the default chat
  was among them). Two have none: ``chat/turnResume`` (no 0.7.0 action reopens an ended turn;
  this host never accepts a resume, as it writes no resumable error) and ``chat/isReadChanged`` /
  ``chat/isArchivedChanged`` on the chat channel (no 0.7.0 chat action sets a status flag; the
  session catalogue's entry does follow, through ``session/chatUpdated``). For those
  :func:`follow` says ``None``, and the edge gets the client a fresh snapshot (it closes the
  connection; the client's ``reconnect`` is answered with snapshots, ``host.transport.connection``).

Convergence
  For every internal state ``s`` and action ``a`` with ``s' = ahp.state.reduce(kind, s, a)``, a
  0.7.0 client that holds ``state_down(s)`` and applies ``action_down(a)`` with its own reducers
  (:func:`reduce`) ends up holding ``state_down(s')``, apart from a chat's ``modifiedAt`` (rule
  10) — unless :func:`needs_resync` says otherwise: after the actions of :data:`RESYNC_AFTER`, and
  where rules 11 and 12 make the two reducers disagree. The edge sends what :func:`follow` gives
  instead: the actions of :func:`catch_up`, a ``changeset/contentChanged`` that repeats the kept
  error (rule 12), or, where no 0.7.0 action can say the change (rule 11, a chat's own flags), a
  fresh snapshot (a 0.7.0 client cannot be sent one unasked: the edge closes the connection and
  answers its ``reconnect`` with snapshots). So no 0.7.0 mirror is left stale.
  ``tests/ahp/dialects/test_v0_7.py`` checks this law and :func:`follow` on every step of every vector.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp import state as internal
from ahp.dialects.catalogue import known_to, notification_known_to
from ahp.state._js import as_dict, as_list, assign, payload
from ahp.state.channels import default_chat_uri, session_of_annotations
from ahp.state.clock import iso_timestamp
from ahp.state.status import SessionStatus, awaits_user, status_int, with_activity

__all__ = [
    "FOLLOWED_WITH_STATES",
    "KINDS",
    "RESYNC_AFTER",
    "VERSION",
    "action_down",
    "action_up",
    "catch_up",
    "follow",
    "needs_resync",
    "notification_down",
    "reduce",
    "state_down",
    "state_up",
]

VERSION = "0.7.0"

KINDS = frozenset({"root", "session", "chat", "terminal", "changeset", "resourceWatch", "annotations"})
"""The channel kinds 0.7.0 has (no automation channels)."""

RESYNC_AFTER = frozenset(
    {
        "session/chatsReordered",
        "session/workingDirectoryReplaced",
        "chat/turnResume",
        "chat/isReadChanged",
        "chat/isArchivedChanged",
    }
)
"""Internal action types without a 0.7.0 form that change what a 0.7.0 client sees."""

FOLLOWED_WITH_STATES = RESYNC_AFTER | {"session/inputNeededSet", "session/inputNeededRemoved", "changeset/contentChanged"}
"""The internal action types whose 0.7.0 form depends on the states around them (:func:`follow`):
every other type's is :func:`action_down` alone."""

Json = Any


# ── Shape converters (rules 1-8) ────────────────────────────────────────────────────────────────


def _without(value: Json, *keys: str) -> Json:
    if not isinstance(value, dict) or not any(key in value for key in keys):
        return value
    return {key: item for key, item in value.items() if key not in keys}


def _each(values: Json, convert: Callable[[Json], Json]) -> Json:
    return [convert(value) for value in values] if isinstance(values, list) else values


def _claim_down(claim: Json) -> Json:
    return _without(claim, "chat") if as_dict(claim).get("kind") == "session" else claim


def _claim_up(claim: Json) -> Json:
    claim_dict = as_dict(claim)
    if claim_dict.get("kind") != "session" or "chat" in claim_dict or not isinstance(claim_dict.get("session"), str):
        return claim
    return {**claim_dict, "chat": default_chat_uri(claim_dict["session"])}


def _lifecycle_down(terminal: dict[str, Any]) -> dict[str, Any]:
    """``lifecycle`` → ``exitCode`` (rule 2)."""
    lifecycle = as_dict(terminal.get("lifecycle"))
    exit_code = lifecycle.get("exitCode") if lifecycle.get("status") == "exited" else None
    return assign(_without(terminal, "lifecycle"), exitCode=exit_code)


def _lifecycle_up(terminal: dict[str, Any]) -> dict[str, Any]:
    if "lifecycle" in terminal:
        return terminal
    exit_code = terminal.get("exitCode")
    lifecycle = {"status": "running"} if exit_code is None else {"status": "exited", "exitCode": exit_code}
    return {**_without(terminal, "exitCode"), "lifecycle": lifecycle}


def _terminal_down(terminal: Json) -> Json:
    if not isinstance(terminal, dict):
        return terminal
    return assign(_lifecycle_down(terminal), claim=_claim_down(terminal.get("claim")))


def _terminal_up(terminal: Json) -> Json:
    if not isinstance(terminal, dict):
        return terminal
    return assign(_lifecycle_up(terminal), claim=_claim_up(terminal.get("claim")))


def _error_part(error: Json) -> dict[str, Any]:
    return {"kind": "error", "error": error}


def _is_error_part(part: Json) -> bool:
    return as_dict(part).get("kind") == "error"


def _parts_down(holder: Json) -> Json:
    parts = as_dict(holder).get("responseParts")
    if not isinstance(parts, list) or not any(_is_error_part(part) for part in parts):
        return holder
    return {**holder, "responseParts": [part for part in parts if not _is_error_part(part)]}


def _turn_down(turn: Json) -> Json:
    """A turn's last error part becomes ``Turn.error`` (rule 4)."""
    parts = as_list(as_dict(turn).get("responseParts"))
    error = as_dict(parts[-1]).get("error") if parts and _is_error_part(parts[-1]) else None
    converted = _parts_down(turn)
    return assign(converted, error=error) if error is not None else converted


def _turn_up(turn: Json) -> Json:
    error = as_dict(turn).get("error")
    if error is None:
        return turn
    return {**_without(turn, "error"), "responseParts": [*as_list(turn.get("responseParts")), _error_part(error)]}


def _enabled_of(enablement: Json) -> bool:
    first = as_dict(as_list(enablement)[0]) if as_list(enablement) else {}
    enabled = first.get("enabled")
    return True if enabled is None else enabled


def _customization_down(entry: Json) -> Json:
    if not isinstance(entry, dict):
        return entry
    converted = _without(entry, "childEnablement")
    if entry.get("type") in ("plugin", "mcpServer"):
        converted = {**_without(converted, "enablement"), "enabled": _enabled_of(entry.get("enablement"))}
    if entry.get("type") == "mcpServer" and as_dict(entry.get("state")).get("kind") == "starting":
        converted = assign(converted, state=_without(entry["state"], "blocking"))
    if isinstance(entry.get("children"), list):
        converted = {**converted, "children": _each(entry["children"], _customization_down)}
    return converted


def _customization_up(entry: Json) -> Json:
    if not isinstance(entry, dict):
        return entry
    converted = entry
    if entry.get("type") in ("plugin", "mcpServer") and "enabled" in entry:
        decision = [{"kind": "session", "enabled": entry["enabled"]}]
        converted = {**_without(entry, "enabled"), "enablement": decision}
    if isinstance(entry.get("children"), list):
        converted = {**converted, "children": _each(entry["children"], _customization_up)}
    return converted


def _client_down(client: Json) -> Json:
    if not isinstance(client, dict) or not isinstance(client.get("customizations"), list):
        return client
    return {**client, "customizations": _each(client["customizations"], _customization_down)}


def _client_up(client: Json) -> Json:
    if not isinstance(client, dict) or not isinstance(client.get("customizations"), list):
        return client
    return {**client, "customizations": _each(client["customizations"], _customization_up)}


_CHAT_ONLY_0_9 = ("backgroundWork", "changesets", "movable", "changes", "canvases")
_SUMMARY_ONLY_0_9 = ("movable", "changes")


def _agent_down(agent: Json) -> Json:
    return _mapped(agent, "customizations", _customization_down, each=True) if isinstance(agent, dict) else agent


def _agent_up(agent: Json) -> Json:
    return _mapped(agent, "customizations", _customization_up, each=True) if isinstance(agent, dict) else agent


def _root_down(state: dict[str, Any]) -> dict[str, Any]:
    return _mapped(_mapped(state, "terminals", _terminal_down, each=True), "agents", _agent_down, each=True)


def _root_up(state: dict[str, Any], channel: str | None) -> dict[str, Any]:
    return _mapped(_mapped(state, "terminals", _terminal_up, each=True), "agents", _agent_up, each=True)


def _chat_summary_down(summary: Json) -> Json:
    return _without(summary, *_SUMMARY_ONLY_0_9)


def _annotation_down(annotation: Json) -> Json:
    if not isinstance(annotation, dict) or "origin" not in annotation:
        return annotation
    return assign(_without(annotation, "origin"), turnId=as_dict(annotation["origin"]).get("turnId"))


def _origin(turn_id: Json, channel: str | None) -> dict[str, Any]:
    session = session_of_annotations(channel) or ""
    return assign({"session": session}, turnId=turn_id)


def _annotation_up(annotation: Json, channel: str | None) -> Json:
    if not isinstance(annotation, dict) or "origin" in annotation:
        return annotation
    return {**_without(annotation, "turnId"), "origin": _origin(annotation.get("turnId"), channel)}


def _mapped(state: dict[str, Any], key: str, convert: Callable[[Json], Json], *, each: bool = False) -> dict[str, Any]:
    if key not in state:
        return state
    value = _each(state[key], convert) if each else convert(state[key])
    return {**state, key: value}


# ── States ──────────────────────────────────────────────────────────────────────────────────────


def _session_down(state: dict[str, Any]) -> dict[str, Any]:
    down = _without(state, "origin")
    if down.get("lifecycle") == "failed":
        down = {**down, "lifecycle": "creationFailed"}
    down = _mapped(down, "customizations", _customization_down, each=True)
    down = _mapped(down, "activeClients", _client_down, each=True)
    return _mapped(down, "chats", _chat_summary_down, each=True)


def _session_up(state: dict[str, Any], channel: str | None) -> dict[str, Any]:
    up = state
    if up.get("lifecycle") == "creationFailed":
        up = {**up, "lifecycle": "failed"}
    up = _mapped(up, "customizations", _customization_up, each=True)
    return _mapped(up, "activeClients", _client_up, each=True)


def _chat_down(state: dict[str, Any]) -> dict[str, Any]:
    down = _mapped(_without(state, *_CHAT_ONLY_0_9), "turns", _turn_down, each=True)
    return _mapped(down, "activeTurn", _parts_down)


def _chat_up(state: dict[str, Any], channel: str | None) -> dict[str, Any]:
    return _mapped(state, "turns", _turn_up, each=True)


def _changeset_down(state: dict[str, Any]) -> dict[str, Any]:
    return {**state, "status": "computing"} if state.get("status") == "recomputing" else state


def _annotations_down(state: dict[str, Any]) -> dict[str, Any]:
    return _mapped(state, "annotations", _annotation_down, each=True)


def _annotations_up(state: dict[str, Any], channel: str | None) -> dict[str, Any]:
    return _mapped(state, "annotations", lambda annotation: _annotation_up(annotation, channel), each=True)


def _same(state: dict[str, Any], channel: str | None = None) -> dict[str, Any]:
    return state


_STATE_DOWN: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "root": _root_down,
    "session": _session_down,
    "chat": _chat_down,
    "terminal": _terminal_down,
    "changeset": _changeset_down,
    "resourceWatch": _same,
    "annotations": _annotations_down,
}

_STATE_UP: dict[str, Callable[[dict[str, Any], str | None], dict[str, Any]]] = {
    "root": _root_up,
    "session": _session_up,
    "chat": _chat_up,
    "terminal": lambda state, channel: _terminal_up(state),
    "changeset": _same,
    "resourceWatch": _same,
    "annotations": _annotations_up,
}


def state_down(kind: str, state: Json) -> Json:
    """The 0.7.0 view of an internal ``kind`` state; ``None`` for a kind 0.7.0 does not have."""
    convert = _STATE_DOWN.get(kind)
    if convert is None:
        return None
    return convert(state) if isinstance(state, dict) else state


def state_up(kind: str, state: Json, *, channel: str | None = None) -> Json:
    """The internal form of a 0.7.0 ``kind`` state (e.g. a 0.7.0 snapshot or test fixture)."""
    convert = _STATE_UP.get(kind)
    if convert is None or not isinstance(state, dict):
        return state
    return convert(state, channel)


# ── Actions ─────────────────────────────────────────────────────────────────────────────────────


def _error_down(action: dict[str, Any]) -> Json:
    error = as_dict(action.get("part")).get("error")
    return assign(_without(action, "part"), error=error)


def _error_up(action: dict[str, Any], channel: str | None) -> Json:
    error = payload(action, "error")
    return assign(_without(action, "error"), part=_error_part(error) if error is not None else None)


def _toggled_down(action: dict[str, Any]) -> Json:
    return {**_without(action, "enablement"), "enabled": _enabled_of(action.get("enablement"))}


def _toggled_up(action: dict[str, Any], channel: str | None) -> Json:
    if "enabled" not in action:
        return action
    return {**_without(action, "enabled"), "enablement": [{"kind": "session", "enabled": action["enabled"]}]}


def _annotation_updated_down(action: dict[str, Any]) -> Json:
    if "origin" not in action:
        return action
    return assign(_without(action, "origin"), turnId=as_dict(action["origin"]).get("turnId"))


def _annotation_updated_up(action: dict[str, Any], channel: str | None) -> Json:
    if "turnId" not in action:
        return action
    return {**_without(action, "turnId"), "origin": _origin(action.get("turnId"), channel)}


def _status_down(action: dict[str, Any]) -> Json:
    return {**action, "status": "computing"} if action.get("status") == "recomputing" else action


def _chat_updated_down(action: dict[str, Any]) -> Json:
    return _mapped(action, "changes", _chat_summary_down)


def _mcp_state_down(action: dict[str, Any]) -> Json:
    server_state = action.get("state")
    if as_dict(server_state).get("kind") != "starting":
        return action
    return {**action, "state": _without(server_state, "blocking")}


def _response_part_down(action: dict[str, Any]) -> Json:
    return None if _is_error_part(action.get("part")) else action


_ACTION_DOWN: dict[str, Callable[[dict[str, Any]], Json]] = {
    "root/terminalsChanged": lambda action: _mapped(action, "terminals", _terminal_down, each=True),
    "root/agentsChanged": lambda action: _mapped(action, "agents", _agent_down, each=True),
    "session/chatAdded": lambda action: _mapped(action, "summary", _chat_summary_down),
    "session/chatUpdated": _chat_updated_down,
    "session/customizationsChanged": lambda action: _mapped(action, "customizations", _customization_down, each=True),
    "session/customizationUpdated": lambda action: _mapped(action, "customization", _customization_down),
    "session/customizationToggled": _toggled_down,
    "session/activeClientSet": lambda action: _mapped(action, "activeClient", _client_down),
    "session/mcpServerStateChanged": _mcp_state_down,
    "chat/error": _error_down,
    "chat/responsePart": _response_part_down,
    "chat/turnsLoaded": lambda action: _mapped(action, "turns", _turn_down, each=True),
    "terminal/claimed": lambda action: _mapped(action, "claim", _claim_down),
    "changeset/statusChanged": _status_down,
    "annotations/set": lambda action: _mapped(action, "annotation", _annotation_down),
    "annotations/updated": _annotation_updated_down,
}

_ACTION_UP: dict[str, Callable[[dict[str, Any], str | None], Json]] = {
    "root/terminalsChanged": lambda action, channel: _mapped(action, "terminals", _terminal_up, each=True),
    "root/agentsChanged": lambda action, channel: _mapped(action, "agents", _agent_up, each=True),
    "session/customizationsChanged": lambda action, channel: _mapped(
        action, "customizations", _customization_up, each=True
    ),
    "session/customizationUpdated": lambda action, channel: _mapped(action, "customization", _customization_up),
    "session/customizationToggled": _toggled_up,
    "session/activeClientSet": lambda action, channel: _mapped(action, "activeClient", _client_up),
    "chat/error": _error_up,
    "chat/turnsLoaded": lambda action, channel: _mapped(action, "turns", _turn_up, each=True),
    "terminal/claimed": lambda action, channel: _mapped(action, "claim", _claim_up),
    "changeset/contentChanged": lambda action, channel: _without(action, "error"),
    "annotations/set": lambda action, channel: _mapped(
        action, "annotation", lambda annotation: _annotation_up(annotation, channel)
    ),
    "annotations/updated": _annotation_updated_up,
}


def _type_of(action: Json) -> str | None:
    action_type = action.get("type") if isinstance(action, dict) else None
    return action_type if isinstance(action_type, str) else None


def action_down(kind: str, action: Json) -> Json:
    """The 0.7.0 form of an internal action; ``None`` when 0.7.0 has no such action."""
    action_type = _type_of(action)
    if action_type is None or not known_to(VERSION, action_type):
        return None
    convert = _ACTION_DOWN.get(action_type)
    return action if convert is None else convert(action)


def action_up(kind: str, action: Json, *, channel: str | None = None) -> Json:
    """The internal form of an action a 0.7.0 peer sent; ``None`` for a type 0.7.0 does not have."""
    action_type = _type_of(action)
    if action_type is None or not known_to(VERSION, action_type):
        return None
    convert = _ACTION_UP.get(action_type)
    return action if convert is None else convert(action, channel)


_SUMMARY_KEYS_0_9 = ("chats", "defaultChat", "origin")


def notification_down(method: str, params: Json) -> Json:
    """The 0.7.0 form of a host → client notification's params; ``None`` when 0.7.0 has no such
    notification."""
    if not notification_known_to(VERSION, method) or not isinstance(params, dict):
        return None
    if method == "root/sessionAdded":
        return _mapped(params, "summary", lambda summary: _without(summary, *_SUMMARY_KEYS_0_9))
    if method == "root/sessionSummaryChanged":
        return _mapped(params, "changes", lambda changes: _without(changes, *_SUMMARY_KEYS_0_9))
    if method == "auth/required" and isinstance(params.get("resource"), dict):
        return assign(params, resource=params["resource"].get("resource"))
    return params


# ── What a 0.7.0 client computes (rules 10-12) ──────────────────────────────────────────────────

_STAMPS_MODIFIED_AT = frozenset(
    {
        "chat/turnStarted",
        "chat/turnComplete",
        "chat/turnCancelled",
        "chat/error",
        "chat/truncated",
        "chat/inputRequested",
        "chat/inputAnswerChanged",
        "chat/inputCompleted",
    }
)


def _input_needed_status_0_7(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    requests = as_list(after.get("inputNeeded"))
    if requests:
        status = with_activity(before.get("status"), int(SessionStatus.InputNeeded))
    else:
        status = status_int(before.get("status")) & ~(int(SessionStatus.InputNeeded) & ~int(SessionStatus.InProgress))
    return {**after, "status": status}


def _behaviour_0_7(action_type: str, before: dict[str, Any], after: dict[str, Any], action: dict[str, Any], now: int) -> dict[str, Any]:
    if action_type in _STAMPS_MODIFIED_AT:
        return assign(after, modifiedAt=iso_timestamp(now))
    if action_type in ("session/inputNeededSet", "session/inputNeededRemoved"):
        return _input_needed_status_0_7(before, after)
    if action_type == "changeset/contentChanged":
        return assign(after, error=payload(action, "error"))
    return after


def reduce(kind: str, state: Json, action: Json, now: int, *, channel: str | None = None) -> Json:
    """The state a 0.7.0 client's reducers compute from ``state`` (0.7.0 shape) and ``action``
    (0.7.0 shape): ``state`` itself when the action is unknown to 0.7.0 or changes nothing."""
    internal_action = action_up(kind, action, channel=channel)
    if internal_action is None or kind not in KINDS or not isinstance(state, dict):
        return state
    lifted = state_up(kind, state, channel=channel)
    reduced = internal.reduce(kind, lifted, internal_action, now)
    if reduced is lifted:
        return state
    return _behaviour_0_7(_type_of(action) or "", state, state_down(kind, reduced), action, now)


def catch_up(kind: str, before: Json, after: Json, action: Json) -> list[Json] | None:
    """The 0.7.0 actions that take a 0.7.0 mirror of ``before`` (internal) to the view of ``after``
    (internal), for an ``action`` of :data:`RESYNC_AFTER` ("Actions with no 0.7.0 form"); ``[]``
    when the view did not change, ``None`` when no 0.7.0 action can carry the change."""
    action_type = _type_of(action)
    if action_type not in RESYNC_AFTER or not isinstance(before, dict) or not isinstance(after, dict):
        return None
    if kind == "session" and action_type == "session/workingDirectoryReplaced":
        return _resent("workingDirectories", before, after,
                       lambda gone: {"type": "session/workingDirectoryRemoved", "directory": gone},
                       lambda new: {"type": "session/workingDirectorySet", "directory": new})
    if kind == "session" and action_type == "session/chatsReordered":
        shown = as_list(state_down("session", after).get("chats"))
        by_resource = {entry.get("resource"): entry for entry in shown if isinstance(entry, dict)}
        actions = _resent("chats", {"chats": [e.get("resource") for e in as_list(before.get("chats")) if isinstance(e, dict)]},
                          {"chats": list(by_resource)},
                          lambda gone: {"type": "session/chatRemoved", "chat": gone},
                          lambda new: {"type": "session/chatAdded", "summary": by_resource[new]})
        default = after.get("defaultChat")
        if any(a.get("chat") == default for a in actions if a["type"] == "session/chatRemoved"):
            actions.append({"type": "session/defaultChatChanged", "defaultChat": default})
        return actions
    return None if state_down(kind, before) != state_down(kind, after) else []


def follow(kind: str, before: Json, after: Json, action: Json) -> list[Json] | None:
    """The 0.7.0 actions that take a 0.7.0 mirror of ``before`` (internal, the state before
    ``action``) to the 0.7.0 view of ``after`` (the state after it): what :func:`catch_up` gives
    for :data:`RESYNC_AFTER`; for ``changeset/contentChanged`` its 0.7.0 form repeating the error
    the state keeps (a 0.7.0 reducer clears an error the action does not carry, rule 12); else
    :func:`action_down`'s form (``[]``: nothing to send). ``None`` when no 0.7.0 action can make
    the change (a chat's own read or archived flag; a list of only client executions in
    ``inputNeeded``, rule 11): the edge then gets the client a fresh snapshot."""
    action_type = _type_of(action)
    if action_type in RESYNC_AFTER:
        return catch_up(kind, before, after, action)
    shown = action_down(kind, action)
    if shown is None:
        return []
    if action_type == "changeset/contentChanged" and isinstance(after, dict) and "error" in after:
        return [{**shown, "error": after["error"]}]
    if needs_resync(kind, before, action):
        return None
    return [shown]


def _resent(key: str, before: dict[str, Any], after: dict[str, Any], removed: Callable[[Any], Json],
            added: Callable[[Any], Json]) -> list[Json]:
    """Removals of ``before[key]``'s items from the first position where it and ``after[key]``
    differ, then additions of ``after[key]``'s items from there: a list whose reducer removes by
    value and appends what it lacks ends up as ``after[key]``."""
    old, new = as_list(before.get(key)), as_list(after.get(key))
    same = 0
    while same < min(len(old), len(new)) and old[same] == new[same]:
        same += 1
    return [removed(item) for item in old[same:]] + [added(item) for item in new[same:]]


def needs_resync(kind: str, state: Json, action: Json, now: int = 0) -> bool:
    """Whether a 0.7.0 client that mirrors ``state`` (internal) through :func:`action_down` will
    hold something other than the projection of the state after ``action`` (internal), so that the
    edge must send it a fresh snapshot instead (the "Convergence" section above)."""
    action_type = _type_of(action)
    if action_type is None or kind not in KINDS or not isinstance(state, dict):
        return False
    if action_type in RESYNC_AFTER:
        after = internal.reduce(kind, state, action, now)
        return after is not state and state_down(kind, after) != state_down(kind, state)
    if action_type == "changeset/contentChanged":
        return "error" in state  # a 0.7.0 client clears the error with its own reducer (rule 12)
    if action_type in ("session/inputNeededSet", "session/inputNeededRemoved"):
        after = internal.reduce(kind, state, action, now)
        requests = as_list(as_dict(after).get("inputNeeded"))
        # Rule 11: only a list of nothing but client executions reads differently in 0.7.0.
        return after is not state and bool(requests) and not any(awaits_user(request) for request in requests)
    return False
