"""JSON-RPC 2.0 as AHP uses it, without I/O: text in, typed messages out, and back.

The host (``host.transport.rpc``) and the client library (``client._connection``) both speak JSON-RPC over a
WebSocket; this module is the part they share, so the two ends cannot drift apart. It never
touches a socket, a clock, a task or a logger. The caller owns the connection and the waiting.

* ``decode(text)`` (``parse`` then ``classify``, for callers that look at the raw JSON in
  between) turns one inbound text frame into exactly one of ``Request``,
  ``Notification``, ``Response`` or ``Malformed``. ``Malformed.reply`` is the encoded error
  response owed to the peer, when JSON-RPC says one is owed (always for a request, never for a
  notification). Frames nested deeper than ``MAX_DEPTH`` are refused before anything walks them
  (Python's parser would raise ``RecursionError`` on about a thousand levels). Numbers too large
  for a float (``1e999``) refuse the request with -32602 naming the number. ``NaN`` and
  ``Infinity`` are not JSON and are refused. Batches (arrays) are refused: AHP sends one message
  per frame.
* ``encode`` and the ``request`` / ``notification`` / ``result`` / ``error`` builders produce
  the outbound text; ``action_frame`` an action envelope's text and its notification from one
  serialisation; ``object_with_list`` an object's text around a list whose items are kept
  apart. Compact separators, no ASCII escaping, never ``NaN``: orjson writes it (several times
  faster than the standard library on a session's state, the host's largest results and
  frames), and the standard library takes what orjson cannot (integers past 64 bits)
  and refuses non-finite floats (``ValueError``), which orjson would have written as ``null``.
* ``Outstanding`` numbers our own requests and matches responses to them. Each request carries
  an opaque ``token`` (a future, a callback, whatever the caller waits with). A request the
  caller gave up on can be *abandoned*: a late response is still recognised by its method and
  then dropped.

Invariants: every ``Request`` decoded gets exactly one reply from its handler, and every
``Malformed`` with a ``reply`` is that one reply. Ids are ints or strings, never null or
booleans.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import orjson

from ahp.protocol.errors import ErrorCode

__all__ = [
    "MAX_DEPTH",
    "Request",
    "Notification",
    "Response",
    "ErrorBody",
    "Malformed",
    "Message",
    "Parsed",
    "parse",
    "classify",
    "decode",
    "encode",
    "action_frame",
    "stamped_action_frame",
    "object_with_list",
    "request",
    "notification",
    "result",
    "error",
    "Outstanding",
]

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a message (AHP needs about a dozen)."""

_NESTED_TOO_DEEPLY = f"The message is nested too deeply (at most {MAX_DEPTH} levels)."


@dataclass(frozen=True, slots=True)
class Request:
    """A message with an id and a method: the peer waits for exactly one reply."""

    id: int | str
    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Notification:
    """A message with a method and no id: nothing is ever sent back."""

    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """The ``error`` member of a response. ``well_formed`` is False when the peer sent something
    other than ``{"code": int, "message": ...}`` (the code is then -32603)."""

    code: int
    message: str
    data: Any = None
    well_formed: bool = True


@dataclass(frozen=True, slots=True)
class Response:
    """The answer to one of our requests: ``error`` is None on success."""

    id: Any
    result: Any = None
    error: ErrorBody | None = None


@dataclass(frozen=True, slots=True)
class Malformed:
    """A frame that is not a usable JSON-RPC message. ``reason`` says why, in a sentence;
    ``reply`` is the encoded error response to send back, or None when none is owed."""

    reason: str
    reply: str | None


Message = Request | Notification | Response | Malformed


# -- outbound ---------------------------------------------------------------------------------


def encode(message: Any) -> str:
    """Serialise one message (or any JSON value) compactly; the wire never carries NaN or Infinity
    (``ValueError``). Keys that are not strings are written as text (orjson's
    ``OPT_NON_STR_KEYS``, which doubles its cost on a small message: it is asked for only when a
    key needs it; the text is the same either way)."""
    try:
        data = orjson.dumps(message)
    except TypeError:  # orjson.JSONEncodeError is one: a key that is not a str, or an int past 64 bits
        try:
            data = orjson.dumps(message, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:
            return _encode_stdlib(message)
    text = data.decode()
    if "null" in text and _has_non_finite(message):  # on the text: ``in`` on bytes is slower
        return _encode_stdlib(message)  # raises, as the wire must never carry NaN
    return text


ACTION_FRAME_HEAD = '{"jsonrpc":"2.0","method":"action","params":'
"""What an ``action`` notification's text begins with: its envelope's JSON and ``}`` follow (a log
that builds many frames in one loop writes ``stamped_action_frame``'s text itself with it)."""


def action_frame(envelope: Any) -> tuple[str, str]:
    """An action envelope's JSON text (what a journal keeps) and the ``action`` notification that
    carries it, from one serialisation: the one place action frames are built."""
    try:  # ``encode``, its usual way inlined: once per streamed token
        envelope_json = orjson.dumps(envelope).decode()
    except TypeError:  # a key that is not a str, an int past 64 bits: ``encode``'s other ways
        envelope_json = encode(envelope)
    else:
        if "null" in envelope_json and _has_non_finite(envelope):
            envelope_json = _encode_stdlib(envelope)  # raises, as the wire must never carry NaN
    return envelope_json, ACTION_FRAME_HEAD + envelope_json + "}"


def stamped_action_frame(unnumbered_json: str, server_seq: int) -> tuple[str, str]:
    """``action_frame`` for an envelope already serialised without its ``serverSeq`` (a log that
    learns the number only after it sent the envelope): ``serverSeq`` is added as the last key of
    that text, so the envelope is still serialised once. ``unnumbered_json`` is ``encode``'s text
    of a non-empty object."""
    envelope_json = f'{unnumbered_json[:-1]},"serverSeq":{server_seq}}}'
    return envelope_json, ACTION_FRAME_HEAD + envelope_json + "}"


def object_with_list(fields: dict[str, Any], key: str) -> tuple[str, str]:
    """The JSON text of ``{**fields, key: [...]}`` around its list: what comes before the list's
    items (ending with ``"key":[``) and what comes after them (``]}``). Between the two, the items'
    ``encode``d texts separated by commas give exactly ``encode({**fields, key: items})``, so a
    caller may keep the items apart (the journal writes each turn of a chat in its own row) and
    join them later. ``key`` must not be in ``fields``."""
    head = encode(fields)  # "{...}": compact, so its last character is the closing brace
    return head[:-1] + ("," if fields else "") + encode(key) + ":[", "]}"


def _encode_stdlib(message: Any) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _has_non_finite(value: Any) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_has_non_finite(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_non_finite(item) for item in value)
    return False


def request(id: int | str, method: str, params: Any) -> str:
    return encode({"jsonrpc": "2.0", "id": id, "method": method, "params": params})


def notification(method: str, params: Any) -> str:
    return encode({"jsonrpc": "2.0", "method": method, "params": params})


def result(id: int | str, value: Any) -> str:
    return encode({"jsonrpc": "2.0", "id": id, "result": value})


def error(id: int | str | None, code: int, message: str, data: Any = None) -> str:
    body: dict[str, Any] = {"code": int(code), "message": message}
    if data is not None:
        body["data"] = data
    return encode({"jsonrpc": "2.0", "id": id, "error": body})


# -- inbound ----------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    # JSON has no NaN or Infinity; Python's parser would accept them.
    raise ValueError(f"{name} is not valid JSON")


def _depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Iterable[Any]
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


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _malformed(reason: str, reply_id: Any = None, code: int = ErrorCode.INVALID_REQUEST, *, owed: bool = True) -> Malformed:
    return Malformed(reason, error(reply_id, code, reason) if owed else None)


@dataclass(frozen=True, slots=True)
class Parsed:
    """Valid JSON within the depth limit. ``out_of_range`` is the first number too large for a
    float, if any (it was read as 0.0)."""

    value: Any
    out_of_range: str | None = None


def parse(text: str | bytes) -> Parsed | Malformed:
    """The JSON in one frame, or why it is not usable JSON. Never raises."""
    huge: list[str] = []

    def parse_float(token: str) -> float:
        number = float(token)
        if not math.isfinite(number):
            huge.append(token[:40])
            return 0.0
        return number

    try:
        value = json.loads(text, parse_constant=_refuse_constant, parse_float=parse_float)
    except RecursionError:
        return _malformed(_NESTED_TOO_DEEPLY, code=ErrorCode.PARSE_ERROR)
    except (ValueError, UnicodeDecodeError):
        return _malformed("The message is not valid JSON.", code=ErrorCode.PARSE_ERROR)
    if _depth_exceeds(value, MAX_DEPTH):
        return _malformed(_NESTED_TOO_DEEPLY, code=ErrorCode.PARSE_ERROR)
    return Parsed(value, huge[0] if huge else None)


def decode(text: str | bytes) -> Message:
    """Classify one inbound frame. Never raises."""
    parsed = parse(text)
    return parsed if isinstance(parsed, Malformed) else classify(parsed)


def classify(parsed: Parsed) -> Message:
    """Which JSON-RPC message a parsed frame is. Never raises."""
    message = parsed.value
    if isinstance(message, list):
        return _malformed("Batches are not supported: send one JSON-RPC message per WebSocket frame.")
    if not isinstance(message, dict):
        return _malformed("A JSON-RPC message must be a JSON object.")
    if "method" not in message and ("result" in message or "error" in message):
        return _response(message)

    has_id = "id" in message
    msg_id = message.get("id")
    reply_id = msg_id if has_id and _valid_id(msg_id) else None
    if message.get("jsonrpc") != "2.0":
        return _malformed('The message must carry "jsonrpc": "2.0".', reply_id)
    if has_id and not _valid_id(msg_id):
        return _malformed("A request id must be a number or a string (not null).")
    method = message.get("method")
    if not isinstance(method, str) or not method:
        return _malformed('The message needs a "method" string.', reply_id)
    params = message.get("params")
    if "params" in message and not isinstance(params, (dict, list)):
        return _malformed(f'"params" of {method} must be an object.', reply_id, owed=has_id)
    if parsed.out_of_range is not None:
        return _malformed(
            f"The number {parsed.out_of_range} is out of range: numbers must fit a 64-bit float.",
            reply_id,
            ErrorCode.INVALID_PARAMS,
            owed=has_id,
        )
    if reply_id is not None:  # an id was given (an invalid one was refused above)
        return Request(reply_id, method, params)
    return Notification(method, params)


def _response(message: dict[str, Any]) -> Response:
    msg_id = message.get("id")
    if "error" in message:
        body = message["error"]
        if isinstance(body, dict) and isinstance(body.get("code"), int) and not isinstance(body.get("code"), bool):
            return Response(msg_id, error=ErrorBody(body["code"], str(body.get("message", "")), body.get("data")))
        return Response(msg_id, error=ErrorBody(ErrorCode.INTERNAL_ERROR, "malformed error", body, well_formed=False))
    return Response(msg_id, result=message["result"])


# -- our own requests ---------------------------------------------------------------------------

T = TypeVar("T")


class Outstanding(Generic[T]):
    """Our requests still waiting for their response, each with the caller's ``token``."""

    def __init__(self, *, remember_abandoned: int = 256) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[int, tuple[str, T]] = {}
        self._abandoned: OrderedDict[int, str] = OrderedDict()
        self._remember = remember_abandoned

    def start(self, method: str, params: Any, token: T) -> tuple[int, str]:
        """Number a new request; returns its id and the text to send."""
        request_id = next(self._ids)
        self._waiting[request_id] = (method, token)
        return request_id, request(request_id, method, params)

    def method_of(self, request_id: Any) -> str | None:
        """The method a response with this id answers (also for abandoned requests)."""
        entry = self._waiting.get(request_id)
        if entry is not None:
            return entry[0]
        return self._abandoned.get(request_id)

    def settle(self, response: Response) -> tuple[str, T] | None:
        """The method and token the response answers; None if unknown or abandoned."""
        entry = self._waiting.pop(response.id, None) if _valid_id(response.id) else None
        if entry is None and _valid_id(response.id):
            self._abandoned.pop(response.id, None)
        return entry

    def abandon(self, request_id: int) -> None:
        """Stop waiting for ``request_id``; its late answer will be recognised and dropped."""
        entry = self._waiting.pop(request_id, None)
        if entry is not None:
            self._abandoned[request_id] = entry[0]
            while len(self._abandoned) > self._remember:
                self._abandoned.popitem(last=False)

    def forget(self, request_id: int) -> None:
        """Drop ``request_id`` entirely (the caller already finished with it)."""
        self._waiting.pop(request_id, None)

    def drain(self) -> list[T]:
        """Every token still waiting, removed (the connection ended)."""
        tokens = [token for _method, token in self._waiting.values()]
        self._waiting.clear()
        return tokens

    def __len__(self) -> int:
        return len(self._waiting)
