"""uvicorn's Sans-I/O WebSocket protocol, writing the frames of one event-loop tick in one go.

uvicorn hands every ``websocket.send`` to the socket at once (one ``transport.write`` — one
``send(2)`` — per frame). A host streaming tokens to many clients sends many small frames per tick,
so here a text frame is only framed into the connection's ``websockets`` buffer and the buffer is
written once, at the end of the tick (``call_soon``). Anything else (close, handshake, HTTP
responses) first writes what is buffered, so the order on the wire never changes.

This subclasses ``uvicorn.protocols.websockets.websockets_sansio_impl.WebSocketsSansIOProtocol``
and relies on its attributes (``conn``, ``transport``, ``writable``, ``handshake_complete``,
``close_sent``, ``initial_response``, ``disconnected``); uvicorn is pinned to a range in
``pyproject.toml`` and ``tests/host/test_ws_protocol.py`` exercises it end to end.
"""

from __future__ import annotations

from typing import Any

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState

__all__ = ["TickBatchingWebSocketProtocol"]


class TickBatchingWebSocketProtocol(WebSocketsSansIOProtocol):
    _write_scheduled = False

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
        try:
            self.conn.send_text(text.encode())
        except InvalidState:
            raise ClientDisconnected() from None
        if not self._write_scheduled:
            self._write_scheduled = True
            self.loop.call_soon(self._write_buffered)

    def _write_buffered(self) -> None:
        self._write_scheduled = False
        output = self.conn.data_to_send()
        if output and not self.transport.is_closing():
            self.transport.write(b"".join(output))
