"""The fake OpenAI Chat Completions server the benchmarks stream from, on 127.0.0.1.

``serve_chat(respond, model=...)`` listens on a free port and returns the server and its base URL
(``http://127.0.0.1:PORT/v1``, what an ``openai`` client or an ``openai-chat`` agent takes). It
answers every POST on a connection, one after another (keep-alive), with a streamed completion:

* the response head (``200``, ``text/event-stream``, chunked transfer encoding);
* what ``respond(body, reply)`` writes: ``body`` is the request's raw bytes (a benchmark reads how
  many chunks to stream, and at what pace, from it), ``reply.role()`` the opening chunk with the
  assistant role, ``reply.text(content)`` one ``chat.completion.chunk`` with that text;
* once ``respond`` returns: a chunk with ``finish_reason: "stop"``, ``data: [DONE]`` and the last
  (empty) HTTP chunk.

The head goes out in the same write as the first chunk, and ``[DONE]`` in the same write as the
last HTTP chunk, so that a reader sees no extra network reads beyond one per chunk. Each chunk is
one ``data:`` event of compact JSON with the given ``model``; between chunks nothing waits for the
socket's buffer to drain unless ``respond`` awaits ``reply.drain()`` (the end does). The server is
a fake for measuring: it reads a request's head and its ``content-length`` body and nothing more
(no validation, no errors), and a client that goes away ends its connection quietly.

``agent_toml`` is the configuration of the host's agent on this server (``[agents.bench]``, kind
``openai-chat``, titles from the first words: no model call of its own), and ``host_config`` a
whole host configuration around it (port 0, the given data directory and token, no offline agent;
optionally a process of a cluster), as the benchmarks that run the host in their own process use it.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
_DONE = b"data: [DONE]\n\n"


def chunk(content: str | None, finish: str | None = None, *, role: bool = False, model: str = "bench") -> bytes:
    """One ``chat.completion.chunk`` as a ``data:`` event: ``content`` as its delta's text (none
    if None), the opening delta with the assistant's role if ``role``, ``finish`` as its
    ``finish_reason``."""
    delta: dict[str, Any] = {"role": "assistant", "content": ""} if role else ({} if content is None else {"content": content})
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


@functools.cache
def _text_template(model: str) -> tuple[bytes, bytes]:
    """``chunk(content, model=model)`` split around its content's JSON string."""
    marker = "\x00content\x00"
    before, after = chunk(marker, model=model).split(json.dumps(marker).encode())
    return before, after


def _http_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class Reply:
    """One streamed completion being written (module docstring)."""

    def __init__(self, writer: asyncio.StreamWriter, model: str) -> None:
        self._writer = writer
        self._model = model
        self._head = _HEAD
        self._text = _text_template(model)

    def _write(self, data: bytes) -> None:
        self._writer.write(self._head + data)
        self._head = b""

    def role(self) -> None:
        """The opening chunk: the assistant's role, empty text."""
        self._write(_http_chunk(chunk(None, role=True, model=self._model)))

    def text(self, content: str) -> None:
        """A chunk with ``content`` as its text (``chunk(content)``'s bytes, from a template: a
        load generator's CPU is taken from the machine the host runs on)."""
        before, after = self._text
        self._write(_http_chunk(before + json.dumps(content).encode() + after))

    async def drain(self) -> None:
        await self._writer.drain()

    async def end(self) -> None:
        self._write(_http_chunk(chunk(None, "stop", model=self._model)))
        self._write(_http_chunk(_DONE) + b"0\r\n\r\n")
        await self._writer.drain()


Respond = Callable[[bytes, Reply], Awaitable[None]]


async def serve_chat(respond: Respond, *, model: str = "bench") -> tuple[asyncio.Server, str]:
    """Listen on 127.0.0.1 (a free port): every request answered by ``respond`` (module docstring).
    Returns the server and its base URL."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = {k.strip().lower(): v.strip() for k, v in
                           (line.split(":", 1) for line in head.decode().split("\r\n")[1:] if ":" in line)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                reply = Reply(writer, model)
                await respond(body, reply)
                await reply.end()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed the connection, or the benchmark is ending
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"


def agent_toml(base_url: str, model: str, *, context_window: int | None = None) -> str:
    """The ``bench`` agent: ``openai-chat`` on the server at ``base_url``, offering ``model``."""
    window = "" if context_window is None else f", context_window = {context_window}"
    return (f'[agents.bench]\nkind = "openai-chat"\nbase_url = "{base_url}"\napi_key = "bench"\n'
            f'title = "first-words"\nmodels = [{{id = "{model}"{window}}}]\n')


def host_config(data_dir: str, base_url: str, model: str, token: str, *, context_window: int | None = None,
                cluster: str | None = None) -> Any:
    """A host's configuration with the ``bench`` agent, its file written in ``data_dir``; with
    ``cluster`` (a NATS URL) a process of that cluster."""
    from host.config import load_config

    path = Path(data_dir) / "bench.toml"
    path.write_text(agent_toml(base_url, model, context_window=context_window))
    overrides: dict[str, Any] = {"server": {"port": 0, "data_dir": data_dir, "token": token},
                                 "sessions": {"offline_agent": False}}
    if cluster is not None:
        overrides["cluster"] = {"url": cluster}
    return load_config(path, overrides=overrides, environ={})
