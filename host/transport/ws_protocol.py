"""uvicorn's Sans-I/O WebSocket protocol, writing the frames of one event-loop tick in one go.

uvicorn hands every ``websocket.send`` to the socket at once (one ``transport.write`` — one
``send(2)`` — per frame). A host streaming tokens to many clients sends many small frames per tick,
so here a text message only waits in a list, and the tick's messages are framed and written with
one ``transport.write`` at the end of the tick (``call_soon``). On a connection without
extensions (the host turns permessage-deflate off) a text's frame is the same bytes for every
client, so it is built once per event-loop iteration for all of them (``shared_frames``; with
one connection open, on its own and uncached); a connection with extensions frames through its own
``websockets`` protocol. Anything else (close, handshake,
HTTP responses) first writes what waits, so the order on the wire never changes.

The protocol also offers itself to the application as the ASGI scope extension
``FRAMES_EXTENSION``: ``queue_text(text)`` takes a message synchronously, with no coroutine, queue
or ASGI message per frame (the host's fan-out path); the end-of-tick write waits for
``when_durable`` (or, given ``at_end_of_tick``, is called by the application at the end of the
tick once durable: the host's journal commits and writes every connection from one callback,
which therefore does not call ``before_write`` again) and any other (a forced one before a close,
one after the transport drained, one waiting for ``when_durable``) calls ``before_write`` first
(the host commits its journal there: nothing leaves before it is durable).

Flow control: at most ``WRITE_AHEAD`` bytes are framed into the transport's buffer; past that,
messages wait unframed until the transport has drained (``resume_writing``). A client that does
not read therefore holds its backlog here, where it can be counted (``backlog``, also what
``queue_text`` returns) and dropped: ``cut_off(code, reason)`` discards what waits, sends a close
frame right behind the little already framed (a client that reads again learns why it was cut
off) and aborts the socket if the close handshake has not completed within ``CUT_OFF_GRACE``
seconds, which frees its buffer even when the peer never reads again. When the server shuts
down, a client gets ``SHUTDOWN_GRACE`` seconds to read what is left, then its socket is aborted,
so a client that does not read cannot keep the host from stopping.

This subclasses ``uvicorn.protocols.websockets.websockets_sansio_impl.WebSocketsSansIOProtocol``
and relies on its attributes (``conn``, ``transport``, ``writable``, ``handshake_complete``,
``close_sent``, ``initial_response``, ``disconnected``, ``scope``) and ``run_asgi``; uvicorn is
pinned to a range in ``pyproject.toml`` and ``tests/host/transport/test_ws_protocol.py`` exercises it end to
end (as does every test that runs a host).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from uvicorn.protocols.utils import ClientDisconnected
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol
from websockets.exceptions import InvalidState
from websockets.protocol import State

from host.transport.shared_frames import FIN_TEXT, HEAD_16, SharedFrames, text_frame

__all__ = ["TickBatchingWebSocketProtocol", "FRAMES_EXTENSION", "WRITE_AHEAD", "CUT_OFF_GRACE", "SHUTDOWN_GRACE"]

FRAMES_EXTENSION = "agent-host.frames"

WRITE_AHEAD = 256 * 1024
"""Bytes framed into the transport's buffer beyond which further messages wait unframed."""
CUT_OFF_GRACE = 10.0
"""Seconds a cut-off client has to read its close frame before its socket is aborted."""
SHUTDOWN_GRACE = 2.0
"""Seconds a client has, when the server shuts down, to read what is left before its socket is
aborted (a client that does not read would otherwise keep the host from stopping)."""
SHARED_FRAMES = SharedFrames()
"""Every connection's plain text frames of this event-loop iteration, each framed once."""


class TickBatchingWebSocketProtocol(WebSocketsSansIOProtocol):
    """Text messages wait in ``_pending`` (not yet framed, so uvicorn's own writes — pongs, pings,
    closes — never carry them) until ``_write_buffered`` runs at the end of the tick, or, while the
    transport holds ``WRITE_AHEAD`` bytes or more, until it has drained."""

    before_write: Callable[[], None] | None = None
    """Called before pending messages are written to the socket (makes them durable now)."""
    at_end_of_tick: Callable[[Callable[[], None]], None] | None = None
    """``at_end_of_tick(write)`` calls ``write`` at the end of this event-loop tick, once pending
    messages may leave; when set, it replaces the protocol's own end-of-tick callback (so one
    callback of the application, the journal's commit, serves every connection's write)."""
    when_durable: Callable[[Callable[[], None]], None] | None = None
    """``when_durable(write)`` calls ``write`` once pending messages may leave; used for the
    end-of-tick write, so the application can group several ticks' frames behind one commit."""

    _pending: list[str] | None = None
    _pending_chars = 0
    """Characters of the messages in ``_pending`` (about their bytes: frames are mostly ASCII)."""
    _write_armed = False
    _paused = False
    """The transport asked for no more writes (``pause_writing``) and has not drained yet: what
    uvicorn's ``writable`` event says, read per message without a call."""
    _room_unpaused = 0
    """Characters that fit under ``WRITE_AHEAD`` whatever the transport holds while it has not asked
    for a pause (asyncio pauses a protocol whenever its buffer passes the high-water mark): the
    tick's messages, when no more, are written without asking the buffer's size."""

    def connection_made(self, transport: Any) -> None:
        SHARED_FRAMES.users += 1  # one connection alone shares no frames: they are built uncached
        self._write_durable = functools.partial(self._write_buffered, False, True)
        """``_write_buffered`` as ``at_end_of_tick`` calls it: what waits is durable already (a
        partial, not a method: no frame of its own per tick)."""
        super().connection_made(transport)
        limits = getattr(transport, "get_write_buffer_limits", None)  # (nothing here changes them later)
        if limits is not None:
            self._room_unpaused = max(0, WRITE_AHEAD - limits()[1])

    def connection_lost(self, exc: Exception | None) -> None:
        SHARED_FRAMES.users -= 1
        self._paused = False  # (as uvicorn sets ``writable``: nothing waits for a drain now)
        super().connection_lost(exc)

    async def run_asgi(self) -> None:
        # ASGI types an extension's value as a dict; this one hands the app the protocol object.
        self.scope["extensions"][FRAMES_EXTENSION] = self  # type: ignore[assignment]
        await super().run_asgi()

    def queue_text(self, text: str) -> int:
        """Send ``text`` at the end of this tick (or, if the client is behind, once it has read
        what was framed before). Returns ``backlog()`` (a client that does not read makes it
        grow), or -1 when the connection is closed or its close was sent and the message was
        dropped. (A transport closing under it is not asked per message: the write drops what
        waits then, ``_write_buffered``, and ``send`` asks it for the application's messages.)"""
        if self.disconnected or self.close_sent or not self.handshake_complete:
            return -1
        pending = self._pending
        if pending is None:
            self._pending = [text]
        else:
            pending.append(text)
        self._pending_chars += len(text)
        if not self._write_armed and not self._paused:
            if self.at_end_of_tick is not None:  # ``_arm_write``, inlined: the tick's first message
                self._write_armed = True
                self.at_end_of_tick(self._write_durable)
            else:
                self._arm_write()
        return self.transport.get_write_buffer_size() + self._pending_chars

    def backlog(self) -> int:
        """Bytes waiting for this client: framed in the transport's buffer, or not yet framed."""
        if self.disconnected:
            return 0
        return self.transport.get_write_buffer_size() + self._pending_chars

    def cut_off(self, code: int, reason: str) -> None:
        """Drop every message that waits and close with ``code`` and ``reason`` (at most 123
        bytes): the close frame follows what is already framed, at most ``WRITE_AHEAD`` bytes.
        The socket is aborted if the client has not completed the close within ``CUT_OFF_GRACE``."""
        self._pending, self._pending_chars = None, 0
        if self.disconnected or self.close_sent or not self.handshake_complete or self.transport.is_closing():
            return
        self.queue.put_nowait({"type": "websocket.disconnect", "code": code, "reason": reason})
        try:
            self.conn.send_close(code, reason)
        except InvalidState:
            self.transport.abort()
            return
        self.transport.write(b"".join(self.conn.data_to_send()))
        self.close_sent = True
        self.stop_keepalive()
        self.close_timer = self.loop.call_later(CUT_OFF_GRACE, self.transport.abort)

    async def send(self, message: Any) -> None:
        text = message.get("text") if message["type"] == "websocket.send" else None
        if message["type"] == "websocket.close" and self.close_sent:
            return  # already closed (cut off): uvicorn's send would wait for a reader that never comes
        if text is None or not self.handshake_complete or self.close_sent or self.initial_response is not None:
            self._write_buffered(force=True)
            await super().send(message)
            return
        if not self.writable.is_set():
            await self.writable.wait()  # the peer is slow: wait for the transport to drain, as uvicorn does
        if self.disconnected or self.transport.is_closing():
            raise ClientDisconnected()
        if self.queue_text(text) < 0:
            raise ClientDisconnected()

    def shutdown(self) -> None:
        """The server is stopping: what waits goes out before the close frame if the client keeps
        up, and is dropped if it is behind; the socket is aborted after ``SHUTDOWN_GRACE``."""
        if self.writable.is_set() and not self.close_sent:
            self._write_buffered(force=True)
        else:
            self._pending, self._pending_chars = None, 0
        super().shutdown()
        if not self.disconnected:
            self.loop.call_later(SHUTDOWN_GRACE, self._abort_if_open)

    def _abort_if_open(self) -> None:
        if not self.disconnected:
            self.transport.abort()

    def pause_writing(self) -> None:
        self._paused = True
        super().pause_writing()

    def resume_writing(self) -> None:
        self._paused = False
        super().resume_writing()
        if self._pending and not self._write_armed:
            self._arm_write()

    def _arm_write(self) -> None:
        """Have what waits written at the end of this tick (``at_end_of_tick``, else a callback of
        this protocol's own that waits for ``when_durable``)."""
        self._write_armed = True
        if self.at_end_of_tick is not None:
            # Its callbacks run once everything logged is durable, and none logs anything: the
            # write need not make it durable again (``durable``).
            self.at_end_of_tick(self._write_durable)
        else:
            self.loop.call_soon(self._end_of_tick)

    def _end_of_tick(self) -> None:
        if self.when_durable is not None:
            self.when_durable(self._write_buffered)
        else:
            self._write_buffered()

    def _write_buffered(self, force: bool = False, durable: bool = False) -> None:
        """Frame and write waiting messages: all of them when ``force`` (before a close or any
        other write), else up to ``WRITE_AHEAD`` bytes in the transport's buffer. ``durable``:
        every message waiting is durable already (no ``before_write``)."""
        self._write_armed = False
        pending = self._pending
        if not pending:
            return
        if self.disconnected or self.close_sent or self.transport.is_closing():
            self._pending, self._pending_chars = None, 0
            return
        if self.before_write is not None and not durable:
            self.before_write()
        waiting = len(pending)
        if force or (self._pending_chars <= self._room_unpaused and not self._paused):
            taken = waiting  # (the transport not paused holds at most its high-water mark: room enough)
        elif (room := WRITE_AHEAD - self.transport.get_write_buffer_size()) >= self._pending_chars:
            taken = waiting
        else:
            taken = 0
            while taken < waiting and room > 0:
                room -= len(pending[taken])
                taken += 1
        if not taken:
            return  # the transport is full: resume_writing writes more once it has drained
        texts = pending[:taken] if taken < waiting else pending
        conn = self.conn
        if conn.state is State.OPEN and not conn.extensions and not conn.expect_continuation_frame and not conn.debug:
            # Plain frames: the same bytes for every connection, built once (shared_frames).
            # What the protocol has to send itself (``conn.writes``, read by ``data_to_send``) goes
            # first; uvicorn writes its own at once, so normally there is nothing.
            if taken == 1 and SHARED_FRAMES.users == 1 and not conn.writes:
                # ``text_frame(texts[0])``, inlined (``SHARED_FRAMES.frames``' way for a connection
                # alone and one text), but for a text of 64 KiB or more.
                data = texts[0].encode()
                length = len(data)
                if length < 126:
                    data = bytes((FIN_TEXT, length)) + data
                elif length < 65536:
                    data = HEAD_16.pack(FIN_TEXT, 126, length) + data
                else:
                    data = text_frame(texts[0])
            else:
                frames = SHARED_FRAMES.frames(texts)
                data = b"".join(conn.data_to_send() + frames if conn.writes else frames)
        else:
            try:
                for text in texts:
                    conn.send_text(text.encode())
            except InvalidState:
                self._pending, self._pending_chars = None, 0
                return
            data = b"".join(conn.data_to_send())
        if taken < waiting:
            self._pending = pending[taken:]
            self._pending_chars -= sum(len(text) for text in pending[:taken])
        else:
            self._pending, self._pending_chars = None, 0
        self.transport.write(data)
        if self._pending and self.writable.is_set() and not self._write_armed:
            # The kernel took it all at once (no pause_writing, so no resume_writing): go on.
            self._arm_write()
