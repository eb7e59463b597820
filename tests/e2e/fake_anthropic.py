"""A scripted stand-in for the Anthropic Messages API, for the VS Code end-to-end test.

Both hosts the test can drive reach it instead of api.anthropic.com: our host through an agent of
kind ``anthropic`` whose ``base_url`` points here, VS Code's reference agent host through the Claude
Agent SDK with ``ANTHROPIC_BASE_URL``. It answers ``POST /v1/messages`` (streamed as server-sent
events, or as one JSON message), ``POST /v1/messages/count_tokens`` and ``GET /v1/models``.

What it answers depends only on the user's own words in the last message (``<system-reminder>``
blocks that agents add are ignored), so the test knows what to expect:

* a message containing ``run the command`` -> one shell tool call that creates ``ran.txt`` in the
  working directory (our ``shell`` tool or Claude's ``Bash``, whichever the request offers);
* ``create the notes file`` -> one file-writing tool call creating ``notes.txt`` with
  ``NOTES_CONTENT`` (our ``write_file`` or Claude's ``Write``);
* ``erase the stamps`` -> a call of the ``stamps`` MCP server's ``erase`` (``mcp__stamps__erase``)
  and ``stamp <word>`` -> one of its ``stamp`` with the note ``<word>`` (``stamp_server.py``);
* ``slowly`` -> ``SLOW_WORDS`` words, one every ``slow_delay`` seconds (long enough to cancel);
* the message after a tool result -> ``Done: the tool finished.``, or after a failed one (a denied
  call) ``The tool did not run: <the result's text>``;
* a request offering no tools (a title request) -> ``Scripted title``;
* anything else -> ``Hello from the scripted model. You said: <the words>.``

Every answer streams word by word. Requests are kept in ``requests`` for the test to inspect.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

NOTES_CONTENT = "Notes written by the scripted model.\n"
SLOW_WORDS = 150
MODEL_ID = "claude-scripted-1"

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.DOTALL)


def user_words(body: dict[str, Any]) -> tuple[str, bool]:
    """The user's own text in the last message, and whether that message carries a tool result."""
    messages = body.get("messages") or []
    if not messages:
        return "", False
    content = messages[-1].get("content")
    if isinstance(content, str):
        return _REMINDER.sub("", content).strip(), False
    texts = [_REMINDER.sub("", block.get("text", "")) for block in content if block.get("type") == "text"]
    has_result = any(block.get("type") == "tool_result" for block in content)
    return " ".join(" ".join(texts).split()), has_result


def tool_error(body: dict[str, Any]) -> str | None:
    """The text of a failed tool result in the last message (``is_error``), else None."""
    messages = body.get("messages") or []
    content = messages[-1].get("content") if messages else None
    for block in content if isinstance(content, list) else ():
        if block.get("type") == "tool_result" and block.get("is_error"):
            inner = block.get("content")
            if isinstance(inner, list):
                inner = " ".join(part.get("text", "") for part in inner if isinstance(part, dict))
            return " ".join(str(inner or "").split())
    return None


class Script:
    """What to answer: text blocks and at most one tool call, and how fast to stream."""

    def __init__(self, text: str, tool: tuple[str, dict[str, Any]] | None = None, delay: float = 0.03) -> None:
        self.text = text
        self.tool = tool
        self.delay = delay

    @property
    def stop_reason(self) -> str:
        return "tool_use" if self.tool else "end_turn"


class FakeAnthropic:
    """Serves the scripted answers on 127.0.0.1 (a free port) from a background thread."""

    def __init__(self, project_dir: Path, slow_delay: float = 0.15) -> None:
        self.project_dir = project_dir
        self.slow_delay = slow_delay
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._count = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> str:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-anthropic", daemon=True).start()
        return self.base_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def next_id(self) -> int:
        with self._lock:
            self._count += 1
            return self._count

    def script_for(self, body: dict[str, Any]) -> Script:
        words, after_tool = user_words(body)
        tools = {tool.get("name") for tool in body.get("tools") or []}
        low = words.lower()
        if after_tool:
            error = tool_error(body)
            return Script("Done: the tool finished." if error is None else f"The tool did not run: {error}")
        if not tools:
            return Script("Scripted title")
        if "run the command" in low:
            command = "touch ran.txt"
            if "shell" in tools:
                return Script("I will run it.", ("shell", {"command": command, "description": "Create ran.txt"}))
            return Script("I will run it.", ("Bash", {"command": command, "description": "Create ran.txt"}))
        if "create the notes file" in low:
            if "write_file" in tools:
                return Script("I will create it.", ("write_file", {"path": "notes.txt", "content": NOTES_CONTENT}))
            path = str(self.project_dir / "notes.txt")
            return Script("I will create it.", ("Write", {"file_path": path, "content": NOTES_CONTENT}))
        stamp = re.search(r"\bstamp (\w+)", low)
        if "erase the stamps" in low and "mcp__stamps__erase" in tools:
            return Script("I will erase them.", ("mcp__stamps__erase", {}))
        if stamp and "mcp__stamps__stamp" in tools:
            return Script("I will stamp it.", ("mcp__stamps__stamp", {"note": stamp.group(1)}))
        if "slowly" in low:
            return Script(" ".join(f"word{i}" for i in range(SLOW_WORDS)), delay=self.slow_delay)
        return Script(f"Hello from the scripted model. You said: {words}.", delay=0.08)


class _Handler(BaseHTTPRequestHandler):
    owner: FakeAnthropic
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.startswith("/v1/models"):
            model = {"type": "model", "id": MODEL_ID, "display_name": "Scripted Claude", "created_at": "2026-01-01T00:00:00Z"}
            self._json(200, {"data": [model], "has_more": False, "first_id": MODEL_ID, "last_id": MODEL_ID})
            return
        self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        path = self.path.split("?", 1)[0]
        with self.owner._lock:
            self.owner.requests.append({"path": self.path, "body": body})
        if path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": 100})
            return
        if path != "/v1/messages":
            self._json(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
            return
        script = self.owner.script_for(body)
        number = self.owner.next_id()
        if body.get("stream"):
            self._stream(body, script, number)
        else:
            self._json(200, _message(body, script, number))

    def _stream(self, body: dict[str, Any], script: Script, number: int) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

        def event(name: str, data: dict[str, Any]) -> None:
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        try:
            start = _message(body, script, number)
            start.update(content=[], stop_reason=None, usage={"input_tokens": 10, "output_tokens": 1})
            event("message_start", {"type": "message_start", "message": start})
            event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            words = script.text.split(" ")
            for index, word in enumerate(words):
                piece = word if index == len(words) - 1 else word + " "
                event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
                time.sleep(script.delay)
            event("content_block_stop", {"type": "content_block_stop", "index": 0})
            if script.tool is not None:
                name, arguments = script.tool
                block = {"type": "tool_use", "id": f"toolu_{number:04d}", "name": name, "input": {}}
                event("content_block_start", {"type": "content_block_start", "index": 1, "content_block": block})
                delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
                event("content_block_delta", {"type": "content_block_delta", "index": 1, "delta": delta})
                event("content_block_stop", {"type": "content_block_stop", "index": 1})
            event("message_delta", {"type": "message_delta", "delta": {"stop_reason": script.stop_reason, "stop_sequence": None},
                                    "usage": {"output_tokens": len(words)}})
            event("message_stop", {"type": "message_stop"})
        except (BrokenPipeError, ConnectionResetError):
            return  # the client cancelled


def _message(body: dict[str, Any], script: Script, number: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": script.text}]
    if script.tool is not None:
        content.append({"type": "tool_use", "id": f"toolu_{number:04d}", "name": script.tool[0], "input": script.tool[1]})
    return {
        "id": f"msg_{number:04d}", "type": "message", "role": "assistant", "model": body.get("model") or MODEL_ID,
        "content": content, "stop_reason": script.stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 10},
    }
