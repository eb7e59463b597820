"""Exceptions raised by the AHP client library.

Every exception the library raises on purpose derives from ``AhpClientError``::

    AhpClientError
    ├── AhpError              the host answered a request with a JSON-RPC error
    │   └── UnsupportedVersionError  the host serves none of the offered AHP versions
    ├── ConnectionClosedError the socket is gone (or never opened); in-flight
    │                         requests, waiters and event streams fail with it
    ├── HostProtocolError     the host broke the wire protocol (a frame that is
    │                         not JSON, not a JSON-RPC message, a malformed envelope)
    ├── AhpTimeout            a request or a ``wait_for`` ran out of time
    │                         (also a ``TimeoutError``)
    └── NotSubscribedError    the caller dispatched to a channel the client does not
                              mirror (also a ``LookupError``)

``HostProtocolError`` is the peer's fault; a ``NotSubscribedError`` is ours (the
caller's). Messages are short, human-readable sentences without tracebacks.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AhpClientError",
    "AhpError",
    "AhpTimeout",
    "ConnectionClosedError",
    "HostProtocolError",
    "NotSubscribedError",
    "UnsupportedVersionError",
    "METHOD_NOT_FOUND",
    "INTERNAL_ERROR",
]

METHOD_NOT_FOUND = -32601
"""JSON-RPC code the client answers host requests it has no handler for."""

INTERNAL_ERROR = -32603
"""JSON-RPC code the client answers when a request handler fails unexpectedly."""


class AhpClientError(Exception):
    """Root of every error the AHP client raises on purpose."""


class AhpError(AhpClientError):
    """The host answered a request with ``error{code, message, data?}``."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        """The JSON-RPC error code, e.g. -32001 SessionNotFound."""
        self.message = message
        """The host's human-readable message."""
        self.data = data
        """The optional ``data`` member, verbatim (None when absent)."""


class UnsupportedVersionError(AhpError):
    """The host answered ``initialize`` with -32005: it serves none of the offered versions. The
    message says which it serves (``data["supportedVersions"]``) and what to do."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(code, message, data)
        self.args = (message,)  # the sentence itself, without the code appended


class ConnectionClosedError(AhpClientError):
    """The WebSocket to the host is closed, dropped, or could not be opened."""


class HostProtocolError(AhpClientError):
    """The host sent something that is not valid JSON-RPC/AHP; the connection is dropped."""


class AhpTimeout(AhpClientError, TimeoutError):
    """A request got no response, or a ``wait_for`` predicate stayed false, in time."""


class NotSubscribedError(AhpClientError, LookupError):
    """The channel has no mirrored state, so an action cannot be tracked there."""
