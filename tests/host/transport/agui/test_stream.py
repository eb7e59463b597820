"""A ``POST /agui`` client that stops reading its event stream, over a real HTTP connection: what it
leaves unread counts against the host's outbound budget (``[server] max_queued_bytes_per_client``
and the host-wide ``max_queued_bytes``, shared with WebSocket clients), and past it the client is
cut off: the stream ends with a ``RUN_ERROR`` saying why (what it had not read is dropped, not
held), the turn goes on for the AHP clients watching it, and a client that never reads again has
its connection aborted."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import h11
import pytest

from client import PROTOCOL_VERSIONS
from host.transport.agui import session_uri_for
from host.transport.server import RunningHost
from providers import ScriptedProvider
from providers.scripted import Pause, Script, finish, text
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, serving
from tests.host.runtime.tools._support import scripted

from .agui_client import parse_sse, run_input, user

MIB = 1024 * 1024
CHUNK = 8 * 1024
CHUNKS = 1000
"""The reply: 1,000 deltas of 8 KiB (8 MB), one per event-loop tick as a model's stream would come."""


@pytest.fixture(autouse=True)
def no_wal_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """(As in ``tests/host/transport/test_outbound.py``: a WAL checkpoint holding commits for a moment
    would blur these small limits.)"""
    monkeypatch.setattr("host.state.store.WAL_CHECKPOINT_BYTES", 1 << 40)
    monkeypatch.setattr("host.state.store.WAL_LIMIT_BYTES", 1 << 40)


def long_reply() -> Script:
    start, *deltas, end = text(["x" * CHUNK] * CHUNKS, index=0)
    steps: list[Any] = [start]
    for delta in deltas:
        steps += [delta, Pause()]
    return Script((*steps, end, *finish("stop")))


class SlowHttpClient:
    """A real HTTP/1.1 client of ``POST /agui`` that reads the response's head and then nothing
    (its socket's receive buffer is small, as over a slow link) until ``read_rest``."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.http = h11.Connection(h11.CLIENT)
        self.status: int | None = None
        self.body = bytearray()
        self.complete = False

    @classmethod
    async def start(cls, running: RunningHost, body: dict[str, Any]) -> SlowHttpClient:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (running.address, running.port))
        reader, writer = await asyncio.open_connection(sock=sock, limit=16 * 1024)
        client = cls(reader, writer)
        payload = json.dumps(body).encode()
        writer.write(client.http.send(h11.Request(method="POST", target="/agui", headers=[
            ("Host", f"{running.address}:{running.port}"), ("Authorization", f"Bearer {TOKEN}"),
            ("Accept", "text/event-stream"), ("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])))
        writer.write(client.http.send(h11.Data(data=payload)) + client.http.send(h11.EndOfMessage()))
        await writer.drain()
        while client.status is None:
            await client._step()
        return client

    async def _step(self) -> bool:
        """Handle the next h11 event (reading when it needs data); False at the end."""
        event = self.http.next_event()
        if event is h11.NEED_DATA:
            self.http.receive_data(await self.reader.read(65536))
        elif isinstance(event, h11.Response):
            self.status = event.status_code
        elif isinstance(event, h11.Data):
            self.body += event.data
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            self.complete = isinstance(event, h11.EndOfMessage)
            return False
        return True

    async def read_rest(self) -> list[dict[str, Any]]:
        """Read again, to the end of the response: its events."""
        while await asyncio.wait_for(self._step(), 30):
            pass
        return parse_sse(self.body.decode().splitlines())

    def close(self) -> None:
        self.writer.close()


async def until(condition: Any, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


def reply_length(running: RunningHost, thread: str) -> int:
    """Characters of the reply of the thread's last completed turn, as the host holds it."""
    session = running.host.store.state(session_uri_for(thread, "scripted")) or {}
    state = running.host.store.state(session["defaultChat"]) if session else None
    turns = (state or {}).get("turns") or ()
    parts = turns[-1].get("responseParts") or () if turns else ()
    return sum(len(part.get("content") or "") for part in parts if isinstance(part, dict) and part.get("kind") == "markdown")


@pytest.mark.parametrize("limits, says", [
    ({"max_queued_bytes_per_client": MIB}, "over this client's limit of 1 MiB"),
    ({"max_queued_bytes": MIB}, "the most when all clients together passed the host's 1 MiB"),
], ids=["per-client", "host-wide"])
async def test_an_ag_ui_client_that_stops_reading_is_cut_off_and_the_turn_goes_on(
        tmp_path: Path, frame_checker: FrameChecker, limits: dict[str, int], says: str) -> None:
    provider = ScriptedProvider([long_reply()])
    async with serving(config_for(tmp_path, server=limits), frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, watcher):
        slow = await SlowHttpClient.start(running, run_input("slow", "run-1", [user("m1", "write a lot")],
                                                             forwardedProps={"agent": "scripted"}))
        try:
            assert slow.status == 200
            # The turn goes on to its end (for the AHP clients watching it): it was not cancelled.
            await until(lambda: reply_length(running, "slow") == CHUNK * CHUNKS)

            events = await slow.read_rest()
        finally:
            slow.close()
    assert slow.complete  # the stream ended properly, right after the last event
    assert events[0]["type"] == "RUN_STARTED"
    last = events[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "tooSlow", last
    assert last["message"].startswith("too slow: ") and says in last["message"], last["message"]
    assert "send a run with no new message" in last["message"]
    # What it had not read was dropped, not held for it: far less than the reply reached it.
    received = sum(len(e["delta"]) for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert received < CHUNK * CHUNKS // 2


async def test_a_cut_off_ag_ui_client_that_never_reads_again_has_its_connection_aborted(
        tmp_path: Path, frame_checker: FrameChecker, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("host.transport.agui.stream.CUT_OFF_GRACE", 0.2)
    provider = ScriptedProvider([long_reply()])
    config = config_for(tmp_path, server={"max_queued_bytes_per_client": MIB})
    async with serving(config, frame_checker, [scripted(provider)], versions=PROTOCOL_VERSIONS) as (running, watcher):
        before = len(running.server.server_state.connections)
        slow = await SlowHttpClient.start(running, run_input("never", "run-1", [user("m1", "write a lot")],
                                                             forwardedProps={"agent": "scripted"}))
        try:
            assert len(running.server.server_state.connections) == before + 1
            await until(lambda: reply_length(running, "never") == CHUNK * CHUNKS)
            # The host let go of the connection (it did not wait for a reader that never comes).
            await until(lambda: len(running.server.server_state.connections) == before)
            try:
                await slow.read_rest()
            except (ConnectionError, h11.RemoteProtocolError):
                pass
            assert not slow.complete  # what was left in the socket's buffer is gone with it
        finally:
            slow.close()
