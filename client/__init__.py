"""Python client library for the Agent Host Protocol (AHP) over WebSocket.

``AhpClient`` connects, handshakes (offering ``PROTOCOL_VERSIONS``, the model's versions, newest
first; or the 0.2.0 dialect for callers that still read it), mirrors subscribed channel state
(``Mirror``: confirmed state plus optimistic pending actions, folded with the negotiated version's
reducers: ``ahp.state``, the model's own, for 0.9.0 and later),
dispatches actions, resumes dropped connections and reports what arrives as
``Notification`` events. Errors derive from ``AhpClientError`` (see ``errors``).
"""

from client.chats import SubagentChat, subagent_chats
from client.client import ROOT_CHANNEL, AhpClient, Predicate, ResumeResult
from client.errors import (
    AhpClientError,
    AhpError,
    AhpTimeout,
    ConnectionClosedError,
    HostProtocolError,
    NotSubscribedError,
    UnsupportedVersionError,
)
from client.events import EventStream, Notification
from client.mirror import ActionOutcome, Mirror
from client.versions import LEGACY_VERSIONS, PROTOCOL_VERSIONS

__all__ = [
    "LEGACY_VERSIONS",
    "PROTOCOL_VERSIONS",
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
    "SubagentChat",
    "UnsupportedVersionError",
    "subagent_chats",
]
