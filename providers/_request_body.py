"""POST a request body the provider built itself through an SDK client, for a raw event stream.

The SDKs' ``create`` methods walk every argument through their ``maybe_transform`` (aliases,
dates, files: a recursive pass over the type hints of every parameter, message and tool schema),
then serialise the result with the standard library's ``json``. ``build_params`` here already
returns the wire JSON, so the transform has nothing to change (``tests/providers/test_request_body.py``
compares what is sent with what the SDK's own ``create`` sends). :func:`open_stream` therefore
serialises the body once (orjson) and hands the bytes to the client's ``post`` with ``content=``,
the SDKs' documented way to send a body of one's own. Everything else stays the SDK's: URL,
headers, auth, timeouts, the HTTP error mapping. The response comes back unread, as
``with_raw_response`` gives it (the same request header asks for it), and the caller reads the
event stream itself (``providers._sse``).

What it saves of the CPU spent opening each stream on the event loop is in ``benchmarks/README.md``
("Figures moved out of docstrings").

A stream whose reads the provider's stall watch bounds (``providers._streaming``: ``stall_timeout``)
is sent with :func:`unbounded_reads` of the client's timeout: no per-read bound in the HTTP client.
The aiohttp transport the SDKs use arms a timer for that bound on every chunk it receives (a timer
handle and a context made, the last one cancelled and left in the loop's heap: instructions a chunk
and two of the young containers every garbage collection walks per streaming session, in
``benchmarks/README.md``, "Event-loop stalls: the provider layer and the collector"); the watch is
one timer per stream. The SDK's ``X-Stainless-Read-Timeout`` header then says the watch's bound.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["RAW_RESPONSE_HEADER", "READ_TIMEOUT_HEADER", "open_stream", "unbounded_reads"]

RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
"""What ``with_raw_response`` sets to get the response unparsed (both SDKs' ``RAW_RESPONSE_HEADER``;
a test checks they still agree)."""

READ_TIMEOUT_HEADER = "X-Stainless-Read-Timeout"
"""Where both SDKs tell the server how long the client waits for each read (set from the client's
timeout, left out when it has no read bound)."""


def unbounded_reads(timeout_type: type, timeout: Any) -> Any:
    """``timeout`` (the SDK client's: a number, None or a ``timeout_type``) with no bound on each
    read: ``timeout_type`` is the SDK's ``Timeout`` (``openai.Timeout``, ``anthropic.Timeout``)."""
    whole: Any = timeout if isinstance(timeout, timeout_type) else timeout_type(timeout)
    return timeout_type(connect=whole.connect, read=None, write=whole.write, pool=whole.pool)


async def open_stream(client: Any, path: str, params: dict[str, Any], options: dict[str, Any] | None = None) -> Any:
    """POST ``params`` with ``"stream": true`` to ``path`` through ``client`` (an ``AsyncOpenAI``
    or ``AsyncAnthropic``); the raw response (``.http_response`` of the SDK's raw-response
    wrapper), its body not read yet. ``options``: the SDK's request options to add (``timeout``,
    ``headers``). SDK errors (status codes, connection) are raised as the SDK raises them."""
    sent: dict[str, Any] = {"headers": {RAW_RESPONSE_HEADER: "true"}}
    if options:
        sent = {**options, "headers": {**options.get("headers", {}), RAW_RESPONSE_HEADER: "true"}}
    raw = await client.post(
        path,
        cast_to=object,  # never parsed: the raw response is asked for
        content=orjson.dumps({**params, "stream": True}),
        options=sent,
        stream=True,
    )
    return raw.http_response
