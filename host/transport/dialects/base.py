"""What every dialect does the same way: method tables, the gate, channel names, the identity.

See ``host.transport.dialects`` for the contract a dialect fulfils; this module holds the shared parts and
the identity behaviour (the store's own shapes), which the newest version uses as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ahp.dialects.catalogue import CLIENT_NOTIFICATIONS, CLIENT_REQUESTS
from host.errors import ErrorCode, ProtocolViolation, RpcError
from host.state.turn_pages import cursor_turn

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
    streams_as_is = False
    """As a translator (``host.state.fanout.Translator``): whether it sends every streamed append
    (``STREAMED``) unchanged without wanting the states around it, so the store's lean way for
    them sends its group the shared frame without asking it (``fanout.fan_out_streamed``)."""

    def __init__(self, version: str, baseline: str) -> None:
        self.version = version
        self.baseline = baseline
        self.requests = CLIENT_REQUESTS[baseline]
        self.notifications = CLIENT_NOTIFICATIONS[baseline]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.version}>"

    @property
    def translator(self) -> Any:
        """What the store groups this dialect's subscribers by (``host.state.fanout.Translator``); None
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
        """``fetchTurns`` (0.5.1 on): before answering (with no turns: the result is empty), the
        host brings the page of turns before ``cursor`` into the chat's state with one
        ``chat/turnsLoaded``, which every subscriber of the chat receives (``Store.load_older``).
        The cursor is a ``turnsNextCursor`` the chat's state carried; it names the oldest turn
        the state held, so a cursor whose page another client loaded meanwhile is answered at once
        with nothing to load. Without a cursor the chat's next older page is loaded, if any."""
        channel = params.get("channel")
        store = host.store
        if store.kind(channel) != "chat":
            raise RpcError(ErrorCode.NOT_FOUND, f"No chat {channel}.")
        cursor = params.get("cursor")
        older = store.older_turn_count(channel)
        if cursor is None:
            store.load_older(channel, older - store.recent_turns)
            return {}
        turn_id = cursor_turn(cursor)
        if turn_id is None:
            raise ProtocolViolation.invalid_params(
                f"Invalid fetchTurns params: cursor {str(cursor)[:80]!r} is not one this host gave out; pass the "
                "chat's turnsNextCursor as it is (no cursor: the chat's next older page).")
        ids = store.turn_ids(channel)
        if turn_id not in ids:
            raise ProtocolViolation.invalid_params(
                f"Invalid fetchTurns params: the cursor names turn {turn_id[:80]}, which {channel} no longer has "
                "(its turns were truncated since); use the turnsNextCursor of the chat's current state.")
        store.load_older(channel, ids.index(turn_id) - store.recent_turns)
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

    # -- the translator (host.state.fanout.Translator) --------------------------------------------------

    def wants_states(self, kind: str, action: dict[str, Any]) -> bool:
        return False

    def envelope(self, kind: str | None, envelope: dict[str, Any], change: Any) -> Any:
        return envelope

    def notification(self, kind: str, method: str, params: dict[str, Any], store: Any = None) -> dict[str, Any] | None:
        return params
