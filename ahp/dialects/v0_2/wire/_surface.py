"""The hand-picked public surface of the generated wire types.

Contract: ``WIRE_TYPES`` names classes of ``ahp.dialects.v0_2.wire._generated`` that
``ahp.dialects.v0_2.wire`` re-exports lazily: every method's params and result, every action
payload, the channel states and the shapes a host builds or inspects. Each name is a
schema definition name (``SessionDeltaAction``), except ``MarkdownString``, the
``{markdown}`` branch of ``StringOrMarkdown``. A test keeps this list resolvable.
"""

from __future__ import annotations

WIRE_TYPES: tuple[str, ...] = (
    "ActionEnvelope", "ActionOrigin", "ActiveTurn", "AgentInfo", "AgentSelection",
    "AuthRequiredErrorData", "AuthRequiredParams", "AuthenticateParams", "AuthenticateResult",
    "ChangesetClearedAction", "ChangesetFile", "ChangesetFileRemovedAction",
    "ChangesetFileSetAction", "ChangesetOperation", "ChangesetOperationsChangedAction",
    "ChangesetState", "ChangesetStatusChangedAction", "ChangesetSummary", "CompletionItem",
    "CompletionsParams", "CompletionsResult", "ConfigPropertySchema", "ConfigSchema",
    "ConfirmationOption", "ContentRef", "CreateResourceWatchParams", "CreateResourceWatchResult",
    "CreateSessionParams", "CreateTerminalParams", "DirectoryCustomization", "DirectoryEntry",
    "DispatchActionParams", "DisposeSessionParams", "DisposeTerminalParams", "ErrorInfo",
    "FetchTurnsParams", "FetchTurnsResult", "FileEdit", "InitializeParams", "InitializeResult",
    "InvokeChangesetOperationParams", "InvokeChangesetOperationResult", "ListSessionsParams",
    "ListSessionsResult", "MarkdownResponsePart", "MarkdownString", "ModelSelection",
    "OtlpExportLogsParams", "OtlpExportMetricsParams", "OtlpExportTracesParams", "PendingMessage",
    "PermissionDeniedErrorData", "PingParams", "PluginCustomization", "ProtectedResourceMetadata",
    "ReasoningResponsePart", "ReconnectParams", "ReconnectReplayResult", "ReconnectSnapshotResult",
    "ResolveSessionConfigParams", "ResolveSessionConfigResult", "ResourceChange",
    "ResourceCopyParams", "ResourceCopyResult", "ResourceDeleteParams", "ResourceDeleteResult",
    "ResourceListParams", "ResourceListResult", "ResourceMkdirParams", "ResourceMkdirResult",
    "ResourceMoveParams", "ResourceMoveResult", "ResourceReadParams", "ResourceReadResult",
    "ResourceReponsePart", "ResourceRequestParams", "ResourceRequestResult",
    "ResourceResolveParams", "ResourceResolveResult", "ResourceWatchChangedAction",
    "ResourceWatchState", "ResourceWriteParams", "ResourceWriteResult",
    "RootActiveSessionsChangedAction", "RootAgentsChangedAction", "RootConfigChangedAction",
    "RootState", "RootTerminalsChangedAction", "SessionActiveClient",
    "SessionActiveClientChangedAction", "SessionActiveClientToolsChangedAction",
    "SessionActivityChangedAction", "SessionAddedParams", "SessionAgentChangedAction",
    "SessionChangesetsChangedAction", "SessionConfigChangedAction",
    "SessionConfigCompletionsParams", "SessionConfigCompletionsResult",
    "SessionConfigPropertySchema", "SessionConfigSchema", "SessionCreationFailedAction",
    "SessionCustomizationRemovedAction", "SessionCustomizationToggledAction",
    "SessionCustomizationUpdatedAction", "SessionCustomizationsChangedAction", "SessionDeltaAction",
    "SessionErrorAction", "SessionForkSource", "SessionInputAnswerChangedAction",
    "SessionInputCompletedAction", "SessionInputRequest", "SessionInputRequestedAction",
    "SessionIsArchivedChangedAction", "SessionIsReadChangedAction", "SessionMetaChangedAction",
    "SessionModelChangedAction", "SessionModelInfo", "SessionPendingMessageRemovedAction",
    "SessionPendingMessageSetAction", "SessionQueuedMessagesReorderedAction", "SessionReadyAction",
    "SessionReasoningAction", "SessionRemovedParams", "SessionResponsePartAction",
    "SessionServerToolsChangedAction", "SessionState", "SessionSummary",
    "SessionSummaryChangedParams", "SessionTitleChangedAction", "SessionToolCallApprovedAction",
    "SessionToolCallCompleteAction", "SessionToolCallContentChangedAction",
    "SessionToolCallDeltaAction", "SessionToolCallDeniedAction", "SessionToolCallReadyAction",
    "SessionToolCallResultConfirmedAction", "SessionToolCallStartAction", "SessionTruncatedAction",
    "SessionTurnCancelledAction", "SessionTurnCompleteAction", "SessionTurnStartedAction",
    "SessionUsageAction", "Snapshot", "SubscribeParams", "SubscribeResult",
    "SystemNotificationResponsePart", "TelemetryCapabilities", "TerminalClaimedAction",
    "TerminalClearedAction", "TerminalClientClaim", "TerminalCommandDetectionAvailableAction",
    "TerminalCommandExecutedAction", "TerminalCommandFinishedAction", "TerminalCommandPart",
    "TerminalCwdChangedAction", "TerminalDataAction", "TerminalExitedAction", "TerminalInfo",
    "TerminalInputAction", "TerminalResizedAction", "TerminalSessionClaim", "TerminalState",
    "TerminalTitleChangedAction", "TerminalUnclassifiedPart", "ToolAnnotations",
    "ToolCallCancelledState", "ToolCallCompletedState", "ToolCallPendingConfirmationState",
    "ToolCallPendingResultConfirmationState", "ToolCallResponsePart", "ToolCallResult",
    "ToolCallRunningState", "ToolCallStreamingState", "ToolDefinition",
    "ToolResultEmbeddedResourceContent", "ToolResultFileEditContent", "ToolResultResourceContent",
    "ToolResultSubagentContent", "ToolResultTerminalContent", "ToolResultTextContent", "Turn",
    "UnsubscribeParams", "UnsupportedProtocolVersionErrorData", "UsageInfo", "UserMessage",
)
