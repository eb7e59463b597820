"""A tiny HTTP/1.1 server on 127.0.0.1 (port 0) that plays canned replies, for provider and host tests.

Each connection serves one request with the next :class:`Reply`, then closes; an unscripted
request gets a 500. ``cut_after`` sends only that many body bytes (with the full
``content-length`` announced) and drops the connection, which is what a provider crash
mid-stream looks like to the client. ``hold`` makes the reply wait for that event before sending
anything (a slow first byte). ``stall`` sends ``body`` as one chunk of a chunked response, then
keeps the connection open until the event is set or the server exits (a stream that stops in the
middle); ``closed`` is set when the client hangs up on a stalled reply. ``base_path`` is appended
to :attr:`FakeProviderServer.base_url` (e.g. ``"/v1"`` for an OpenAI-style base URL); every
request is recorded as a :class:`SeenRequest` in ``requests``; ``respond`` computes a reply's body
from the requests seen so far. :func:`sse` builds an SSE body,
:func:`chat_sse` a whole Chat Completions stream, :func:`messages_sse` an Anthropic and
:func:`responses_sse` a Responses one (one text part each). :class:`KeepAliveServer` answers every request of
a connection and keeps it open, for tests of which requests share a connection.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Self


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    hold: asyncio.Event | None = None
    stall: asyncio.Event | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    respond: Callable[[list[SeenRequest]], bytes] | None = None
    """Builds the body from the requests seen so far (this one last), for replies that depend on
    what the host sent (e.g. a tool call naming a reference the host made up)."""


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    head: bytes = b""
    """The request line and headers as they came (``\\r\\n\\r\\n`` included), for tests of the bytes on the wire."""

    def json(self) -> dict:
        return json.loads(self.body)


def sse(*events: tuple[str | None, dict | str]) -> bytes:
    """An SSE body from ``(event name or None, data)`` pairs."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


def chat_sse(*texts: str, tool_calls: list[tuple[str, str, str]] = (), finish: str | None = None, usage: tuple[int, int] | None = (5, 7)) -> bytes:
    """A Chat Completions stream: text deltas, then tool calls ``(id, name, args)``, finish, usage, ``[DONE]``."""
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in texts]
    for i, (call_id, name, args) in enumerate(tool_calls):
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}}]})
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": args}}]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish or ("tool_calls" if tool_calls else "stop")}]})
    if usage:
        chunks.append({"choices": [], "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}})
    envelope = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake-model"}
    return sse(*((None, {**envelope, **chunk}) for chunk in chunks), (None, "[DONE]"))


def messages_sse(text: str = "hi") -> bytes:
    """A whole Anthropic Messages stream of one text block."""
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "fake-model", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1}}
    return sse(("message_start", {"type": "message_start", "message": message}),
               ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
               ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
               ("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": 1}}),
               ("message_stop", {"type": "message_stop"}))


def responses_sse(text: str = "hi") -> bytes:
    """A whole OpenAI Responses stream of one message item."""
    item = {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}
    done_item = {**item, "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}
    response = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "fake-model", "output": []}
    return sse(("response.created", {"type": "response.created", "response": response}),
               ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0, "item": item}),
               ("response.output_text.delta", {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                                               "content_index": 0, "delta": text}),
               ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": done_item}),
               ("response.completed", {"type": "response.completed", "response": {
                   **response, "status": "completed", "output": [done_item],
                   "usage": {"input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}}))


class _LoopbackServer:
    """What both servers share: listening on 127.0.0.1 (port 0) as an async context manager, each
    connection handed to ``_handle``; ``base_url`` is where a client reaches it."""

    base_path = ""
    _server: asyncio.AbstractServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}{self.base_path}"

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        self._closing()
        await self._server.wait_closed()

    def _closing(self) -> None:
        """Called once the server stopped listening, before its connections are waited for."""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class FakeProviderServer(_LoopbackServer):
    def __init__(self, replies: list[Reply] | None = None, *, base_path: str = "") -> None:
        self.replies = list(replies or [])
        self.requests: list[SeenRequest] = []
        self.base_path = base_path
        self._served: list[Reply] = []

    def _closing(self) -> None:
        for reply in self._served + self.replies:
            if reply.stall is not None:
                reply.stall.set()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        reply: Reply | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.requests.append(SeenRequest(method, path, headers, body, head))
            reply = self.replies.pop(0) if self.replies else Reply(500, b'{"error": {"message": "no reply scripted"}}')
            self._served.append(reply)
            if reply.respond is not None:
                reply.body = reply.respond(self.requests)
            if reply.hold is not None:
                await reply.hold.wait()
            content_type = "text/event-stream" if reply.body.startswith((b"event:", b"data:")) else "application/json"
            response_headers = {"content-type": content_type, **reply.headers}
            if reply.stall is None:
                response_headers["content-length"] = str(len(reply.body))
                response_headers["connection"] = "close"
            else:
                response_headers["transfer-encoding"] = "chunked"
            writer.write(
                f"HTTP/1.1 {reply.status} X\r\n".encode()
                + "".join(f"{k}: {v}\r\n" for k, v in response_headers.items()).encode()
                + b"\r\n"
            )
            if reply.stall is None:
                writer.write(reply.body if reply.cut_after is None else reply.body[: reply.cut_after])
                await writer.drain()
                return
            writer.write(f"{len(reply.body):x}\r\n".encode() + reply.body + b"\r\n")
            await writer.drain()
            stall = asyncio.ensure_future(reply.stall.wait())
            gone = asyncio.ensure_future(reader.read())
            await asyncio.wait({stall, gone}, return_when=asyncio.FIRST_COMPLETED)
            if gone.done():
                reply.closed.set()
            stall.cancel()
            gone.cancel()
        except (ConnectionError, asyncio.IncompleteReadError):
            if reply is not None:
                reply.closed.set()
        finally:
            writer.close()


class KeepAliveServer(_LoopbackServer):
    """An HTTP/1.1 server on 127.0.0.1 (port 0) that answers every request of a connection, one
    after another, and keeps the connection open (chunked replies), as the vendors' servers do.

    ``body(request)`` gives each reply's SSE body (``chat_sse()`` by default). Every request is
    kept in ``requests`` with the number of the connection it came on (``connection_of``), so a
    test can tell which requests shared a connection and what each one sent.
    """

    def __init__(self, body: Callable[[SeenRequest], bytes] | None = None, *, base_path: str = "") -> None:
        self.body = body or (lambda request: chat_sse("hi"))
        self.base_path = base_path
        self.requests: list[SeenRequest] = []
        self.connection_of: list[int] = []
        """The connection (numbered from 0 in the order they opened) of each request in ``requests``."""
        self.connections = 0

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        number = self.connections
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if line)}
                request = SeenRequest(method, path, headers, await reader.readexactly(int(headers.get("content-length", "0"))))
                self.requests.append(request)
                self.connection_of.append(number)
                body = self.body(request)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                             + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
