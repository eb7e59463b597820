"""The host's edge for protocol versions: each connection speaks through one dialect object.

``initialize`` negotiates a version (``ahp.dialects.negotiation``) and the connection takes
``dialect_for(negotiated)``; nothing past the connection knows which version a client speaks.
A dialect decides, for its version:

(a) the ``initialize`` result's shape (``initialize_result``);
(b) which methods exist (``gate``: -32601 naming the version for a method of another version; a
    clear ``not_served_yet`` error for one this build does not serve to the version yet) and
    whether params fit the version's shapes (``params``: -32602 naming the field);
(c) how outgoing envelopes and notifications look on the connection (``envelope``,
    ``notification``, ``snapshot``, ``replayed``, ``list_sessions``): translated into the
    version's shapes, and dropped when the version does not know the action type or
    notification (``ahp.dialects.registry``). The store fans out per ``translator``: connections
    whose dialect has none share the frame every such subscriber gets; the others are grouped by
    translator, and each group's frame is built once per envelope;
(d) how an incoming ``dispatchAction`` enters the store's model (``lift``): the action in the
    model, or a reason the client gets as a ``rejectionReason``.

Today the store holds the AHP 0.2.0 model, so ``Ahp02Dialect`` is the identity and
``NewerDialect`` (0.7.0, 0.9.0) projects the root channel and the session list and refuses the
rest clearly (``host.dialects.newer``). When the store moves to the 0.9.0 model, the switch is a
change of these dialect objects (0.9.0 the identity, 0.2.0 through ``ahp.dialects.v0_2``, 0.7.0
through ``ahp.dialects.v0_7``), not of the connection.

Dialects are shared: one instance per negotiated version string, so that every connection of a
version falls in the same fan-out group. A client that ``reconnect``s on a new connection
without ``initialize`` speaks the version it negotiated last time (``AgentHost.client_versions``,
in memory); one the host does not know (e.g. after a host restart) is taken to speak 0.2.0, the
only version older host builds served.
"""

from __future__ import annotations

from functools import lru_cache

from ahp.dialects.negotiation import SERVED_VERSIONS, Negotiated, accepts
from host.dialects.ahp02 import Ahp02Dialect
from host.dialects.base import NOT_SERVED_YET, Dialect, not_served_yet
from host.dialects.newer import NewerDialect

__all__ = [
    "DEFAULT_VERSION",
    "NOT_SERVED_YET",
    "Ahp02Dialect",
    "Dialect",
    "NewerDialect",
    "dialect_for",
    "dialect_for_version",
    "not_served_yet",
]

DEFAULT_VERSION = "0.2.0"
"""What a reconnecting client the host does not know is taken to speak."""

_CLASSES: dict[str, type[Dialect]] = {"0.2.0": Ahp02Dialect, "0.7.0": NewerDialect, "0.9.0": NewerDialect}
"""The dialect class of each served baseline."""


@lru_cache(maxsize=64)
def dialect_for(negotiated: Negotiated) -> Dialect:
    """The (shared) dialect of a negotiated version."""
    return _CLASSES[negotiated.baseline](negotiated.version, negotiated.baseline)


def dialect_for_version(version: str) -> Dialect:
    """The dialect of a version negotiated earlier (``reconnect``); 0.2.0 if it is not served."""
    baseline = next((base for base in SERVED_VERSIONS if accepts(base, version)), None)
    if baseline is None:
        return dialect_for(Negotiated(DEFAULT_VERSION, DEFAULT_VERSION))
    return dialect_for(Negotiated(version, baseline))
