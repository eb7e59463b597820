"""Which reducer a channel URI selects (AHP 0.2.0, PROTOCOL.md §3).

Reducers are picked by the envelope channel's scheme. ``channel_kind`` is total: any input,
including non-strings, maps to a kind name or ``None`` (not a stateful channel, e.g. telemetry).
"""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["ChannelKind", "CHANNEL_KINDS", "ROOT_CHANNEL", "channel_kind"]

ChannelKind = Literal["root", "session", "terminal", "changeset", "resourceWatch"]

CHANNEL_KINDS: tuple[ChannelKind, ...] = ("root", "session", "terminal", "changeset", "resourceWatch")
"""Every stateful channel kind, in the order PROTOCOL.md lists them."""

ROOT_CHANNEL = "ahp-root://"
"""The one root channel URI."""

_PREFIXES: tuple[tuple[str, ChannelKind], ...] = (
    ("ahp-session:/", "session"),
    ("ahp-terminal:/", "terminal"),
    ("ahp-changeset:/", "changeset"),
    ("ahp-resource-watch:/", "resourceWatch"),
)


def channel_kind(uri: Any) -> ChannelKind | None:
    """The channel kind for ``uri``, or ``None`` when it names no stateful channel."""
    if not isinstance(uri, str):
        return None
    if uri == ROOT_CHANNEL:
        return "root"
    for prefix, kind in _PREFIXES:
        # A bare prefix names no channel: the id after the slash must be non-empty.
        if uri.startswith(prefix) and len(uri) > len(prefix):
            return kind
    return None
