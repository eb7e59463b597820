"""Which action types, notifications and client methods each protocol version knows: the version tables.

After ``initialize`` the host may send a client only the action types and notifications its
negotiated version knows [VERSIONS.md §1, versioning.md]. Upstream gates this with "introduced in"
maps (``ACTION_INTRODUCED_IN`` / ``NOTIFICATION_INTRODUCED_IN`` of ``types/version/registry.ts``):
a type is known to a version when it was introduced at or below it. Those maps describe the
0.4.0+ line only, and 0.2.0 is another ``0.MINOR`` line: the 0.4.0 chat split removed every
per-turn ``session/*`` action, 0.5.0 removed four more, and 0.6.0 renamed a changeset action. So a
type here has a version that introduced it and, if it is gone, the version that removed it:

    ``known_to(version, type)``  ⇔  ``introduced ≤ version`` and (never removed or ``version < removed``)

Sources:

* ``ACTION_INTRODUCED_IN`` and ``NOTIFICATION_INTRODUCED_IN``: the 1.0.0 registry [REG-1.0],
  VERSIONS.md §4/§5 (106 action types: 85 in 0.7.0, 10 added in 0.8.0, 9 in 0.9.0, 2 in 0.10.0;
  notifications ``channel/*`` and ``tcp/*`` are 1.1.0). The automation wire names are the 1.0.0
  actions schema's.
* Types of the 0.2.0 line that the registry no longer lists, with the version that introduced them
  in the 0.2.0 catalogue (``ahp.dialects.v0_2.wire.actions``; the set is
  ``ahp.dialects.v0_2.state.ACTION_TYPES``) and the one that removed them: the per-turn
  ``session/*`` actions and the session input/pending actions moved to ``chat/*`` in 0.4.0
  [TSCL 0.4.0]; ``session/activeClientChanged``, ``session/activeClientToolsChanged``,
  ``session/modelChanged`` and ``session/agentChanged`` went in 0.5.0 [TSCL 0.5.0];
  ``changeset/filesReviewedChanged`` (0.5.2) became ``changeset/filesReviewChanged`` in 0.6.0
  [Go client changelog 0.5.2, 0.6.0]. ``session/chatsChanged`` (0.4.0 only, never in a registry) is
  not listed.

``CLIENT_REQUESTS`` / ``CLIENT_NOTIFICATIONS`` list, per served baseline, the client→host methods
that version defines (0.2.0: the vendored 0.2.0 method table; 0.7.0: the commands of the vendored
0.7.0 schema; 0.9.0: those plus the automation commands of 0.8.0; 1.0.0: the same as 0.9.0, whose
registry adds no action, notification or method in 1.0.0 [REG-1.0]). ``setClientManagedSettingsPermissions``
is in no schema: VS Code 1.139.1 sends it on 0.9.0 connections, so the newer baselines list it as a
notification.

Versions are ``MAJOR.MINOR.PATCH`` strings; a malformed version knows nothing. Everything here is
pure data and total functions; ``known_to`` and ``notification_known_to`` are memoised (bounded: a
client can make up action types), as the fan-out asks them once per envelope per connection group.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

__all__ = [
    "ACTION_INTRODUCED_IN",
    "ACTION_REMOVED_IN",
    "ACTION_TYPES_0_2",
    "CLIENT_NOTIFICATIONS",
    "CLIENT_REQUESTS",
    "LEGACY_ACTION_INTRODUCED_IN",
    "NOTIFICATION_INTRODUCED_IN",
    "action_types_known_to",
    "introduced_in",
    "known_to",
    "notification_known_to",
    "parse_version",
]

ACTION_INTRODUCED_IN: dict[str, str] = {
    # 0.1.0
    "root/agentsChanged": "0.1.0",
    "root/activeSessionsChanged": "0.1.0",
    "root/terminalsChanged": "0.1.0",
    "root/configChanged": "0.1.0",
    "session/ready": "0.1.0",
    "session/creationFailed": "0.1.0",
    "session/titleChanged": "0.1.0",
    "session/serverToolsChanged": "0.1.0",
    "session/customizationsChanged": "0.1.0",
    "session/customizationToggled": "0.1.0",
    "session/customizationUpdated": "0.1.0",
    "session/isReadChanged": "0.1.0",
    "session/isArchivedChanged": "0.1.0",
    "session/activityChanged": "0.1.0",
    "session/configChanged": "0.1.0",
    "session/metaChanged": "0.1.0",
    "terminal/data": "0.1.0",
    "terminal/input": "0.1.0",
    "terminal/resized": "0.1.0",
    "terminal/claimed": "0.1.0",
    "terminal/titleChanged": "0.1.0",
    "terminal/cwdChanged": "0.1.0",
    "terminal/exited": "0.1.0",
    "terminal/cleared": "0.1.0",
    "terminal/commandDetectionAvailable": "0.1.0",
    "terminal/commandExecuted": "0.1.0",
    "terminal/commandFinished": "0.1.0",
    # 0.2.0
    "session/customizationRemoved": "0.2.0",
    "session/changesetsChanged": "0.2.0",
    "changeset/statusChanged": "0.2.0",
    "changeset/fileSet": "0.2.0",
    "changeset/fileRemoved": "0.2.0",
    "changeset/operationsChanged": "0.2.0",
    "changeset/cleared": "0.2.0",
    "resourceWatch/changed": "0.2.0",
    # 0.3.0
    "session/mcpServerStateChanged": "0.3.0",
    "changeset/operationStatusChanged": "0.3.0",
    # 0.4.0
    "session/chatAdded": "0.4.0",
    "session/chatRemoved": "0.4.0",
    "session/chatUpdated": "0.4.0",
    "session/defaultChatChanged": "0.4.0",
    "chat/turnStarted": "0.4.0",
    "chat/delta": "0.4.0",
    "chat/responsePart": "0.4.0",
    "chat/toolCallStart": "0.4.0",
    "chat/toolCallDelta": "0.4.0",
    "chat/toolCallReady": "0.4.0",
    "chat/toolCallConfirmed": "0.4.0",
    "chat/toolCallComplete": "0.4.0",
    "chat/toolCallResultConfirmed": "0.4.0",
    "chat/toolCallContentChanged": "0.4.0",
    "chat/turnComplete": "0.4.0",
    "chat/turnCancelled": "0.4.0",
    "chat/error": "0.4.0",
    "chat/usage": "0.4.0",
    "chat/reasoning": "0.4.0",
    "chat/pendingMessageSet": "0.4.0",
    "chat/pendingMessageRemoved": "0.4.0",
    "chat/queuedMessagesReordered": "0.4.0",
    "chat/inputRequested": "0.4.0",
    "chat/inputAnswerChanged": "0.4.0",
    "chat/inputCompleted": "0.4.0",
    "chat/truncated": "0.4.0",
    "changeset/contentChanged": "0.4.0",
    "annotations/set": "0.4.0",
    "annotations/updated": "0.4.0",
    "annotations/removed": "0.4.0",
    "annotations/entrySet": "0.4.0",
    "annotations/entryRemoved": "0.4.0",
    # 0.5.0
    "session/activeClientSet": "0.5.0",
    "session/activeClientRemoved": "0.5.0",
    "chat/activityChanged": "0.5.0",
    "chat/draftChanged": "0.5.0",
    # 0.5.1
    "session/inputNeededSet": "0.5.1",
    "session/inputNeededRemoved": "0.5.1",
    "chat/turnsLoaded": "0.5.1",
    # 0.5.2
    "session/mcpServerStartRequested": "0.5.2",
    "session/mcpServerStopRequested": "0.5.2",
    # 0.6.0
    "chat/toolCallAuthRequired": "0.6.0",
    "chat/toolCallAuthResolved": "0.6.0",
    "changeset/filesReviewChanged": "0.6.0",
    # 0.7.0
    "session/workingDirectorySet": "0.7.0",
    "session/workingDirectoryRemoved": "0.7.0",
    "chat/workingDirectorySet": "0.7.0",
    "chat/workingDirectoryRemoved": "0.7.0",
    # 0.8.0
    "session/workingDirectoryReplaced": "0.8.0",
    "automation/createRequested": "0.8.0",
    "automation/updateRequested": "0.8.0",
    "automation/set": "0.8.0",
    "automation/removed": "0.8.0",
    "automationRun/lifecycleChanged": "0.8.0",
    "automationRun/sessionSet": "0.8.0",
    "automationRun/sessionRemoved": "0.8.0",
    "automationRun/primarySessionChanged": "0.8.0",
    "automationRun/cancelRequested": "0.8.0",
    # 0.9.0
    "session/chatsReordered": "0.9.0",
    "session/mcpServerBackgroundRequested": "0.9.0",
    "chat/turnResume": "0.9.0",
    "chat/backgroundWorkSet": "0.9.0",
    "chat/backgroundWorkRemoved": "0.9.0",
    "chat/movableChanged": "0.9.0",
    "chat/changesetsChanged": "0.9.0",
    "chat/isReadChanged": "0.9.0",
    "chat/isArchivedChanged": "0.9.0",
    # 0.10.0 (not part of the 0.9.0 model)
    "chat/canvasesChanged": "0.10.0",
    "canvas/stateChanged": "0.10.0",
}
"""Every action type of the 1.0.0 registry → the version that introduced it [REG-1.0]."""

_SESSION_TURN_ACTIONS_0_2 = (
    "session/turnStarted",
    "session/delta",
    "session/reasoning",
    "session/responsePart",
    "session/usage",
    "session/turnComplete",
    "session/turnCancelled",
    "session/error",
    "session/truncated",
    "session/toolCallStart",
    "session/toolCallDelta",
    "session/toolCallReady",
    "session/toolCallConfirmed",
    "session/toolCallComplete",
    "session/toolCallResultConfirmed",
    "session/toolCallContentChanged",
    "session/pendingMessageSet",
    "session/pendingMessageRemoved",
    "session/queuedMessagesReordered",
    "session/inputRequested",
    "session/inputAnswerChanged",
    "session/inputCompleted",
)

LEGACY_ACTION_INTRODUCED_IN: dict[str, str] = {
    **{action_type: "0.1.0" for action_type in _SESSION_TURN_ACTIONS_0_2},
    "session/modelChanged": "0.1.0",
    "session/agentChanged": "0.2.0",
    "session/activeClientChanged": "0.1.0",
    "session/activeClientToolsChanged": "0.1.0",
    "changeset/filesReviewedChanged": "0.5.2",
}
"""Action types the registry no longer lists → the version that introduced them."""

ACTION_REMOVED_IN: dict[str, str] = {
    **{action_type: "0.4.0" for action_type in _SESSION_TURN_ACTIONS_0_2},
    "session/modelChanged": "0.5.0",
    "session/agentChanged": "0.5.0",
    "session/activeClientChanged": "0.5.0",
    "session/activeClientToolsChanged": "0.5.0",
    "changeset/filesReviewedChanged": "0.6.0",
}
"""Action types that are gone → the first version without them."""

_ALL_INTRODUCED_IN: dict[str, str] = {**ACTION_INTRODUCED_IN, **LEGACY_ACTION_INTRODUCED_IN}

NOTIFICATION_INTRODUCED_IN: dict[str, str] = {
    "root/sessionAdded": "0.1.0",
    "root/sessionRemoved": "0.1.0",
    "root/sessionSummaryChanged": "0.1.0",
    "auth/required": "0.1.0",
    "otlp/exportLogs": "0.2.0",
    "otlp/exportTraces": "0.2.0",
    "otlp/exportMetrics": "0.2.0",
    "root/progress": "0.5.0",
    "channel/frame": "1.1.0",
    "channel/credit": "1.1.0",
    "channel/ready": "1.1.0",
    "channel/reset": "1.1.0",
    "channel/snapshot": "1.1.0",
    "tcp/data": "1.1.0",
    "tcp/eof": "1.1.0",
}
"""Every host → client notification method (``action`` envelopes excepted) → the version that
introduced it [REG-1.0, VERSIONS.md §5]. None has been removed."""

_VERSION = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")


def parse_version(version: Any) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of a plain ``MAJOR.MINOR.PATCH`` string; ``None`` otherwise."""
    match = _VERSION.match(version) if isinstance(version, str) else None
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def introduced_in(action_type: Any) -> str | None:
    """The version that introduced ``action_type``; ``None`` for a type no version has."""
    return _ALL_INTRODUCED_IN.get(action_type) if isinstance(action_type, str) else None


def known_to(version: Any, action_type: Any) -> bool:
    """Whether a peer that negotiated ``version`` knows ``action_type``."""
    if not isinstance(version, str) or not isinstance(action_type, str):
        return False
    return _known_to(version, action_type)


@lru_cache(maxsize=4096)
def _known_to(version: str, action_type: str) -> bool:
    negotiated = parse_version(version)
    introduced = parse_version(introduced_in(action_type))
    if negotiated is None or introduced is None or introduced > negotiated:
        return False
    removed = parse_version(ACTION_REMOVED_IN.get(action_type))
    return removed is None or negotiated < removed


def notification_known_to(version: Any, method: Any) -> bool:
    """Whether a peer that negotiated ``version`` knows the notification ``method``."""
    if not isinstance(version, str) or not isinstance(method, str):
        return False
    return _notification_known_to(version, method)


@lru_cache(maxsize=1024)
def _notification_known_to(version: str, method: str) -> bool:
    negotiated = parse_version(version)
    introduced = parse_version(NOTIFICATION_INTRODUCED_IN.get(method) if isinstance(method, str) else None)
    return negotiated is not None and introduced is not None and introduced <= negotiated


def action_types_known_to(version: Any) -> frozenset[str]:
    """Every action type ``version`` knows."""
    return frozenset(action_type for action_type in _ALL_INTRODUCED_IN if known_to(version, action_type))


ACTION_TYPES_0_2: frozenset[str] = action_types_known_to("0.2.0")
"""The 61 action types of the 0.2.0 line (equal to the 0.2.0 reducers' catalogue)."""


_RESOURCE_METHODS = (
    "resourceRead", "resourceWrite", "resourceList", "resourceCopy", "resourceDelete", "resourceMove",
    "resourceRequest", "resourceResolve", "resourceMkdir",
)
_REQUESTS_0_2 = frozenset({
    "initialize", "ping", "reconnect", "subscribe", "createSession", "disposeSession", "listSessions",
    "fetchTurns", "authenticate", *_RESOURCE_METHODS, "createResourceWatch", "completions", "createTerminal",
    "disposeTerminal", "invokeChangesetOperation", "resolveSessionConfig", "sessionConfigCompletions",
})
_REQUESTS_0_7 = _REQUESTS_0_2 | {"createChat", "disposeChat"}
_AUTOMATIONS = frozenset({"listAutomationTriggerDefinitions", "fetchAutomationRuns", "runAutomation"})

CLIENT_REQUESTS: dict[str, frozenset[str]] = {
    "0.2.0": _REQUESTS_0_2,
    "0.7.0": _REQUESTS_0_7,
    "0.9.0": _REQUESTS_0_7 | _AUTOMATIONS,
    "1.0.0": _REQUESTS_0_7 | _AUTOMATIONS,
}
"""The client→host requests of each served baseline."""

CLIENT_NOTIFICATIONS: dict[str, frozenset[str]] = {
    "0.2.0": frozenset({"unsubscribe", "dispatchAction"}),
    "0.7.0": frozenset({"unsubscribe", "dispatchAction", "setClientManagedSettingsPermissions"}),
    "0.9.0": frozenset({"unsubscribe", "dispatchAction", "setClientManagedSettingsPermissions"}),
    "1.0.0": frozenset({"unsubscribe", "dispatchAction", "setClientManagedSettingsPermissions"}),
}
"""The client→host notifications of each served baseline."""
