"""0.2.0 actions in the internal (0.9.0) model: what a 0.2.0 client's ``dispatchAction`` (or an
action in a journal the 0.2.0 host wrote) becomes, or why it cannot be taken.

The law (checked by ``tests/ahp/dialects/v0_2/test_actions_up.py``): for an internal state ``S``
and a 0.2.0 action ``a`` on one of its channels,

    down(fold(internal reducer, S, action_up(a, S).envelopes)) == 0.2.0 reducer(down(S), a)

except in the cases listed in that test, each with its reason. ``action_up`` reads ``S`` where
0.9.0 needs what 0.2.0 does not say: a turn's ``duration`` (from its ``startedAt``), the model a
message is sent with, the other active clients, the open input requests.

Translation by 0.2.0 action (every 0.2.0 type; ``CLIENT_DISPATCHABLE`` says which a client may send):

* ``session/*`` per-turn actions -> ``chat/*`` on the session's default chat, renamed (``shapes``):
  ``userMessage`` -> ``message`` from the user, sent with the model and agent 0.2.0 shows;
  ``toolClientId`` -> ``contributor``; ``error`` -> a final error part; ``_meta`` on tool-call
  actions other than ``toolCallStart`` is dropped (0.2.0 ignores it, 0.9.0 would store it).
  ``turnStarted`` re-raises the open input requests of the turn it replaces (0.2.0 keeps them
  across a new turn, 0.9.0 keeps them inside the turn).
* ``session/modelChanged`` / ``session/agentChanged`` -> ``chat/draftChanged``: the default chat's
  draft (if there is none, an empty one with the model and agent 0.2.0 shows) with the new
  selection. ``session/truncated`` pins the selection on such a draft first when dropping turns
  would change it.
* ``session/toolCallReady`` for a call pending confirmation -> nothing (0.2.0 ignores it, 0.9.0
  would update the call). ``session/inputCompleted`` -> one ``chat/inputCompleted`` per open request
  with that id (0.2.0 removes them all, 0.9.0 answers one per action).
* ``session/isReadChanged`` -> ``chat/isReadChanged`` on the default chat (0.2.0's read flag is the
  conversation's); ``session/isArchivedChanged`` stays on the session.
* ``session/activeClientChanged`` -> ``session/activeClientSet`` (after ``activeClientRemoved`` when
  the client was listed but not last, so that it becomes the one 0.2.0 shows); ``null`` removes the
  client 0.2.0 shows. ``session/activeClientToolsChanged`` -> ``activeClientSet`` of that client.
* ``session/customizationToggled{enabled}`` -> ``{enablement}`` with a session-scope decision first
  (only for a top-level entry: 0.2.0 toggles nothing else).
* Other ``session/*`` metadata, ``root/*``, ``terminal/*``, ``changeset/*``, ``resourceWatch/*``:
  the same action, with renamed shapes (terminal claims name the session's default chat,
  terminal lists carry lifecycles, changeset catalogues a ``changeKind``, operations a status).

Refused (``Up.refused``), with the reason to put in the 0.2.0 rejection: an unknown type, a type on
another channel kind, a host-only type from a client (``from_client``), a per-turn action for a
session without a default chat, and what 0.9.0 cannot do: an input request outside a turn; a
re-ready, confirmation, completion or content update of a tool call that waits for MCP
authentication (0.2.0 shows it as running; 0.9.0 takes none of them from a paused call but a
failed result, which cancels it keeping the output from before the pause); an
edited tool input for a call whose input is not inline text (a content reference, or none).

For the edge: apply the envelopes in order, each with the client's ``origin``, and send every
0.2.0 subscriber the ``actions_down`` translation of each (that is what converges, whatever the
divergences above). The dispatching client expects one echo: carry its ``origin`` on the last
0.2.0 action those translations produce and none on the others; when they produce none (a
no-op for 0.2.0), echo its own action.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ahp.dialects.v0_2 import shapes
from ahp.dialects.v0_2.shapes import USER_ORIGIN
from ahp.dialects.v0_2.state.channels import channel_kind
from ahp.dialects.v0_2.states import InternalSession, operation_up, selection_of
from ahp.dialects.v0_2.timestamps import iso_to_ms, ms_to_iso
from ahp.dialects.v0_2.uris import ProviderLookup, internal_session_uri
from ahp.dialects.v0_2.wire.actions import ACTIONS, CLIENT_DISPATCHABLE

__all__ = [
    "CLIENT_DISPATCHABLE",
    "Up",
    "action_up",
    "changeset_action_up",
    "resource_watch_action_up",
    "root_action_up",
    "session_action_up",
    "terminal_action_up",
]


@dataclass(frozen=True)
class Up:
    """What one 0.2.0 action becomes in the internal model."""

    envelopes: tuple[tuple[str, dict[str, Any]], ...] = ()
    """Internal ``(channel, action)`` pairs, to apply in order (possibly none: a 0.2.0 no-op)."""
    refused: str | None = None
    """Why the action cannot be taken (then ``envelopes`` is empty)."""


def _refuse(reason: str) -> Up:
    return Up(refused=reason)


def _check(kind: str, action: Any, from_client: bool) -> str | None:
    """The refusal every channel kind shares: malformed, unknown, wrong channel, host-only."""
    if not isinstance(action, dict) or not isinstance(action.get("type"), str):
        return "an action is an object with a string type"
    action_type = action["type"]
    spec = ACTIONS.get(action_type)
    if spec is None:
        return f"unknown action type {action_type!r} in AHP 0.2.0"
    if spec.channel_kind != kind:
        return f"{action_type} belongs on a {spec.channel_kind} channel, not a {kind} channel"
    if from_client and action_type not in CLIENT_DISPATCHABLE:
        return f"{action_type} is dispatched by the host only"
    return None


def _pick(action: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {key: action[key] for key in keys if key in action}


# --- root, terminal, changeset, resource watch ----------------------------------------------------


def root_action_up(action: Any, *, provider_of: ProviderLookup, from_client: bool = True) -> Up:
    refusal = _check("root", action, from_client)
    if refusal is not None:
        return _refuse(refusal)
    if action["type"] == "root/terminalsChanged" and isinstance(action.get("terminals"), list):
        internal = lambda uri: internal_session_uri(uri, provider_of)  # noqa: E731
        action = {**action, "terminals": [shapes.terminal_info_up(info, internal) for info in action["terminals"]]}
    if action["type"] == "root/agentsChanged" and isinstance(action.get("agents"), list):
        action = {**action, "agents": shapes.agents_up(action["agents"])}
    return Up((("ahp-root://", action),))


def terminal_action_up(channel: str, action: Any, *, provider_of: ProviderLookup, from_client: bool = True) -> Up:
    refusal = _check("terminal", action, from_client)
    if refusal is not None:
        return _refuse(refusal)
    if action["type"] == "terminal/claimed" and "claim" in action:
        internal = lambda uri: internal_session_uri(uri, provider_of)  # noqa: E731
        action = {**action, "claim": shapes.claim_up(action["claim"], internal)}
    return Up(((channel, action),))


def changeset_action_up(channel: str, action: Any, *, from_client: bool = True) -> Up:
    refusal = _check("changeset", action, from_client)
    if refusal is not None:
        return _refuse(refusal)
    if action["type"] == "changeset/operationsChanged" and isinstance(action.get("operations"), list):
        action = {**action, "operations": [operation_up(operation) for operation in action["operations"]]}
    return Up(((channel, action),))


def resource_watch_action_up(channel: str, action: Any, *, from_client: bool = True) -> Up:
    refusal = _check("resourceWatch", action, from_client)
    return _refuse(refusal) if refusal is not None else Up(((channel, action),))


# --- session --------------------------------------------------------------------------------------

_SESSION_SAME = {
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
"""0.2.0 session actions that stay on the session channel with the same type and fields."""

_TO_CHAT = {
    "session/delta": ("chat/delta", ("turnId", "partId", "content")),
    "session/reasoning": ("chat/reasoning", ("turnId", "partId", "content")),
    "session/usage": ("chat/usage", ("turnId", "usage")),
    "session/isReadChanged": ("chat/isReadChanged", ("isRead",)),
    "session/pendingMessageRemoved": ("chat/pendingMessageRemoved", ("kind", "id")),
    "session/queuedMessagesReordered": ("chat/queuedMessagesReordered", ("order",)),
    "session/inputAnswerChanged": ("chat/inputAnswerChanged", ("requestId", "questionId", "answer")),
    "session/inputCompleted": ("chat/inputCompleted", ("requestId", "response", "answers")),
    "session/toolCallDelta": ("chat/toolCallDelta", ("turnId", "toolCallId", "content", "invocationMessage")),
    "session/toolCallResultConfirmed": ("chat/toolCallResultConfirmed", ("turnId", "toolCallId", "approved")),
}
"""0.2.0 session actions that move to the default chat, renamed, with these fields."""

_TOOL_CALL_READY_FIELDS = (
    "turnId", "toolCallId", "invocationMessage", "toolInput", "confirmationTitle", "edits", "editable", "confirmed", "options",
)
_TOOL_CALL_CONFIRMED_FIELDS = (
    "turnId", "toolCallId", "approved", "confirmed", "editedToolInput", "selectedOptionId", "reason", "reasonMessage",
)


def session_action_up(action: Any, session: InternalSession, *, now: int, from_client: bool = True) -> Up:
    """A 0.2.0 session action on ``session`` (the internal session its 0.2.0 URI names), at ``now``
    (epoch ms, the host's clock: 0.9.0 turn actions carry times)."""
    refusal = _check("session", action, from_client)
    if refusal is not None:
        return _refuse(refusal)
    kind = action["type"]
    if kind in _SESSION_SAME:
        return Up(((session.uri, {"type": kind, **_pick(action, *_SESSION_SAME[kind])}),))
    if kind == "session/changesetsChanged":
        changesets = shapes.changesets_up(action.get("changesets"))
        return Up(((session.uri, {"type": kind, **({} if changesets is None else {"changesets": changesets})}),))
    if kind in ("session/activeClientChanged", "session/activeClientToolsChanged"):
        return _active_client(action, session)
    if kind.startswith("session/customization"):
        return _customizations(action, session)

    chat_uri = session.default_chat_uri
    if chat_uri is None:
        return _refuse("the session has no default chat to hold its conversation")
    chat = session.default_chat or {}

    def to_chat(*actions: dict[str, Any]) -> Up:
        return Up(tuple((chat_uri, a) for a in actions))

    if kind in _TO_CHAT:
        new_type, keys = _TO_CHAT[kind]
        translated = {"type": new_type, **_pick(action, *keys)}
        if kind == "session/inputCompleted":
            # 0.2.0 removes every open request with the id, 0.9.0 answers one per action.
            open_ids = [r.get("id") for r in shapes.open_input_requests(chat.get("activeTurn")) if isinstance(r, dict)]
            return to_chat(*[translated] * max(1, open_ids.count(action.get("requestId"))))
        return to_chat(translated)
    if kind in ("session/modelChanged", "session/agentChanged"):
        key = "model" if kind == "session/modelChanged" else "agent"
        draft = chat.get("draft")
        if not isinstance(draft, dict):
            draft = _empty_draft(chat)
        draft = {k: v for k, v in draft.items() if k != key}
        if action.get(key) is not None:
            draft[key] = action[key]
        return to_chat({"type": "chat/draftChanged", "draft": draft})
    if kind == "session/turnStarted":
        return to_chat(*_turn_started(action, chat, now))
    if kind == "session/responsePart":
        return to_chat({"type": "chat/responsePart", **_pick(action, "turnId"), "part": shapes.part_up(action.get("part"))})
    if kind in ("session/turnComplete", "session/turnCancelled", "session/error"):
        ended = {"type": "chat/" + kind.split("/", 1)[1], **_pick(action, "turnId"), "duration": _duration(chat, action, now)}
        if kind == "session/error":
            ended["part"] = {"kind": "error", **({} if action.get("error") is None else {"error": action["error"]})}
        return to_chat(ended)
    if kind == "session/truncated":
        return to_chat(*_truncated(action, chat))
    if kind == "session/pendingMessageSet":
        message = shapes.message_up(
            action.get("userMessage"), model=selection_of(chat, "model"), agent=selection_of(chat, "agent")
        )
        return to_chat({"type": "chat/pendingMessageSet", **_pick(action, "kind", "id"), "message": message})
    if kind == "session/inputRequested":
        if not isinstance(chat.get("activeTurn"), dict):
            return _refuse("0.9.0 keeps input requests inside the active turn, and there is none")
        return to_chat({"type": "chat/inputRequested", **_pick(action, "request")})
    if kind.startswith("session/toolCall"):
        return _tool_call(action, chat, chat_uri)
    return _refuse(f"{kind} has no translation")  # pragma: no cover - every 0.2.0 type is handled above


def _turn_started(action: dict[str, Any], chat: dict[str, Any], now: int) -> list[dict[str, Any]]:
    message = shapes.message_up(
        action.get("userMessage"), model=selection_of(chat, "model"), agent=selection_of(chat, "agent")
    )
    started = {"type": "chat/turnStarted", **_pick(action, "turnId"), "startedAt": ms_to_iso(now), "message": message}
    started.update(_pick(action, "queuedMessageId"))
    # 0.2.0 keeps open input requests across a new turn; 0.9.0 drops them with the turn they are in.
    carried = [{"type": "chat/inputRequested", "request": request} for request in shapes.open_input_requests(chat.get("activeTurn"))]
    return [started, *carried]


def _duration(chat: dict[str, Any], action: dict[str, Any], now: int) -> int | float:
    """The ended turn's duration in ms: ``now`` minus its start, never negative."""
    active = chat.get("activeTurn")
    started = iso_to_ms(active.get("startedAt")) if isinstance(active, dict) else None
    if started is None:
        return 0
    return max(0, now - started)


def _truncated(action: dict[str, Any], chat: dict[str, Any]) -> list[dict[str, Any]]:
    truncated = {"type": "chat/truncated", **_pick(action, "turnId")}
    if chat.get("draft") is not None:
        return [truncated]
    turns = chat.get("turns")
    if not isinstance(turns, list):
        turns = []
    turn_id = action.get("turnId")
    if turn_id is None:
        kept: list[Any] = []
    else:
        index = next((i for i, turn in enumerate(turns) if isinstance(turn, dict) and turn.get("id") == turn_id), None)
        if index is None:
            return [truncated]  # an unknown turn: nothing is dropped
        kept = turns[: index + 1]
    remaining = {"turns": kept}
    model, agent = selection_of(chat, "model"), selection_of(chat, "agent")
    if (selection_of(remaining, "model"), selection_of(remaining, "agent")) == (model, agent):
        return [truncated]
    # 0.2.0 keeps the session's model when turns go; 0.9.0 reads it off the latest message, so it
    # is pinned on a draft first.
    return [{"type": "chat/draftChanged", "draft": _empty_draft(chat)}, truncated]


def _empty_draft(chat: dict[str, Any]) -> dict[str, Any]:
    """A draft with no text that keeps the model and agent 0.2.0 shows (a draft, once there, is
    what 0.2.0's selection is read from)."""
    draft: dict[str, Any] = {"text": "", "origin": dict(USER_ORIGIN)}
    for key in ("model", "agent"):
        value = selection_of(chat, key)
        if value is not None:
            draft[key] = value
    return draft


_PAUSED_REFUSED = frozenset(
    {"session/toolCallReady", "session/toolCallConfirmed", "session/toolCallComplete", "session/toolCallContentChanged"}
)
"""0.2.0 actions that would update a running call, refused for a call paused on MCP authentication:
0.2.0 shows that call as running (it has no ``auth-required``), but 0.9.0 changes a paused call only
when its authentication resolves (``chat/toolCallAuthResolved``, the host's) or when a failed result
cancels it, which 0.2.0 would not know to send and would show differently (0.9.0 keeps the output
from before the pause)."""


def _tool_call(action: dict[str, Any], chat: dict[str, Any], chat_uri: str) -> Up:
    kind = action["type"]
    calls = _calls(chat, action.get("turnId"), action.get("toolCallId"))
    paused = any(call.get("status") == "auth-required" for call in calls)
    if kind == "session/toolCallStart":
        start = {
            "type": "chat/toolCallStart",
            **_pick(action, "turnId", "toolCallId", "toolName", "displayName", "_meta"),
        }
        if action.get("toolClientId") is not None:
            start["contributor"] = {"kind": "client", "clientId": action["toolClientId"]}
        return Up(((chat_uri, start),))
    if paused and kind in _PAUSED_REFUSED:
        return _refuse("the tool call waits for its MCP server's authentication, not for a client")
    if kind == "session/toolCallReady":
        if calls and all(call.get("status") == "pending-confirmation" for call in calls):
            return Up()  # 0.2.0 re-readies streaming and running calls only; 0.9.0 would update it
        return Up(((chat_uri, {"type": "chat/toolCallReady", **_pick(action, *_TOOL_CALL_READY_FIELDS)}),))
    if kind == "session/toolCallConfirmed":
        confirmed = {"type": "chat/toolCallConfirmed", **_pick(action, *_TOOL_CALL_CONFIRMED_FIELDS)}
        if action.get("userSuggestion") is not None:
            confirmed["userSuggestion"] = shapes.message_up(action["userSuggestion"])
        if action.get("editedToolInput") is not None and action.get("approved") and any(
            not isinstance(call.get("toolInput"), str) for call in calls if call.get("status") == "pending-confirmation"
        ):
            return _refuse("0.9.0 takes an edited input only in place of inline (text) tool input, which this call lacks")
        return Up(((chat_uri, confirmed),))
    if kind == "session/toolCallComplete":
        return Up(((chat_uri, {"type": "chat/toolCallComplete", **_pick(action, "turnId", "toolCallId", "result", "requiresResultConfirmation")}),))
    if kind == "session/toolCallContentChanged":
        return Up(((chat_uri, {"type": "chat/toolCallContentChanged", **_pick(action, "turnId", "toolCallId", "content")}),))
    return _refuse(f"{kind} has no translation")  # pragma: no cover


def _calls(chat: dict[str, Any], turn_id: Any, call_id: Any) -> list[dict[str, Any]]:
    active = chat.get("activeTurn")
    if not isinstance(active, dict) or active.get("id") != turn_id or not isinstance(active.get("responseParts"), list):
        return []
    return [
        part["toolCall"]
        for part in active["responseParts"]
        if isinstance(part, dict) and part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict)
        and part["toolCall"].get("toolCallId") == call_id
    ]


def _active_client(action: dict[str, Any], session: InternalSession) -> Up:
    clients = session.state.get("activeClients")
    clients = clients if isinstance(clients, list) else []
    shown = clients[-1] if clients else None
    if action["type"] == "session/activeClientToolsChanged":
        if not isinstance(shown, dict):
            return Up()  # 0.2.0: no active client, nothing to update
        updated = {k: v for k, v in shown.items() if k != "tools"}
        if action.get("tools") is not None:
            updated["tools"] = action["tools"]
        return Up(((session.uri, {"type": "session/activeClientSet", "activeClient": updated}),))
    client = shapes.client_up(action.get("activeClient"))
    if not isinstance(client, dict):
        if not isinstance(shown, dict):
            return Up()
        return Up(((session.uri, {"type": "session/activeClientRemoved", "clientId": shown.get("clientId")}),))
    envelopes = []
    listed = [index for index, entry in enumerate(clients) if isinstance(entry, dict) and entry.get("clientId") == client.get("clientId")]
    if listed and listed[0] != len(clients) - 1:
        # Upserting keeps a client's place; 0.2.0 shows the last one, so it leaves and re-joins.
        envelopes.append((session.uri, {"type": "session/activeClientRemoved", "clientId": client.get("clientId")}))
    envelopes.append((session.uri, {"type": "session/activeClientSet", "activeClient": client}))
    return Up(tuple(envelopes))


def _customizations(action: dict[str, Any], session: InternalSession) -> Up:
    kind = action["type"]
    if kind == "session/customizationsChanged":
        entries = shapes.customizations_up(action.get("customizations"))
        return Up(((session.uri, {"type": kind, **({} if entries is None else {"customizations": entries})}),))
    if kind == "session/customizationUpdated":
        return Up(((session.uri, {"type": kind, "customization": shapes.customization_up(action.get("customization"))}),))
    # session/customizationToggled: 0.2.0 toggles a top-level entry and nothing else.
    entries = session.state.get("customizations")
    entry = next(
        (e for e in entries if isinstance(e, dict) and e.get("id") == action.get("id")), None
    ) if isinstance(entries, list) else None
    if entry is None:
        return Up()
    previous = entry.get("enablement") if entry.get("type") in shapes.KEEPS_DECISIONS else None
    enablement = shapes.session_decision(action.get("enabled"), previous)
    return Up(((session.uri, {"type": kind, **_pick(action, "id"), "enablement": enablement}),))


def action_up(
    channel: Any,
    action: Any,
    *,
    now: int,
    provider_of: ProviderLookup,
    session_of: Callable[[str], InternalSession | None],
    from_client: bool = True,
) -> Up:
    """A 0.2.0 ``dispatchAction`` (``channel``, ``action``) in the internal model.

    ``provider_of`` names a 0.2.0 session's provider and ``session_of(internal_uri)`` gives the
    host's current view of that session (its state, default chat and creation time); both are the
    host's lookups, so this stays pure. A channel of no known kind, or a session the host does not
    have, is refused (PROTOCOL.md §3: the host drops such a dispatch without an echo)."""
    kind = channel_kind(channel)
    if kind == "root":
        return root_action_up(action, provider_of=provider_of, from_client=from_client)
    if kind == "terminal":
        return terminal_action_up(channel, action, provider_of=provider_of, from_client=from_client)
    if kind == "changeset":
        return changeset_action_up(channel, action, from_client=from_client)
    if kind == "resourceWatch":
        return resource_watch_action_up(channel, action, from_client=from_client)
    if kind == "session":
        internal = internal_session_uri(channel, provider_of)
        session = session_of(internal) if internal is not None else None
        if session is None:
            return _refuse(f"no session {channel}")
        return session_action_up(action, session, now=now, from_client=from_client)
    return _refuse(f"{channel!r} is not a 0.2.0 channel")
