"""Clients that stop reading, over real WebSockets: the host holds at most ``[server]
max_queued_bytes`` for all of them together and ``max_queued_bytes_per_client`` for each, cuts off
the ones holding the most with close code 1013 and a reason, and a client that reads is unaffected."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection as RawClient
from websockets.asyncio.client import connect as raw_connect
from websockets.exceptions import ConnectionClosed

from client import LEGACY_VERSIONS, AhpClient
from host.transport.outbound import CUT_OFF_CODE, OutboundBudget
from host.transport.server import RunningHost
from host.transport.ws_protocol import WRITE_AHEAD
from tests.conftest import TOKEN, FrameChecker
from tests.host.runtime.agents.harness import config_for, serving

MIB = 1024 * 1024
TITLE = 10_000
"""Characters of each title the test sets: one frame of about 10 kB to every subscriber."""


@pytest.fixture(autouse=True)
def no_wal_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests send megabytes with a per-client limit of a megabyte or two. A WAL checkpoint's
    last pass (``host.state.store._check_wal``) holds the store's commits, and so the frames waiting
    for them, a few milliseconds, then releases them in one tick: a reading client would then hold
    more than these small limits for a moment. With the default limits (64 MiB a client) that never
    matters; here it would blur what is tested, so the WAL is left alone."""
    monkeypatch.setattr("host.state.store.WAL_CHECKPOINT_BYTES", 1 << 40)
    monkeypatch.setattr("host.state.store.WAL_LIMIT_BYTES", 1 << 40)


async def slow_client(running: RunningHost, session: str, name: str) -> RawClient:
    """A real WebSocket client subscribed to ``session`` that reads its handshake and then nothing
    (its library stops reading the socket once one message waits). Its socket's receive buffer is
    small, as over a slow link: on loopback the kernel would otherwise take up to tens of MB."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (running.address, running.port))
    ws = await raw_connect(running.url, sock=sock, max_queue=1, max_size=None)
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "channel": "ahp-root://", "protocolVersions": ["0.2.0"], "clientId": name, "initialSubscriptions": [session]}}))
    answer = json.loads(await ws.recv())
    assert "result" in answer, answer
    return ws


async def close_seen_by(ws: RawClient) -> tuple[int | None, str]:
    """Read again until the host's close frame: its code and reason."""
    try:
        while True:
            await asyncio.wait_for(ws.recv(), 30)
    except ConnectionClosed as closed:
        return (closed.rcvd.code, closed.rcvd.reason) if closed.rcvd is not None else (None, "")


async def set_titles(running: RunningHost, session: str, rounds: int, stop: Any = lambda: False) -> str:
    """Set the session's title ``rounds`` times, one ~10 kB frame per subscriber each, yielding
    between them as a turn streaming at a model's pace would; the last title."""
    internal = running.host.session_uri(session)
    title = ""
    for index in range(rounds):
        title = f"{index:06d}" + "x" * TITLE
        running.host.store.dispatch(internal, {"type": "session/titleChanged", "title": title})
        await asyncio.sleep(0)
        if stop():
            break
    return title


def title_seen_by(client: AhpClient, session: str) -> str | None:
    return ((client.state(session) or {}).get("summary") or {}).get("title")


def server_connections(running: RunningHost) -> list[Any]:
    return list(running.server.server_state.connections)


async def test_slow_clients_are_cut_off_when_all_together_pass_the_host_budget(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path, server={"max_queued_bytes": 4 * MIB})
    async with serving(config, frame_checker) as (running, fast):
        session = await fast.create_session()
        await fast.subscribe(session)
        slow = [await slow_client(running, session, f"slow-{index}") for index in range(3)]

        def all_slow_cut() -> bool:
            return sum(protocol.close_sent for protocol in server_connections(running)) == 3

        last = await set_titles(running, session, 6_000, stop=all_slow_cut)
        assert all_slow_cut()
        # What the host still holds for the cut-off clients is what it had framed for the socket
        # (the close frame follows it); their unframed backlog is gone.
        for protocol in server_connections(running):
            assert protocol.backlog() <= WRITE_AHEAD + 2 * TITLE

        # The client that reads got every title and is still connected.
        await fast.wait_for(lambda m, e: title_seen_by(fast, session) == last, timeout=30)
        await fast.ping()

        # Each slow client, reading again, learns why it was cut off and what to do.
        for ws in slow:
            code, reason = await close_seen_by(ws)
            assert code == CUT_OFF_CODE
            assert reason.startswith("too slow: ") and "the host's 4 MiB" in reason and "reconnect to resume" in reason

        # A cut-off client may come back: reconnecting with the same id replays or resnapshots.
        back = await AhpClient.connect(running.url.split("?")[0], token=TOKEN, client_id="slow-0", frame_hook=frame_checker.hook)
        try:
            # 0.2.0 on purpose: the cut-off client (it spoke 0.2.0) comes back as itself.
            await back.initialize(subscriptions=[session], protocol_versions=("0.2.0",))
            assert title_seen_by(back, session) == last
        finally:
            await back.close()


async def test_one_slow_client_is_cut_off_at_its_own_limit_and_the_reading_one_is_not(tmp_path: Path, frame_checker: FrameChecker) -> None:
    config = config_for(tmp_path, server={"max_queued_bytes_per_client": 1 * MIB})
    async with serving(config, frame_checker) as (running, fast):
        session = await fast.create_session()
        await fast.subscribe(session)
        slow = await slow_client(running, session, "slow")
        last = await set_titles(running, session, 4_000, stop=lambda: any(p.close_sent for p in server_connections(running)))
        await fast.wait_for(lambda m, e: title_seen_by(fast, session) == last, timeout=30)
        await fast.ping()
        code, reason = await close_seen_by(slow)
        assert code == CUT_OFF_CODE
        assert "over this client's limit of 1 MiB" in reason and "reconnect to resume" in reason


class Held:
    """A connection as the budget sees it, holding a set number of bytes."""

    def __init__(self, name: str, backlog: int) -> None:
        self.client_id = name
        self.held = backlog
        self.closed: tuple[int, str] | None = None

    def backlog(self) -> int:
        return self.held

    def cut_off(self, code: int, reason: str) -> None:
        self.closed = (code, reason)
        self.held = 0


def test_the_budget_cuts_the_largest_first_and_only_until_the_rest_fit() -> None:
    budget = OutboundBudget(total=10 * MIB, per_client=8 * MIB)
    reader, big, bigger = Held("reader", 0), Held("big", 0), Held("bigger", 0)
    for connection, size in ((reader, 64 * 1024), (big, 3 * MIB), (bigger, 6 * MIB)):
        connection.held = size
        budget.note(connection, size)
    assert [c.closed for c in (reader, big, bigger)] == [None, None, None]  # 9 MiB and 64 kB fit
    big.held = 5 * MIB
    budget.note(big, big.held)  # 11 MiB and 64 kB: the largest goes, and that is enough
    assert bigger.closed is not None and bigger.closed[0] == CUT_OFF_CODE
    assert big.closed is None and reader.closed is None
    assert len(bigger.closed[1].encode()) <= 123  # a close reason's limit


def test_a_client_that_caught_up_since_its_last_report_is_not_counted_at_its_old_size() -> None:
    budget = OutboundBudget(total=10 * MIB, per_client=10 * MIB)
    caught_up, slow = Held("caught-up", 9 * MIB), Held("slow", 0)
    budget.note(caught_up, caught_up.held)
    caught_up.held = 0  # it read everything; it queued nothing since, so it reported nothing
    slow.held = 2 * MIB
    budget.note(slow, slow.held)
    assert caught_up.closed is None and slow.closed is None
    assert budget.held == 2 * MIB


@pytest.mark.parametrize("size", [8 * MIB + 1])
def test_one_client_past_its_own_limit_is_cut_off_alone(size: int) -> None:
    budget = OutboundBudget(total=64 * MIB, per_client=8 * MIB)
    other, one = Held("other", MIB), Held("one", size)
    budget.note(other, other.held)
    budget.note(one, one.held)
    assert one.closed is not None and "this client's limit of 8 MiB" in one.closed[1]
    assert other.closed is None


async def test_a_client_that_falls_behind_and_catches_up_gets_every_frame_in_order(tmp_path: Path, frame_checker: FrameChecker) -> None:
    # Frames past what the socket buffer takes wait unframed in the host until the client reads
    # again; none is lost, reordered or duplicated, and the client is not cut off.
    config = config_for(tmp_path)
    async with serving(config, frame_checker) as (running, fast):
        session = await fast.create_session()
        behind = await slow_client(running, session, "behind")
        await set_titles(running, session, 1_000)  # about 10 MB: far more than the socket buffers hold
        [protocol] = [p for p in server_connections(running) if p.backlog() > WRITE_AHEAD]
        assert protocol.backlog() > 1 * MIB and not protocol.close_sent
        seen: list[int] = []
        while len(seen) < 1_000:
            message = json.loads(await asyncio.wait_for(behind.recv(), 30))
            action = (message.get("params") or {}).get("action") or {}
            if action.get("type") == "session/titleChanged":
                seen.append(int(action["title"][:6]))
        assert seen == list(range(1_000))
        await behind.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {}}))
        while json.loads(await asyncio.wait_for(behind.recv(), 30)).get("id") != 2:
            pass
        assert protocol.backlog() == 0
        await behind.close()


async def test_a_client_that_does_not_read_cannot_keep_the_host_from_stopping(tmp_path: Path) -> None:
    # The host as its own process, stopped with SIGTERM while a client that stopped reading has
    # frames waiting: the stop must not wait for that client to read (it never will).
    import subprocess

    from tests.host.state.test_durability import host_in, root_client

    host = host_in(tmp_path, 'default_agent = "offline"\n')
    try:
        await host.start()
        writer = await root_client(host, LEGACY_VERSIONS)  # the stuck client below speaks 0.2.0 too
        session = await writer.create_session()
        port = int(host.url.split(":")[2].split("/")[0])
        stuck = await slow_client(_At(host.url, port), session, "stuck")
        for index in range(600):  # about 12 MB to a client whose socket holds far less
            writer.dispatch(session, {"type": "session/titleChanged", "title": f"{index:06d}" + "x" * 20_000})
        await writer.ping()
        await writer.close()
        assert host.process is not None
        host.process.terminate()
        await asyncio.to_thread(host.process.wait, 30)  # raises if the host is still waiting for the client
        await stuck.close()
    except subprocess.TimeoutExpired:
        raise AssertionError("the host did not stop within 30 s: it waited for a client that does not read") from None
    finally:
        host.stop()


class _At:
    """Where a host subprocess listens, as ``slow_client`` reads it from a ``RunningHost``."""

    def __init__(self, url: str, port: int) -> None:
        self.url, self.address, self.port = url, "127.0.0.1", port


def _direct_connection(budget: OutboundBudget, backlogs: list[int]) -> Any:
    """A ``ClientConnection`` on a transport that takes frames directly, its backlog after each
    frame taken from ``backlogs`` (as ``ws_protocol.queue_text`` answers)."""
    from types import SimpleNamespace

    from host.transport.connection import ClientConnection

    host = SimpleNamespace(config=SimpleNamespace(server=SimpleNamespace(max_queued_bytes=0, max_queued_bytes_per_client=0)))
    connection = ClientConnection(host, budget=budget)  # type: ignore[arg-type]
    waiting = iter(backlogs)
    connection.direct = lambda text: next(waiting)
    cut: list[tuple[int, str]] = []
    connection._on_cut_off = lambda code, reason: cut.append((code, reason))
    connection.cut = cut  # type: ignore[attr-defined]
    return connection


def test_a_connection_reports_only_a_backlog_larger_than_its_last_and_is_still_cut_off_at_its_limit() -> None:
    # A client that reads: its backlog goes up and down with each tick's frame; the budget's sum
    # stays at least what it holds, and it is never cut off.
    budget = OutboundBudget(total=10 * MIB, per_client=MIB)
    reading = _direct_connection(budget, [300, 120, 250, 400, 90, 2 * MIB])
    for _ in range(5):
        reading.send("a frame")
    assert budget.reported[reading] == 400  # its largest report: the smaller ones were skipped
    assert reading.cut == [] and reading.cut_off_reason is None
    # Then it stops reading: the first backlog past its limit is reported, and it is cut off.
    reading.send("a frame")
    assert [code for code, _ in reading.cut] == [CUT_OFF_CODE]
    assert "over this client's limit of 1 MiB" in reading.cut[0][1]
    assert reading not in budget.reported
