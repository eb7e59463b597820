"""The AHP 0.2.0 JSON-RPC method table (PROTOCOL.md section 5, METHODS.md).

Contract:
- ``METHODS`` maps each of the 35 method names to a frozen ``MethodSpec``:
  25 client->host requests (10 of them, the ``resource*`` family and
  ``createResourceWatch``, are also host->client requests: direction ``"both"``),
  2 client->host notifications and 8 host->client notifications.
- ``params_def`` / ``result_def`` are ``$defs`` names in ``ahp-0.2.0.schema.json``.
  ``result_def`` is ``None`` for notifications and for requests whose result is JSON
  ``null`` (``ping``, ``createSession``, ``disposeSession``, ``createTerminal``,
  ``disposeTerminal``); a union result is written ``"A | B"`` exactly as the schema
  leaves it (``reconnect``). Results that are ``{}`` have their own (empty) definition.
- ``params_model`` / ``result_model`` resolve lazily to the generated pydantic class, or
  a ``TypeAdapter`` for unions; ``result_model`` is ``None`` when ``result_def`` is.
  Importing this module does not import the generated models.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from pydantic import TypeAdapter

from ahp.dialects.v0_2.wire._models import adapter_for, model_for

Direction = Literal["client->host", "host->client", "both"]
Kind = Literal["request", "notification"]


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """One JSON-RPC method of AHP 0.2.0."""

    name: str
    """The JSON-RPC ``method`` string."""
    direction: Direction
    """Who may send it: ``"both"`` means either peer may issue the request."""
    kind: Kind
    """``"request"`` (expects exactly one response) or ``"notification"`` (never answered)."""
    params_def: str
    """Schema definition of ``params``."""
    result_def: str | None
    """Schema definition of ``result``; ``None`` for notifications and ``null`` results."""

    @property
    def params_model(self) -> Any:
        """Generated pydantic class for ``params`` (imports the models on first use)."""
        return model_for(self.params_def)

    @property
    def result_model(self) -> Any:
        """Generated class or union ``TypeAdapter`` for ``result``; ``None`` if there is none."""
        return None if self.result_def is None else model_for(self.result_def)

    @property
    def result_is_null(self) -> bool:
        """True for requests whose successful result is JSON ``null``."""
        return self.kind == "request" and self.result_def is None

    @property
    def result_defs(self) -> tuple[str, ...]:
        """``result_def`` split into its union members (empty when there is no result)."""
        if self.result_def is None:
            return ()
        return tuple(part.strip() for part in self.result_def.split("|"))

    def sent_by_client(self) -> bool:
        """Whether a client may send this method."""
        return self.direction in ("client->host", "both")

    def sent_by_host(self) -> bool:
        """Whether the host may send this method."""
        return self.direction in ("host->client", "both")

    def params_adapter(self) -> TypeAdapter[Any]:
        """A ``TypeAdapter`` for ``params`` (uniform ``.validate_python``)."""
        return adapter_for(self.params_def)

    def result_adapter(self) -> TypeAdapter[Any]:
        """A ``TypeAdapter`` for ``result``; validates ``None`` for ``null`` results."""
        if self.result_def is None:
            if self.kind == "notification":
                raise ValueError(f"{self.name} is a notification and has no result")
            return _null_result_adapter()
        return adapter_for(self.result_def)


@cache
def _null_result_adapter() -> TypeAdapter[None]:
    return TypeAdapter(None)


def _request(name: str, direction: Direction, params: str, result: str | None) -> MethodSpec:
    return MethodSpec(name, direction, "request", params, result)


def _notification(name: str, direction: Direction, params: str) -> MethodSpec:
    return MethodSpec(name, direction, "notification", params, None)


_C2H: Direction = "client->host"
_H2C: Direction = "host->client"
_BOTH: Direction = "both"

_TABLE: tuple[MethodSpec, ...] = (
    # Client -> host requests (PROTOCOL.md 5.1), in the digest's order.
    _request("initialize", _C2H, "InitializeParams", "InitializeResult"),
    _request("ping", _C2H, "PingParams", None),
    _request("reconnect", _C2H, "ReconnectParams", "ReconnectReplayResult | ReconnectSnapshotResult"),
    _request("subscribe", _C2H, "SubscribeParams", "SubscribeResult"),
    _request("createSession", _C2H, "CreateSessionParams", None),
    _request("disposeSession", _C2H, "DisposeSessionParams", None),
    _request("listSessions", _C2H, "ListSessionsParams", "ListSessionsResult"),
    _request("fetchTurns", _C2H, "FetchTurnsParams", "FetchTurnsResult"),
    _request("authenticate", _C2H, "AuthenticateParams", "AuthenticateResult"),
    _request("resourceRead", _BOTH, "ResourceReadParams", "ResourceReadResult"),
    _request("completions", _C2H, "CompletionsParams", "CompletionsResult"),
    _request("resolveSessionConfig", _C2H, "ResolveSessionConfigParams", "ResolveSessionConfigResult"),
    _request(
        "sessionConfigCompletions", _C2H, "SessionConfigCompletionsParams", "SessionConfigCompletionsResult"
    ),
    _request("resourceList", _BOTH, "ResourceListParams", "ResourceListResult"),
    _request("resourceResolve", _BOTH, "ResourceResolveParams", "ResourceResolveResult"),
    _request("resourceWrite", _BOTH, "ResourceWriteParams", "ResourceWriteResult"),
    _request("resourceMkdir", _BOTH, "ResourceMkdirParams", "ResourceMkdirResult"),
    _request("resourceCopy", _BOTH, "ResourceCopyParams", "ResourceCopyResult"),
    _request("resourceMove", _BOTH, "ResourceMoveParams", "ResourceMoveResult"),
    _request("resourceDelete", _BOTH, "ResourceDeleteParams", "ResourceDeleteResult"),
    _request("resourceRequest", _BOTH, "ResourceRequestParams", "ResourceRequestResult"),
    _request("createResourceWatch", _BOTH, "CreateResourceWatchParams", "CreateResourceWatchResult"),
    _request("createTerminal", _C2H, "CreateTerminalParams", None),
    _request("disposeTerminal", _C2H, "DisposeTerminalParams", None),
    _request(
        "invokeChangesetOperation", _C2H, "InvokeChangesetOperationParams", "InvokeChangesetOperationResult"
    ),
    # Client -> host notifications (5.3).
    _notification("unsubscribe", _C2H, "UnsubscribeParams"),
    _notification("dispatchAction", _C2H, "DispatchActionParams"),
    # Host -> client notifications (5.4).
    _notification("action", _H2C, "ActionEnvelope"),
    _notification("root/sessionAdded", _H2C, "SessionAddedParams"),
    _notification("root/sessionRemoved", _H2C, "SessionRemovedParams"),
    _notification("root/sessionSummaryChanged", _H2C, "SessionSummaryChangedParams"),
    _notification("auth/required", _H2C, "AuthRequiredParams"),
    _notification("otlp/exportLogs", _H2C, "OtlpExportLogsParams"),
    _notification("otlp/exportTraces", _H2C, "OtlpExportTracesParams"),
    _notification("otlp/exportMetrics", _H2C, "OtlpExportMetricsParams"),
)

METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in _TABLE}
