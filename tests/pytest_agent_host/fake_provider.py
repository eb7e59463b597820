"""A scripted model on 127.0.0.1 (port 0) speaking the Chat Completions and Anthropic Messages APIs.

It runs in a thread of its own (``with FakeProvider() as fake: fake.base_url``), so a test host
on another event loop, or a pytest run in a subprocess, can record against it. What it answers
depends only on the request, so recording the same session twice gives the same answers:

* a request offering no tools (a title request) -> ``Counting the notes``;
* a last message carrying a tool result -> ``The tool said: <the result's text>``;
* a user message with ``read`` -> a ``read_file`` call on ``notes.txt``;
* a user message with ``count`` -> a ``shell`` call running ``wc -l notes.txt``;
* anything else -> ``You said: <the words>``.

``python -m tests.pytest_agent_host.fake_provider`` prints its base URL and serves until stopped.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "fake-model-1"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if block.get("type") in ("text", "input_text"):
            parts.append(block.get("text", ""))
        elif block.get("type") == "tool_result":
            parts.append(_text(block.get("content")))
    return "\n".join(parts)


def _last(body: dict[str, Any]) -> tuple[str, bool]:
    """The last message's text and whether it carries a tool result."""
    message = (body.get("messages") or [{}])[-1]
    content = message.get("content")
    if message.get("role") == "tool":
        return _text(content), True
    is_result = isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)
    return _text(content), is_result


def answer(body: dict[str, Any]) -> tuple[str, tuple[str, str, dict[str, Any]] | None]:
    """The scripted answer to a request: (text, tool call (id, name, input) or None)."""
    if not body.get("tools"):
        return "Counting the notes", None
    text, is_result = _last(body)
    if is_result:
        return "The tool said: " + " ".join(text.split())[:200], None
    if "read" in text:
        return "", ("call_read_1", "read_file", {"path": "notes.txt"})
    if "count" in text:
        return "", ("call_count_1", "shell", {"command": "wc -l notes.txt"})
    return "You said: " + " ".join(text.split()), None


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = []
    for name, data in events:
        out.append((f"event: {name}\n" if name else "") + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(out).encode()


def chat_stream(text: str, call: tuple[str, str, dict[str, Any]] | None) -> bytes:
    head = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": MODEL}
    chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    if text:
        chunks += [{"choices": [{"index": 0, "delta": {"content": word}}]} for word in text.split(" ") if word]
        chunks = chunks[:1] + [{"choices": [{"index": 0, "delta": {"content": (" " if i else "") + c["choices"][0]["delta"]["content"]}}]}
                               for i, c in enumerate(chunks[1:])]
    if call is not None:
        chunks.append({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": call[0], "type": "function",
                                                                          "function": {"name": call[1], "arguments": json.dumps(call[2])}}]}}]})
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if call else "stop"}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}})
    return _sse([*((None, {**head, **chunk}) for chunk in chunks), (None, "[DONE]")])


def messages_stream(text: str, call: tuple[str, str, dict[str, Any]] | None) -> bytes:
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": {
        "id": "msg_fake", "type": "message", "role": "assistant", "model": MODEL, "content": [], "stop_reason": None,
        "stop_sequence": None, "usage": {"input_tokens": 11, "output_tokens": 1}}})]
    index = 0
    if text:
        events.append(("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
        index = 1
    if call is not None:
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call[0].replace("call_", "toolu_"), "name": call[1], "input": {}}}))
        events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
            "type": "input_json_delta", "partial_json": json.dumps(call[2])}}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use" if call else "end_turn",
                                                                        "stop_sequence": None}, "usage": {"output_tokens": 7}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return _sse(events)


class FakeProvider:
    """See the module docstring."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        """Every request body received, in order."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                fake.requests.append(body)
                text, call = answer(body)
                if self.path.endswith("/chat/completions"):
                    data = chat_stream(text, call)
                elif self.path.endswith("/messages"):
                    data = messages_stream(text, call)
                else:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.send_header("x-request-id", f"req_{len(fake.requests)}")  # volatile: not kept in a cassette
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


if __name__ == "__main__":
    with FakeProvider() as served:
        print(served.base_url, flush=True)
        threading.Event().wait()
