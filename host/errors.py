"""The host's exception tree.

Everything the host raises on purpose derives from ``AgentHostError``::

    AgentHostError
     ├── ConfigError          a config file, key or flag is wrong; names the key and the bad value
     ├── JournalError         the durable log cannot be opened or written
     │    └── LogError        the ordered log cannot take or give what was asked (``host.state.log``)
     │         ├── NotOwner        another process owns the session: an append was fenced
     │         └── LogUnavailable  the log cannot be reached: this process stops writing
     ├── RpcError             a request must be answered with a JSON-RPC error (code, message, data)
     │    └── ProtocolViolation   the peer broke the protocol (bad frame, bad params, wrong order)
     ├── RpcCallError         a client answered one of the host's own requests with an error (or went away)
     ├── TurnEnded            a turn is over (cancelled or replaced): its agent stops producing output
     ├── TurnStopped          a hook answered ``continue: false``: the turn ends as completed
     ├── TurnFailed           a turn ends with ``chat/error`` (an AHP ``ErrorInfo`` a person can act on)
     ├── SessionCreationFailed  an agent cannot serve a session (``session/creationFailed``)
     │                        (these four: ``host.runtime.agents.base``)
     ├── WorkingDirectoryError  a session's working directory is refused (also a ``ValueError``;
     │                        ``host.resources.workdirs``)
     ├── AutoApproveValueError  ``autoApprove`` is no boolean and none of VS Code's levels (also a
     │                        ``ValueError``; ``host.runtime.tools.session_config``)
     ├── ClientResourceError  a client's resource could not be read (``host.resources.client_resources``)
     ├── EmbeddedNatsError    the embedded NATS server could not be started (also a ``RuntimeError``;
     │                        ``host.cluster.nats_server``)
     ├── TokenError           a named token cannot be created, revoked or read (also a ``ValueError``;
     │                        ``host.transport.tokens``)
     └── PromptUsageError     the arguments typed for an MCP prompt do not fit it (also a ``ValueError``;
                              ``host.runtime.customizations.mcp_prompts``)

Each is defined beside the code that raises it; this tree is where they are listed. Some stay
outside: AG-UI's ``AnswerError`` (a ``ValueError`` of ``host.transport.agui.interrupts``) and the
replay agent's ``RecordingEnded``, ``ReplayDivergedError`` and ``ReplayedCancelError``
(``host.runtime.agents.session_source``), ``providers.ProviderError`` subclasses because the turn loop
handles them as any provider's failure (``tests/host/test_errors.py`` holds the list).

``RpcError`` is the only exception whose text reaches the wire, and only through the JSON-RPC
layer (``host.transport.rpc``), which is the single place an exception becomes an error response. Any other
exception escaping a handler is *our* bug: it is logged with its traceback on the host and the
peer gets a generic internal error, never the traceback or a library's message.
"""

from __future__ import annotations

from typing import Any

from ahp.protocol.errors import ErrorCode

__all__ = [
    "AgentHostError",
    "ConfigError",
    "JournalError",
    "RpcError",
    "ProtocolViolation",
    "RpcCallError",
    "ErrorCode",
]


class AgentHostError(Exception):
    """Root of every error the host raises deliberately."""


class ConfigError(AgentHostError):
    """A configuration value is wrong. The message names the key, the value and the fix."""


class JournalError(AgentHostError):
    """The durable action log could not be opened, read or written."""


class RpcError(AgentHostError):
    """Answer the current request with this JSON-RPC error.

    ``message`` is shown to people: it says what was wrong and what to do instead.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ProtocolViolation(RpcError):
    """The peer sent something the protocol does not allow (as opposed to a bug of ours)."""

    @classmethod
    def invalid_params(cls, message: str) -> ProtocolViolation:
        return cls(ErrorCode.INVALID_PARAMS, message)

    @classmethod
    def invalid_request(cls, message: str) -> ProtocolViolation:
        return cls(ErrorCode.INVALID_REQUEST, message)


class RpcCallError(AgentHostError):
    """The peer answered one of our requests with an error (or went away first)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data
