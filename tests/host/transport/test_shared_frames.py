"""A text's shared frame is exactly what the ``websockets`` protocol would send for it, and the
cache keeps frames for one event-loop iteration only; through a real host, every client gets
every frame intact."""

from __future__ import annotations

import asyncio

import pytest
from websockets.protocol import State
from websockets.server import ServerProtocol

from host.transport.server import RunningHost
from host.transport.shared_frames import SharedFrames, text_frame
from tests.conftest import Connect
from tests.host.transport.test_ws_protocol import open_streamed_turn, streamed


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


async def test_every_frame_length_form_reaches_every_client_of_a_real_host_intact(
        connect: Connect, running_host: RunningHost) -> None:
    first, second, session, chat = await open_streamed_turn(connect, running_host, "sizes")
    store = running_host.host.store
    # Frames of every length form (under 126 bytes, 16-bit, 64-bit), multi-byte UTF-8 among them.
    pieces = ["a", "é" * 300, "ü" * 40_000, "z" * 70_000, "ok"]
    for piece in pieces:
        store.dispatch(chat, {"type": "chat/delta", "turnId": "sizes", "partId": "p", "content": piece})
    expected = "".join(pieces)

    for client in (first, second):
        await client.wait_for(lambda m, e, client=client: len(streamed(client, session)) >= len(expected), timeout=60)
        assert streamed(client, session) == expected
        await client.ping()


async def test_a_connection_alone_gets_its_frames_built_uncached_and_several_share_them() -> None:
    shared = SharedFrames()
    text = '{"jsonrpc":"2.0","method":"action","params":{"serverSeq":1}}'
    shared.users = 1  # nothing to share: no cache, so nothing to empty at the next iteration
    alone = shared.frames([text, text])
    assert alone == [text_frame(text), text_frame(text)]
    assert shared._frames == {}
    shared.users = 2
    first = shared.frames([text])
    assert first == alone[:1] and shared.frames([text])[0] is first[0]


def test_a_connection_alones_frames_of_a_tick_are_what_websockets_sends_in_every_length_form() -> None:
    shared = SharedFrames()
    shared.users = 1
    texts = ["x" * length for length in (0, 125, 126, 65535, 65536)] + ["é" * 100]
    assert shared.frames(texts) == [_websockets_frame(text) for text in texts]
