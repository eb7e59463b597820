"""Reading the wire recording of the VS Code end-to-end test: what VS Code sent, what the host answered.

``Wire`` wraps the entries of a ``WireProxy`` (see ``wire_proxy.py``) and answers the questions the
test asks of them: the initialize exchange, the root state VS Code was given (the snapshot plus the
root actions after it), the requests and dispatched actions VS Code sent after a point in time,
the host's answer to a request, and a one-paragraph story of a connection that did not work.
Messages are read the way AHP 0.9.0 writes them (``dispatchAction`` with ``params.action``,
``action`` notifications with ``params.action``); nothing here depends on one host.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit


class Wire:
    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.entries = entries
        self.messages: list[tuple[float, int, str, dict[str, Any]]] = []
        for entry in entries:
            if entry["dir"] in ("c2s", "s2c"):
                try:
                    self.messages.append((entry["t"], entry["conn"], entry["dir"], json.loads(entry["data"])))
                except (TypeError, ValueError):
                    continue

    @property
    def end(self) -> float:
        """The time of the last entry (a mark: ``since=wire.end`` reads what comes after)."""
        return self.entries[-1]["t"] if self.entries else 0.0

    def connections(self) -> list[int]:
        return sorted({entry["conn"] for entry in self.entries})

    def last_connection(self) -> int | None:
        connections = self.connections()
        return connections[-1] if connections else None

    # -- requests and answers --------------------------------------------------------------------

    def requests(self, method: str, since: float = 0.0) -> list[tuple[int, dict[str, Any]]]:
        """(connection, message) of each request or notification VS Code sent with ``method``."""
        return [(conn, m) for t, conn, d, m in self.messages if d == "c2s" and t >= since and m.get("method") == method]

    def answer(self, conn: int, request_id: Any) -> dict[str, Any] | None:
        for _, c, d, m in self.messages:
            if c == conn and d == "s2c" and "method" not in m and m.get("id") == request_id:
                return m
        return None

    def initialize(self) -> tuple[dict[str, Any], dict[str, Any] | None] | None:
        """The last ``initialize`` VS Code sent and the host's answer (None if none came)."""
        sent = self.requests("initialize")
        if not sent:
            return None
        conn, request = sent[-1]
        return request, self.answer(conn, request.get("id"))

    # -- actions ---------------------------------------------------------------------------------

    def dispatched(self, since: float = 0.0, kind: Callable[[str], bool] = lambda _: True) -> list[dict[str, Any]]:
        """``params`` of each ``dispatchAction`` VS Code sent whose action type passes ``kind``."""
        return [m["params"] for t, _, d, m in self.messages
                if d == "c2s" and t >= since and m.get("method") == "dispatchAction"
                and kind(str(m.get("params", {}).get("action", {}).get("type", "")))]

    def received(self, since: float = 0.0, kind: Callable[[str], bool] = lambda _: True) -> list[dict[str, Any]]:
        """``params`` of each ``action`` notification the host sent whose action type passes ``kind``."""
        return [m["params"] for t, _, d, m in self.messages
                if d == "s2c" and t >= since and m.get("method") == "action"
                and kind(str(m.get("params", {}).get("action", {}).get("type", "")))]

    def root_agents(self) -> list[dict[str, Any]]:
        """The agents of the root state VS Code holds: the initialize snapshot, then agentsChanged."""
        exchange = self.initialize()
        agents: list[dict[str, Any]] = []
        if exchange and exchange[1] and isinstance(exchange[1].get("result"), dict):
            for snapshot in exchange[1]["result"].get("snapshots") or []:
                if snapshot.get("resource") == "ahp-root://":
                    agents = list((snapshot.get("state") or {}).get("agents") or [])
        for params in self.received(kind=lambda t: t == "root/agentsChanged"):
            agents = list(params["action"].get("agents") or [])
        return agents

    # -- sessions --------------------------------------------------------------------------------

    def session_of_last_turn(self, since: float = 0.0) -> str | None:
        """The session URI of the last turn VS Code started (decoded from its chat channel)."""
        started = self.dispatched(since, lambda t: t.endswith("/turnStarted"))
        if not started:
            return None
        return session_of_channel(started[-1]["channel"])

    def snapshot_of(self, channel: str) -> dict[str, Any] | None:
        """The state of the last snapshot of ``channel`` the host sent (a subscribe's answer)."""
        found = None
        for _, _, d, m in self.messages:
            snapshot = (m.get("result") or {}).get("snapshot") if d == "s2c" and isinstance(m.get("result"), dict) else None
            if isinstance(snapshot, dict) and snapshot.get("resource") == channel:
                found = snapshot.get("state")
        return found

    def title_of(self, session: str) -> str | None:
        title = None
        for _, _, d, m in self.messages:
            params = m.get("params") or {}
            if d != "s2c":
                continue
            if m.get("method") == "root/sessionAdded" and (params.get("summary") or {}).get("resource") == session:
                title = params["summary"].get("title") or title
            elif m.get("method") == "root/sessionSummaryChanged" and params.get("session") == session:
                title = (params.get("changes") or {}).get("title") or title
            elif m.get("method") == "action" and params.get("channel") == session:
                action = params.get("action") or {}
                if action.get("type") == "session/titleChanged":
                    title = action.get("title") or title
        return title

    # -- when it does not work -------------------------------------------------------------------

    def story(self) -> str:
        """What happened on the last connection, in words, for a failure message."""
        if not self.entries:
            return "VS Code's bridge never connected (no WebSocket reached the recording proxy)."
        conn = self.last_connection()
        lines = []
        for entry in self.entries:
            if entry["conn"] != conn:
                continue
            if entry["dir"] == "event":
                lines.append(f"event: {json.dumps(entry['data'])[:300]}")
            else:
                lines.append(f"{entry['dir']}: {str(entry['data'])[:300]}")
        shown = lines[:8] + (["..."] if len(lines) > 8 else [])
        story = f"connection {conn} of {len(self.connections())}:\n  " + "\n  ".join(shown)
        refused = [e["data"] for e in self.entries if e["dir"] == "event" and "upstream_refused" in e["data"]]
        accepted = [e["data"]["accepted"] for e in self.entries if e["dir"] == "event" and "accepted" in e["data"]]
        if refused and accepted:
            query = parse_qs(urlsplit(accepted[-1]).query)
            story += (f"\nThe host refused the WebSocket upgrade (HTTP {refused[-1]['upstream_refused']}) {len(refused)} time(s). "
                      f"VS Code's bridge dials {urlsplit(accepted[-1]).path or '/'} with the query parameters {sorted(query)} "
                      "(its connection token travels as 'tkn') and no Authorization or Origin header.")
        return story


def session_of_channel(channel: str) -> str:
    """``ahp-chat://default/<base64url(session URI)>`` -> the session URI; other channels as they are."""
    prefix = "ahp-chat://"
    if not channel.startswith(prefix):
        return channel
    encoded = channel[len(prefix):].split("/", 1)[1] if "/" in channel[len(prefix):] else ""
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return channel
