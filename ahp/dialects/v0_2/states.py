"""Channel states between the internal (0.9.0) model and AHP 0.2.0: ``*_down`` projects an internal
state to what a 0.2.0 client sees, ``*_lift`` builds an internal state from a 0.2.0 one.

A 0.2.0 session is one conversation; an internal session is a catalogue of chats on their own
channels. The 0.2.0 view of a session (``session_down``) is the session channel's state plus the
state of its **default chat** (``SessionState.defaultChat``); other chats, the annotations channel
and chat-only fields are invisible to 0.2.0. Field by field:

=====================  ====================================================================
0.2.0                  internal
=====================  ====================================================================
summary.resource       the session URI, as 0.2.0 names it (``uris.v02_session_uri``)
summary.provider       ``provider``
summary.title          ``title`` (the session's, not the chat's)
summary.status         activity bits and IsRead from the default chat's ``status``; IsArchived
                       from the session's (archiving is a session-list matter; reading and new
                       turns are the chat's); a call paused for MCP authentication counts as
                       running; Idle and the session's flags without a default chat
summary.activity       ``activity`` (the session's)
summary.createdAt      ``SessionSummary.createdAt`` (ISO; the session channel has no such field,
                       so the host passes it in ``InternalSession.created_at``), in epoch ms
summary.modifiedAt     the default chat's ``modifiedAt`` in epoch ms (``createdAt`` without one)
summary.project        ``project``
summary.model, .agent  the default chat's ``draft`` selection when there is a draft, else the
                       selection of the latest message (active turn, else last turn)
summary.workingDir…    ``workingDirectories[0]``
summary.changesets     ``changesets``, as ``ChangesetSummary``
lifecycle              ``lifecycle`` (``failed`` reads ``creationFailed``)
activeClient           the last of ``activeClients`` (the last to join)
turns, activeTurn      the default chat's, renamed (``shapes``); input-request and error parts
                       hidden, a turn's final error part as its ``error``
inputRequests          the active turn's unanswered input-request parts; while the default chat
                       runs no turn, the requests asked outside a turn (``chatInput`` entries of
                       ``inputNeeded`` for the default chat, ``outside_input_requests``), which
                       also make the status InputNeeded; absent when none
steeringMessage,       the default chat's, renamed
queuedMessages
customizations         ``customizations``, a plugin's or MCP server's ``enablement`` decisions as
                       the ``enabled`` flag they amount to
creationError,         same name, same value
serverTools, config,
_meta
=====================  ====================================================================

Not shown to 0.2.0: the chat catalogue and every chat but the default one; the session's own read
flag (0.2.0's is the conversation's); ``inputNeeded`` (but for input requests asked outside a
turn, above); working directories after the first;
``origin``, ``annotations``; chat-only fields (``draft`` text, ``turnsNextCursor``, activity,
background work, chat changesets, ``movable``, ``interactivity``); a turn's ``startedAt`` and
``duration``; a message's ``origin``; tool calls' ``intention``, ``riskAssessment``, ``auth`` and
an MCP ``contributor``.

The 0.2.0 ``SessionSummary`` of ``listSessions`` and the root notifications is this state's
``summary`` (``summary_down``, ``summary_changes``).

A sub-agent's chat (a chat of the session, spawned by a ``task`` call) is shown to 0.2.0 as a
session of its own (``subagent_view``): an ``InternalSession`` named
``uris.subagent_session_uri(chat)`` whose default chat is the sub-agent's chat, and whose session
fields are fixed at what the parent had when the chat opened and cannot change through it:
provider, the chat's title, ``ready``, the first working directory, the parent's creation time.
No customizations, server tools or active client: it is a window onto one chat, and everything in
it changes through that chat's actions alone (which is what makes its projection commute).

Contract:

* ``*_down(*_lift(s)) == s`` for every 0.2.0 state ``s`` in the lift's domain (each ``*_lift``
  docstring names it; for sessions: the resource is an ``ahp-session:`` URI, and input requests, when
  present, are a non-empty list during an active turn, as the 0.2.0 reducers leave them). Values the
  reducers never write as ``None`` are compared with ``None``-valued keys dropped.
* Projections never raise on malformed state; they copy only what they rename and share the rest.
* Everything is pure: the session's creation time and the provider of a 0.2.0 session name come
  from the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ahp.dialects.v0_2 import shapes
from ahp.dialects.v0_2.shapes import USER_ORIGIN, iso_or_epoch, ms_or_zero
from ahp.dialects.v0_2.timestamps import ms_to_iso
from ahp.dialects.v0_2.uris import (
    ProviderLookup,
    default_chat_uri,
    internal_session_uri,
    subagent_session_uri,
    v02_session_uri,
)
from ahp.identity_memo import IdentityMemo

__all__ = [
    "ARCHIVED",
    "InternalSession",
    "changeset_down",
    "changeset_lift",
    "outside_input_requests",
    "resource_watch_down",
    "resource_watch_lift",
    "root_down",
    "root_lift",
    "selection_of",
    "session_down",
    "session_lift",
    "status_down",
    "subagent_view",
    "summary_changes",
    "summary_down",
    "terminal_down",
    "terminal_lift",
]

ARCHIVED = 64
"""``SessionStatus.IsArchived``: the one status bit a 0.2.0 view takes from the session."""
ACTIVITY_MASK = 31
IDLE, IN_PROGRESS, INPUT_NEEDED = 1, 8, 24


@dataclass(frozen=True)
class InternalSession:
    """One session as the internal model holds it: what a 0.2.0 view of it is made from."""

    uri: str
    """The internal session URI, ``<provider>:/<id>``."""
    state: dict[str, Any]
    """The session channel's ``SessionState``."""
    chats: Mapping[str, dict[str, Any]] = field(default_factory=dict[str, Any])
    """Chat URI -> ``ChatState`` for the chats the caller holds (at least the default one)."""
    created_at: str = ms_to_iso(0)
    """``SessionSummary.createdAt`` (ISO 8601), kept by the host beside the session channel."""

    @property
    def default_chat_uri(self) -> str | None:
        uri = self.state.get("defaultChat") if isinstance(self.state, dict) else None
        return uri if isinstance(uri, str) else None

    @property
    def default_chat(self) -> dict[str, Any] | None:
        """The state of the default chat, ``None`` when there is none or the caller did not pass it."""
        uri = self.default_chat_uri
        chat = self.chats.get(uri) if uri is not None else None
        return chat if isinstance(chat, dict) else None


def subagent_view(parent_state: Any, chat_uri: str, chat: Any, created_at: str = ms_to_iso(0)) -> InternalSession | None:
    """The session 0.2.0 is shown for the sub-agent chat ``chat_uri`` (state ``chat``) of the
    session whose state is ``parent_state``; ``None`` when ``chat_uri`` is no sub-agent's chat."""
    uri = subagent_session_uri(chat_uri)
    if uri is None or not isinstance(parent_state, dict) or not isinstance(chat, dict):
        return None
    state: dict[str, Any] = {"title": chat.get("title") if isinstance(chat.get("title"), str) else "Sub-agent",
                   "status": IDLE, "lifecycle": "ready", "defaultChat": chat_uri}
    _put(state, "provider", parent_state.get("provider"))
    directories = parent_state.get("workingDirectories")
    if isinstance(directories, list) and directories:
        state["workingDirectories"] = directories[:1]
    return InternalSession(uri=uri, state=state, chats={chat_uri: chat}, created_at=created_at)


def _put(target: dict[str, Any], key: str, value: Any) -> None:
    """``target[key] = value`` unless the value is absent (``None``)."""
    if value is not None:
        target[key] = value


# --- session --------------------------------------------------------------------------------------


def outside_input_requests(session: InternalSession) -> list[dict[str, Any]]:
    """The default chat's input requests asked while it ran no turn, as 0.2.0 shows them: only
    while the chat still runs none (0.2.0 drops every request when a turn ends), one per id (0.2.0
    upserts by id: the first position, the last value)."""
    chat_uri, chat = session.default_chat_uri, session.default_chat
    state = session.state if isinstance(session.state, dict) else {}
    if chat_uri is None or chat is None or isinstance(chat.get("activeTurn"), dict):
        return []
    found: dict[str, dict[str, Any]] = {}
    entries = state.get("inputNeeded")
    for entry in entries if isinstance(entries, list) else ():
        request = entry.get("request") if isinstance(entry, dict) else None
        if entry.get("kind") == "chatInput" and entry.get("chat") == chat_uri and isinstance(request, dict) \
                and isinstance(request.get("id"), str):
            found[request["id"]] = request
    return list(found.values())


def status_down(session: dict[str, Any], chat: dict[str, Any] | None, outside: bool = False) -> Any:
    """0.2.0's ``summary.status``: the chat's bits with the session's IsArchived bit.

    A call paused for MCP authentication shows as running in 0.2.0 (``shapes.tool_call_down``), so
    when such calls are all that makes the chat InputNeeded, 0.2.0 sees InProgress, as its own
    reducers compute from what it is shown. A session without a default chat has no conversation:
    Idle, with the session's flags."""
    session_status = session.get("status")
    session_int = session_status if isinstance(session_status, int) and not isinstance(session_status, bool) else 0
    if chat is None:
        return (session_int & ~ACTIVITY_MASK) | IDLE
    chat_status = chat.get("status")
    if isinstance(chat_status, bool) or not isinstance(chat_status, int):
        return chat_status
    if chat_status & ACTIVITY_MASK == INPUT_NEEDED and _only_auth_blocks(chat.get("activeTurn")):
        chat_status = (chat_status & ~ACTIVITY_MASK) | IN_PROGRESS
    if outside:  # input requests asked outside a turn are open: 0.2.0 counts them (``outside``)
        chat_status = (chat_status & ~ACTIVITY_MASK) | INPUT_NEEDED
    return (chat_status & ~ARCHIVED) | (session_int & ARCHIVED)


def _only_auth_blocks(active: Any) -> bool:
    """Whether an active turn waits on nothing but MCP authentication."""
    if shapes.open_input_requests(active):
        return False
    calls = [
        part["toolCall"] for part in (active.get("responseParts") if isinstance(active, dict) else None) or []
        if isinstance(part, dict) and part.get("kind") == "toolCall" and isinstance(part.get("toolCall"), dict)
    ]
    statuses = {call.get("status") for call in calls}
    return "auth-required" in statuses and not statuses & {"pending-confirmation", "pending-result-confirmation"}


def _latest_message(chat: dict[str, Any]) -> Any:
    active = chat.get("activeTurn")
    if isinstance(active, dict):
        return active.get("message")
    turns = chat.get("turns")
    if isinstance(turns, list) and turns and isinstance(turns[-1], dict):
        return turns[-1].get("message")
    return None


def selection_of(chat: dict[str, Any] | None, key: str) -> Any:
    """The 0.2.0 session's ``model`` or ``agent`` (``key``): the draft's when the chat has a draft
    (what the next message will be sent with), else the latest message's."""
    if chat is None:
        return None
    draft = chat.get("draft")
    source = draft if draft is not None else _latest_message(chat)
    return source.get(key) if isinstance(source, dict) else None


def _summary(session: InternalSession) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
    """The 0.2.0 ``SessionSummary`` of a session and the input requests asked outside a turn it
    counts; ``None`` if 0.2.0 cannot name it. Reads no turn but the latest (its selection), so it
    costs the same however long the session is."""
    resource = v02_session_uri(session.uri)
    state = session.state
    if resource is None or not isinstance(state, dict):
        return None
    chat = session.default_chat
    created = ms_or_zero(session.created_at)

    summary: dict[str, Any] = {"resource": resource}
    for key in ("provider", "title"):
        _put(summary, key, state.get(key))
    outside = outside_input_requests(session)
    _put(summary, "status", status_down(state, chat, bool(outside)))
    _put(summary, "activity", state.get("activity"))
    summary["createdAt"] = created
    summary["modifiedAt"] = ms_or_zero(chat.get("modifiedAt")) if chat is not None else created
    _put(summary, "project", state.get("project"))
    _put(summary, "model", selection_of(chat, "model"))
    _put(summary, "agent", selection_of(chat, "agent"))
    directories = state.get("workingDirectories")
    if isinstance(directories, list) and directories:
        summary["workingDirectory"] = directories[0]
    if state.get("changesets") is not None:
        summary["changesets"] = shapes.changesets_down(state["changesets"])
    return summary, outside


_turn_down = IdentityMemo(shapes.turn_down, 8192)
"""``shapes.turn_down`` once per completed turn (``ahp.identity_memo``: a completed turn is never
changed in place), so a session's every summary, check or snapshot costs one lookup per turn
rather than a new projection of its whole history; a few long sessions' turns are kept."""


def session_down(session: InternalSession) -> dict[str, Any] | None:
    """The 0.2.0 ``SessionState`` of an internal session; ``None`` if 0.2.0 cannot name it."""
    shown = _summary(session)
    if shown is None:
        return None
    summary, outside = shown
    state, chat = session.state, session.default_chat
    out: dict[str, Any] = {"summary": summary}
    _put(out, "lifecycle", shapes.lifecycle_down(state.get("lifecycle")))
    for key in ("creationError", "serverTools"):
        _put(out, key, state.get(key))
    _put(out, "activeClient", shapes.active_client_down(state.get("activeClients")))
    chat = chat or {}
    turns = chat.get("turns")
    out["turns"] = [_turn_down(turn) for turn in turns] if isinstance(turns, list) else []
    active = chat.get("activeTurn")
    _put(out, "activeTurn", shapes.active_turn_down(active))
    _put(out, "steeringMessage", shapes.pending_message_down(chat.get("steeringMessage")))
    queued = chat.get("queuedMessages")
    if isinstance(queued, list):
        out["queuedMessages"] = [shapes.pending_message_down(message) for message in queued]
    else:
        _put(out, "queuedMessages", queued)
    requests = shapes.open_input_requests(active) + outside
    if requests:
        out["inputRequests"] = requests
    _put(out, "config", state.get("config"))
    _put(out, "customizations", shapes.customizations_down(state.get("customizations")))
    _put(out, "_meta", state.get("_meta"))
    return out


def session_lift(state: dict[str, Any], *, provider_of: ProviderLookup | None = None) -> InternalSession:
    """The internal session (session channel + one default chat) a 0.2.0 ``SessionState`` stands for.

    The session URI is built from ``summary.resource`` and ``summary.provider`` (``provider_of``
    is only consulted when the summary has no provider). Domain: ``summary.resource`` is an
    ``ahp-session:/<id>`` URI (``ValueError`` otherwise); input requests outside an active turn
    have no place in the internal model and are dropped, as is an empty ``inputRequests`` list.

    What 0.2.0 does not record is filled in as follows: the active turn's ``startedAt`` is the
    session's ``modifiedAt`` (the last change a 0.2.0 host stamped, usually the turn's start);
    the session's model and agent ride on a draft with empty text (what "the next message will
    use this model" means in 0.9.0); messages come from the user.
    """
    summary = state.get("summary")
    if not isinstance(summary, dict):
        summary = {}
    provider = summary.get("provider")
    lookup: Any = provider if isinstance(provider, str) and provider else provider_of
    uri = internal_session_uri(summary.get("resource"), lookup) if lookup is not None else None
    if uri is None:
        raise ValueError(f"cannot name the session {summary.get('resource')!r} (provider {provider!r}) internally")
    chat_uri = default_chat_uri(uri)
    status = summary.get("status")
    modified = iso_or_epoch(summary.get("modifiedAt"))

    chat: dict[str, Any] = {"resource": chat_uri}
    _put(chat, "title", summary.get("title"))
    _put(chat, "status", status)
    chat["modifiedAt"] = modified
    turns = state.get("turns")
    chat["turns"] = [shapes.turn_up(turn) for turn in turns] if isinstance(turns, list) else []
    active = state.get("activeTurn")
    if isinstance(active, dict):
        lifted = {key: value for key, value in active.items() if key != "userMessage"}
        lifted["startedAt"] = modified
        if "userMessage" in active:
            lifted["message"] = shapes.message_up(active["userMessage"])
        parts = active.get("responseParts")
        if isinstance(parts, list):
            requests = state.get("inputRequests")
            pending = requests if isinstance(requests, list) else []
            lifted["responseParts"] = [shapes.part_up(part) for part in parts] + [
                {"kind": "inputRequest", "request": request} for request in pending
            ]
        chat["activeTurn"] = lifted
    else:
        _put(chat, "activeTurn", active)
    _put(chat, "steeringMessage", shapes.pending_message_up(state.get("steeringMessage")))
    queued = state.get("queuedMessages")
    if isinstance(queued, list):
        chat["queuedMessages"] = [shapes.pending_message_up(message) for message in queued]
    else:
        _put(chat, "queuedMessages", queued)
    model, agent = summary.get("model"), summary.get("agent")
    if model is not None or agent is not None:
        draft: dict[str, Any] = {"text": "", "origin": dict(USER_ORIGIN)}
        _put(draft, "model", model)
        _put(draft, "agent", agent)
        chat["draft"] = draft

    session: dict[str, Any] = {}
    for key in ("provider", "title", "status", "activity", "project"):
        _put(session, key, summary.get(key))
    if summary.get("workingDirectory") is not None:
        session["workingDirectories"] = [summary["workingDirectory"]]
    _put(session, "lifecycle", shapes.lifecycle_up(state.get("lifecycle")))
    for key in ("creationError", "serverTools"):
        _put(session, key, state.get(key))
    client = state.get("activeClient")
    session["activeClients"] = [shapes.client_up(client)] if client is not None else []
    catalogue_entry = {key: chat[key] for key in ("resource", "title", "status", "modifiedAt") if key in chat}
    session["chats"] = [catalogue_entry]
    session["defaultChat"] = chat_uri
    _put(session, "config", state.get("config"))
    _put(session, "customizations", shapes.customizations_up(state.get("customizations")))
    if summary.get("changesets") is not None:
        session["changesets"] = shapes.changesets_up(summary["changesets"])
    _put(session, "_meta", state.get("_meta"))
    return InternalSession(uri=uri, state=session, chats={chat_uri: chat}, created_at=iso_or_epoch(summary.get("createdAt")))


_FIXED_SUMMARY_FIELDS = ("resource", "provider", "createdAt")


def summary_down(session: InternalSession) -> dict[str, Any] | None:
    """The 0.2.0 ``SessionSummary`` of a session (``listSessions``, ``root/sessionAdded``): the
    summary of its 0.2.0 state (``session_down`` builds it the same way, so both always agree),
    without projecting its turns."""
    shown = _summary(session)
    return None if shown is None else shown[0]


def summary_changes(before: InternalSession, after: InternalSession) -> dict[str, Any]:
    """The ``changes`` of a ``root/sessionSummaryChanged`` for 0.2.0 clients: the summary fields
    that differ, without ``resource``, ``provider`` and ``createdAt`` (PROTOCOL.md §6: MUST omit);
    a field that went away is ``None`` (``null`` on the wire). Empty: nothing to notify."""
    old, new = summary_down(before) or {}, summary_down(after) or {}
    return {
        key: new.get(key)
        for key in sorted(set(old) | set(new))
        if key not in _FIXED_SUMMARY_FIELDS and old.get(key) != new.get(key)
    }


# --- root, terminal, changeset, resource watch ----------------------------------------------------


def root_down(state: Any) -> Any:
    """0.2.0's ``RootState``: terminals and the agents' customizations renamed, the host's ``_meta``
    (0.9.0 only) left out."""
    if not isinstance(state, dict):
        return state
    out = {key: value for key, value in state.items() if key != "_meta"}
    if isinstance(state.get("terminals"), list):
        out["terminals"] = [shapes.terminal_info_down(info, v02_session_uri) for info in state["terminals"]]
    if isinstance(state.get("agents"), list):
        out["agents"] = shapes.agents_down(state["agents"])
    return out


def root_lift(state: Any, *, provider_of: ProviderLookup) -> Any:
    """The internal ``RootState`` of a 0.2.0 one (terminal claims need the sessions' providers)."""
    if not isinstance(state, dict):
        return state
    out = dict(state)
    if isinstance(state.get("terminals"), list):
        out["terminals"] = [
            shapes.terminal_info_up(info, lambda uri: internal_session_uri(uri, provider_of)) for info in state["terminals"]
        ]
    if isinstance(state.get("agents"), list):
        out["agents"] = shapes.agents_up(state["agents"])
    return out


def terminal_down(state: Any) -> Any:
    """0.2.0's ``TerminalState``: ``lifecycle`` as ``exitCode``, the claim without its chat."""
    if not isinstance(state, dict):
        return state
    out = {key: value for key, value in state.items() if key not in ("lifecycle", "isPty")}
    if "claim" in state:
        out["claim"] = shapes.claim_down(state["claim"], v02_session_uri)
    exit_code = shapes.exit_code_of_lifecycle(state.get("lifecycle"))
    if exit_code is not None:
        out["exitCode"] = exit_code
    return out


def terminal_lift(state: Any, *, provider_of: ProviderLookup) -> Any:
    """The internal ``TerminalState`` of a 0.2.0 one; no exit code reads as a running process."""
    if not isinstance(state, dict):
        return state
    out = {key: value for key, value in state.items() if key != "exitCode"}
    if "claim" in state:
        out["claim"] = shapes.claim_up(state["claim"], lambda uri: internal_session_uri(uri, provider_of))
    out["lifecycle"] = shapes.terminal_lifecycle_up(state.get("exitCode"))
    return out


_OPERATION_ONLY = ("status", "error")


def changeset_down(state: Any) -> Any:
    """0.2.0's ``ChangesetState``: files without 0.6.0's ``reviewed``, operations without 0.3.0's
    execution ``status``/``error``, and ``recomputing`` (1.0.0 schema) read as ``computing``."""
    if not isinstance(state, dict):
        return state
    out = dict(state)
    out["status"] = shapes.changeset_status_down(state.get("status"))
    if out["status"] is None:
        del out["status"]
    if isinstance(state.get("files"), list):
        out["files"] = [
            {k: v for k, v in file.items() if k != "reviewed"} if isinstance(file, dict) else file for file in state["files"]
        ]
    if isinstance(state.get("operations"), list):
        out["operations"] = [_operation_down(operation) for operation in state["operations"]]
    return out


def _operation_down(operation: Any) -> Any:
    if not isinstance(operation, dict):
        return operation
    return {k: v for k, v in operation.items() if k not in _OPERATION_ONLY}


def operation_up(operation: Any) -> Any:
    """A 0.2.0 changeset operation in the internal model: idle (0.9.0 requires a ``status``)."""
    if not isinstance(operation, dict) or "status" in operation:
        return operation
    return {**operation, "status": "idle"}


def changeset_lift(state: Any) -> Any:
    if not isinstance(state, dict):
        return state
    out = dict(state)
    if isinstance(state.get("operations"), list):
        out["operations"] = [operation_up(operation) for operation in state["operations"]]
    return out


def resource_watch_down(state: Any) -> Any:
    """Resource-watch states have one shape in both models."""
    return state


def resource_watch_lift(state: Any) -> Any:
    return state
