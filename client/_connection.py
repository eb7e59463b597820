"""One JSON-RPC 2.0 peer over one WebSocket: request matching, ordered writes, one reader.

Deliberately not AHP-aware: it knows ids, methods, results and errors, nothing about
channels or envelopes. ``AhpClient`` layers AHP on top through the callbacks.

Invariants:

* Exactly one reader task per connection. It parses each text frame, calls
  ``frame_hook(frame, answered_method)``, resolves the matching request future (after
  running that request's ``on_result`` hook, so state derived from a response is in place
  before the next frame is looked at), hands notifications to ``on_notification`` and
  finally calls ``after_frame`` - all synchronously, in arrival order.
* Exactly one writer task; every outgoing message goes through its queue, so messages
  leave in the order they were submitted even when submitted from synchronous code.
* When the connection ends for any reason, every in-flight request fails at once with
  the same error (``ConnectionClosedError``, ``HostProtocolError``, or whatever broke the
  reader), later calls fail immediately with it, and ``on_closed`` runs exactly once.
* Host-to-client requests run as their own tasks; without a handler they are answered
  -32601. Handler failures become -32603 with a fixed message (no traceback on the wire).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection, connect

from client.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    AhpError,
    AhpTimeout,
    ConnectionClosedError,
    HostProtocolError,
)

logger = logging.getLogger(__name__)

FrameHook = Callable[[dict, "str | None"], None]
RequestHandler = Callable[[dict], Awaitable[Any]]
ResultHook = Callable[[Any], None]

# Snapshots of long sessions are large; the library default of 1 MiB is too small.
_MAX_FRAME_BYTES = 64 * 1024 * 1024
# Remember ids of requests we stopped waiting for, so a late answer still reaches the
# frame hook with its method instead of looking like garbage.
_MAX_ABANDONED = 256


class _Fatal(Exception):
    """Internal: carries the error that ends the connection out of frame handling."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class Connection:
    """A JSON-RPC peer bound to one open WebSocket."""

    def __init__(
        self,
        ws: ClientConnection,
        *,
        frame_hook: FrameHook | None,
        on_notification: Callable[[str, dict], None],
        after_frame: Callable[[], None],
        on_closed: Callable[["Connection", BaseException], None],
        request_handlers: Mapping[str, RequestHandler],
    ) -> None:
        self._ws = ws
        self._frame_hook = frame_hook
        self._on_notification = on_notification
        self._after_frame = after_frame
        self._on_closed = on_closed
        self._handlers = request_handlers
        self._next_id = 1
        self._inflight: dict[int, tuple[str, asyncio.Future[Any], ResultHook | None]] = {}
        self._abandoned: dict[int, str] = {}
        self._outbox: asyncio.Queue[tuple[str, asyncio.Future[None] | None] | None] = asyncio.Queue()
        self._failure: BaseException | None = None
        self._closing = False
        self._handler_tasks: set[asyncio.Task[None]] = set()
        self._reader = asyncio.create_task(self._read_loop(), name="ahp-client-reader")
        self._writer = asyncio.create_task(self._write_loop(), name="ahp-client-writer")

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        token: str | None,
        origin: str | None,
        open_timeout: float,
        **callbacks: Any,
    ) -> "Connection":
        """Open the WebSocket (bearer token in the upgrade) and start reader and writer."""
        headers = {"Authorization": f"Bearer {token}"} if token else None
        try:
            ws = await connect(
                url,
                additional_headers=headers,
                origin=origin,  # type: ignore[arg-type]
                max_size=_MAX_FRAME_BYTES,
                open_timeout=open_timeout,
            )
        except websockets.InvalidStatus as exc:
            status = exc.response.status_code
            raise ConnectionClosedError(f"the host at {url} refused the connection (HTTP {status})") from None
        except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.InvalidURI) as exc:
            # The exception text (e.g. "[Errno 111] Connect call failed") is short and useful.
            raise ConnectionClosedError(f"could not connect to {url}: {exc}") from None
        return cls(ws, **callbacks)

    # -- state -------------------------------------------------------------------

    @property
    def failure(self) -> BaseException | None:
        """Why the connection ended, or None while it is open."""
        return self._failure

    @property
    def is_open(self) -> bool:
        """True until the connection ends."""
        return self._failure is None

    # -- sending -----------------------------------------------------------------

    def start_request(
        self, method: str, params: Any, on_result: ResultHook | None = None
    ) -> tuple[int, asyncio.Future[Any]]:
        """Queue a request; the future resolves with its result or fails with AhpError."""
        self._raise_if_closed()
        request_id = self._next_id
        self._next_id += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._inflight[request_id] = (method, future, on_result)
        self._submit({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id, future

    async def request(
        self, method: str, params: Any, *, timeout: float | None, on_result: ResultHook | None = None
    ) -> Any:
        """Send a request and wait for its response (``AhpTimeout`` after ``timeout`` s)."""
        request_id, future = self.start_request(method, params, on_result)
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            if future.done():  # answered in the same instant the timer fired
                return future.result()
            self._abandon(request_id)
            raise AhpTimeout(f"the host did not answer {method} within {timeout:g} s") from None
        except asyncio.CancelledError:
            self._abandon(request_id)
            raise

    def send_notification(self, method: str, params: Any, *, track: bool = True) -> asyncio.Future[None] | None:
        """Queue a notification; with ``track`` the returned future resolves once written."""
        self._raise_if_closed()
        written = asyncio.get_running_loop().create_future() if track else None
        self._submit({"jsonrpc": "2.0", "method": method, "params": params}, written)
        return written

    async def close(self) -> None:
        """Flush queued messages, close the socket and wait for the reader to finish."""
        if self._failure is None:
            self._closing = True
            self._outbox.put_nowait(None)  # writer closes the socket after the backlog
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader
        await self._stop_writer()

    # -- internals: writing ------------------------------------------------------

    def _submit(self, message: dict, written: asyncio.Future[None] | None = None) -> None:
        self._outbox.put_nowait((json.dumps(message, separators=(",", ":")), written))

    def _raise_if_closed(self) -> None:
        if self._failure is not None:
            raise self._failure

    async def _write_loop(self) -> None:
        while True:
            item = await self._outbox.get()
            if item is None:
                with contextlib.suppress(Exception):
                    await self._ws.close()
                return
            text, written = item
            try:
                await self._ws.send(text)
            except websockets.ConnectionClosed:
                if written is not None and not written.done():
                    written.set_exception(self._failure or ConnectionClosedError("the connection to the host is closed"))
                return  # the reader sees the close and fails everything else
            if written is not None and not written.done():
                written.set_result(None)

    async def _stop_writer(self) -> None:
        if not self._writer.done():
            self._writer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer
        failure = self._failure or ConnectionClosedError("the connection to the host is closed")
        while not self._outbox.empty():
            item = self._outbox.get_nowait()
            if item is not None and item[1] is not None and not item[1].done():
                item[1].set_exception(failure)

    # -- internals: reading ------------------------------------------------------

    async def _read_loop(self) -> None:
        failure: BaseException
        try:
            async for raw in self._ws:
                self._handle_raw(raw)
            failure = ConnectionClosedError(
                "the connection was closed by the client"
                if self._closing
                else _describe_close(self._ws, "the host closed the connection")
            )
        except websockets.ConnectionClosed:
            failure = ConnectionClosedError(_describe_close(self._ws, "the connection to the host dropped"))
        except _Fatal as fatal:
            # Fail everything first: closing may wait for a host that no longer answers.
            self._finish(fatal.error)
            code = 1002 if isinstance(fatal.error, HostProtocolError) else 1011
            with contextlib.suppress(Exception):
                await self._ws.close(code, "protocol error" if code == 1002 else "client error")
            return
        except asyncio.CancelledError:
            failure = ConnectionClosedError("the connection was closed by the client")
            self._finish(failure)
            raise
        self._finish(failure)

    def _finish(self, failure: BaseException) -> None:
        if self._failure is not None:
            return
        self._failure = failure
        inflight, self._inflight = self._inflight, {}
        for _method, future, _hook in inflight.values():
            if not future.done():
                future.set_exception(failure)
                future.exception()  # mark retrieved: nobody may be awaiting a timed-out one
        for task in self._handler_tasks:
            task.cancel()
        if not self._writer.done():
            self._writer.cancel()
        self._on_closed(self, failure)

    def _handle_raw(self, raw: str | bytes) -> None:
        if isinstance(raw, bytes):
            raise _Fatal(HostProtocolError("the host sent a binary frame; AHP frames are JSON text"))
        try:
            frame = json.loads(raw)
        except ValueError:
            preview = raw if len(raw) <= 60 else raw[:57] + "..."
            raise _Fatal(HostProtocolError(f"the host sent a frame that is not valid JSON: {preview!r}")) from None
        if not isinstance(frame, dict):
            raise _Fatal(HostProtocolError("the host sent a frame that is not a JSON-RPC message object"))

        is_response = "method" not in frame and "id" in frame
        answered = self._answered_method(frame.get("id")) if is_response else None
        if self._frame_hook is not None:
            try:
                self._frame_hook(frame, answered)
            except Exception as exc:  # the hook (a schema check) failing must be loud
                raise _Fatal(exc) from exc

        try:
            if is_response:
                self._handle_response(frame)
            elif isinstance(frame.get("method"), str):
                params = frame.get("params")
                params = params if isinstance(params, dict) else {}
                if "id" in frame:
                    self._start_host_request(frame["id"], frame["method"], params)
                else:
                    self._on_notification(frame["method"], params)
            else:
                raise HostProtocolError("the host sent a JSON object that is neither a request, a response nor a notification")
            self._after_frame()
        except _Fatal:
            raise
        except HostProtocolError as exc:
            raise _Fatal(exc) from None
        except Exception as exc:  # our own invariant broke (e.g. a reducer raised)
            logger.exception("AHP client failed to handle a frame from the host")
            raise _Fatal(exc) from exc

    def _answered_method(self, request_id: Any) -> str | None:
        if request_id in self._inflight:
            return self._inflight[request_id][0]
        return self._abandoned.get(request_id)

    def _handle_response(self, frame: dict) -> None:
        entry = self._inflight.pop(frame["id"], None)
        if entry is None:
            self._abandoned.pop(frame["id"], None)
            logger.debug("ignoring a response to unknown or abandoned request id %r", frame["id"])
            return
        method, future, on_result = entry
        if "error" in frame:
            error = frame["error"]
            if not isinstance(error, dict) or not isinstance(error.get("code"), int):
                future.set_exception(HostProtocolError(f"the host answered {method} with a malformed error"))
                raise HostProtocolError(f"the host answered {method} with a malformed error")
            future.set_exception(AhpError(error["code"], str(error.get("message", "")), error.get("data")))
            return
        if "result" not in frame:
            future.set_exception(HostProtocolError(f"the host answered {method} without result or error"))
            raise HostProtocolError(f"the host answered {method} without result or error")
        result = frame["result"]
        if on_result is not None:
            try:
                on_result(result)
            except HostProtocolError as exc:
                future.set_exception(exc)
                return
        if not future.done():
            future.set_result(result)

    def _abandon(self, request_id: int) -> None:
        entry = self._inflight.pop(request_id, None)
        if entry is not None:
            self._abandoned[request_id] = entry[0]
            while len(self._abandoned) > _MAX_ABANDONED:
                self._abandoned.pop(next(iter(self._abandoned)))

    def _start_host_request(self, request_id: Any, method: str, params: dict) -> None:
        task = asyncio.create_task(self._answer_host_request(request_id, method, params))
        self._handler_tasks.add(task)
        task.add_done_callback(self._handler_tasks.discard)

    async def _answer_host_request(self, request_id: Any, method: str, params: dict) -> None:
        handler = self._handlers.get(method)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if handler is None:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"}
        else:
            try:
                reply["result"] = await handler(params)
            except AhpError as exc:
                reply["error"] = {"code": exc.code, "message": exc.message}
                if exc.data is not None:
                    reply["error"]["data"] = exc.data
            except Exception:
                logger.exception("handler for host request %s failed", method)
                reply["error"] = {"code": INTERNAL_ERROR, "message": f"The client failed to handle {method}"}
        if self._failure is None:
            self._submit(reply)


def _describe_close(ws: ClientConnection, default: str) -> str:
    code, reason = ws.close_code, ws.close_reason
    if code is None:
        return default
    return f"{default} (code {code}{': ' + reason if reason else ''})"
