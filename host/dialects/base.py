"""What every dialect does the same way: method tables, the gate, the errors for what is not served.

See ``host.dialects`` for the contract a dialect fulfils; this module holds the shared parts.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from ahp.dialects.registry import CLIENT_NOTIFICATIONS, CLIENT_REQUESTS
from host.errors import ErrorCode, ProtocolViolation, RpcError

__all__ = ["Dialect", "KNOWN_METHODS", "NOT_SERVED_YET", "not_served_yet"]

KNOWN_METHODS = frozenset().union(*CLIENT_REQUESTS.values(), *CLIENT_NOTIFICATIONS.values())
"""Every client→host method of every served version."""

NOT_SERVED_YET = ErrorCode.INTERNAL_ERROR
"""The code for "this version has the method, this host build does not serve it to that version
yet". AHP has no "not implemented" code: -32601 would claim the method is not part of the
version (false, and a client may stop offering the feature for good), and each AHP code means
something else. The message says what is missing and what to do; ``data.notServedYet`` marks it."""


def not_served_yet(what: str, version: str) -> RpcError:
    return RpcError(
        NOT_SERVED_YET,
        f"This host build does not serve {what} to AHP {version} clients yet: they come when the host's "
        "state moves to the 0.9.0 session and chat model. AHP 0.2.0 clients (agent-host chat) have them now.",
        {"notServedYet": what, "protocolVersion": version},
    )


class Dialect:
    """A protocol version as one connection speaks it. Subclasses fill in the shapes."""

    version: str
    """The version string negotiated (the client's own, e.g. ``0.7.3``)."""
    baseline: str
    """The served baseline that accepted it (``0.7.0``)."""
    requests: frozenset[str]
    notifications: frozenset[str]
    pending: dict[str, str] = {}
    """Methods of this version that this host build does not serve to it yet, each with what it
    is about ("sessions", "chats"...), answered with ``not_served_yet``."""
    translator: Any = None
    """What the store groups this dialect's subscribers by (``host.store.Translator``); None when
    the connection takes the store's own shapes and so shares the one frame every such
    subscriber gets."""

    def __init__(self, version: str, baseline: str) -> None:
        self.version = version
        self.baseline = baseline
        self.requests = CLIENT_REQUESTS[baseline]
        self.notifications = CLIENT_NOTIFICATIONS[baseline]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.version}>"

    # -- methods -------------------------------------------------------------------------------

    def gate(self, method: str, is_request: bool) -> RpcError | None:
        """Refuse a method this version lacks (-32601 naming the version) or that is not served
        to it yet; None lets it through (a name no version has gets the JSON-RPC layer's own
        "Unknown method")."""
        if method in self.requests or method in self.notifications:
            what = self.pending.get(method)
            return None if what is None else not_served_yet(what, self.version)
        if method in KNOWN_METHODS:
            return RpcError(
                ErrorCode.METHOD_NOT_FOUND,
                f"{method} is not part of AHP {self.version}, the version this connection negotiated.",
            )
        return None

    def params(self, method: str, params: Any) -> dict[str, Any]:
        """``params`` checked against this version's shape for ``method`` (-32602 naming the field)."""
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise ProtocolViolation.invalid_params(f"{method} takes its params as an object.")
        return params

    # -- results -------------------------------------------------------------------------------

    def initialize_result(self, base: dict[str, Any]) -> dict[str, Any]:
        """The ``initialize`` result of this version from the fields every version has
        (protocolVersion, serverSeq, snapshots already shown in this dialect, defaultDirectory)."""
        return base

    def channel_refusal(self, channel: str, kind: str | None) -> RpcError | None:
        """Why this connection may not subscribe to ``channel`` (of ``kind``, None if it does not
        exist), or None."""
        return None

    def snapshot(self, kind: str, snapshot: dict[str, Any]) -> dict[str, Any]:
        """A store snapshot (``{resource, state, fromSeq}``) in this version's shapes."""
        return snapshot

    def list_sessions(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        """The ``listSessions`` result of this version."""
        return {"items": host.list_sessions()}

    # -- actions and notifications --------------------------------------------------------------

    def lift(self, kind: str, action: Any) -> tuple[Any, str | None]:
        """A client's dispatched action in the store's model, or a refusal: ``(action, None)`` to
        go on with (the host's rules still apply, ``host.validation``), ``(None, reason)`` to
        answer with a rejection."""
        return action, None

    def envelope(self, kind: str, envelope: dict[str, Any]) -> dict[str, Any] | None:
        """An outgoing envelope in this version's shapes, None if this version must not see it."""
        return envelope

    def notification(self, kind: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """An outgoing notification's params in this version's shapes, None to send nothing."""
        return params

    def replayed(self, envelopes: Iterable[dict[str, Any]], kind_of: Callable[[str], str | None]) -> list[dict[str, Any]]:
        """``reconnect``'s replay through the same translation as the live fan-out."""
        shown = []
        for envelope in envelopes:
            kind = kind_of(envelope["channel"])
            item = self.envelope(kind, envelope) if kind is not None else None
            if item is not None:
                shown.append(item)
        return shown
