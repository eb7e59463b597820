"""The host's edge for protocol versions: each connection speaks through one dialect object.

``initialize`` negotiates a version (``ahp.dialects.negotiation``) and the connection takes
``dialect_for(negotiated)``; nothing past the connection knows which version a client speaks.
The store holds the internal (0.9.0) model. A dialect decides, for its version:

(a) the ``initialize`` result's shape (``initialize_result``);
(b) which methods exist (``gate``: -32601 naming the version for a method of another version) and
    whether params fit the version's shapes (``params``: -32602 naming the field);
(c) what a channel it names is in the store (``internal_channels``, ``internal_uri``: a 0.2.0
    ``ahp-session:/<id>`` is the session ``<provider>:/<id>`` and its default chat);
(d) how snapshots, the session list and the replay look (``snapshot``, ``list_sessions``,
    ``replayed``), and, as the store's ``Translator`` (``host.state.fanout``), how every envelope and
    notification the store fans out looks on the connection: translated into the version's
    shapes, dropped when the version does not know it (``ahp.dialects.catalogue``). The store
    groups subscribers by translator and builds each group's frame once per envelope;
(e) how an incoming ``dispatchAction`` enters the store's model (``lift``): internal envelopes,
    or a reason the client gets as a ``rejectionReason``.

1.0.0 and 0.9.0 are the identity (gated by the version table: 1.0.0 adds no action, notification
or method to 0.9.0, and the model's shapes are the 1.0.0 schema's), 0.7.0 goes through ``ahp.dialects.v0_7``
(``host.transport.dialects.newer``), 0.2.0 through ``ahp.dialects.v0_2`` (``host.transport.dialects.ahp02``).

The newer dialects' module (``host.transport.dialects.newer``, with the 0.7.0 translator and the
vendored schemas' checks) is loaded by the first connection that negotiates one of their versions,
or by the worker thread that loads what requests need once the host listens (the start-up plan,
``host.startup``): a host answers a 0.2.0 client's first ``initialize`` without it.

Dialects are shared: one instance per negotiated version string, so that every connection of a
version falls in the same fan-out group. A client that ``reconnect``s on a new connection
without ``initialize`` speaks the version it negotiated last time (``AgentHost.client_versions``,
in memory), else the one its ``reconnect`` states (``_meta.protocolVersion``, which our own client
sends); one the host does not know that states none (a host started again, another process of a
cluster, a client such as VS Code that sends no version) is taken to speak ``DEFAULT_VERSION``, the
newest served (1.0.0): the model's own shapes, which a client of the model's line (0.9.0) reads too.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from ahp.dialects.negotiation import SERVED_VERSIONS, Negotiated, accepts
from ahp.lazy import lazy_exports
from host import startup
from host.transport.dialects.ahp02 import Ahp02Dialect
from host.transport.dialects.base import Dialect

if TYPE_CHECKING:
    from host.transport.dialects.newer import Ahp07Dialect, NewerDialect

__all__ = [
    "DEFAULT_VERSION",
    "Ahp02Dialect",
    "Ahp07Dialect",
    "Dialect",
    "NewerDialect",
    "dialect_for",
    "dialect_for_version",
    "load_newer",
]

DEFAULT_VERSION = SERVED_VERSIONS[0]
"""What a reconnecting client the host does not know, and that states no version, is taken to speak
(the newest served: 1.0.0)."""

_NEWER = "host.transport.dialects.newer"

_CLASSES: dict[str, str] = {"0.7.0": "Ahp07Dialect", "0.9.0": "NewerDialect", "1.0.0": "NewerDialect"}
"""The dialect class of each served baseline but 0.2.0's, in ``host.transport.dialects.newer``."""

__getattr__ = lazy_exports(__name__, {"Ahp07Dialect": "newer", "NewerDialect": "newer"})


@lru_cache(maxsize=64)
def dialect_for(negotiated: Negotiated) -> Dialect:
    """The (shared) dialect of a negotiated version."""
    if negotiated.baseline == "0.2.0":
        return Ahp02Dialect(negotiated.version, negotiated.baseline)
    dialect: type[Dialect] = getattr(startup.load(_NEWER), _CLASSES[negotiated.baseline])
    return dialect(negotiated.version, negotiated.baseline)


def load_newer() -> None:
    """Import the newer dialects' module (ahead of the first client that speaks one)."""
    startup.load(_NEWER)


def dialect_for_version(version: str) -> Dialect:
    """The dialect of a version negotiated earlier (``reconnect``); ``DEFAULT_VERSION``'s if it is not served."""
    baseline = next((base for base in SERVED_VERSIONS if accepts(base, version)), None)
    if baseline is None:
        return dialect_for(Negotiated(DEFAULT_VERSION, DEFAULT_VERSION))
    return dialect_for(Negotiated(version, baseline))
