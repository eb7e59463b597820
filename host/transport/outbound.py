"""The host-wide budget for bytes queued to clients that do not read fast enough.

Each connection reports its backlog (bytes waiting for its socket) whenever it queues a frame
(``note``), or only when it is larger than its last report (``reported``): a backlog only shrinks
between two frames queued, so the sum of the reports stays at least what is held either way, and
every decision refreshes it first. One connection past ``per_client`` bytes, or all of them together past ``total``, is
more than the host will hold: the connections are then asked for their current backlog (a
connection that caught up since its last report has less) and the largest are cut off, one by
one, until the rest fit. A client that reads holds at most one event-loop tick's frames, so it is
among the last that could be cut; a client that stopped reading is among the first.

A cut-off connection gets a close frame with ``CUT_OFF_CODE`` (1013, "try again later") and a
reason saying how much was waiting and which limit it reached; it may ``reconnect`` and be
replayed what it missed. What it held is released at once (``Outbound.cut_off``).

No I/O here: the transports (``host.transport.ws_protocol``, the ASGI queue in ``host.transport.server``) measure and
cut; this module only decides whom.
"""

from __future__ import annotations

import logging
from typing import Protocol

__all__ = ["Outbound", "OutboundBudget", "CUT_OFF_CODE", "mib"]

logger = logging.getLogger(__name__)

CUT_OFF_CODE = 1013
"""The close code of a client cut off for not reading (RFC 6455: try again later)."""


class Outbound(Protocol):
    """One connection's outgoing side, as the budget sees it."""

    client_id: str | None

    def backlog(self) -> int:
        """Bytes waiting for this client's socket now."""
        ...

    def cut_off(self, code: int, reason: str) -> None:
        """Drop what waits, close with ``code`` and ``reason``; queue nothing more."""
        ...


def mib(size: int) -> str:
    """``size`` bytes in MiB for a close reason (which may hold at most 123 bytes)."""
    if size < 1024 * 1024:
        return f"{size / 1024:.0f} KiB"
    return f"{size / (1024 * 1024):.{0 if size >= 10 * 1024 * 1024 else 1}f}".removesuffix(".0") + " MiB"


class OutboundBudget:
    def __init__(self, *, total: int, per_client: int) -> None:
        self.total = total
        self.per_client = per_client
        self.reported: dict[Outbound, int] = {}
        """Each connection's last report (read, never changed, by a connection that skips a report
        no larger than its last: module docstring)."""
        self._sum = 0
        """The sum of ``reported``: at least what is held (a connection's backlog only shrinks
        between its reports), so it is exact whenever it decides anything after ``_refresh``."""

    @property
    def held(self) -> int:
        """Bytes the connections reported waiting, refreshed: what they hold now."""
        self._refresh()
        return self._sum

    def note(self, connection: Outbound, backlog: int) -> None:
        """``connection`` has ``backlog`` bytes waiting (it just queued a frame)."""
        before = self.reported.get(connection, 0)
        if backlog == before:
            return
        self.reported[connection] = backlog
        self._sum += backlog - before
        if backlog > self.per_client:
            self._cut(connection, f"too slow: {mib(backlog)} unread, over this client's limit of "
                                  f"{mib(self.per_client)}; reconnect to resume")
        if self._sum > self.total:
            self._enforce()

    def forget(self, connection: Outbound) -> None:
        """``connection`` is closed."""
        self._sum -= self.reported.pop(connection, 0)

    def _refresh(self) -> None:
        reported = self.reported
        for connection in reported:
            reported[connection] = connection.backlog()
        self._sum = sum(reported.values())

    def _enforce(self) -> None:
        self._refresh()
        if self._sum <= self.total:
            return
        for connection, backlog in sorted(self.reported.items(), key=lambda item: item[1], reverse=True):
            if self._sum <= self.total or backlog == 0:
                return
            self._cut(connection, f"too slow: {mib(backlog)} unread, the most when all clients together "
                                  f"passed the host's {mib(self.total)}; reconnect to resume")

    def _cut(self, connection: Outbound, reason: str) -> None:
        logger.warning("client %s is not reading; disconnecting it (%s)", connection.client_id, reason)
        self.forget(connection)
        connection.cut_off(CUT_OFF_CODE, reason)
