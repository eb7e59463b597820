"""AHP 0.2.0 at the edge: the internal (0.9.0) model projected through ``ahp.dialects.v0_2``.

A 0.2.0 client names a session ``ahp-session:/<id>``; inside it is ``<provider>:/<id>`` with a
default chat (``ahp.dialects.v0_2.uris``). So, for a 0.2.0 connection:

* ``subscribe`` (also ``initialSubscriptions``, ``reconnect``) of ``ahp-session:/<id>`` subscribes
  the connection to the internal session AND its default chat; the snapshot is the projected pair
  (``states.session_down``) under the 0.2.0 name. A sub-agent's chat is a projected session of its
  own, ``ahp-session:/<id>/subagent/<call>`` (``states.subagent_view``): subscribing to it
  subscribes to that chat alone, its actions come under that name, and the session's
  dispatches on it (confirming the sub-agent's tool calls, cancelling its turn) go to the chat.
  It is not listed by ``listSessions``: the parent's ``task`` call names it in its content.
  Root, terminal, changeset and resource-watch channels keep their URIs and are projected alone. Internal session and chat URIs mean nothing to
  0.2.0.
* Every envelope of either channel becomes zero or more 0.2.0 envelopes on the 0.2.0 session URI
  (``actions_down.action_down``, which reads the session around the action: the store hands the
  states over, ``wants_states``). Streamed tokens (``chat/delta``, ``chat/reasoning``, a
  ``chat/toolCallDelta`` with content) are renamed without reading any state, so a token costs
  O(1) here too. Each 0.2.0 envelope keeps the internal ``serverSeq`` and ``origin``; the store
  serialises the result once for every 0.2.0 connection.
* A ``dispatchAction`` is judged by 0.2.0's own rules on the state this client is shown
  (``host.transport.dialects.v02_rules``), then taken up (``actions_up.action_up``) into internal envelopes,
  which ``host.transport.validation`` and the store then see.
* Notifications: session summaries are the 0.2.0 ones (projected from the store), session URIs
  the 0.2.0 names; a notification 0.2.0 does not know is not sent. ``listSessions`` items carry
  the host's listing facts in ``_meta`` (``AgentHost.listing_meta``).
* ``reconnect``'s replay goes through the same translation, with the session's current states in
  place of those around each replayed action (they are gone): the model/agent 0.2.0 shows may
  then come late, as the next snapshot shows it. A replay holding a change 0.2.0 may not be able
  to say (the first working directory, the default chat, who confirmed a tool's result) is
  answered with snapshots instead.
* Where no 0.2.0 action can carry a change of the session's first working directory or of its
  default chat (``actions_down``'s ``stale``), the 0.2.0 clients of that session get a fresh
  snapshot: the edge returns a ``Resync``, their connections close, and their ``reconnect`` is
  answered with snapshots. The other ``stale`` cases of ``actions_down`` (details of a tool
  call or input request 0.2.0 cannot follow, mostly its ``_meta``) happen during ordinary turns;
  closing a connection for each would cost more than the detail, so they are only logged and
  the next snapshot corrects them.

Params are checked against the generated 0.2.0 wire types (pydantic, -32602 naming the field).
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from ahp.dialects.catalogue import introduced_in, known_to, notification_known_to
from ahp.dialects.v0_2.actions_down import action_down
from ahp.dialects.v0_2.actions_up import action_up
from ahp.dialects.v0_2.shapes import turn_down
from ahp.dialects.v0_2.states import (
    InternalSession,
    changeset_down,
    resource_watch_down,
    root_down,
    session_down,
    subagent_view,
    summary_down,
    terminal_down,
)
from ahp.dialects.v0_2.uris import SUBAGENT_SEGMENT, session_id, subagent_chat_of, subagent_session_uri, v02_session_uri
from ahp.dialects.v0_2.wire import METHODS
from ahp.state.channels import parse_subagent_chat_uri, session_of_default_chat
from ahp.state.clock import iso_timestamp
from host.errors import ProtocolViolation
from host.state.fanout import Resync
from host.transport.dialects.base import Dialect
from host.transport.dialects.v02_rules import check_v02_action

__all__ = ["Ahp02Dialect", "describe_params_error", "session_view", "v02_session_state", "v02_summary", "whole_view"]

logger = logging.getLogger(__name__)

_VISIBLE_KINDS = frozenset({"root", "terminal", "changeset", "resourceWatch"})
"""Kinds whose channels a 0.2.0 client names as the store does."""

_TOKENS = {
    "chat/delta": ("session/delta", ("turnId", "partId", "content")),
    "chat/reasoning": ("session/reasoning", ("turnId", "partId", "content")),
    "chat/toolCallDelta": ("session/toolCallDelta", ("turnId", "toolCallId", "content", "invocationMessage")),
}
"""Streamed tokens and their 0.2.0 form (a plain rename)."""

_SUMMARY_KEYS = {"title": "title", "status": "status", "activity": "activity", "project": "project",
                 "modifiedAt": "modifiedAt", "workingDirectories": "workingDirectory", "chats": "status",
                 "defaultChat": "status"}
"""Internal summary fields → the 0.2.0 summary field they show as."""


_SNAPSHOT_AFTER = frozenset({
    "session/workingDirectorySet", "session/workingDirectoryRemoved", "session/workingDirectoryReplaced",
    "session/defaultChatChanged", "session/chatRemoved",
})
"""Session actions that may change what 0.2.0 shows in a way no 0.2.0 action says (the first
working directory, the default chat): live, the edge sees the states around them and resyncs the
clients when it must (``Resync``); in a ``reconnect`` replay those states are gone, so a replay
that holds one is answered with snapshots."""


def _needs_snapshot(action: dict[str, Any]) -> bool:
    """Whether a replay holding ``action`` is answered with snapshots (``Ahp02Dialect.replayed``)."""
    kind = action.get("type")
    return kind in _SNAPSHOT_AFTER or kind == "chat/turnResume" or (
        kind == "chat/toolCallResultConfirmed" and action.get("_meta") is not None)


@lru_cache(maxsize=1024)
def _chat_names(chat: str) -> tuple[str | None, str | None, str | None]:
    """What 0.2.0 makes of a chat channel: the session whose default chat it is, else the
    projected session of a sub-agent's chat (None and None: any other chat), and the 0.2.0 session
    URI its tokens go out on. Pure in the URI, so kept for the chats streaming now rather than
    parsed again for every token."""
    session = session_of_default_chat(chat)
    projected = subagent_session_uri(chat) if session is None else None
    return session, projected, v02_session_uri(session or projected)


def _is_token(action: dict[str, Any]) -> bool:
    action_type = action.get("type")
    return action_type in _TOKENS and (action_type != "chat/toolCallDelta" or action.get("content") is not None)


def created_at(state: dict[str, Any] | None) -> str:
    """A session's creation time (ISO), kept by the host in the session's ``_meta``."""
    meta = (state or {}).get("_meta")
    created = meta.get("createdAt") if isinstance(meta, dict) else None
    return created if isinstance(created, str) else str(iso_timestamp(0))  # never None for 0


def session_view(store: Any, uri: str, state: dict[str, Any] | None = None,
                 chat: tuple[str, dict[str, Any] | None] | None = None) -> InternalSession | None:
    """The internal session ``uri`` as a 0.2.0 view is made from it: its state (or ``state``) and
    its default chat's (or ``chat``'s)."""
    state = state if state is not None else store.state(uri)
    if not isinstance(state, dict):
        return None
    chats: dict[str, Any] = {}
    default = state.get("defaultChat")
    if chat is not None and chat[1] is not None:
        chats[chat[0]] = chat[1]
    elif isinstance(default, str):
        chat_state = store.state(default)
        if chat_state is not None:
            chats[default] = chat_state
    return InternalSession(uri=uri, state=state, chats=chats, created_at=created_at(state))


def whole_view(store: Any, uri: str, state: dict[str, Any] | None = None,
               chat: tuple[str, dict[str, Any] | None] | None = None) -> InternalSession | None:
    """``session_view`` with every completed turn of the default chat, also those older than
    its state holds (read back by the store): what a 0.2.0 snapshot shows. 0.2.0 has no paging
    into state, and its reducers act on turn ids, so a 0.2.0 client holds the whole session."""
    view = session_view(store, uri, state, chat)
    if view is None:
        return None
    for chat_uri, chat_state in view.chats.items():
        if isinstance(chat_state, dict) and store.older_turn_count(chat_uri):
            whole = {key: value for key, value in chat_state.items() if key != "turnsNextCursor"}
            whole["turns"] = store.turns(chat_uri)
            view = InternalSession(uri=view.uri, state=view.state, chats={**view.chats, chat_uri: whole},
                                   created_at=view.created_at)
    return view


def subagent_session_view(store: Any, chat: str, state: dict[str, Any] | None = None) -> InternalSession | None:
    """The projected session 0.2.0 is shown for the sub-agent chat ``chat`` (its state, or
    ``state``, with every completed turn as in ``whole_view``); None when ``chat`` is no
    sub-agent chat of a live session."""
    parsed = parse_subagent_chat_uri(chat)
    parent = store.state(parsed[0]) if parsed is not None else None
    state = state if state is not None else store.state(chat)
    if parent is None or state is None:
        return None
    if store.older_turn_count(chat):
        state = {**{key: value for key, value in state.items() if key != "turnsNextCursor"}, "turns": store.turns(chat)}
    return subagent_view(parent, chat, state, created_at(parent))


def _down_state(view: InternalSession) -> dict[str, Any] | None:
    shown = session_down(view)
    if shown is None:
        return None
    meta = shown.get("_meta")
    if isinstance(meta, dict) and "createdAt" in meta:  # the host's bookkeeping, not the session's _meta
        rest = {key: value for key, value in meta.items() if key != "createdAt"}
        shown = {key: value for key, value in shown.items() if key != "_meta"}
        if rest:
            shown["_meta"] = rest
    return shown


def v02_session_state(host: Any, name: Any) -> dict[str, Any] | None:
    """The 0.2.0 ``SessionState`` a 0.2.0 client is shown of the session ``name`` (its 0.2.0 or
    internal URI), None when there is none."""
    uri = host.session_uri(name)
    view = whole_view(host.store, uri) if uri is not None else None
    return _down_state(view) if view is not None else None


def v02_summary(store: Any, uri: str) -> dict[str, Any] | None:
    """The 0.2.0 ``SessionSummary`` of the internal session ``uri`` (the summary of its 0.2.0
    state, without projecting its turns: every summary change of a long session costs the same)."""
    view = session_view(store, uri)
    return summary_down(view) if view is not None else None


class Ahp02Dialect(Dialect):
    """AHP 0.2.0 (and its later patches)."""

    def params(self, method: str, params: Any) -> dict[str, Any]:
        params = super().params(method, params)
        spec = METHODS.get(method)
        if spec is not None and spec.params_model is not None:
            try:
                spec.params_model.model_validate(params)
            except ValidationError as error:
                raise ProtocolViolation.invalid_params(describe_params_error(method, error)) from None
        return params

    # -- channel names -------------------------------------------------------------------------

    def internal_uri(self, host: Any, channel: Any) -> Any:
        if session_id(channel) is not None:
            return host.session_uri(channel) or _subagent_chat(host, channel)
        if host.store.kind(channel) in ("session", "chat"):
            return None  # internal names mean nothing to 0.2.0
        return channel

    def internal_channels(self, host: Any, channel: Any) -> list[str] | None:
        if not isinstance(channel, str):
            return None
        if session_id(channel) is not None:
            uri = host.session_uri(channel)
            if uri is None:
                chat = _subagent_chat(host, channel)
                return [chat] if chat is not None else None
            chat = (host.store.state(uri) or {}).get("defaultChat")
            return [uri, chat] if isinstance(chat, str) and chat in host.store else [uri]
        if channel in host.store and host.store.kind(channel) in _VISIBLE_KINDS:
            return [channel]
        return None

    def sees_kind(self, kind: str | None) -> bool:
        return kind in ("session", "chat") or kind in _VISIBLE_KINDS  # a chat: a sub-agent's projected session

    def snapshot(self, host: Any, channel: str, snapshots: list[dict[str, Any]]) -> dict[str, Any]:
        first = snapshots[0]
        store = host.store
        kind = store.kind(first["resource"])
        if kind == "session":
            chat = snapshots[1] if len(snapshots) > 1 else None
            view = whole_view(store, first["resource"], first["state"],
                              (chat["resource"], chat["state"]) if chat is not None else None)
            state = _down_state(view) if view is not None else None
            return {"resource": channel, "state": state, "fromSeq": first["fromSeq"]}
        if kind == "chat":
            view = subagent_session_view(store, first["resource"], first["state"])
            return {"resource": channel, "state": _down_state(view) if view is not None else None, "fromSeq": first["fromSeq"]}
        return {**first, "state": _state_down(kind, first["state"])}

    def list_sessions(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        items = []
        for summary in host.list_sessions():
            shown = v02_summary(host.store, summary["resource"])
            if shown is not None:
                meta = host.listing_meta(summary["resource"])
                if meta:
                    shown = {**shown, "_meta": {**(shown.get("_meta") or {}), **meta}}
                items.append(shown)
        items.sort(key=lambda item: item.get("modifiedAt") or 0, reverse=True)
        return {"items": items}

    def session_summary(self, host: Any, uri: str) -> dict[str, Any] | None:
        return v02_summary(host.store, uri)

    def fetch_turns(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        """0.2.0's paging: turns before ``before`` (newest last), in 0.2.0 shapes."""
        channel = _subagent_chat(host, params["channel"]) or params["channel"]
        page = host.fetch_turns(channel, params.get("before"), params.get("limit"))
        return {**page, "turns": [turn_down(turn) for turn in page["turns"]]}

    # -- actions -------------------------------------------------------------------------------

    def lift(self, host: Any, channel: str, action: Any, client_id: str = "") -> tuple[list[tuple[str, Any]], str | None]:
        action_type = action.get("type") if isinstance(action, dict) else None
        store = host.store
        if isinstance(action_type, str) and not known_to("0.2.0", action_type) and introduced_in(action_type) is not None:
            return [], (f"{action_type} came with AHP {introduced_in(action_type)}; this connection "
                        f"negotiated AHP {self.version}, which does not have it.")
        internal = self.internal_uri(host, channel)
        kind = store.kind(internal) if isinstance(internal, str) else None
        if kind is None:
            return [], f"No channel {channel} on this host."
        if kind == "session" and action_type == "session/truncated":
            _load_through(store, (store.state(internal) or {}).get("defaultChat"), action.get("turnId"))
        if kind in ("session", "chat"):
            view = session_view(store, internal) if kind == "session" else subagent_session_view(store, internal)
            shown = _down_state(view) if view is not None else None
            kind = "session"
        else:
            shown = _state_down(kind, store.state(internal))
        reason = check_v02_action(kind, shown or {}, action, client_id)
        up = self.take_up(host, channel, action)
        if reason is not None:
            return [], reason
        if up.refused is not None:
            return [], up.refused
        return list(up.envelopes), None

    def take_up(self, host: Any, channel: str, action: Any) -> Any:
        """``action_up`` with the host's lookups (a rejected action's internal form is what the
        store's rejection observers are shown)."""
        store = host.store

        def provider_of(ident: str) -> str | None:
            parent, _, _ = ident.rpartition(SUBAGENT_SEGMENT)  # a sub-agent's: its session's provider
            uri = host.session_uri(f"ahp-session:/{parent or ident}")
            if uri is None:
                return None
            return (store.state(uri) or {}).get("provider") or uri.split(":", 1)[0]

        def session_of(uri: str) -> InternalSession | None:
            chat = subagent_chat_of(uri)
            return session_view(store, uri) if chat is None else subagent_session_view(store, chat)

        return action_up(channel, action, now=host.clock(), provider_of=provider_of, session_of=session_of)

    def replayed(self, host: Any, envelopes: Any) -> list[dict[str, Any]] | None:
        """None (snapshots) when an action whose 0.2.0 form depends on the states around it is
        among them: ``_SNAPSHOT_AFTER``, ``chat/turnResume`` (its 0.2.0 actions are built from
        the states around it, ``actions_down._resumed``) and a result confirmation that carries
        ``_meta`` (who answered: live, the turn is said again, ``actions_down._turn_again``): a
        replay has those states only as they are now, so it would say them wrongly or not at all."""
        envelopes = list(envelopes)
        if any(_needs_snapshot(envelope["action"]) for envelope in envelopes):
            return None
        shown: list[dict[str, Any]] = []
        for envelope in envelopes:
            item = self.replay_envelope(host, envelope)
            if isinstance(item, list):
                shown.extend(item)
            elif item is not None:
                shown.append(item)
        return shown

    # -- the translator ------------------------------------------------------------------------

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return kind in ("session", "chat") and not _is_token(action)

    def envelope(self, kind: str | None, envelope: dict[str, Any], change: Any) -> Any:
        action = envelope["action"]
        channel = envelope["channel"]
        token = _TOKENS.get(action.get("type")) if kind == "chat" else None
        if token is not None and (token[0] != "session/toolCallDelta" or action.get("content") is not None):
            # Nearly every envelope is a streamed token: renamed on its own, without the checks below.
            target = _chat_names(channel)[2]
            if target is None:
                return None  # another chat than the default or a sub-agent's: 0.2.0 sees nothing of it
            shown = {"type": token[0]}
            for key in token[1]:
                if key in action:
                    shown[key] = action[key]
            return _wrapped(envelope, target, shown)
        if kind in _VISIBLE_KINDS:
            down = action_down(kind, channel, action)
        elif kind == "chat":
            session, projected, target = _chat_names(channel)
            if session is None and projected is None:
                return None  # another chat than the default or a sub-agent's: 0.2.0 sees nothing of it
            if action.get("type") == "chat/turnsLoaded":
                return None  # a 0.2.0 client holds every turn already (``whole_view``)
            store = change.store if change is not None else None
            if store is None or change.before is None:
                return None
            if session is None:
                before = subagent_session_view(store, channel, change.before)
                after = subagent_session_view(store, channel, change.after)
            else:
                before = session_view(store, session, chat=(channel, change.before))
                after = session_view(store, session, chat=(channel, change.after))
            if before is None or after is None:
                return None
            down = action_down("chat", channel, action, before, after)
        elif kind == "session":
            if change is None or change.before is None:
                return None
            store = change.store
            before = session_view(store, channel, change.before)
            after = session_view(store, channel, change.after)
            if before is None or after is None:
                return None
            down = action_down("session", channel, action, before, after)
        else:
            return None
        if down.stale is not None:
            if action.get("type") in _SNAPSHOT_AFTER:
                # No 0.2.0 action can say it: the clients take a fresh snapshot (they reconnect).
                return Resync(f"AHP 0.2.0 cannot say this change: {down.stale}; reconnect for fresh snapshots")
            logger.debug("0.2.0 clients' view of %s drifts: %s", channel, down.stale)
        if down.channel is None or not down.actions:
            return None
        if len(down.actions) == 1:
            return _wrapped(envelope, down.channel, down.actions[0])
        # The dispatching client expects one echo: the origin rides on the last of them.
        last = len(down.actions) - 1
        return [_wrapped(envelope, down.channel, item, index == last) for index, item in enumerate(down.actions)]

    def replay_envelope(self, host: Any, envelope: dict[str, Any]) -> Any:
        """A past envelope in 0.2.0 shapes, with the current states standing in for the ones
        around it."""
        store = host.store
        kind = store.kind(envelope["channel"])
        if kind == "chat" and not _is_token(envelope["action"]):
            state = store.state(envelope["channel"])
            return self.envelope(kind, envelope, _Now(state, state, store))
        if kind == "session":
            state = store.state(envelope["channel"])
            return self.envelope(kind, envelope, _Now(state, state, store))
        return self.envelope(kind, envelope, None)

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any = None) -> dict[str, Any] | None:
        if not notification_known_to("0.2.0", method):
            return None
        if method == "root/sessionAdded" and store is not None:
            summary = params.get("summary")
            uri = summary.get("resource") if isinstance(summary, dict) else None
            shown = v02_summary(store, uri) if isinstance(uri, str) else None
            return None if shown is None else {**params, "summary": shown}
        if method == "root/sessionRemoved":
            target = v02_session_uri(params.get("session"))
            return None if target is None else {**params, "session": target}
        if method == "root/sessionSummaryChanged" and store is not None:
            uri = params.get("session")
            shown = v02_summary(store, uri) if isinstance(uri, str) else None
            target = v02_session_uri(uri)
            if shown is None or target is None:
                return None
            changes = params.get("changes")
            if not isinstance(changes, dict):
                changes = {}
            fields = {_SUMMARY_KEYS[key] for key in changes if key in _SUMMARY_KEYS}
            shown_changes = {field: shown[field] for field in sorted(fields) if field in shown}
            return {**params, "session": target, "changes": shown_changes} if shown_changes else None
        return params


def _load_through(store: Any, chat: Any, turn_id: Any) -> None:
    """Before a 0.2.0 truncation at a turn older than the chat's state holds is taken up (it
    reads the turns kept), load the turns from that one on into the state."""
    if not isinstance(chat, str) or turn_id is None or not store.older_turn_count(chat):
        return
    ids = store.turn_ids(chat)
    if turn_id in ids:
        store.load_older(chat, ids.index(turn_id))


def _subagent_chat(host: Any, name: Any) -> str | None:
    """The sub-agent chat whose projected session 0.2.0 names ``name``, if it is in the store."""

    def provider_of(ident: str) -> str | None:
        uri = host.session_uri(f"ahp-session:/{ident}")
        return (host.store.state(uri) or {}).get("provider") if uri is not None else None

    chat = subagent_chat_of(name, provider_of)
    return chat if chat is not None and host.store.kind(chat) == "chat" else None


class _Now:
    """A stand-in ``host.state.fanout.Change`` for a replayed envelope: the current states."""

    __slots__ = ("before", "after", "store")

    def __init__(self, before: Any, after: Any, store: Any) -> None:
        self.before, self.after, self.store = before, after, store


def _wrapped(envelope: dict[str, Any], channel: str, action: dict[str, Any], origin: bool = True) -> dict[str, Any]:
    shown = {"channel": channel, "action": action, "serverSeq": envelope["serverSeq"]}
    if origin and "origin" in envelope:
        shown["origin"] = envelope["origin"]
    return shown


def _state_down(kind: str | None, state: Any) -> Any:
    if kind == "root":
        return root_down(state)
    if kind == "terminal":
        return terminal_down(state)
    if kind == "changeset":
        return changeset_down(state)
    if kind == "resourceWatch":
        return resource_watch_down(state)
    return state


def describe_params_error(method: str, error: Any) -> str:
    problems = []
    for item in error.errors()[:3]:
        where = ".".join(str(part) for part in item.get("loc", ()) if not (isinstance(part, str) and part[:1].isupper()))
        where = where or "params"
        if item.get("type") == "missing":
            problems.append(f"{where} is required")
        else:
            problems.append(f"{where} has the wrong type or value")
    return f"Invalid {method} params: " + "; ".join(problems) + "."

