"""The fake model server the benchmarks stream from, on 127.0.0.1, speaking one of three APIs.

``serve_chat(respond, model=..., api=...)`` listens on a free port and returns the server and its
base URL (what that API's SDK client, or an agent of that kind, takes as ``base_url``). ``api`` is
one of :data:`APIS`: ``openai-chat`` (OpenAI Chat Completions, ``http://127.0.0.1:PORT/v1``, the
default), ``anthropic`` (Anthropic Messages, ``http://127.0.0.1:PORT``: the SDK adds ``/v1``) or
``openai-responses`` (OpenAI Responses, ``http://127.0.0.1:PORT/v1``). It answers every POST on a
connection, one after another (keep-alive), whatever its path, with a streamed reply of one text
part in that API's server-sent events, as the vendor sends them (the shapes of the recordings in
``cassettes/``: Chat Completions' ``data:``-only ``chat.completion.chunk`` events ending in
``[DONE]``; Anthropic's and Responses' ``event:`` and ``data:`` pairs):

* the response head (``200``, ``text/event-stream``, chunked transfer encoding);
* what ``respond(body, reply)`` writes: ``body`` is the request's raw bytes (a benchmark reads how
  many chunks to stream, and at what pace, from it), ``reply.role()`` the reply's opening (Chat
  Completions: the chunk with the assistant role; Anthropic: ``message_start``, the text block's
  ``content_block_start`` and a ``ping``; Responses: ``response.created``, ``response.in_progress``,
  the message item's ``output_item.added`` and its ``content_part.added``), ``reply.text(content)``
  one streamed text chunk (a ``chat.completion.chunk``; a ``content_block_delta`` of a
  ``text_delta``; a ``response.output_text.delta``);
* once ``respond`` returns, the reply's end (Chat Completions: a chunk with ``finish_reason:
  "stop"`` and ``data: [DONE]``; Anthropic: ``content_block_stop``, ``message_delta`` with the stop
  reason and usage, ``message_stop``; Responses: the text's, part's and item's ``done`` events and
  ``response.completed`` with usage) and the last (empty) HTTP chunk.

The head goes out in the same write as the first event, and the end in one write with the last
HTTP chunk, so that a reader sees no extra network reads beyond one per chunk. Each event is
compact JSON with the given ``model``; between chunks nothing waits for the socket's buffer to
drain unless ``respond`` awaits ``reply.drain()`` (the end does). The server is a fake for
measuring: it reads a request's head and its ``content-length`` body and nothing more (no
validation, no errors), and a client that goes away ends its connection quietly.

``agent_toml`` is the configuration of the host's agent on this server (``[agents.bench]``, the
agent kind of ``api``, titles from the first words: no model call of its own), and ``host_config``
a whole host configuration around it (port 0, the given data directory and token, no offline
agent; optionally a process of a cluster), as the benchmarks that run the host in their own
process use it.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

APIS = ("openai-chat", "anthropic", "openai-responses")
"""The APIs the server speaks (the host's API names)."""

KINDS = {"openai-chat": "openai-chat", "anthropic": "anthropic", "openai-responses": "openai"}
"""Each API's agent kind in the host's configuration."""

_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
_DONE = b"data: [DONE]\n\n"
_ITEM = "msg_bench"
"""The id of the Responses message item, and of the Anthropic message."""


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _event(name: str, data: dict[str, Any]) -> bytes:
    """One ``event:`` and ``data:`` pair (Anthropic's and Responses' events)."""
    return b"event: " + name.encode() + b"\ndata: " + _json(data) + b"\n\n"


def chunk(content: str | None, finish: str | None = None, *, role: bool = False, model: str = "bench") -> bytes:
    """One ``chat.completion.chunk`` as a ``data:`` event: ``content`` as its delta's text (none
    if None), the opening delta with the assistant's role if ``role``, ``finish`` as its
    ``finish_reason``."""
    delta: dict[str, Any] = {"role": "assistant", "content": ""} if role else ({} if content is None else {"content": content})
    body = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + _json(body) + b"\n\n"


class _Chat:
    """Chat Completions' events."""

    def __init__(self, model: str) -> None:
        self.model = model
        self._template = _text_template(model)

    def opening(self) -> bytes:
        return chunk(None, role=True, model=self.model)

    def text(self, content: str) -> bytes:
        """``chunk(content)``'s bytes, from a template: a load generator's CPU is taken from the
        machine the host runs on."""
        before, after = self._template
        return before + json.dumps(content).encode() + after

    def closing(self) -> bytes:
        return chunk(None, "stop", model=self.model) + _DONE


class _Messages:
    """Anthropic Messages' events: one text block."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.chunks = 0

    def opening(self) -> bytes:
        usage = {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
        return (_event("message_start", {"type": "message_start", "message": {
                    "id": _ITEM, "type": "message", "role": "assistant", "model": self.model, "content": [],
                    "stop_reason": None, "stop_sequence": None, "usage": usage}})
                + _event("content_block_start", {"type": "content_block_start", "index": 0,
                                                 "content_block": {"type": "text", "text": ""}})
                + _event("ping", {"type": "ping"}))

    def text(self, content: str) -> bytes:
        self.chunks += 1
        return _event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                              "delta": {"type": "text_delta", "text": content}})

    def closing(self) -> bytes:
        return (_event("content_block_stop", {"type": "content_block_stop", "index": 0})
                + _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                           "usage": {"output_tokens": self.chunks}})
                + _event("message_stop", {"type": "message_stop"}))


class _Responses:
    """OpenAI Responses' events: one message item with one ``output_text`` part."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.sequence = 0
        self.texts: list[str] = []

    def _next(self, name: str, data: dict[str, Any]) -> bytes:
        data = {"type": name, **data, "sequence_number": self.sequence}
        self.sequence += 1
        return _event(name, data)

    def _response(self, status: str, output: list[Any], usage: Any) -> dict[str, Any]:
        return {"id": "resp_bench", "object": "response", "created_at": 1, "status": status, "model": self.model,
                "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "usage": usage}

    def _item(self, status: str, content: list[Any]) -> dict[str, Any]:
        return {"id": _ITEM, "type": "message", "status": status, "content": content, "role": "assistant"}

    def opening(self) -> bytes:
        return (self._next("response.created", {"response": self._response("in_progress", [], None)})
                + self._next("response.in_progress", {"response": self._response("in_progress", [], None)})
                + self._next("response.output_item.added", {"item": self._item("in_progress", []), "output_index": 0})
                + self._next("response.content_part.added", {"content_index": 0, "item_id": _ITEM, "output_index": 0,
                                                             "part": {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}}))

    def text(self, content: str) -> bytes:
        self.texts.append(content)
        # The fields in the order the API sends them (``cassettes/openai/responses-*``), with an
        # ``obfuscation`` of the usual length.
        return self._next("response.output_text.delta", {"content_index": 0, "delta": content, "item_id": _ITEM,
                                                         "logprobs": [], "obfuscation": "sfR11PApWeBgS6x", "output_index": 0})

    def closing(self) -> bytes:
        text = "".join(self.texts)
        part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        item = self._item("completed", [part])
        usage = {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": len(self.texts),
                 "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 12 + len(self.texts)}
        return (self._next("response.output_text.done", {"content_index": 0, "item_id": _ITEM, "logprobs": [], "output_index": 0, "text": text})
                + self._next("response.content_part.done", {"content_index": 0, "item_id": _ITEM, "output_index": 0, "part": part})
                + self._next("response.output_item.done", {"item": item, "output_index": 0})
                + self._next("response.completed", {"response": self._response("completed", [item], usage)}))


_DIALECTS: dict[str, Callable[[str], _Chat | _Messages | _Responses]] = {
    "openai-chat": _Chat, "anthropic": _Messages, "openai-responses": _Responses,
}


@functools.cache
def _text_template(model: str) -> tuple[bytes, bytes]:
    """``chunk(content, model=model)`` split around its content's JSON string."""
    marker = "\x00content\x00"
    before, after = chunk(marker, model=model).split(json.dumps(marker).encode())
    return before, after


def _http_chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class Reply:
    """One streamed reply being written (module docstring)."""

    def __init__(self, writer: asyncio.StreamWriter, model: str, api: str = "openai-chat") -> None:
        self._writer = writer
        self._events = _DIALECTS[api](model)
        self._head = _HEAD

    def _write(self, data: bytes) -> None:
        self._writer.write(self._head + data)
        self._head = b""

    def role(self) -> None:
        """The reply's opening (the assistant's role; in the event APIs, the text part's start)."""
        self._write(_http_chunk(self._events.opening()))

    def text(self, content: str) -> None:
        """One streamed chunk with ``content`` as its text."""
        self._write(_http_chunk(self._events.text(content)))

    async def drain(self) -> None:
        await self._writer.drain()

    async def end(self) -> None:
        self._write(_http_chunk(self._events.closing()) + b"0\r\n\r\n")
        await self._writer.drain()


Respond = Callable[[bytes, Reply], Awaitable[None]]


async def serve_chat(respond: Respond, *, model: str = "bench", api: str = "openai-chat") -> tuple[asyncio.Server, str]:
    """Listen on 127.0.0.1 (a free port): every request answered by ``respond`` in ``api``'s
    events (module docstring). Returns the server and its base URL."""
    if api not in _DIALECTS:
        raise ValueError(f"the fake server speaks {', '.join(APIS)}, not {api!r}")

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                headers = {k.strip().lower(): v.strip() for k, v in
                           (line.split(":", 1) for line in head.decode().split("\r\n")[1:] if ":" in line)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                reply = Reply(writer, model, api)
                await respond(body, reply)
                await reply.end()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client closed the connection, or the benchmark is ending
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    root = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    return server, root if api == "anthropic" else f"{root}/v1"


def agent_toml(base_url: str, model: str, *, context_window: int | None = None, api: str = "openai-chat",
               stall_timeout: float | None = None) -> str:
    """The ``bench`` agent: ``api``'s agent kind on the server at ``base_url``, offering ``model``
    (``stall_timeout``: the agent's, when given)."""
    window = "" if context_window is None else f", context_window = {context_window}"
    stall = "" if stall_timeout is None else f"stall_timeout = {stall_timeout}\n"
    return (f'[agents.bench]\nkind = "{KINDS[api]}"\nbase_url = "{base_url}"\napi_key = "bench"\n'
            f'title = "first-words"\n{stall}models = [{{id = "{model}"{window}}}]\n')


def host_config(data_dir: str, base_url: str, model: str, token: str, *, context_window: int | None = None,
                cluster: str | None = None, api: str = "openai-chat", stall_timeout: float | None = None) -> Any:
    """A host's configuration with the ``bench`` agent (of ``api``, with ``stall_timeout`` when
    given), its file written in ``data_dir``; with ``cluster`` (a NATS URL) a process of that cluster."""
    from host.config import load_config

    path = Path(data_dir) / "bench.toml"
    path.write_text(agent_toml(base_url, model, context_window=context_window, api=api, stall_timeout=stall_timeout))
    overrides: dict[str, Any] = {"server": {"port": 0, "data_dir": data_dir, "token": token},
                                 "sessions": {"offline_agent": False}}
    if cluster is not None:
        overrides["cluster"] = {"url": cluster}
    return load_config(path, overrides=overrides, environ={})
