"""JSON-RPC 2.0 over one message-oriented connection; deliberately not AHP-aware.

``RpcEndpoint`` takes whole text messages in (``receive``) and hands whole text messages to a
``send`` callable. It

* parses and checks the JSON-RPC envelope, answering -32700 / -32600 itself;
* routes requests and notifications to handlers by method name, in arrival order;
* is the single place where an exception becomes an error response: ``RpcError`` keeps its code
  and message, anything else is logged here with its traceback and answered with a generic
  -32603 (no traceback or library text ever goes on the wire);
* issues its own requests to the peer (``call``) and matches their responses by id.

Invariants: every request gets exactly one response with its id; notifications never get one;
a bad message never closes the connection by itself (the caller decides that via ``close_after``).
Batches (JSON arrays) are refused with -32600: AHP sends one message per frame. A message nested
deeper than ``MAX_DEPTH`` is refused with -32700 before anything walks it (Python's parser would
otherwise raise ``RecursionError``), and a request holding a number too large for a float
(``1e999``) with -32602 naming it. Tracebacks of failures while handling messages are logged at
most ``_TRACEBACKS_PER_MINUTE`` times a minute per process, then counted, so hostile input cannot
flood the log.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Mapping

from host.errors import ErrorCode, RpcError

__all__ = ["RpcEndpoint", "Handler", "NotificationHandler", "RpcCallError", "encode"]

logger = logging.getLogger(__name__)

Handler = Callable[[Any], Awaitable[Any]]
NotificationHandler = Callable[[Any], Awaitable[None]]

_ID_TYPES = (int, str)


def encode(message: Mapping[str, Any]) -> str:
    """Serialise one message compactly; the wire never carries NaN or Infinity."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a message (AHP needs about a dozen)."""

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


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _refuse_constant(name: str) -> Any:
    # JSON has no NaN or Infinity; Python's parser would accept them.
    raise ValueError(f"{name} is not valid JSON")


class RpcCallError(Exception):
    """The peer answered one of our requests with an error (or went away first)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"{message} ({code})")
        self.code = code
        self.message = message
        self.data = data


@dataclass
class _Incoming:
    method: str
    params: Any
    id: Any
    is_request: bool


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
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[Any]] = {}
        self.closed = False

    # -- inbound -------------------------------------------------------------------------------

    async def receive(self, text: str | bytes) -> None:
        """Handle one inbound message completely (the response, if any, is sent before return)."""
        huge: list[str] = []

        def parse_float(token: str) -> float:
            number = float(token)
            if not math.isfinite(number):
                huge.append(token[:40])
                return 0.0
            return number

        try:
            message = json.loads(text, parse_constant=_refuse_constant, parse_float=parse_float)
        except RecursionError:
            self._reply_error(None, ErrorCode.PARSE_ERROR, f"The message is nested too deeply (at most {MAX_DEPTH} levels).")
            return
        except (ValueError, UnicodeDecodeError):
            self._reply_error(None, ErrorCode.PARSE_ERROR, "The message is not valid JSON.")
            return
        if _depth_exceeds(message, MAX_DEPTH):
            self._reply_error(None, ErrorCode.PARSE_ERROR, f"The message is nested too deeply (at most {MAX_DEPTH} levels).")
            return
        if isinstance(message, list):
            self._reply_error(
                None,
                ErrorCode.INVALID_REQUEST,
                "Batches are not supported: send one JSON-RPC message per WebSocket frame.",
            )
            return
        if not isinstance(message, dict):
            self._reply_error(None, ErrorCode.INVALID_REQUEST, "A JSON-RPC message must be a JSON object.")
            return
        if "method" not in message and ("result" in message or "error" in message):
            self._take_response(message)
            return
        incoming = self._check_envelope(message)
        if incoming is None:
            return
        if huge:
            if incoming.is_request:
                self._reply_error(incoming.id, ErrorCode.INVALID_PARAMS,
                                  f"The number {huge[0]} is out of range: numbers must fit a 64-bit float.")
            return
        await self._route(incoming)

    def _check_envelope(self, message: dict[str, Any]) -> _Incoming | None:
        msg_id = message.get("id")
        has_id = "id" in message
        id_ok = (isinstance(msg_id, _ID_TYPES) and not isinstance(msg_id, bool)) or msg_id is None
        reply_id = msg_id if has_id and id_ok else None
        if message.get("jsonrpc") != "2.0":
            self._reply_error(reply_id, ErrorCode.INVALID_REQUEST, 'The message must carry "jsonrpc": "2.0".')
            return None
        if has_id and (not id_ok or msg_id is None):
            self._reply_error(
                None, ErrorCode.INVALID_REQUEST, "A request id must be a number or a string (not null)."
            )
            return None
        method = message.get("method")
        if not isinstance(method, str) or not method:
            self._reply_error(reply_id, ErrorCode.INVALID_REQUEST, 'The message needs a "method" string.')
            return None
        params = message.get("params")
        if "params" in message and not isinstance(params, (dict, list)):
            if has_id:
                self._reply_error(msg_id, ErrorCode.INVALID_REQUEST, '"params" must be an object.')
            else:
                logger.info("dropped notification %r: params is not an object", method)
            return None
        return _Incoming(method=method, params=params, id=msg_id, is_request=has_id)

    async def _route(self, incoming: _Incoming) -> None:
        if self._gate is not None:
            refusal = self._gate(incoming.method, incoming.is_request)
            if refusal is not None:
                if incoming.is_request:
                    self._reply_error(incoming.id, refusal.code, refusal.message, refusal.data)
                else:
                    logger.info("dropped notification %r: %s", incoming.method, refusal.message)
                return
        if incoming.is_request:
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
                self._emit({"jsonrpc": "2.0", "id": incoming.id, "result": result})
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
        self._emit({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: Any, *, timeout: float | None = 30.0) -> Any:
        """Send a request to the peer and wait for its result; raises ``RpcCallError``."""
        if self.closed:
            raise RpcCallError(ErrorCode.INTERNAL_ERROR, "The connection is closed.")
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[msg_id] = future
        try:
            self._emit({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
            return await asyncio.wait_for(future, timeout)
        finally:
            self._pending.pop(msg_id, None)

    def close(self) -> None:
        """Fail every request still waiting on the peer."""
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(RpcCallError(ErrorCode.INTERNAL_ERROR, "The connection closed."))
        self._pending.clear()

    def _take_response(self, message: dict[str, Any]) -> None:
        future = self._pending.get(message.get("id"))
        if future is None or future.done():
            logger.info("ignored a response to unknown request id %r", message.get("id"))
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(
                RpcCallError(
                    error.get("code", ErrorCode.INTERNAL_ERROR)
                    if isinstance(error.get("code"), int)
                    else ErrorCode.INTERNAL_ERROR,
                    str(error.get("message", "")),
                    error.get("data"),
                )
            )
        else:
            future.set_result(message.get("result"))

    def _reply_error(self, msg_id: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self._emit({"jsonrpc": "2.0", "id": msg_id, "error": error})

    def _emit(self, message: Mapping[str, Any]) -> None:
        if not self.closed:
            self._send(encode(message))
