"""AHP 1.0.0 and 0.9.0 (the store's own model) and 0.7.0 (through ``ahp.dialects.v0_7``) at the edge.

* 1.0.0 and 0.9.0 are the identity: snapshots, envelopes and notifications are the store's own, gated by the
  version table (``ahp.dialects.catalogue``: a type the negotiated version does not know is not
  sent; an envelope it knows is the very object the store built, so its frame is reused).
* 0.7.0: snapshots through ``v0_7.state_down``, envelopes through ``v0_7.action_down`` (None: not
  sent), notifications through ``v0_7.notification_down``, a client's dispatch through
  ``v0_7.action_up``. Automation channels do not exist for it. A 0.9.0-only action that changes
  what a 0.7.0 client sees (``v0_7.RESYNC_AFTER``: a working directory replaced, the chats
  reordered), and the few whose 0.7.0 form depends on the states around them, are sent as
  ``v0_7.follow`` says: the 0.7.0 actions that make the same change, or, where none can (a chat
  marked read or archived), a ``Resync``: the connection is closed and its ``reconnect`` answered
  with fresh snapshots (0.7.0 has no message that carries a snapshot unasked). A replay that
  holds such an envelope is answered with snapshots too. So no 0.7.0 mirror goes stale.
* Both: VS Code names a turn's changeset ``<session URI>/changeset/turn/<turn id>`` whatever
  ``uriTemplate`` the catalogue gives; that name is an alias of the host's
  ``ahp-changeset:/<session id>/turn/<turn id>`` (``changeset_alias``), and its
  ``<session URI>/changeset/uncommitted`` (or ``/session``) of the session changeset
  ``ahp-changeset:/<session id>``, for ``subscribe`` (the snapshot names the alias; created
  empty on first subscribe) and
  ``invokeChangesetOperation``, and a connection subscribed to it gets the changeset's later
  actions under that name (``Renamed``: its own fan-out group, one per alias and version).
* Both: a dispatched action is checked against the version's vendored actions schema (1.0.0's for
  1.0.0 and 0.9.0, 0.7.0's for 0.7.0: ``ahp.dialects.params``) before anything else reads it; one
  that does not fit is refused with a ``rejectionReason`` naming the field, to the dispatcher
  alone, and the connection stays usable.
* Both: ``listSessions`` pages with ``limit``/``cursor``/``nextCursor``; params are checked
  against the vendored 0.7.0 schema (``ahp.dialects.params``, whose commands 0.9.0 shares).
  Each item's ``_meta`` carries the host's listing facts (``AgentHost.listing_meta``: first
  message, one-shot run), as 0.2.0's do.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ahp.dialects import v0_7
from ahp.dialects.catalogue import (
    ACTION_REMOVED_IN,
    action_types_known_to,
    introduced_in,
    known_to,
    notification_known_to,
)
from ahp.dialects.params import ACTIONS_0_7, ACTIONS_1_0, PARAMS_0_7, ActionCheck
from host.errors import ProtocolViolation
from host.resources.changesets.model import session_changeset, turn_changeset
from host.state.channels import STREAMED
from host.state.fanout import Resync
from host.transport.dialects.base import Dialect

__all__ = ["NewerDialect", "Ahp07Dialect", "PAGE_MAX", "Renamed", "changeset_alias"]

PAGE_MAX = 500
"""The most session summaries one ``listSessions`` page holds (also the page size when the client
gives no ``limit``)."""


class NewerDialect(Dialect):
    """AHP 1.0.0 (and every later 1.x) and 0.9.0 (and its later patches): the store's own shapes."""

    actions: ActionCheck = ACTIONS_1_0
    """What a dispatched action is checked against (the vendored 1.0.0 actions schema: 0.9.0's
    actions are 1.0.0's)."""

    def __init__(self, version: str, baseline: str) -> None:
        super().__init__(version, baseline)
        self._known_types = action_types_known_to(version)
        """The action types this version knows (``known_to``), looked up once per envelope."""
        cls = type(self)
        self.streams_as_is = (STREAMED <= self._known_types and cls.envelope is NewerDialect.envelope
                              and cls.wants_states is Dialect.wants_states)
        """True when this version knows every streamed append and this class shows them as
        ``envelope`` below does (unchanged), never wanting the states (``Dialect.streams_as_is``)."""

    def params(self, method: str, params: Any) -> dict[str, Any]:
        params = super().params(method, params)
        problem = PARAMS_0_7.check(method, params)
        if problem is not None:
            raise ProtocolViolation.invalid_params(f"Invalid {method} params: {problem}.")
        return params

    def initialize_result(self, base: dict[str, Any]) -> dict[str, Any]:
        return {**base, "serverInfo": {"name": "agent-host"}}

    # -- channels ------------------------------------------------------------------------------

    def internal_uri(self, host: Any, channel: Any) -> Any:
        return changeset_alias(host, channel) or channel

    def internal_channels(self, host: Any, channel: Any) -> list[str] | None:
        return super().internal_channels(host, self.internal_uri(host, channel))

    def translator_for(self, host: Any, channel: str, internal: str) -> Any:
        return Renamed(self.translator, internal, channel) if channel != internal else None

    def snapshot(self, host: Any, channel: str, snapshots: list[dict[str, Any]]) -> dict[str, Any]:
        snapshot = snapshots[0]
        return snapshot if snapshot.get("resource") == channel else {**snapshot, "resource": channel}

    def list_sessions(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        limit = params.get("limit")
        if limit is not None and (limit != int(limit) or limit < 1):
            raise ProtocolViolation.invalid_params("Invalid listSessions params: limit must be a whole number of at least 1.")
        after = _decode_cursor(params["cursor"]) if params.get("cursor") is not None else None
        page, last = host.page_sessions(min(int(limit or PAGE_MAX), PAGE_MAX), after)
        result: dict[str, Any] = {"items": [self.summary_down(_with_listing_meta(host, summary)) for summary in page]}
        if last is not None:
            result["nextCursor"] = _encode_cursor(last)
        return result

    def summary_down(self, summary: dict[str, Any]) -> dict[str, Any]:
        return summary

    # -- actions -------------------------------------------------------------------------------

    def lift(self, host: Any, channel: str, action: Any, client_id: str = "") -> tuple[list[tuple[str, Any]], str | None]:
        action_type = action.get("type") if isinstance(action, dict) else None
        if not isinstance(action_type, str):
            return [(channel, action)], None  # host.validation names what is wrong with it
        if not known_to(self.version, action_type):
            return [], self._unknown_type(action_type)
        problem = self.actions.check_action(action)
        if problem is not None:
            return [], (f"Invalid {action_type} action for AHP {self.version}: {problem}. "
                        "Send it as the version's schema defines it.")
        # A channel under VS Code's name of a changeset is dispatched to on the host's name of it.
        target = self.internal_uri(host, channel)
        return [(target, self.action_up(host.store.kind(target), target, action))], None

    def action_up(self, kind: str | None, channel: str, action: dict[str, Any]) -> dict[str, Any]:
        return action

    def _unknown_type(self, action_type: str) -> str:
        removed = ACTION_REMOVED_IN.get(action_type)
        if removed is not None:
            hint = ""
            if action_type.startswith("session/") and introduced_in(f"chat/{action_type[8:]}") is not None:
                hint = f" Since {removed} a turn's actions are chat/* actions on an ahp-chat: channel (chat/{action_type[8:]})."
            return (f"{action_type} is an AHP 0.2.0 action that AHP {self.version}, the version this connection "
                    f"negotiated, does not have (it went in {removed}).{hint}")
        introduced = introduced_in(action_type)
        if introduced is not None:
            return (f"{action_type} came with AHP {introduced}; this connection negotiated AHP {self.version}, "
                    "which does not have it.")
        return f"Unknown action type {action_type!r} in AHP {self.version}."

    def envelope(self, kind: str | None, envelope: dict[str, Any], change: Any) -> Any:
        return envelope if envelope["action"].get("type") in self._known_types else None

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any = None) -> dict[str, Any] | None:
        return params if notification_known_to(self.version, method) else None


class Ahp07Dialect(NewerDialect):
    """AHP 0.7.0 (and its later patches) through ``ahp.dialects.v0_7``."""

    actions = ACTIONS_0_7

    def sees_kind(self, kind: str | None) -> bool:
        return kind is None or kind in v0_7.KINDS

    def snapshot(self, host: Any, channel: str, snapshots: list[dict[str, Any]]) -> dict[str, Any]:
        snapshot = super().snapshot(host, channel, snapshots)
        kind = host.store.kind(self.internal_uri(host, channel)) or ""
        return {**snapshot, "state": v0_7.state_down(kind, snapshot["state"])}

    def summary_down(self, summary: dict[str, Any]) -> dict[str, Any]:
        shown = v0_7.notification_down("root/sessionAdded", {"summary": summary})
        return shown["summary"] if isinstance(shown, dict) else summary

    def action_up(self, kind: str | None, channel: str, action: dict[str, Any]) -> dict[str, Any]:
        lifted = v0_7.action_up(kind or "", action, channel=channel)
        return lifted if lifted is not None else action

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return action.get("type") in v0_7.FOLLOWED_WITH_STATES

    def envelope(self, kind: str | None, envelope: dict[str, Any], change: Any) -> Any:
        action = envelope["action"]
        action_type = action.get("type")
        if action_type in v0_7.FOLLOWED_WITH_STATES and change is not None and change.before is not None:
            followed = v0_7.follow(kind or "", change.before, change.after, action)
            if followed is None:
                return Resync(f"AHP 0.7.0 has no action for {action_type}: reconnect for fresh snapshots")
            shown_list = [envelope if each is action else {**envelope, "action": each} for each in followed]
            return (shown_list[0] if len(shown_list) == 1 else shown_list) or None
        shown = v0_7.action_down(kind or "", action)
        if shown is None:
            return None
        return envelope if shown is action else {**envelope, "action": shown}

    def replayed(self, host: Any, envelopes: Any) -> list[dict[str, Any]] | None:
        envelopes = list(envelopes)
        if any(envelope["action"].get("type") in v0_7.FOLLOWED_WITH_STATES for envelope in envelopes):
            return None  # their 0.7.0 form needs the states around them, gone now: snapshots instead
        return super().replayed(host, envelopes)

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any = None) -> dict[str, Any] | None:
        return v0_7.notification_down(method, params)


@dataclass(frozen=True)
class Renamed:
    """A translator that sends one store channel under another name (a changeset VS Code names
    its own way): ``inner``'s shapes, with ``channel`` renamed in every envelope of it."""

    inner: Any
    internal: str
    name: str

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return self.inner is not None and self.inner.wants_states(kind, action)

    def envelope(self, kind: str | None, envelope: dict[str, Any], change: Any) -> Any:
        shown = envelope if self.inner is None else self.inner.envelope(kind, envelope, change)
        if isinstance(shown, list):
            return [self._renamed(item) for item in shown]
        return None if shown is None else self._renamed(shown)

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any = None) -> dict[str, Any] | None:
        return params if self.inner is None else self.inner.notification(kind, method, params, store)

    def _renamed(self, envelope: dict[str, Any]) -> dict[str, Any]:
        return {**envelope, "channel": self.name} if envelope.get("channel") == self.internal else envelope


_VSCODE_TURN = "/changeset/turn/"
_VSCODE_SESSION = ("/changeset/uncommitted", "/changeset/session")
"""VS Code's names of what this host's session changeset holds: what the session changed and
nobody has kept or undone yet. (Its ``/changeset/branch``, a git branch against its base, has no
counterpart here and stays unknown.)"""


def changeset_alias(host: Any, channel: Any) -> str | None:
    """The host's name of a changeset named the way VS Code names it (``<session
    URI>/changeset/turn/<turn id>``, ``/changeset/uncommitted`` or ``/changeset/session``, the
    session one this host holds), else None."""
    if not isinstance(channel, str) or "/changeset/" not in channel:
        return None
    for suffix in _VSCODE_SESSION:
        if channel.endswith(suffix):
            session = channel[:-len(suffix)]
            return session_changeset(session) if host.store.kind(session) == "session" else None
    if _VSCODE_TURN not in channel:
        return None
    session, _, turn_id = channel.rpartition(_VSCODE_TURN)
    turn_id = unquote(turn_id)
    if not turn_id or "/" in turn_id or host.store.kind(session) != "session":
        return None
    return turn_changeset(session, turn_id)


def _encode_cursor(key: tuple[int, str]) -> str:
    text = json.dumps([key[0], key[1]], separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _decode_cursor(cursor: Any) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(str(cursor) + "=" * (-len(str(cursor)) % 4))
        value = json.loads(raw)
        if isinstance(value, list) and len(value) == 2 and isinstance(value[0], int) and isinstance(value[1], str):
            return value[0], value[1]
    except (binascii.Error, ValueError, UnicodeDecodeError):
        pass
    raise ProtocolViolation.invalid_params(
        "Invalid listSessions params: cursor is not one this host gave out; list again without a cursor.")


def _with_listing_meta(host: Any, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with the host's listing facts (first message, one-shot) in ``_meta``."""
    meta = host.listing_meta(summary["resource"])
    return {**summary, "_meta": {**(summary.get("_meta") or {}), **meta}} if meta else summary
