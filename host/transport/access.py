"""What each token level may do: the one table the WebSocket connection and AG-UI consult. Pure.

* ``read`` subscribes and reads: the handshake, subscriptions, ``listSessions``, ``fetchTurns``,
  the ``resource*`` reads, watches, completions and the session-config lookups. It changes
  nothing: no ``dispatchAction`` (so no messages, no cancels, no confirmation or question answers,
  no session or host config, no trust), no sessions, chats or terminals created or disposed, no
  files written, no changeset kept or undone.
* ``full`` may do everything (today's token; the host's own token is ``full``).

A method this table does not list as ``read`` needs ``full``: a method added later is refused to
a ``read`` token until someone decides otherwise here.

A refused request gets ``PermissionDenied`` (-32009) naming the token's level and the level the
method needs, with ``data`` ``{"tokenLevel", "requiredLevel", "token"}``; the connection stays
usable. A refused ``dispatchAction`` (a notification, which has no reply) gets the rejection
envelope every refused action gets, with the same sentence as its ``rejectionReason``.

``recorded_answer`` puts the name of the token that answered a tool call's confirmation into the
call's ``_meta`` (``answeredBy``: ``clientId`` and, for a named token, ``tokenName``), so every client,
also one that subscribes later, sees who approved or denied it; the action's other ``_meta`` and
the call's earlier ``_meta`` are kept (an action's ``_meta`` replaces the call's in the reducer).
"""

from __future__ import annotations

from typing import Any

from host.errors import ErrorCode, RpcError
from host.runtime.tools.answers import ANSWERED_BY
from host.transport.action_checks import tool_call
from host.transport.tokens import FULL, READ, Grant

__all__ = ["READ_METHODS", "action_refusal", "method_refusal", "recorded_answer", "required_level"]

READ_METHODS = frozenset({
    "initialize", "reconnect", "ping", "subscribe", "unsubscribe", "listSessions", "fetchTurns",
    "resourceRead", "resourceList", "resourceResolve", "createResourceWatch", "completions",
    "resolveSessionConfig", "sessionConfigCompletions", "listAutomationTriggerDefinitions", "fetchAutomationRuns",
    # VS Code sends it after initialize; it tells the host which of the client's settings it may change, and changes nothing here.
    "setClientManagedSettingsPermissions",
})
"""The methods a ``read`` token may call."""

_ANSWERS = frozenset({"chat/toolCallConfirmed", "chat/toolCallResultConfirmed"})


def required_level(method: str) -> str:
    return READ if method in READ_METHODS else FULL


def method_refusal(grant: Grant, method: str) -> RpcError | None:
    """Why ``grant`` may not call ``method``, or None."""
    needed = required_level(method)
    if grant.level == FULL or needed == READ:
        return None
    return RpcError(ErrorCode.PERMISSION_DENIED,
                    f"{method} needs a token of level {needed}; this connection uses {grant.describe()}, which may "
                    "subscribe and read but not change anything. Connect with a full token to do this.",
                    {"tokenLevel": grant.level, "requiredLevel": needed, "token": grant.name})


def action_refusal(grant: Grant, action_type: Any) -> str | None:
    """The ``rejectionReason`` for an action ``grant`` may not dispatch, or None."""
    if grant.level == FULL:
        return None
    what = f"{action_type}" if isinstance(action_type, str) else "An action"
    return (f"{what} needs a token of level {FULL}; this connection uses {grant.describe()}, which may subscribe "
            "and read but not dispatch actions (no messages, answers, cancels or config changes).")


def recorded_answer(action: dict[str, Any], state: dict[str, Any], grant: Grant, client_id: str) -> dict[str, Any]:
    """``action`` (of the internal model, for the chat whose state is ``state``) with who answered
    in its ``_meta`` when it answers a tool call's confirmation; any other action as it is."""
    if action.get("type") not in _ANSWERS:
        return action
    call = tool_call(state, action)
    if call is None:
        return action  # refused by the rules anyway
    earlier = call.get("_meta")
    own = action.get("_meta")
    if not isinstance(earlier, dict):
        earlier = {}
    if not isinstance(own, dict):
        own = {}
    who: dict[str, Any] = {"clientId": client_id}
    if grant.name is not None:
        who["tokenName"] = grant.name
    return {**action, "_meta": {**earlier, **own, ANSWERED_BY: who}}
