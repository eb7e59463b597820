"""The host's JSON-RPC endpoint: ``ahp.jsonrpc`` bound to one connection and to handlers.

``RpcEndpoint`` takes whole text messages in (``receive``) and hands whole text messages to a
``send`` callable. Parsing, envelope checks, limits and message building are the I/O-free
``ahp.jsonrpc`` the client library uses too; this module adds what needs an event loop and a log:

* routes requests and notifications to handlers by method name, in arrival order;
* is the single place where an exception becomes an error response: ``RpcError`` keeps its code
  and message, anything else is logged here with its traceback and answered with a generic
  -32603 (no traceback or library text ever goes on the wire);
* issues its own requests to the peer (``call``) and matches their responses by id.

Invariants: every request gets exactly one response with its id; notifications never get one;
a bad message never closes the connection by itself (the caller decides that via ``close_after``).
Tracebacks of failures while handling messages are logged at most ``_TRACEBACKS_PER_MINUTE`` times
a minute per process, then counted, so hostile input cannot flood the log.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ahp import jsonrpc
from ahp.jsonrpc import encode
from host.errors import ErrorCode, RpcCallError, RpcError

__all__ = ["RpcEndpoint", "Handler", "NotificationHandler", "RpcCallError", "encode"]

logger = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None]]

_TRACEBACKS_PER_MINUTE = 10


class _TracebackBudget:
    """At most ``limit`` tracebacks a minute; past that, one line a minute says how many were held back."""

    def __init__(self, limit: int = _TRACEBACKS_PER_MINUTE, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit = limit
        self.clock = clock
        self.window_start = -math.inf
        self.logged = 0
        self.held_back = 0

    def log(self, message: str, *args: Any) -> None:
        now = self.clock()
        if now - self.window_start >= 60:
            if self.held_back:
                logger.warning("%d more failures handling messages were not logged with tracebacks in the last minute", self.held_back)
            self.window_start, self.logged, self.held_back = now, 0, 0
        if self.logged < self.limit:
            self.logged += 1
            logger.exception(message, *args)
        else:
            self.held_back += 1


_TRACEBACKS = _TracebackBudget()


class RpcEndpoint:
    """One JSON-RPC peer. Not thread-safe; lives on one event loop."""

    def __init__(
        self,
        send: Callable[[str], None],
        requests: Mapping[str, Handler],
        notifications: Mapping[str, NotificationHandler],
        *,
        gate: Callable[[str, bool], RpcError | None] | None = None,
    ) -> None:
        """``gate(method, is_request)`` may refuse a message before routing (e.g. before a
        handshake); for notifications the refusal is only logged, as JSON-RPC allows no reply."""
        self._send = send
        self._requests = requests
        self._notifications = notifications
        self._gate = gate
        self._outstanding: jsonrpc.Outstanding[asyncio.Future[Any]] = jsonrpc.Outstanding()
        self.closed = False

    # -- inbound -------------------------------------------------------------------------------

    async def receive(self, text: str | bytes) -> None:
        """Handle one inbound message completely (the response, if any, is sent before return)."""
        message = jsonrpc.decode(text)
        if isinstance(message, jsonrpc.Malformed):
            if message.reply is not None:
                self._send_text(message.reply)
            else:
                logger.info("dropped a notification: %s", message.reason)
        elif isinstance(message, jsonrpc.Response):
            self._take_response(message)
        else:
            await self._route(message)

    async def _route(self, incoming: jsonrpc.Request | jsonrpc.Notification) -> None:
        is_request = isinstance(incoming, jsonrpc.Request)
        if self._gate is not None:
            refusal = self._gate(incoming.method, is_request)
            if refusal is not None:
                if isinstance(incoming, jsonrpc.Request):
                    self._reply_error(incoming.id, refusal.code, refusal.message, refusal.data)
                else:
                    logger.info("dropped notification %r: %s", incoming.method, refusal.message)
                return
        if isinstance(incoming, jsonrpc.Request):
            handler = self._requests.get(incoming.method)
            if handler is None:
                if incoming.method in self._notifications:
                    self._reply_error(
                        incoming.id,
                        ErrorCode.INVALID_REQUEST,
                        f"{incoming.method} is a notification: send it without an id.",
                    )
                else:
                    self._reply_error(
                        incoming.id, ErrorCode.METHOD_NOT_FOUND, f"Unknown method: {incoming.method}."
                    )
                return
            try:
                result = await handler(incoming.params)
            except RpcError as error:
                self._reply_error(incoming.id, error.code, error.message, error.data)
            except asyncio.CancelledError:
                raise
            except Exception:
                _TRACEBACKS.log("request %s failed", incoming.method)
                self._reply_error(
                    incoming.id,
                    ErrorCode.INTERNAL_ERROR,
                    f"The host failed while handling {incoming.method}; the error is in the host's log.",
                )
            else:
                self._send_text(jsonrpc.result(incoming.id, result))
            return
        handler = self._notifications.get(incoming.method)
        if handler is None:
            logger.info("ignored unknown notification %r", incoming.method)
            return
        try:
            await handler(incoming.params)
        except asyncio.CancelledError:
            raise
        except RpcError as error:
            logger.info("notification %s refused: %s", incoming.method, error.message)
        except Exception:
            _TRACEBACKS.log("notification %s failed", incoming.method)

    # -- outbound ------------------------------------------------------------------------------

    def notify(self, method: str, params: Any) -> None:
        self._send_text(jsonrpc.notification(method, params))

    async def call(self, method: str, params: Any, *, timeout: float | None = 30.0) -> Any:
        """Send a request to the peer and wait for its result; raises ``RpcCallError``."""
        if self.closed:
            raise RpcCallError(ErrorCode.INTERNAL_ERROR, "The connection is closed.")
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        msg_id, text = self._outstanding.start(method, params, future)
        try:
            self._send_text(text)
            return await asyncio.wait_for(future, timeout)
        finally:
            self._outstanding.forget(msg_id)

    def close(self) -> None:
        """Fail every request still waiting on the peer."""
        self.closed = True
        for future in self._outstanding.drain():
            if not future.done():
                future.set_exception(RpcCallError(ErrorCode.INTERNAL_ERROR, "The connection closed."))

    def _take_response(self, response: jsonrpc.Response) -> None:
        settled = self._outstanding.settle(response)
        if settled is None or settled[1].done():
            logger.info("ignored a response to unknown request id %r", response.id)
            return
        future = settled[1]
        if response.error is not None:
            future.set_exception(RpcCallError(response.error.code, response.error.message, response.error.data))
        else:
            future.set_result(response.result)

    def _reply_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        self._send_text(jsonrpc.error(msg_id, code, message, data))

    def _send_text(self, text: str) -> None:
        if not self.closed:
            self._send(text)
