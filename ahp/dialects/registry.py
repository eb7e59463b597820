"""Version tables: which action types, notifications and client methods each AHP version knows.

Contract (pure data and two lookups, no I/O):

* ``ACTION_INTRODUCED_IN`` maps every action type of every version from 0.1.0 to 0.10.0 to the
  version that introduced it, as the reference registry does (VERSIONS.md §4); the 0.2.0-only
  types that later versions dropped are in it too, and ``ACTION_REMOVED_IN`` says in which
  version they went. ``action_known(type, version)`` is "introduced <= version < removed": the
  one check that decides whether an action may be sent on a connection of that version.
* ``NOTIFICATION_INTRODUCED_IN`` is the same for host→client notifications other than
  ``action`` (VERSIONS.md §5), with ``notification_known``.
* ``CLIENT_REQUESTS`` / ``CLIENT_NOTIFICATIONS`` list, per served baseline, the client→host
  methods that version defines (0.2.0: the vendored 0.2.0 method table; 0.7.0: the commands of
  the vendored 0.7.0 schema; 0.9.0: those plus the automation commands of 0.8.0).
  ``setClientManagedSettingsPermissions`` is in no schema: VS Code 1.139.1 sends it on 0.9.0
  connections, so the newer baselines list it as a notification.
* Unknown versions or names are simply unknown (``False``), never an error. The lookups are
  memoised (bounded: a client can make up action types): the fan-out asks them once per
  envelope per connection group.
"""

from __future__ import annotations

from functools import lru_cache

from ahp.dialects.negotiation import parse_version

__all__ = [
    "ACTION_INTRODUCED_IN",
    "ACTION_REMOVED_IN",
    "CLIENT_NOTIFICATIONS",
    "CLIENT_REQUESTS",
    "NOTIFICATION_INTRODUCED_IN",
    "action_known",
    "notification_known",
]


def _introduced(version: str, *types: str) -> dict[str, str]:
    return dict.fromkeys(types, version)


_PER_TURN = (
    "turnStarted", "delta", "responsePart", "toolCallStart", "toolCallDelta", "toolCallReady",
    "toolCallConfirmed", "toolCallComplete", "toolCallResultConfirmed", "toolCallContentChanged",
    "turnComplete", "turnCancelled", "error", "usage", "reasoning", "pendingMessageSet",
    "pendingMessageRemoved", "queuedMessagesReordered", "inputRequested", "inputAnswerChanged",
    "inputCompleted", "truncated",
)
"""The per-turn actions: ``session/*`` in 0.2.0, ``chat/*`` since 0.4.0."""

_TERMINAL = (
    "data", "input", "resized", "claimed", "titleChanged", "cwdChanged", "exited", "cleared",
    "commandDetectionAvailable", "commandExecuted", "commandFinished",
)

ACTION_INTRODUCED_IN: dict[str, str] = {
    **_introduced(
        "0.1.0",
        "root/agentsChanged", "root/activeSessionsChanged", "root/terminalsChanged", "root/configChanged",
        "session/ready", "session/creationFailed", "session/titleChanged", "session/serverToolsChanged",
        "session/customizationsChanged", "session/customizationToggled", "session/customizationUpdated",
        "session/isReadChanged", "session/isArchivedChanged", "session/activityChanged", "session/configChanged",
        "session/metaChanged",
        *(f"terminal/{name}" for name in _TERMINAL),
        # 0.2.0 names that later versions dropped (ACTION_REMOVED_IN):
        *(f"session/{name}" for name in _PER_TURN),
        "session/activeClientChanged", "session/activeClientToolsChanged", "session/modelChanged",
        "session/agentChanged",
    ),
    **_introduced(
        "0.2.0",
        "session/customizationRemoved", "session/changesetsChanged",
        "changeset/statusChanged", "changeset/fileSet", "changeset/fileRemoved", "changeset/operationsChanged",
        "changeset/cleared", "resourceWatch/changed",
    ),
    **_introduced("0.3.0", "session/mcpServerStateChanged", "changeset/operationStatusChanged"),
    **_introduced(
        "0.4.0",
        "session/chatAdded", "session/chatRemoved", "session/chatUpdated", "session/defaultChatChanged",
        *(f"chat/{name}" for name in _PER_TURN),
        "changeset/contentChanged",
        "annotations/set", "annotations/updated", "annotations/removed", "annotations/entrySet",
        "annotations/entryRemoved",
    ),
    **_introduced(
        "0.5.0", "session/activeClientSet", "session/activeClientRemoved", "chat/activityChanged", "chat/draftChanged",
    ),
    **_introduced("0.5.1", "session/inputNeededSet", "session/inputNeededRemoved", "chat/turnsLoaded"),
    **_introduced("0.5.2", "session/mcpServerStartRequested", "session/mcpServerStopRequested"),
    **_introduced("0.6.0", "chat/toolCallAuthRequired", "chat/toolCallAuthResolved", "changeset/filesReviewChanged"),
    **_introduced(
        "0.7.0",
        "session/workingDirectorySet", "session/workingDirectoryRemoved",
        "chat/workingDirectorySet", "chat/workingDirectoryRemoved",
    ),
    **_introduced(
        "0.8.0",
        "session/workingDirectoryReplaced",
        "automation/createRequested", "automation/updateRequested", "automation/set", "automation/removed",
        "automationRun/lifecycleChanged", "automationRun/sessionSet", "automationRun/sessionRemoved",
        "automationRun/primarySessionChanged", "automationRun/cancelRequested",
    ),
    **_introduced(
        "0.9.0",
        "session/chatsReordered", "session/mcpServerBackgroundRequested",
        "chat/turnResume", "chat/backgroundWorkSet", "chat/backgroundWorkRemoved", "chat/movableChanged",
        "chat/changesetsChanged", "chat/isReadChanged", "chat/isArchivedChanged",
    ),
    **_introduced("0.10.0", "chat/canvasesChanged", "canvas/stateChanged"),
}

ACTION_REMOVED_IN: dict[str, str] = {
    **_introduced("0.4.0", *(f"session/{name}" for name in _PER_TURN)),
    **_introduced(
        "0.5.0",
        "session/activeClientChanged", "session/activeClientToolsChanged", "session/modelChanged",
        "session/agentChanged",
    ),
}
"""0.2.0 action types that later versions no longer have (VERSIONS.md §3): the per-turn actions
became ``chat/*`` in 0.4.0; the single active client, its tools, and the session-wide model and
agent went in 0.5.0."""

NOTIFICATION_INTRODUCED_IN: dict[str, str] = {
    **_introduced("0.1.0", "root/sessionAdded", "root/sessionRemoved", "root/sessionSummaryChanged", "auth/required"),
    **_introduced("0.2.0", "otlp/exportLogs", "otlp/exportTraces", "otlp/exportMetrics"),
    **_introduced("0.5.0", "root/progress"),
}

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
}
CLIENT_NOTIFICATIONS: dict[str, frozenset[str]] = {
    "0.2.0": frozenset({"unsubscribe", "dispatchAction"}),
    "0.7.0": frozenset({"unsubscribe", "dispatchAction", "setClientManagedSettingsPermissions"}),
    "0.9.0": frozenset({"unsubscribe", "dispatchAction", "setClientManagedSettingsPermissions"}),
}


def _within(introduced: str | None, removed: str | None, version: str) -> bool:
    negotiated = parse_version(version)
    first = parse_version(introduced) if introduced is not None else None
    if negotiated is None or first is None or first > negotiated:
        return False
    gone = parse_version(removed) if removed is not None else None
    return gone is None or negotiated < gone


@lru_cache(maxsize=4096)
def action_known(action_type: str, version: str) -> bool:
    """Whether a connection that negotiated ``version`` knows ``action_type``."""
    return _within(ACTION_INTRODUCED_IN.get(action_type), ACTION_REMOVED_IN.get(action_type), version)


@lru_cache(maxsize=4096)
def notification_known(method: str, version: str) -> bool:
    """Whether a connection that negotiated ``version`` knows notification ``method``."""
    return _within(NOTIFICATION_INTRODUCED_IN.get(method), None, version)
