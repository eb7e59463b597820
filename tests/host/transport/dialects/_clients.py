"""What the every-frame scenarios share: a raw client of one protocol version, the check that every
frame a client received fits its version's schema, and the check that the action types a scenario
was meant to make the host send were all sent.

Contract:

* ``Client`` is a ``Peer`` (a real WebSocket) that remembers which method each of its requests
  called (a response is checked against that method's result) and the snapshot it last took of
  each channel; ``mirror(channel, kind)`` is what its version's reducers make of that snapshot and
  every later action (the model's for 0.9.0/1.0.0, ``v0_7.reduce`` for 0.7.0); ``accepted``
  dispatches an action and waits for its echo, failing on a rejection; ``types()`` is the set of
  action types it was sent (rejections of its own actions left out).
* ``assert_every_frame_fits(clients, kind_of)`` fails with the first problems (``_schemas``) when
  any frame of any client breaks the schema of the version the client negotiated. ``kind_of(uri)``
  is the channel kind of a snapshot's resource (recorded before channels are disposed).
* ``assert_sent(expected, newest, older)`` fails naming every type of ``expected`` the newest client
  was not sent, and every type 0.7.0 has that no 0.7.0 client was sent.

Used by ``test_every_frame_valid`` (turns, tool calls, chats, changesets, terminals, config),
``test_every_frame_valid_runtime`` (customizations, MCP servers, shell integration, watches,
paging, a session's start and failure, agents reloaded) and ``tests/host/cluster/test_failover.py``
(``TAKEOVER_ONLY``); together they make the host send every type ``_emitted`` says it can.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from typing import Any

from ahp import state as internal
from ahp.dialects import v0_7
from ahp.dialects.catalogue import known_to
from tests.host.test_vscode import Peer

from ._schemas import FrameSchema

__all__ = ["ROOT", "TAKEOVER_ONLY", "Client", "assert_every_frame_fits", "assert_sent"]

ROOT = "ahp-root://"

TAKEOVER_ONLY = frozenset({"session/customizationsChanged", "chat/turnResume"})
"""Action types only a cluster's takeover makes the host send, so ``tests/host/cluster/test_failover.py``
checks them: a session's first listing of its customizations is dispatched inside ``createSession``
(before anyone can subscribe; every snapshot already holds it), and again only when a live process
takes a session over; a turn ends with a resumable error only then, so only then can a client resume it."""


class Client(Peer):
    """A raw client of one version that remembers which method each of its requests called and
    the snapshot it last took of each channel."""

    def __init__(self, ws: Any) -> None:
        super().__init__(ws)
        self.methods: dict[Any, str] = {}
        self.version = ""

    async def send(self, frame: dict[str, Any]) -> None:
        if "id" in frame and "method" in frame:
            self.methods[frame["id"]] = frame["method"]
        await super().send(frame)

    async def join(self, client_id: str, version: str, subscriptions: tuple[str, ...] = (ROOT,)) -> None:
        self.version = version
        result = (await self.initialize(client_id, [version], subscriptions))["result"]
        assert result["protocolVersion"] == version

    async def sub(self, channel: str) -> dict[str, Any]:
        reply_ = await self.request("subscribe", {"channel": channel})
        assert reply_.get("error") is None, reply_
        return reply_["result"]["snapshot"]

    async def dispatch(self, channel: str, action: dict[str, Any]) -> None:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "method": "dispatchAction",
                         "params": {"channel": channel, "clientSeq": self._next_id, "action": action}})

    async def accepted(self, channel: str, action: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        """Dispatch ``action`` and wait for its echo; the echo (failing if it was rejected)."""
        await self.dispatch(channel, action)
        seq = self._next_id
        echoed = await self.until(lambda: next((a for a in self.actions() if a["channel"] == channel
                                                and a.get("origin", {}).get("clientSeq") == seq), None), timeout=timeout)
        assert "rejectionReason" not in echoed, (action, echoed.get("rejectionReason"))
        return echoed

    def last_seen(self) -> int:
        """The highest serverSeq this client has seen (envelopes and snapshots)."""
        seqs = [a["serverSeq"] for a in self.actions()]
        seqs += [snapshot["fromSeq"] for snapshot in self.snapshots().values()]
        return max(seqs, default=0)

    async def closed_with(self) -> tuple[int | None, str | None]:
        """Wait until the host closes this connection; its close code and reason."""
        await asyncio.wait_for(self.ws.wait_closed(), 30)
        return self.ws.close_code, self.ws.close_reason

    def snapshots(self) -> dict[str, dict[str, Any]]:
        """The latest snapshot of each channel this client took (initialize, subscribe)."""
        taken: dict[str, dict[str, Any]] = {}
        for frame in self.received:
            method = self.methods.get(frame.get("id")) if "method" not in frame else None
            result = frame.get("result") if isinstance(frame.get("result"), dict) else {}
            for snapshot in ([result.get("snapshot")] if method == "subscribe" else result.get("snapshots") or []):
                if isinstance(snapshot, dict):
                    taken[snapshot["resource"]] = snapshot
        return taken

    def mirror(self, channel: str, kind: str) -> dict[str, Any]:
        """What this client's reducers make of its snapshot of ``channel`` and every later action."""
        snapshot = self.snapshots()[channel]
        state = snapshot["state"]
        for envelope in self.actions():
            if envelope["channel"] == channel and envelope["serverSeq"] > snapshot["fromSeq"] and "rejectionReason" not in envelope:
                if self.version == "0.7.0":
                    state = v0_7.reduce(kind, state, envelope["action"], 0, channel=channel)
                else:
                    state = internal.reduce(kind, state, envelope["action"], 0)
        return state

    def types(self) -> set[str]:
        """The action types this client was sent (rejections of its own actions left out)."""
        return {a["action"]["type"] for a in self.actions() if "rejectionReason" not in a}


def assert_every_frame_fits(clients: Iterable[Client], kind_of: Callable[[str], str | None]) -> None:
    """Every frame each client received fits the schema of the version it negotiated."""
    for client in clients:
        schema = FrameSchema.for_version(client.version)
        problems = [problem for frame in client.received
                    for problem in schema.errors(frame, client.methods.get(frame.get("id")), kind_of)]
        assert problems == [], f"{client.version}: {len(problems)} problems, first: " + json.dumps(problems[:8], indent=1)


def assert_sent(expected: frozenset[str], newest: Client, older: Iterable[Client]) -> None:
    """Every type of ``expected`` reached the newest client, and each one 0.7.0 has a 0.7.0 client."""
    missing = expected - newest.types()
    assert not missing, f"never sent to the {newest.version} client: {sorted(missing)}"
    seen_0_7 = {kind for client in older for kind in client.types()}
    missing_0_7 = {kind for kind in expected if known_to("0.7.0", kind)} - seen_0_7
    assert not missing_0_7, f"never sent to a 0.7.0 client: {sorted(missing_0_7)}"
