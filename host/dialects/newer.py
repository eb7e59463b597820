"""AHP 0.7.0 and 0.9.0 on today's store: the root channel and the session list now, sessions later.

What a 0.7.0 or 0.9.0 connection gets from this host build:

* the root channel in its own shapes (``projection``): agents and their models, the active
  session count, the root config (``host.root_config``), the terminal list;
* ``root/configChanged`` dispatched by the client, merged and echoed to every root subscriber;
* ``listSessions`` with ``limit``/``cursor``/``nextCursor``, the summaries in the newer shape;
  ``ping``, ``authenticate``, the ``resource*`` family and resource watches (their shapes did not
  change since 0.2.0); the 0.9.0 automation commands (this host has no automations: an empty
  trigger catalogue, ``NotFound`` for a run);
* for everything about sessions, chats, terminals and changesets (``createSession``,
  ``subscribe`` to such a channel, ``createChat``, ``fetchTurns``, their actions...) a clear
  error or rejection saying this build does not serve them to the version yet.

Actions and notifications go out only if the negotiated version knows their type
(``ahp.dialects.registry``), after translation. Params are checked against the vendored 0.7.0
schema (``ahp.dialects.params``), read on the first request of such a client.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from ahp.dialects.params import PARAMS_0_7
from ahp.dialects.registry import ACTION_INTRODUCED_IN, ACTION_REMOVED_IN, action_known, notification_known
from host.dialects import projection
from host.dialects.base import Dialect, not_served_yet
from host.errors import ProtocolViolation, RpcError

__all__ = ["NewerDialect", "PAGE_MAX"]

PAGE_MAX = 500
"""The most session summaries one ``listSessions`` page holds (also the page size when the client
gives no ``limit``)."""

_SERVED_KINDS = frozenset({"root", "resourceWatch"})
_WHAT = {"session": "sessions", "chat": "chats", "terminal": "terminals", "changeset": "changesets",
         "annotations": "annotations", "automation": "automations", "automationRun": "automations"}
"""What a channel kind (or an action type's prefix) is, in a "not served yet" message."""

_PENDING = {
    "createSession": "sessions", "disposeSession": "sessions", "resolveSessionConfig": "sessions",
    "sessionConfigCompletions": "sessions",
    "createChat": "chats", "disposeChat": "chats", "fetchTurns": "chats", "completions": "chats",
    "createTerminal": "terminals", "disposeTerminal": "terminals",
    "invokeChangesetOperation": "changesets",
}


class NewerDialect(Dialect):
    """AHP 0.7.0 / 0.9.0 (and their later patches) on the 0.2.0 store."""

    pending = _PENDING

    @property
    def translator(self) -> "NewerDialect":  # type: ignore[override]
        return self  # one instance per negotiated version (host.dialects.dialect_for)

    # -- params and results --------------------------------------------------------------------

    def params(self, method: str, params: Any) -> dict[str, Any]:
        params = super().params(method, params)
        problem = PARAMS_0_7.check(method, params)
        if problem is not None:
            raise ProtocolViolation.invalid_params(f"Invalid {method} params: {problem}.")
        return params

    def initialize_result(self, base: dict[str, Any]) -> dict[str, Any]:
        return {**base, "serverInfo": {"name": "agent-host"}}

    def channel_refusal(self, channel: str, kind: str | None) -> RpcError | None:
        if kind in _SERVED_KINDS or (kind is None and channel.startswith(("ahp-root:", "ahp-resource-watch:"))):
            return None
        return not_served_yet(_WHAT.get(kind or "", "sessions and chats"), self.version)

    def snapshot(self, kind: str, snapshot: dict[str, Any]) -> dict[str, Any]:
        if kind == "root":
            return {**snapshot, "state": projection.root_state(snapshot["state"], self.version)}
        if kind == "resourceWatch":
            return snapshot
        raise not_served_yet(_WHAT.get(kind, kind), self.version)

    def list_sessions(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        limit = params.get("limit")
        if limit is not None and (limit != int(limit) or limit < 1):
            raise ProtocolViolation.invalid_params("Invalid listSessions params: limit must be a whole number of at least 1.")
        after = _decode_cursor(params["cursor"]) if params.get("cursor") is not None else None
        page, last = host.page_sessions(min(int(limit or PAGE_MAX), PAGE_MAX), after)
        result: dict[str, Any] = {"items": [projection.session_summary(summary) for summary in page]}
        if last is not None:
            result["nextCursor"] = _encode_cursor(last)
        return result

    # -- actions and notifications --------------------------------------------------------------

    def lift(self, kind: str, action: Any) -> tuple[Any, str | None]:
        action_type = action.get("type") if isinstance(action, dict) else None
        if not isinstance(action_type, str):
            return action, None  # host.validation names what is wrong with it
        if not action_known(action_type, self.version):
            return None, self._unknown_type(action_type)
        prefix = action_type.split("/", 1)[0]
        if prefix not in _SERVED_KINDS or kind not in _SERVED_KINDS:
            what = _WHAT.get(prefix if prefix not in _SERVED_KINDS else kind, "sessions and chats")
            return None, (f"This host build does not serve {what} to AHP {self.version} clients yet, so it "
                          f"cannot apply {action_type} here.")
        return action, None  # root and resource-watch actions have the store's shapes

    def _unknown_type(self, action_type: str) -> str:
        removed = ACTION_REMOVED_IN.get(action_type)
        if removed is not None:
            hint = ""
            if action_type.startswith("session/") and f"chat/{action_type[8:]}" in ACTION_INTRODUCED_IN:
                hint = f" Since {removed} a turn's actions are chat/* actions on an ahp-chat: channel (chat/{action_type[8:]})."
            return (f"{action_type} is an AHP 0.2.0 action that AHP {self.version}, the version this connection "
                    f"negotiated, does not have (it went in {removed}).{hint}")
        introduced = ACTION_INTRODUCED_IN.get(action_type)
        if introduced is not None:
            return (f"{action_type} came with AHP {introduced}; this connection negotiated AHP {self.version}, "
                    "which does not have it.")
        return f"Unknown action type {action_type!r} in AHP {self.version}."

    def envelope(self, kind: str, envelope: dict[str, Any]) -> dict[str, Any] | None:
        action = envelope["action"]
        if kind == "root":
            shown = projection.root_action(action, self.version)
        elif kind == "resourceWatch":
            shown = action
        else:
            return None  # nothing else is served to this version yet (no subscription exists)
        if shown is None or not action_known(shown.get("type"), self.version):
            return None
        return envelope if shown is action else {**envelope, "action": shown}

    def notification(self, kind: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        if not notification_known(method, self.version):
            return None
        if method == "root/sessionAdded" and isinstance(params.get("summary"), dict):
            return {**params, "summary": projection.session_summary(params["summary"])}
        if method == "root/sessionSummaryChanged" and isinstance(params.get("changes"), dict):
            changes = projection.summary_changes(params["changes"])
            return {**params, "changes": changes} if changes else None
        return params


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
