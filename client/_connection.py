"""One JSON-RPC 2.0 peer over one WebSocket: request matching, ordered writes, one reader.

Deliberately not AHP-aware: it knows ids, methods, results and errors, nothing about
channels or envelopes. ``AhpClient`` layers AHP on top through the callbacks. Parsing, message
building and request numbering are ``ahp.jsonrpc``, the same code the host runs; this module adds
the socket, the tasks and the futures.

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
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, overload

import websockets
from websockets.asyncio.client import ClientConnection, connect
from websockets.typing import Origin

from ahp import jsonrpc
from client.errors import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    AhpError,
    AhpTimeout,
    ConnectionClosedError,
    HostProtocolError,
)

logger = logging.getLogger(__name__)

FrameHook = Callable[[dict[str, Any], "str | None"], None]
RequestHandler = Callable[[dict[str, Any]], Awaitable[Any]]
ResultHook = Callable[[Any], None]

# Snapshots of long sessions are large; the library default of 1 MiB is too small.
_MAX_FRAME_BYTES = 64 * 1024 * 1024
_Waiter = tuple[asyncio.Future[Any], ResultHook | None]


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
        on_notification: Callable[[str, dict[str, Any]], None],
        after_frame: Callable[[], None],
        on_closed: Callable[[Connection, BaseException], None],
        request_handlers: Mapping[str, RequestHandler],
    ) -> None:
        self._ws = ws
        self._frame_hook = frame_hook
        self._on_notification = on_notification
        self._after_frame = after_frame
        self._on_closed = on_closed
        self._handlers = request_handlers
        # Ids of requests we stopped waiting for are remembered, so a late answer still reaches
        # the frame hook with its method instead of looking like garbage.
        self._outstanding: jsonrpc.Outstanding[_Waiter] = jsonrpc.Outstanding()
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
    ) -> Connection:
        """Open the WebSocket (bearer token in the upgrade) and start reader and writer."""
        headers = {"Authorization": f"Bearer {token}"} if token else None
        try:
            ws = await connect(
                url,
                additional_headers=headers,
                origin=Origin(origin) if origin is not None else None,
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
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        request_id, text = self._outstanding.start(method, params, (future, on_result))
        self._outbox.put_nowait((text, None))
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
            self._outstanding.abandon(request_id)
            raise AhpTimeout(f"the host did not answer {method} within {timeout:g} s") from None
        except asyncio.CancelledError:
            self._outstanding.abandon(request_id)
            raise

    @overload
    def send_notification(self, method: str, params: Any, *, track: Literal[True] = ...) -> asyncio.Future[None]: ...
    @overload
    def send_notification(self, method: str, params: Any, *, track: Literal[False]) -> None: ...

    def send_notification(self, method: str, params: Any, *, track: bool = True) -> asyncio.Future[None] | None:
        """Queue a notification; with ``track`` the returned future resolves once written."""
        self._raise_if_closed()
        written = asyncio.get_running_loop().create_future() if track else None
        self._outbox.put_nowait((jsonrpc.notification(method, params), written))
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
        for future, _hook in self._outstanding.drain():
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
        parsed = jsonrpc.parse(raw)
        if isinstance(parsed, jsonrpc.Malformed):
            preview = raw if len(raw) <= 60 else raw[:57] + "..."
            raise _Fatal(HostProtocolError(f"the host sent a frame that is not valid JSON: {preview!r}"))
        frame = parsed.value
        if not isinstance(frame, dict):
            raise _Fatal(HostProtocolError("the host sent a frame that is not a JSON-RPC message object"))
        message = jsonrpc.classify(parsed)

        answered = self._outstanding.method_of(message.id) if isinstance(message, jsonrpc.Response) else None
        if self._frame_hook is not None:
            try:
                self._frame_hook(frame, answered)
            except Exception as exc:  # the hook (a schema check) failing must be loud
                raise _Fatal(exc) from exc

        try:
            if isinstance(message, jsonrpc.Response):
                self._handle_response(message)
            elif isinstance(message, jsonrpc.Request):
                self._start_host_request(message.id, message.method, _as_params(message.params))
            elif isinstance(message, jsonrpc.Notification):
                self._on_notification(message.method, _as_params(message.params))
            else:
                raise HostProtocolError(f"the host sent a malformed JSON-RPC message: {message.reason}")
            self._after_frame()
        except _Fatal:
            raise
        except HostProtocolError as exc:
            raise _Fatal(exc) from None
        except Exception as exc:  # our own invariant broke (e.g. a reducer raised)
            logger.exception("AHP client failed to handle a frame from the host")
            raise _Fatal(exc) from exc

    def _handle_response(self, response: jsonrpc.Response) -> None:
        method = self._outstanding.method_of(response.id)
        settled = self._outstanding.settle(response)
        if settled is None:
            logger.debug("ignoring a response to unknown or abandoned request id %r", response.id)
            return
        future, on_result = settled[1]
        if response.error is not None:
            if not response.error.well_formed:
                future.set_exception(HostProtocolError(f"the host answered {method} with a malformed error"))
                raise HostProtocolError(f"the host answered {method} with a malformed error")
            future.set_exception(AhpError(response.error.code, response.error.message, response.error.data))
            return
        if on_result is not None:
            try:
                on_result(response.result)
            except HostProtocolError as exc:
                future.set_exception(exc)
                return
        if not future.done():
            future.set_result(response.result)

    def _start_host_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        task = asyncio.create_task(self._answer_host_request(request_id, method, params))
        self._handler_tasks.add(task)
        task.add_done_callback(self._handler_tasks.discard)

    async def _answer_host_request(self, request_id: Any, method: str, params: dict[str, Any]) -> None:
        handler = self._handlers.get(method)
        if handler is None:
            reply = jsonrpc.error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        else:
            try:
                reply = jsonrpc.result(request_id, await handler(params))
            except AhpError as exc:
                reply = jsonrpc.error(request_id, exc.code, exc.message, exc.data)
            except Exception:
                logger.exception("handler for host request %s failed", method)
                reply = jsonrpc.error(request_id, INTERNAL_ERROR, f"The client failed to handle {method}")
        if self._failure is None:
            self._outbox.put_nowait((reply, None))


def _as_params(params: Any) -> dict[str, Any]:
    return params if isinstance(params, dict) else {}


def _describe_close(ws: ClientConnection, default: str) -> str:
    code, reason = ws.close_code, ws.close_reason
    if code is None:
        return default
    return f"{default} (code {code}{': ' + reason if reason else ''})"
