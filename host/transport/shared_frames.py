"""A server's WebSocket text frames, built once per text for every connection that sends it.

Without extensions (no permessage-deflate), the bytes of a frame a server sends (RFC 6455
section 5.2: unmasked, FIN set, opcode 1) depend only on the text, not on the connection. The
host's fan-out hands every subscriber of a group the same text, so ``SharedFrames.frame(text)``
encodes and frames it the first time any connection asks within an event-loop iteration and hands
the others the same ``bytes``; the cache is emptied at the next iteration, so it holds no more
than the frames being written now.

A connection with extensions, or one whose protocol object is not in a state to send a plain
text frame, must frame through its own protocol (``host.transport.ws_protocol`` checks that).
With exactly one connection open (``users``, which the transport counts) there is nothing to share:
``frames`` builds each frame on its own and caches nothing, so a host with a single client does
not pay the cache's emptying (a callback, and an event-loop iteration of its own, per tick:
``benchmarks/README.md``, "Streamed chunk end to end").
Pure apart from scheduling the cache's emptying on the running loop.
"""

from __future__ import annotations

import asyncio
import struct

__all__ = ["FIN_TEXT", "HEAD_16", "SharedFrames", "text_frame"]

FIN_TEXT = 0x81
"""FIN bit and opcode 1 (text): every message the host sends is one unfragmented text frame."""
HEAD_16 = struct.Struct("!BBH")
"""The head of a frame of 126 to 65,535 bytes (the transport frames such a text inline too)."""
_HEAD_64 = struct.Struct("!BBQ")


def text_frame(text: str) -> bytes:
    """The unmasked, unfragmented text frame carrying ``text`` as UTF-8, as a server sends it."""
    data = text.encode()
    length = len(data)
    if length < 126:
        return bytes((FIN_TEXT, length)) + data
    if length < 65536:
        return HEAD_16.pack(FIN_TEXT, 126, length) + data
    return _HEAD_64.pack(FIN_TEXT, 127, length) + data


class SharedFrames:
    """Frames of the texts written in this event-loop iteration, keyed by text (the fan-out
    passes one ``str`` object to every subscriber, whose hash Python keeps, so a look-up is cheap)."""

    def __init__(self) -> None:
        self._frames: dict[str, bytes] = {}
        self._clear_on: asyncio.AbstractEventLoop | None = None
        """The loop whose next iteration empties the cache (a loop closed before it did is
        replaced by the next one that frames something)."""
        self.users = 0
        """Connections that may frame through this cache (counted by the transport; counting one
        too many only costs the cache)."""

    def frame(self, text: str) -> bytes:
        frame = self._frames.get(text)
        if frame is None:
            frame = self._frames[text] = text_frame(text)
            loop = asyncio.get_running_loop()
            if self._clear_on is not loop:
                self._clear_on = loop
                loop.call_soon(self._clear)
        return frame

    def frames(self, texts: list[str]) -> list[bytes]:
        """``frame`` of each of ``texts``, in order (built on their own, uncached, while exactly
        one connection uses the cache)."""
        if self.users == 1:
            if len(texts) == 1:
                return [text_frame(texts[0])]
            # ``text_frame`` of each, inlined for frames under 64 KiB (a streamed chunk's envelope:
            # 126 bytes and more, nearly always): one call fewer per frame of a tick carrying many
            # sessions' frames.
            built: list[bytes] = []
            add, pack = built.append, HEAD_16.pack
            for text in texts:
                data = text.encode()
                length = len(data)
                if length < 126:
                    add(bytes((FIN_TEXT, length)) + data)
                elif length < 65536:
                    add(pack(FIN_TEXT, 126, length) + data)
                else:
                    add(text_frame(text))
            return built
        cached = self._frames
        out = []
        for text in texts:
            frame = cached.get(text)
            out.append(frame if frame is not None else self.frame(text))
        return out

    def _clear(self) -> None:
        self._clear_on = None
        self._frames.clear()
