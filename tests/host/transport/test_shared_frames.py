"""A text's shared frame is exactly what the ``websockets`` protocol would send for it, and the
cache keeps frames for one event-loop iteration only."""

from __future__ import annotations

import asyncio

import pytest
from websockets.protocol import State
from websockets.server import ServerProtocol

from host.transport.shared_frames import SharedFrames, text_frame


def _websockets_frame(text: str) -> bytes:
    server = ServerProtocol()
    server.state = State.OPEN
    server.send_text(text.encode())
    return b"".join(server.data_to_send())


@pytest.mark.parametrize("length", [0, 1, 125, 126, 127, 65535, 65536, 70_000])
def test_text_frame_is_the_frame_websockets_sends(length: int) -> None:
    text = "x" * length
    assert text_frame(text) == _websockets_frame(text)


def test_text_frame_counts_utf8_bytes_not_characters() -> None:
    text = "é" * 100  # 100 characters, 200 bytes: the 16-bit length form
    assert text_frame(text) == _websockets_frame(text)


async def test_one_frame_per_text_within_an_iteration_and_none_kept_after() -> None:
    shared = SharedFrames()
    text = '{"jsonrpc":"2.0","method":"action"}'
    first = shared.frames([text, text])
    assert first[0] is first[1]
    assert shared.frame("".join(['{"jsonrpc":"2.0",', '"method":"action"}'])) is first[0]  # equal text, same bytes
    await asyncio.sleep(0)
    assert shared._frames == {}
    again = shared.frame(text)
    assert again == first[0] and again is not first[0]
