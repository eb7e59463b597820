"""The AG-UI HTTP endpoint: ``POST /agui`` taking a ``RunAgentInput``, answering with an event stream.

``agui_endpoint(host, token=..., allowed_origins=...)`` returns the Starlette handler that
``host.transport.server`` mounts next to the AHP WebSocket, on the same port. The edge rules match the
WebSocket's:

* the connection token is required, as ``Authorization: Bearer <token>``, ``?token=<token>`` or
  ``?tkn=<token>``: none → 401, a wrong one → 403 (constant-time comparison, shared with the
  WebSocket). The host's own token and named ``full`` tokens run anything; a ``read`` token may
  only join a thread (its snapshot, then its running turn live): a run that would change something
  (a message, an answer, a cancel, a new thread) ends with ``RUN_ERROR`` ``permissionDenied``;
* a request whose ``Origin`` is present and not in ``server.allowed_origins`` → 403; CORS
  preflights (``OPTIONS``) are answered only for allowed origins, and responses to them carry
  ``Access-Control-Allow-Origin``;
* the body must be JSON and a valid AG-UI ``RunAgentInput``; otherwise 400 / 422 with a JSON body
  ``{"error": ..., "problems": [...]}`` naming the fields, never pydantic's text or a traceback.
  The body is read by ``ahp.jsonrpc.parse``, the WebSocket's own reader: JSON nested deeper than
  its ``MAX_DEPTH``, ``NaN`` or a number too large for a float is a 400 saying so, before anything
  walks it;
* ``Accept`` must allow ``text/event-stream`` (the encoder's only format); otherwise 406.

The stream itself is ``host.transport.agui.runs.AguiRuns.run`` encoded with ``ag_ui.encoder.EventEncoder``,
sent through an ``host.transport.agui.stream.AguiStream``: what the client leaves unread counts
against the host's outbound budget (``budget``, shared with the WebSocket connections), and a
client past it is cut off.
``forwardedProps.cancelOnDisconnect: true`` asks for the turn to be cancelled if the HTTP client
goes away; by default a dropped connection cancels nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from ag_ui.core import RunAgentInput
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from ahp.jsonrpc import Malformed, parse
from host.service import AgentHost
from host.transport.agui.runs import AguiRuns, client_id_for
from host.transport.agui.stream import AguiStream
from host.transport.http_protocol import ABORT_EXTENSION, UNSENT_EXTENSION
from host.transport.outbound import OutboundBudget
from host.transport.tokens import HOST_GRANT, Grant

__all__ = ["agui_endpoint"]

logger = logging.getLogger(__name__)

_MAX_BODY = 32 * 1024 * 1024
_ALLOWED_HEADERS = "authorization, content-type, accept"

Handler = Callable[[Request], Awaitable[Response]]


def agui_endpoint(
    host: AgentHost,
    *,
    token: str | None,
    allowed_origins: Iterable[str],
    token_check: Callable[[Request], Grant | bool | None],
    budget: OutboundBudget | None = None,
) -> Handler:
    """The route handler. ``token_check(request)`` is the host's own check: the ``Grant`` of the
    presented token (or True: the host's own), False when it is wrong, None when none was
    presented and one is needed. ``budget``:
    the host's outbound budget (by default one of this endpoint's own, from ``[server]``)."""
    origins = frozenset(allowed_origins)
    server = host.config.server
    budget = budget or OutboundBudget(total=server.max_queued_bytes, per_client=server.max_queued_bytes_per_client)
    runs = AguiRuns(host)

    async def endpoint(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin is not None and origin not in origins:
            logger.warning("refused an AG-UI request from origin %s", origin)
            return _error(403, "This origin may not use the agent host; add it to server.allowed_origins.")
        cors = {"Access-Control-Allow-Origin": origin, "Vary": "Origin"} if origin is not None else {}
        if request.method == "OPTIONS":
            if origin is None:
                return _error(400, "A CORS preflight needs an Origin header.")
            return Response(
                status_code=204,
                headers={
                    **cors,
                    "Access-Control-Allow-Methods": "POST, OPTIONS",
                    "Access-Control-Allow-Headers": _ALLOWED_HEADERS,
                    "Access-Control-Max-Age": "600",
                },
            )
        verdict = token_check(request)
        if verdict is None:
            return _error(
                401,
                "A connection token is required: send 'Authorization: Bearer <token>' (or ?token=<token>) "
                "with the token the host printed at start-up.",
                headers={**cors, "WWW-Authenticate": "Bearer"},
            )
        if not verdict:
            return _error(403, "The connection token is wrong; use the one the host printed at start-up.", headers=cors)
        accept = request.headers.get("accept", "*/*")
        if not _accepts_event_stream(accept):
            return _error(
                406, f"This endpoint answers with text/event-stream only (Accept was {accept!r}).", headers=cors
            )
        body = await request.body()
        if len(body) > _MAX_BODY:
            return _error(413, f"The request body is larger than {_MAX_BODY} bytes.", headers=cors)
        parsed = parse(body)
        if isinstance(parsed, Malformed):
            return _error(400, f"{_as_body(parsed.reason)} Send a JSON RunAgentInput object.", headers=cors)
        if parsed.out_of_range is not None:
            return _error(400, f"The number {parsed.out_of_range} is too large; send a finite number.", headers=cors)
        run_input, problems = parse_run_input(parsed.value)
        if run_input is None:
            return _error(422, "The body is not a valid AG-UI RunAgentInput.", problems=problems, headers=cors)
        encoder = EventEncoder(accept=accept)
        props = run_input.forwarded_props if isinstance(run_input.forwarded_props, dict) else {}
        grant = verdict if isinstance(verdict, Grant) else HOST_GRANT
        events = runs.run(run_input, cancel_on_disconnect=props.get("cancelOnDisconnect") is True, grant=grant)
        stream = AguiStream(client_id_for(run_input.thread_id), budget=budget, encode=encoder.encode,
                            flush=host.store.flush,  # nothing leaves the process before it is durable
                            abort=(request.scope.get("extensions") or {}).get(ABORT_EXTENSION),
                            unsent=(request.scope.get("extensions") or {}).get(UNSENT_EXTENSION))
        stream.start(events)
        return _StreamResponse(
            stream,
            media_type=encoder.get_content_type(),
            headers={**cors, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    return endpoint


class _StreamResponse(StreamingResponse):
    """The run's event stream; the stream is closed when the response ends however it ends (also
    when the client went away before its body was started, which no ``finally`` in it would see)."""

    def __init__(self, stream: AguiStream, **kwargs: Any) -> None:
        super().__init__(stream.body(), **kwargs)
        self._stream = stream

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._stream.close()


def parse_run_input(payload: Any) -> tuple[RunAgentInput | None, list[str]]:
    """The validated input, or None and one sentence per problem (field paths in wire names)."""
    if not isinstance(payload, dict):
        return None, ["The body must be a JSON object (a RunAgentInput), not a list or a scalar."]
    try:
        return RunAgentInput.model_validate(payload), []
    except ValidationError as error:
        problems: list[str] = []
        for item in error.errors()[:5]:
            where = _location(item.get("loc", ()))
            if item.get("type") == "missing":
                problems.append(f"{where} is required")
            elif item.get("type") in ("union_tag_invalid", "union_tag_not_found"):
                problems.append(f"{where} has an unknown or missing role/type")
            else:
                problems.append(f"{where} has the wrong type or value")
        return None, problems


def _location(loc: Iterable[Any]) -> str:
    parts: list[str] = []
    for part in loc:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif isinstance(part, str) and "_" in part and part.islower():
            head, *rest = part.split("_")
            parts.append("." + head + "".join(word.title() for word in rest))
        elif isinstance(part, str) and not part[:1].isupper() and not part.startswith("function-"):
            parts.append("." + part)
    text = "".join(parts).lstrip(".")
    return text or "the body"


def _as_body(reason: str) -> str:
    """A JSON-RPC parse reason ("The message ...") said of a request body."""
    return reason.replace("The message", "The body", 1)


def _accepts_event_stream(accept: str) -> bool:
    for item in accept.split(","):
        media = item.split(";")[0].strip().lower()
        if media in ("*/*", "text/*", "text/event-stream", ""):
            return True
    return False


def _error(status: int, message: str, *, problems: list[str] | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    body: dict[str, Any] = {"error": message}
    if problems:
        body["problems"] = problems
    return JSONResponse(body, status_code=status, headers=headers)
