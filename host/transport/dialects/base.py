"""What every dialect does the same way: method tables, the gate, channel names, the identity.

See ``host.transport.dialects`` for the contract a dialect fulfils; this module holds the shared parts and
the identity behaviour (the store's own shapes), which the newest version uses as it is.
"""

from __future__ import annotations

from typing import Any, Iterable

from ahp.dialects.catalogue import CLIENT_NOTIFICATIONS, CLIENT_REQUESTS
from host.errors import ErrorCode, ProtocolViolation, RpcError

__all__ = ["Dialect", "KNOWN_METHODS"]

KNOWN_METHODS = frozenset().union(*CLIENT_REQUESTS.values(), *CLIENT_NOTIFICATIONS.values())
"""Every client→host method of every served version."""


class Dialect:
    """A protocol version as one connection speaks it. Subclasses fill in the shapes."""

    version: str
    """The version string negotiated (the client's own, e.g. ``0.7.3``)."""
    baseline: str
    """The served baseline that accepted it (``0.7.0``)."""
    requests: frozenset[str]
    notifications: frozenset[str]

    def __init__(self, version: str, baseline: str) -> None:
        self.version = version
        self.baseline = baseline
        self.requests = CLIENT_REQUESTS[baseline]
        self.notifications = CLIENT_NOTIFICATIONS[baseline]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.version}>"

    @property
    def translator(self) -> Any:
        """What the store groups this dialect's subscribers by (``host.state.store.Translator``); None
        when the connection takes the store's own shapes unfiltered."""
        return self

    # -- methods -------------------------------------------------------------------------------

    def gate(self, method: str, is_request: bool) -> RpcError | None:
        """Refuse a method this version lacks (-32601 naming the version); None lets it through
        (a name no version has gets the JSON-RPC layer's own "Unknown method")."""
        if method in self.requests or method in self.notifications:
            return None
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

    def initialize_result(self, base: dict[str, Any]) -> dict[str, Any]:
        """The ``initialize`` result of this version from the fields every version has."""
        return base

    # -- channel names -------------------------------------------------------------------------

    def internal_channels(self, host: Any, channel: Any) -> list[str] | None:
        """The store channels a channel named by this version stands for (subscribe, replay),
        None when there is none or this version may not see it."""
        if not isinstance(channel, str) or channel not in host.store:
            return None
        return [channel] if self.sees_kind(host.store.kind(channel)) else None

    def internal_uri(self, host: Any, channel: Any) -> Any:
        """The store's name of a channel this version names (session URIs differ in 0.2.0)."""
        return channel

    def translator_for(self, host: Any, channel: str, internal: str) -> Any:
        """The translator for the store channel ``internal`` when this connection subscribed to it
        as ``channel``: None for the connection's own (``translator``)."""
        return None

    def sees_kind(self, kind: str | None) -> bool:
        """Whether this version has channels of ``kind``."""
        return True

    def snapshot(self, host: Any, channel: str, snapshots: list[dict[str, Any]]) -> dict[str, Any]:
        """The snapshot of ``channel`` in this version's shapes, from the store snapshots of its
        ``internal_channels`` (taken in one synchronous step)."""
        return snapshots[0]

    def list_sessions(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        return {"items": host.list_sessions()}

    def session_summary(self, host: Any, uri: str) -> dict[str, Any] | None:
        return host.session_summary(uri)

    def fetch_turns(self, host: Any, params: dict[str, Any]) -> dict[str, Any]:
        """``fetchTurns`` (0.5.1 on): the host loads older turns into the chat with
        ``chat/turnsLoaded`` before answering. This host keeps every turn of a chat in its state,
        so no chat ever has a ``turnsNextCursor``: there is nothing older to load, and a cursor is
        never one this host gave out."""
        channel = params.get("channel")
        store = host.store
        if store.kind(channel) != "chat":
            raise RpcError(ErrorCode.NOT_FOUND, f"No chat {channel}.")
        cursor = params.get("cursor")
        if cursor is not None and cursor != (store.state(channel) or {}).get("turnsNextCursor"):
            raise ProtocolViolation.invalid_params(
                "Invalid fetchTurns params: cursor is not one this host gave out (this chat's turns are all loaded).")
        return {}

    # -- actions -------------------------------------------------------------------------------

    def lift(self, host: Any, channel: str, action: Any, client_id: str = "") -> tuple[list[tuple[str, Any]], str | None]:
        """A client's dispatched action in the store's model: ``(envelopes, None)`` to check
        (``host.transport.validation``) and apply in order, ``([], reason)`` to answer with a rejection."""
        return [(channel, action)], None

    def replayed(self, host: Any, envelopes: Iterable[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """``reconnect``'s replay through the same translation as the live fan-out; None when it
        cannot be replayed in this version (the caller sends snapshots)."""
        shown: list[dict[str, Any]] = []
        store = host.store
        for envelope in envelopes:
            kind = store.kind(envelope["channel"])
            item = self.envelope(kind, envelope, None) if kind is not None else None
            if isinstance(item, list):
                shown.extend(item)
            elif item is not None:
                shown.append(item)
        return shown

    # -- the translator (host.store.Translator) ---------------------------------------------------

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return False

    def envelope(self, kind: str | None, envelope: dict[str, Any], change: Any) -> Any:
        return envelope

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any = None) -> dict[str, Any] | None:
        return params
