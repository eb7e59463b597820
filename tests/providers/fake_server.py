"""A tiny HTTP/1.1 server on 127.0.0.1 (port 0) that plays canned replies, for provider tests.

Each connection serves one request with the next :class:`Reply`, then closes. ``cut_after``
sends only that many body bytes (with the full ``content-length`` announced) and drops the
connection, which is what a provider crash mid-stream looks like to the client.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None


@dataclass
class SeenRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> dict:
        return json.loads(self.body)


def sse(*events: tuple[str | None, dict | str]) -> bytes:
    """An SSE body from ``(event name or None, data)`` pairs."""
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        out.append((f"event: {name}\n" if name else "") + f"data: {text}\n\n")
    return "".join(out).encode()


class FakeProviderServer:
    def __init__(self, replies: list[Reply] | None = None) -> None:
        self.replies = list(replies or [])
        self.requests: list[SeenRequest] = []
        self._server: asyncio.AbstractServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> FakeProviderServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            self.requests.append(SeenRequest(method, path, headers, body))
            reply = self.replies.pop(0) if self.replies else Reply(500, b'{"error": "no reply scripted"}')
            content_type = "text/event-stream" if reply.body.startswith((b"event:", b"data:")) else "application/json"
            response_headers = {"content-type": content_type, **reply.headers}
            response_headers["content-length"] = str(len(reply.body))
            response_headers["connection"] = "close"
            writer.write(
                f"HTTP/1.1 {reply.status} X\r\n".encode()
                + "".join(f"{k}: {v}\r\n" for k, v in response_headers.items()).encode()
                + b"\r\n"
            )
            writer.write(reply.body if reply.cut_after is None else reply.body[: reply.cut_after])
            await writer.drain()
        finally:
            writer.close()
