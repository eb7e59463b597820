"""Internal (0.9.0) actions as a 0.2.0 client sees them: one internal envelope (channel, action)
becomes zero or more 0.2.0 actions on one 0.2.0 channel.

The law (checked by ``tests/ahp/dialects/v0_2/test_actions_down.py``): for an internal state ``S``
and an action ``A`` on one of its channels, with ``S' = reduce(S, A)``,

    fold(0.2.0 reducer, down(S), action_down(A, S, S').actions) == down(S')

whenever the result is ``exact``. ``action_down`` sees the states before and after ``A`` (the
host's store has both), so a value 0.2.0 derives differently (the selected model, the one active
client) is sent as the 0.2.0 action that sets it.

What 0.2.0 clients see, by channel:

* **Default chat** of a session: its actions become the ``session/*`` actions of 0.2.0 on the
  session's 0.2.0 URI (``chat/delta`` -> ``session/delta``, ...), renamed as in ``shapes``.
* **Any other chat** (a second chat, a fork, a side chat, a subagent): nothing at all. A 0.2.0
  client sees a session's default chat and nothing of its other chats: not their turns, not their
  status, not that they exist. (Their input requests are not promoted to the 0.2.0 session's
  status either.)
* **Session channel**: metadata actions keep their 0.2.0 names; the chat catalogue, the session's
  own read flag, working directories beyond the first, ``inputNeeded`` (but for input requests
  asked outside a turn: ``session/inputRequested`` / ``inputCompleted``, see ``states``), and MCP
  server actions' bookkeeping have no 0.2.0 counterpart and send nothing, or the 0.2.0 action that carries the
  visible effect (``customizationUpdated`` for an MCP server's new state).
* **Annotations**, **automations**: nothing (0.2.0 has no such channels).
* **Root, terminal, changeset, resource watch**: the same actions, renamed where the shapes differ.

Actions with no single 0.2.0 counterpart, and what is sent instead:

* The model and agent: 0.9.0 records them on each message and the chat's draft; 0.2.0 has one
  ``summary.model``/``agent`` (see ``states``). Any default-chat action that changes the selection
  0.2.0 shows (``chat/draftChanged``, a turn started with another model, a truncation that drops
  the message that carried it) is followed by ``session/modelChanged`` / ``session/agentChanged``.
* One active client: ``session/activeClientSet``/``Removed`` send ``session/activeClientChanged``
  when the client 0.2.0 shows (the last one) changes, else nothing.
* ``chat/toolCallAuthRequired``/``Resolved`` (0.6.0 MCP authentication): nothing; the call stays
  ``running`` for 0.2.0 and the status with it (``shapes.tool_call_down``, ``states.status_down``).
  When one of them (or a completion or a ``toolCallReady`` a paused call ignores, which 0.2.0 would
  apply to the running call it shows) changes no call but still recomputes the chat's status, as
  every such 0.9.0 action does, 0.2.0 gets a tool-call action that changes no call and recomputes
  its status the same way (``toolCallResultConfirmed`` for a call that is not awaiting result
  confirmation).
* ``_meta`` of a tool-call action other than ``toolCallStart`` replaces the call's in 0.9.0; 0.2.0
  ignores it, except that ``toolCallComplete`` spreads its result over the call, so a completion's
  ``_meta`` rides in its result. A result confirmation's ``_meta`` (who confirmed it, which the host
  records) has nothing after it to ride on: the active turn is said again as it now is
  (``session/truncated`` to the turn before it, ``session/turnStarted``, its parts, its usage and
  open input requests), then the status recomputed and the read flag set back.
* ``chat/turnResume`` (0.9.0 resumable errors): the errored turn is replayed as 0.2.0 can say it:
  ``session/truncated`` to the turn before it, ``session/turnStarted``, its visible parts as
  ``session/responsePart``\\ s, its usage and open input requests.
* ``chat/turnStarted`` over a turn still active: 0.9.0 drops that turn's open input requests with
  it, 0.2.0 keeps them; each is first closed with ``session/inputCompleted`` ``cancel``.
* ``changeset/contentChanged``: ``changeset/cleared``, one ``changeset/fileSet`` per file, and
  ``changeset/operationsChanged`` when it carries operations.
* A customization change 0.2.0 has no action for (a child toggled, an MCP server's state):
  ``session/customizationUpdated`` with the whole top-level entry.

When no 0.2.0 action can carry what changed, the result is not ``exact`` and ``stale`` says why:
the 0.2.0 client's mirror now differs from a fresh snapshot of the session (only a resubscribe or a
reconnect answered with snapshots brings it back in step). The cases: the default chat changed or
was removed; older turns were loaded into the default chat (0.2.0 clients page with
``fetchTurns``); the session's first working directory changed; a tool-call action other than a
completion or a result confirmation (unless the chat's state holds no finished turn to say the
turn again after) replaced the call's ``_meta``; ``toolCallReady`` updated a call that was already pending
confirmation (0.2.0 ignores that); calls sharing one id were re-readied to different inputs, or one
of them while another, paused for authentication, was not (0.2.0 re-readies that one too); a
``toolCallDelta`` without content changed the message of a call with no partial input yet (0.2.0
now shows an empty one); an open input-request part arrived through ``chat/responsePart`` (0.2.0
would also set the status), or a malformed error part through ``chat/error``; several open input
requests shared the id ``chat/inputCompleted`` answered (0.2.0 removes them all); of the input
requests asked outside a turn: the last one went away while the chat shows an activity other than
the Idle 0.2.0 recomputes, one was replaced by a request without the answers it had (0.2.0 keeps
them), or one was answered (0.2.0 drops it at once, the host's ``session/inputNeededRemoved`` later).

Not a matter of ``exact``: ``summary.modifiedAt``. 0.9.0 moves it only when a turn starts or
ends, to the times the turn's actions carry; a 0.2.0 replica stamps its own clock then, and also at
truncation, title/model/agent/config changes and input actions (PROTOCOL.md §7: "each replica's
own clock"). A fresh snapshot shows the chat's ``modifiedAt``.

Everything here is pure; nothing raises on malformed actions or states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ahp.dialects.v0_2 import shapes
from ahp.dialects.v0_2.states import (
    ACTIVITY_MASK,
    InternalSession,
    outside_input_requests,
    selection_of,
    session_down,
    status_down,
)
from ahp.dialects.v0_2.uris import v02_session_uri

__all__ = [
    "Down",
    "action_down",
    "chat_action_down",
    "changeset_action_down",
    "resource_watch_action_down",
    "root_action_down",
    "session_action_down",
    "terminal_action_down",
]


@dataclass(frozen=True)
class Down:
    """What one internal action becomes for a 0.2.0 client."""

    channel: str | None = None
    """The 0.2.0 channel of ``actions``; ``None`` when nothing is visible."""
    actions: tuple[dict[str, Any], ...] = ()
    """The 0.2.0 actions, in order (each becomes one ``action`` envelope)."""
    stale: str | None = None
    """``None`` when the actions carry the whole visible change; else why they cannot."""

    @property
    def exact(self) -> bool:
        return self.stale is None


NOTHING = Down()


def _pick(action: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: action[key] for key in keys if key in action}


def _renamed(action: dict[str, Any], new_type: str, *keys: str) -> dict[str, Any]:
    return {"type": new_type, **_pick(action, *keys)}


# --- root, terminal, changeset, resource watch ----------------------------------------------------


def root_action_down(action: Any) -> Down:
    """A root action for 0.2.0: terminals renamed, everything else as it is."""
    if not isinstance(action, dict):
        return NOTHING
    if action.get("type") == "root/terminalsChanged" and isinstance(action.get("terminals"), list):
        terminals = [shapes.terminal_info_down(info, v02_session_uri) for info in action["terminals"]]
        return Down("ahp-root://", ({**action, "terminals": terminals},))
    if action.get("type") == "root/agentsChanged" and isinstance(action.get("agents"), list):
        return Down("ahp-root://", ({**action, "agents": shapes.agents_down(action["agents"])},))
    return Down("ahp-root://", (action,))


def terminal_action_down(channel: str, action: Any) -> Down:
    """A terminal action for 0.2.0: a session claim without its chat, all else as it is."""
    if not isinstance(action, dict):
        return NOTHING
    if action.get("type") == "terminal/claimed" and "claim" in action:
        return Down(channel, ({**action, "claim": shapes.claim_down(action["claim"], v02_session_uri)},))
    return Down(channel, (action,))


def changeset_action_down(channel: str, action: Any) -> Down:
    """A changeset action for 0.2.0 (review flags and operation progress are 0.9.0's alone)."""
    if not isinstance(action, dict):
        return NOTHING
    kind = action.get("type")
    if kind in ("changeset/filesReviewChanged", "changeset/operationStatusChanged"):
        return Down(channel)
    if kind == "changeset/operationsChanged":
        return Down(channel, ({**action, "operations": _operations_down(action.get("operations"))},))
    if kind == "changeset/statusChanged":
        return Down(channel, ({**action, "status": shapes.changeset_status_down(action.get("status"))},))
    if kind == "changeset/fileSet":
        return Down(channel, ({**action, "file": _file_down(action.get("file"))},))
    if kind == "changeset/contentChanged":
        files = action.get("files")
        actions: list[dict[str, Any]] = [{"type": "changeset/cleared"}]
        if isinstance(files, list):
            actions += [{"type": "changeset/fileSet", "file": _file_down(file)} for file in files]
        if "operations" in action and action["operations"] is not None:
            actions.append({"type": "changeset/operationsChanged", "operations": _operations_down(action["operations"])})
        return Down(channel, tuple(actions))
    return Down(channel, (action,))


def _file_down(file: Any) -> Any:
    return {k: v for k, v in file.items() if k != "reviewed"} if isinstance(file, dict) else file


def _operations_down(operations: Any) -> Any:
    if not isinstance(operations, list):
        return operations
    return [
        {k: v for k, v in operation.items() if k not in ("status", "error")} if isinstance(operation, dict) else operation
        for operation in operations
    ]


def resource_watch_action_down(channel: str, action: Any) -> Down:
    return Down(channel, (action,)) if isinstance(action, dict) else NOTHING


# --- session channel ------------------------------------------------------------------------------

_SESSION_PASS = {
    "session/ready": (),
    "session/creationFailed": ("error",),
    "session/titleChanged": ("title",),
    "session/activityChanged": ("activity",),
    "session/metaChanged": ("_meta",),
    "session/serverToolsChanged": ("tools",),
    "session/configChanged": ("config", "replace"),
    "session/isArchivedChanged": ("isArchived",),
    "session/customizationRemoved": ("id",),
}
"""Session actions whose 0.2.0 form has the same type and these fields."""

_SESSION_INVISIBLE = frozenset(
    {
        "session/chatAdded",
        "session/chatUpdated",
        "session/chatsReordered",
        "session/isReadChanged",
    }
)
"""Session actions whose effect 0.2.0 does not show."""

_CUSTOMIZATION_DIFFED = frozenset(
    {
        "session/customizationToggled",
        "session/mcpServerStateChanged",
        "session/mcpServerStartRequested",
        "session/mcpServerStopRequested",
        "session/mcpServerBackgroundRequested",
    }
)


def session_action_down(action: Any, before: InternalSession, after: InternalSession) -> Down:
    """A session-channel action for 0.2.0; ``before``/``after`` are the session around it."""
    channel = v02_session_uri(before.uri)
    if channel is None or not isinstance(action, dict):
        return NOTHING
    kind = action.get("type")
    if before.default_chat_uri != after.default_chat_uri:
        if session_down(before) == session_down(after):
            return Down(channel)
        return Down(channel, stale="the session's default chat changed: 0.2.0 shows another conversation now")
    if kind == "session/isReadChanged" and before.default_chat is None:
        return Down(channel, ({"type": kind, **_pick(action, "isRead")},))  # no conversation: the session's own flag shows
    if kind in _SESSION_PASS:
        return Down(channel, (_renamed(action, kind, *_SESSION_PASS[kind]),))
    if kind in _SESSION_INVISIBLE:
        return Down(channel)
    if kind in ("session/inputNeededSet", "session/inputNeededRemoved"):
        # Only input requests asked outside a turn show (``states.outside_input_requests``).
        return Down(channel, *_outside_changes(before, after))
    if kind == "session/changesetsChanged":
        changesets = shapes.changesets_down(action.get("changesets"))
        return Down(channel, ({"type": kind, **({"changesets": changesets} if changesets is not None else {})},))
    if kind in ("session/activeClientSet", "session/activeClientRemoved"):
        shown_before = shapes.active_client_down(before.state.get("activeClients"))
        shown_after = shapes.active_client_down(after.state.get("activeClients"))
        if shown_before == shown_after:
            return Down(channel)
        return Down(channel, ({"type": "session/activeClientChanged", "activeClient": shown_after},))
    if kind in ("session/workingDirectorySet", "session/workingDirectoryRemoved", "session/workingDirectoryReplaced"):
        if _first_directory(before.state) != _first_directory(after.state):
            return Down(channel, stale="the session's first working directory changed (0.2.0 has no action for it)")
        return Down(channel)
    if kind == "session/customizationsChanged":
        return Down(channel, ({"type": kind, **_present("customizations", shapes.customizations_down(action.get("customizations")))},))
    if kind == "session/customizationUpdated":
        return Down(channel, ({"type": kind, "customization": shapes.customization_down(action.get("customization"))},))
    if kind in _CUSTOMIZATION_DIFFED:
        return Down(channel, _customization_changes(before.state.get("customizations"), after.state.get("customizations")))
    return Down(channel)


def _present(key: str, value: Any) -> dict[str, Any]:
    return {} if value is None else {key: value}


def _first_directory(state: dict[str, Any]) -> Any:
    directories = state.get("workingDirectories")
    return directories[0] if isinstance(directories, list) and directories else None


def _customization_changes(before: Any, after: Any) -> tuple[dict[str, Any], ...]:
    """0.2.0 actions turning the projected customizations ``before`` into ``after`` when only
    existing top-level entries changed: a toggle where only ``enabled`` moved, else the whole entry."""
    shown_before, shown_after = shapes.customizations_down(before), shapes.customizations_down(after)
    if shown_before == shown_after:
        return ()
    if not isinstance(shown_before, list) or not isinstance(shown_after, list) or len(shown_before) != len(shown_after):
        return ({"type": "session/customizationsChanged", **_present("customizations", shown_after)},)
    ids = [entry.get("id") if isinstance(entry, dict) else None for entry in shown_before]
    after_ids = [entry.get("id") if isinstance(entry, dict) else None for entry in shown_after]
    if ids != after_ids or None in ids or len(set(map(repr, ids))) != len(ids):
        return ({"type": "session/customizationsChanged", "customizations": shown_after},)
    actions: list[dict[str, Any]] = []
    for old, new in zip(shown_before, shown_after):
        if old == new:
            continue
        only_enabled = {k: v for k, v in old.items() if k != "enabled"} == {k: v for k, v in new.items() if k != "enabled"}
        if only_enabled and "enabled" in new:
            actions.append({"type": "session/customizationToggled", "id": new["id"], "enabled": new["enabled"]})
        else:
            actions.append({"type": "session/customizationUpdated", "customization": new})
    return tuple(actions)


# --- chat channels --------------------------------------------------------------------------------

_CHAT_PASS = {
    "chat/delta": ("session/delta", ("turnId", "partId", "content")),
    "chat/reasoning": ("session/reasoning", ("turnId", "partId", "content")),
    "chat/usage": ("session/usage", ("turnId", "usage")),
    "chat/turnComplete": ("session/turnComplete", ("turnId",)),
    "chat/turnCancelled": ("session/turnCancelled", ("turnId",)),
    "chat/truncated": ("session/truncated", ("turnId",)),
    "chat/isReadChanged": ("session/isReadChanged", ("isRead",)),
    "chat/pendingMessageRemoved": ("session/pendingMessageRemoved", ("kind", "id")),
    "chat/queuedMessagesReordered": ("session/queuedMessagesReordered", ("order",)),
    "chat/inputRequested": ("session/inputRequested", ("request",)),
    "chat/inputAnswerChanged": ("session/inputAnswerChanged", ("requestId", "questionId", "answer")),
    "chat/inputCompleted": ("session/inputCompleted", ("requestId", "response", "answers")),
    "chat/toolCallResultConfirmed": ("session/toolCallResultConfirmed", ("turnId", "toolCallId", "approved")),
}
"""Chat actions whose 0.2.0 form is a renamed type with these fields."""

_TOOL_CALL_ACTIONS = frozenset(
    {
        "chat/toolCallDelta",
        "chat/toolCallReady",
        "chat/toolCallConfirmed",
        "chat/toolCallComplete",
        "chat/toolCallResultConfirmed",
        "chat/toolCallContentChanged",
        "chat/toolCallAuthRequired",
        "chat/toolCallAuthResolved",
    }
)


def _calls(chat: dict[str, Any] | None, call_id: Any) -> list[dict[str, Any]]:
    """The tool calls with id ``call_id`` in the chat's active turn."""
    active = chat.get("activeTurn") if isinstance(chat, dict) else None
    parts = active.get("responseParts") if isinstance(active, dict) else None
    if not isinstance(parts, list):
        return []
    return [
        part["toolCall"]
        for part in parts
        if isinstance(part, dict) and part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict)
        and part["toolCall"].get("toolCallId") == call_id
    ]


def chat_action_down(channel: str, action: Any, before: InternalSession, after: InternalSession) -> Down:
    """A chat-channel action for 0.2.0: ``session/*`` actions for the session's default chat,
    nothing for any other chat."""
    target = v02_session_uri(before.uri)
    if (
        target is None
        or not isinstance(action, dict)
        or channel != before.default_chat_uri
        or channel != after.default_chat_uri
    ):
        return NOTHING
    old, new = before.default_chat, after.default_chat
    actions, stale = _chat_actions(action, old, new)
    actions = list(actions) + _selection_changes(old, new)
    if outside_input_requests(before) != outside_input_requests(after):
        # A turn started or ended with requests open that were asked outside a turn: 0.2.0 keeps
        # requests across a turn's start and drops them all at its end, 0.9.0 shows them only
        # between turns.
        changes, outside_stale = _outside_changes(before, after)
        started = isinstance((new or {}).get("activeTurn"), dict)
        actions = [*changes, *actions] if started else [*actions, *changes]
        stale = stale or outside_stale
    elif _truncates_0_2_0(action, old) and outside_input_requests(after):
        # 0.2.0's ``session/truncated`` drops every input request, also those asked outside a turn
        # that 0.9.0 keeps (they are not the truncated turns'): they are asked again.
        changes, outside_stale = _outside_changes(before, after, shown=False)
        actions = [*actions, *changes]
        stale = stale or outside_stale
    elif _answers_outside(action, before):
        stale = stale or ("an input request asked outside a turn was answered: 0.2.0 drops it now, the host with "
                          "the session/inputNeededRemoved that follows")
    return Down(target, tuple(actions), stale)


def _answers_outside(action: dict[str, Any], session: InternalSession) -> bool:
    """Whether a chat action answers an input request asked outside a turn."""
    return action.get("type") == "chat/inputCompleted" and any(
        request.get("id") == action.get("requestId") for request in outside_input_requests(session))


def _truncates_0_2_0(action: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Whether ``action`` is a ``chat/truncated`` that 0.2.0's reducer applies (no turn id, or one
    of the chat's turns: an unknown one leaves a 0.2.0 session untouched)."""
    if action.get("type") != "chat/truncated":
        return False
    turn_id = action.get("turnId")
    return turn_id is None or any(isinstance(turn, dict) and turn.get("id") == turn_id for turn in (old or {}).get("turns") or ())


def _outside_changes(before: InternalSession, after: InternalSession, *,
                     shown: bool = True) -> tuple[tuple[dict[str, Any], ...], str | None]:
    """0.2.0 actions that turn the requests asked outside a turn shown ``before`` into ``after``:
    ``inputCompleted`` (``cancel``) for those gone, ``inputRequested`` for new or changed ones,
    then ``isReadChanged`` to undo the read flag ``inputRequested`` clears (0.9.0 does not).
    ``shown=False``: the 0.2.0 client holds none of them any more (a truncation dropped them)."""
    shown_before = {request["id"]: request for request in outside_input_requests(before)} if shown else {}
    shown_after = {request["id"]: request for request in outside_input_requests(after)}
    actions: list[dict[str, Any]] = [
        {"type": "session/inputCompleted", "requestId": request_id, "response": "cancel"}
        for request_id in shown_before if request_id not in shown_after
    ]
    requested = [request for request_id, request in shown_after.items() if shown_before.get(request_id) != request]
    actions += [{"type": "session/inputRequested", "request": request} for request in requested]
    stale = None
    status = status_down(after.state, after.default_chat, bool(shown_after))
    if requested and isinstance(status, int) and not isinstance(status, bool) and status & 32:
        actions.append({"type": "session/isReadChanged", "isRead": True})
    if shown_before and not shown_after and isinstance(status, int) and status & ACTIVITY_MASK not in (1, 8, 24):
        stale = "the last request asked outside a turn went away: 0.2.0 recomputes Idle, the chat shows another activity"
    if any(request_id in shown_before and shown_before[request_id].get("answers") and not request.get("answers")
           for request_id, request in shown_after.items()):
        stale = stale or "a request asked outside a turn was replaced without its answers (0.2.0 keeps them)"
    return tuple(actions), stale


def _selection_changes(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[dict[str, Any]]:
    changes = []
    for key, kind in (("model", "session/modelChanged"), ("agent", "session/agentChanged")):
        value = selection_of(new, key)
        if selection_of(old, key) != value:
            changes.append({"type": kind, **_present(key, value)})
    return changes


def _chat_actions(action: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any] | None) -> tuple[list[dict[str, Any]], str | None]:
    kind = action.get("type")
    if kind in _TOOL_CALL_ACTIONS:
        return _tool_call_actions(action, old, new)
    if kind in _CHAT_PASS:
        new_type, keys = _CHAT_PASS[kind]
        stale = None
        if kind == "chat/inputRequested" and not isinstance((old or {}).get("activeTurn"), dict):
            return [], None  # 0.9.0 ignores an input request outside a turn
        if kind == "chat/inputAnswerChanged" and new is old:
            return [], None  # an answer to no open request of the turn: 0.9.0 ignores it, 0.2.0 must too
        if kind == "chat/inputCompleted":
            same_id = [r for r in shapes.open_input_requests((old or {}).get("activeTurn")) if isinstance(r, dict) and r.get("id") == action.get("requestId")]
            if len(same_id) > 1:
                stale = "several open input requests share the completed id (0.2.0 removes them all)"
        return [_renamed(action, new_type, *keys)], stale
    if kind == "chat/turnStarted":
        out = _renamed(action, "session/turnStarted", "turnId", "queuedMessageId")
        if "message" in action:
            out["userMessage"] = shapes.user_message_down(action["message"])
        # A turn started over an active one drops that turn's open input requests in 0.9.0 (they
        # live in it); 0.2.0 would keep them, so they are closed first, as abandoned.
        abandoned = [
            {"type": "session/inputCompleted", "requestId": request.get("id"), "response": "cancel"}
            for request in shapes.open_input_requests((old or {}).get("activeTurn"))
            if isinstance(request, dict)
        ]
        return [*abandoned, out], None
    if kind == "chat/responsePart":
        part = action.get("part")
        if isinstance(part, dict) and part.get("kind") in shapes.HIDDEN_PART_KINDS:
            # 0.9.0 refuses error parts here; an answered input request stays hidden; an open one
            # would be a 0.2.0 input request, without the status and read flag 0.2.0 would set.
            opened = part.get("kind") == "inputRequest" and part.get("response") is None and old != new
            return [], ("an input-request part arrived as a plain response part" if opened else None)
        return [{"type": "session/responsePart", **_pick(action, "turnId"), "part": shapes.part_down(part)}], None
    if kind == "chat/toolCallStart":
        out = _renamed(action, "session/toolCallStart", "turnId", "toolCallId", "toolName", "displayName", "_meta")
        client_id = shapes.contributor_to_tool_client_id(action.get("contributor"))
        if client_id is not None:
            out["toolClientId"] = client_id
        return [out], None
    if kind == "chat/error":
        part = action.get("part")
        out = _renamed(action, "session/error", "turnId")
        if isinstance(part, dict) and part.get("error") is not None:
            out["error"] = part["error"]
        malformed = isinstance(part, dict) and part.get("kind") != "error" and old != new
        return [out], ("a turn ended with an error part of another kind" if malformed else None)
    if kind == "chat/pendingMessageSet":
        out = _renamed(action, "session/pendingMessageSet", "kind", "id")
        if "message" in action:
            out["userMessage"] = shapes.user_message_down(action["message"])
        return [out], None
    if kind == "chat/turnResume":
        return _resumed(old, new)
    if kind == "chat/turnsLoaded":
        changed = (old or {}).get("turns") != (new or {}).get("turns")
        return [], ("older turns were loaded (0.2.0 clients page with fetchTurns)" if changed else None)
    # draftChanged only moves the selection (handled by the caller); activity, working
    # directories, background work, chat changesets, movable and the chat's archive flag are
    # chat-level facts 0.2.0 does not show.
    return [], None


def _tool_call_actions(action: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any] | None) -> tuple[list[dict[str, Any]], str | None]:
    kind = action.get("type")
    call_id = action.get("toolCallId")
    before_calls, after_calls = _calls(old, call_id), _calls(new, call_id)
    pairs = list(zip(before_calls, after_calls)) if len(before_calls) == len(after_calls) else []
    before_call = before_calls[0] if before_calls else {}
    status = before_call.get("status")
    stale = None
    if any(b.get("_meta") != a.get("_meta") for b, a in pairs):
        stale = "a tool-call action replaced the call's _meta (0.2.0 takes _meta only at toolCallStart)"
    base = _pick(action, "turnId", "toolCallId")

    if kind == "chat/toolCallDelta":
        delta = {"type": "session/toolCallDelta", **base, **_pick(action, "content", "invocationMessage")}
        if action.get("content") is None:
            # 0.9.0: a delta without content only updates the message; 0.2.0 always appends, so it
            # appends nothing, which only a call without partial input yet can tell apart.
            if all(b == a for b, a in pairs):
                return [], stale
            delta["content"] = ""
            if any(b.get("status") == "streaming" and b.get("partialInput") is None for b, a in pairs):
                stale = stale or "a delta without content gave 0.2.0 an empty partial input"
        return [delta], stale
    if kind == "chat/toolCallReady":
        paused = [b for b, a in pairs if b.get("status") == "auth-required"]
        if paused and all(b == a for b, a in pairs):
            # 0.9.0 re-readies no call paused for authentication; 0.2.0, to which it is running,
            # would: only the status the action recomputes may show.
            return _status_nudge(action, old, new), stale
        out = {
            "type": "session/toolCallReady",
            **base,
            **_pick(action, "invocationMessage", "confirmationTitle", "edits", "editable", "confirmed", "options"),
        }
        # 0.9.0 keeps a re-readied call's input when the action brings none; 0.2.0 takes it from
        # the action, so the action carries the input the calls 0.2.0 re-readies now have.
        inputs = [a.get("toolInput") for b, a in pairs if b.get("status") in ("streaming", "running")]
        if inputs and any(value != inputs[0] for value in inputs):
            stale = stale or "calls sharing one id were re-readied with different inputs"
        tool_input = inputs[0] if inputs else action.get("toolInput")
        if tool_input is not None:
            out["toolInput"] = tool_input
        if any(b.get("status") == "pending-confirmation" and b != a for b, a in pairs):
            stale = stale or "toolCallReady updated a call already pending confirmation (0.2.0 ignores that)"
        if paused:
            stale = stale or "a call paused for authentication shares its id with a re-readied one (0.2.0 re-readies both)"
        return [out], stale
    if kind == "chat/toolCallConfirmed":
        out = {
            "type": "session/toolCallConfirmed",
            **base,
            **_pick(action, "approved", "confirmed", "selectedOptionId", "reason", "reasonMessage"),
        }
        # 0.9.0 swaps only inline (text) input for the edited one; a content reference stays.
        if "editedToolInput" in action and isinstance(before_call.get("toolInput"), str):
            out["editedToolInput"] = action["editedToolInput"]
        if "userSuggestion" in action:
            out["userSuggestion"] = shapes.user_message_down(action["userSuggestion"])
        return [out], stale
    if kind == "chat/toolCallComplete":
        meta = action.get("_meta")
        if meta is not None and isinstance(action.get("result"), dict) and "_meta" not in action["result"]:
            # 0.2.0 spreads the result over the call last: a result's _meta is how 0.2.0 can
            # replace the call's, as 0.9.0 does with the action's.
            action = {**action, "result": {**action["result"], "_meta": meta}}
            stale = None
        if status == "auth-required":
            if all(b == a for b, a in pairs):
                # A successful result cannot end a paused call: nothing happened but the status
                # recomputation every completion makes.
                return _status_nudge(action, old, new), stale
            result = action.get("result")
            result = dict(result) if isinstance(result, dict) else result
            if isinstance(result, dict) and "content" not in result and before_call.get("content") is not None:
                result = {"content": before_call["content"], **result}  # the pause keeps earlier output
            return [{"type": "session/toolCallComplete", **base, "result": result}], stale
        result = action.get("result")
        if isinstance(result, dict) and "content" in result:
            action = {**action, "result": {**result, "content": shapes.content_down(result["content"])}}
        return [{"type": "session/toolCallComplete", **base, **_pick(action, "result", "requiresResultConfirmation")}], stale
    if kind == "chat/toolCallResultConfirmed":
        again = _turn_again(new, call_id) if stale is not None else None
        if again is not None:
            # The answer's _meta (who confirmed the result, ``answeredBy``) is the last word on the
            # call: no later 0.2.0 action would carry it, so the turn is said again as it now is.
            return again, None
        return [{"type": "session/toolCallResultConfirmed", **base, **_pick(action, "approved")}], stale
    if kind == "chat/toolCallContentChanged":
        if status == "auth-required":
            return [], stale
        changed = {"type": "session/toolCallContentChanged", **base, **_pick(action, "content")}
        if "content" in changed:
            changed["content"] = shapes.content_down(changed["content"])
        return [changed], stale
    # toolCallAuthRequired / Resolved: the call is running for 0.2.0 all along (``states.status_down``);
    # only the status recomputation they make may show.
    return _status_nudge(action, old, new), stale


_NUDGES = (
    ("session/toolCallResultConfirmed", frozenset({"pending-result-confirmation"}), {"approved": False}),
    ("session/toolCallConfirmed", frozenset({"pending-confirmation"}), {"approved": False, "reason": "skipped"}),
)
"""0.2.0 tool-call actions that recompute the status even when they change no call, and the
statuses in which they would change one."""


def _status_nudge(action: dict[str, Any], old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[dict[str, Any]]:
    """When a 0.9.0 tool-call action changed nothing but the chat's status (it recomputes it, as
    0.2.0's do), a 0.2.0 action that changes no call and recomputes the status the same way."""
    if (old or {}).get("status") == (new or {}).get("status"):
        return []
    statuses = {call.get("status") for call in _calls(old, action.get("toolCallId"))}
    active = (old or {}).get("activeTurn")
    if not isinstance(active, dict) or active.get("id") != action.get("turnId"):
        statuses = set()  # the turn does not match: no call can change
    for kind, sources, fields in _NUDGES:
        if not statuses & sources:
            return [{"type": kind, **_pick(action, "turnId", "toolCallId"), **fields}]
    return []


def _resumed(old: dict[str, Any] | None, new: dict[str, Any] | None) -> tuple[list[dict[str, Any]], str | None]:
    """``chat/turnResume`` replayed: drop the errored turn, start it again, re-add its parts."""
    old, new = old or {}, new or {}
    active = new.get("activeTurn")
    if not isinstance(active, dict) or isinstance(old.get("activeTurn"), dict):
        return [], None  # not resumed: the reducer left the chat as it was
    turns = old.get("turns")
    if not isinstance(turns, list):
        turns = []
    previous = turns[-2] if len(turns) >= 2 and isinstance(turns[-2], dict) else None
    return _restarted(previous, active), None


def _turn_again(chat: dict[str, Any] | None, call_id: Any) -> list[dict[str, Any]] | None:
    """The chat's active turn said to 0.2.0 anew, as it is now (``_restarted`` after the last
    finished turn), after the result of its call ``call_id`` was confirmed; then its status
    recomputed and the read flag the restart clears set again when the chat has it. None when the
    turn before it cannot be named: the chat's state holds no finished turn but has older ones
    (``turnsNextCursor``), which a 0.2.0 client holds and a truncation to no turn would drop."""
    chat = chat or {}
    active = chat.get("activeTurn")
    if not isinstance(active, dict):
        return None
    turns = chat.get("turns")
    previous = turns[-1] if isinstance(turns, list) and turns and isinstance(turns[-1], dict) else None
    if previous is None and chat.get("turnsNextCursor") is not None:
        return None
    actions = _restarted(previous, active)
    # 0.2.0 recomputes the status after tool-call actions, not after response parts: the answered
    # call's own confirmation again, which changes no call now, makes it count the calls said again.
    actions.append({"type": "session/toolCallResultConfirmed", "turnId": active.get("id"), "toolCallId": call_id, "approved": False})
    status = chat.get("status")
    if isinstance(status, int) and not isinstance(status, bool) and status & _IS_READ:
        actions.append({"type": "session/isReadChanged", "isRead": True})
    return actions


_IS_READ = 32
"""``SessionStatus.IsRead``: ``session/turnStarted`` and ``inputRequested`` clear it in 0.2.0."""


def _restarted(previous: dict[str, Any] | None, active: dict[str, Any]) -> list[dict[str, Any]]:
    """0.2.0 actions that drop every turn after ``previous`` (all of them without one) and the
    active turn, then start ``active`` again with its visible parts, usage and open input requests."""
    actions: list[dict[str, Any]] = [
        {"type": "session/truncated", **({"turnId": previous["id"]} if previous is not None and "id" in previous else {})}
    ]
    shown = shapes.active_turn_down(active)
    started = {"type": "session/turnStarted", **_pick(shown, "userMessage")}
    if "id" in active:
        started["turnId"] = active["id"]
    actions.append(started)
    for part in shown.get("responseParts") or []:
        actions.append({"type": "session/responsePart", "turnId": active.get("id"), "part": part})
    if shown.get("usage") is not None:
        actions.append({"type": "session/usage", "turnId": active.get("id"), "usage": shown["usage"]})
    for request in shapes.open_input_requests(active):
        actions.append({"type": "session/inputRequested", "request": request})
    return actions


def action_down(kind: str, channel: str, action: Any, before: Any = None, after: Any = None) -> Down:
    """An internal envelope on a channel of ``kind`` (``ahp.state`` kinds) for 0.2.0 clients.

    For ``session`` and ``chat``, ``before``/``after`` are the owning session around the action
    (``InternalSession``); the other kinds need no state. Annotations and automation channels, and
    any kind 0.2.0 lacks, show nothing."""
    if kind == "root":
        return root_action_down(action)
    if kind == "terminal":
        return terminal_action_down(channel, action)
    if kind == "changeset":
        return changeset_action_down(channel, action)
    if kind == "resourceWatch":
        return resource_watch_action_down(channel, action)
    if kind == "session" and isinstance(before, InternalSession) and isinstance(after, InternalSession):
        return session_action_down(action, before, after)
    if kind == "chat" and isinstance(before, InternalSession) and isinstance(after, InternalSession):
        return chat_action_down(channel, action, before, after)
    return NOTHING
