"""Python client library for the Agent Host Protocol (AHP) 0.2.0 over WebSocket.

``AhpClient`` connects, handshakes, mirrors subscribed channel state (``Mirror``:
confirmed state plus optimistic pending actions, folded with ``ahp.dialects.v0_2.state.reduce``),
dispatches actions, resumes dropped connections and reports what arrives as
``Notification`` events. Errors derive from ``AhpClientError`` (see ``errors``).
"""

from client.client import ROOT_CHANNEL, AhpClient, Predicate, ResumeResult
from client.errors import (
    AhpClientError,
    AhpError,
    AhpTimeout,
    ConnectionClosedError,
    HostProtocolError,
    NotSubscribedError,
)
from client.events import EventStream, Notification
from client.mirror import ActionOutcome, Mirror

__all__ = [
    "ROOT_CHANNEL",
    "ActionOutcome",
    "AhpClient",
    "AhpClientError",
    "AhpError",
    "AhpTimeout",
    "ConnectionClosedError",
    "EventStream",
    "HostProtocolError",
    "Mirror",
    "Notification",
    "NotSubscribedError",
    "Predicate",
    "ResumeResult",
]
