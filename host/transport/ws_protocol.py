"""uvicorn's Sans-I/O WebSocket protocol, writing the frames of one event-loop tick in one go.

uvicorn hands every ``websocket.send`` to the socket at once (one ``transport.write`` — one
``send(2)`` — per frame). A host streaming tokens to many clients sends many small frames per tick,
so here a text message only waits in a list, and the tick's messages are framed and written with
one ``transport.write`` at the end of the tick (``call_soon``). Anything else (close, handshake,
HTTP responses) first writes what waits, so the order on the wire never changes.

The protocol also offers itself to the application as the ASGI scope extension
``FRAMES_EXTENSION``: ``queue_text(text)`` takes a message synchronously, with no coroutine, queue
or ASGI message per frame (the host's fan-out path); the end-of-tick write waits for
``when_durable`` and a forced one (before a close) calls ``before_write`` first (the host commits
its journal there: nothing leaves before it is durable).

This subclasses ``uvicorn.protocols.websockets.websockets_sansio_impl.WebSocketsSansIOProtocol``
and relies on its attributes (``conn``, ``transport``, ``writable``, ``handshake_complete``,
``close_sent``, ``initial_response``, ``disconnected``, ``scope``) and ``run_asgi``; uvicorn is
pinned to a range in ``pyproject.toml`` and ``tests/host/transport/test_ws_protocol.py`` exercises it end to
end (as does every test that runs a host).
"""

from __future__ import annotations

from typing import Any, Callable

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState

__all__ = ["TickBatchingWebSocketProtocol", "FRAMES_EXTENSION"]

FRAMES_EXTENSION = "agent-host.frames"


class TickBatchingWebSocketProtocol(WebSocketsSansIOProtocol):
    """Text messages wait in ``_pending`` (not yet framed, so uvicorn's own writes — pongs, pings,
    closes — never carry them) until ``_write_buffered`` runs at the end of the tick."""

    before_write: Callable[[], None] | None = None
    """Called before pending messages are written to the socket (makes them durable now)."""
    when_durable: Callable[[Callable[[], None]], None] | None = None
    """``when_durable(write)`` calls ``write`` once pending messages may leave; used for the
    end-of-tick write, so the application can group several ticks' frames behind one commit."""

    _pending: list[str] | None = None

    async def run_asgi(self) -> None:
        self.scope["extensions"][FRAMES_EXTENSION] = self  # type: ignore[index]
        await super().run_asgi()

    def queue_text(self, text: str) -> int:
        """Send ``text`` at the end of this tick. Returns the bytes this connection has waiting
        (a client that does not read makes it grow), or -1 when the connection is closing or
        closed and the message was dropped."""
        if self.disconnected or self.close_sent or not self.handshake_complete or self.transport.is_closing():
            return -1
        pending = self._pending
        if pending is None:
            pending = self._pending = []
            self.loop.call_soon(self._end_of_tick)
        pending.append(text)
        return self.transport.get_write_buffer_size()

    async def send(self, message: Any) -> None:
        text = message.get("text") if message["type"] == "websocket.send" else None
        if text is None or not self.handshake_complete or self.close_sent or self.initial_response is not None:
            self._write_buffered()
            await super().send(message)
            return
        if not self.writable.is_set():
            self._write_buffered()  # the peer is slow: wait for the transport to drain, as uvicorn does
            await self.writable.wait()
        if self.disconnected:
            raise ClientDisconnected()
        if self.queue_text(text) < 0:
            raise ClientDisconnected()

    def _end_of_tick(self) -> None:
        if self.when_durable is not None:
            self.when_durable(self._write_buffered)
        else:
            self._write_buffered()

    def _write_buffered(self) -> None:
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        if self.disconnected or self.close_sent or self.transport.is_closing():
            return
        if self.before_write is not None:
            self.before_write()
        try:
            for text in pending:
                self.conn.send_text(text.encode())
        except InvalidState:
            return
        self.transport.write(b"".join(self.conn.data_to_send()))
