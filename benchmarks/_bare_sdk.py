"""The bare SDK at its best, the baseline of the provider benchmarks: what a program that only
wants the streamed text would write with the vendor's SDK and nothing of the host.

It posts the body as orjson bytes through the SDK client's own ``post`` (URL, headers, auth and
error mapping stay the SDK's; ``X-Stainless-Raw-Response`` asks for the response unparsed, as
``with_raw_response`` does) and reads the raw server-sent events: the body's bytes split into
lines, each ``data:`` line handed to ``orjson.loads``. No typed models, no SSE features beyond
what these APIs send (one ``data`` line per event; ``event:`` lines are skipped, the payload names
its type). The host's providers read the same way (``providers._sse``), plus everything a host
must do with an event.

Every trick the host's providers use on that path is the baseline's too: the request goes without
the HTTP client's per-read bound (``providers._request_body.unbounded_reads``; the host's stall
watch bounds a stream with one timer instead, which a bare program need not have), and the body is
read through ``providers._body_bytes.body_reader`` (aiohttp's reader itself, not four async
generators per chunk), and the request is sent through ``providers._request_body.open_stream``, so
an ``AsyncOpenAI`` or ``AsyncAnthropic`` client's request is built by the SDK once and kept as a
template, as the host's is (the SDK's ``post`` for any other client, as in the host).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import orjson

from providers._body_bytes import body_reader
from providers._request_body import open_stream, unbounded_reads

_DATA = b"data: "
_DONE = b"[DONE]"


async def open_raw(client: Any, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` (``stream`` set) to ``path``; the raw HTTP response, its body not read yet."""
    sdk = sys.modules[type(client).__module__.partition(".")[0]]
    return await open_stream(client, path, body, {"timeout": unbounded_reads(sdk.Timeout, client.timeout)})


async def sse_data(response: Any) -> AsyncIterator[Any]:
    """Each event's ``data`` parsed with orjson, until ``[DONE]`` or the end of the body; the
    response is closed at the end."""
    rest = b""
    read, errors = body_reader(response)
    try:
        with errors:
            while piece := await read():
                *lines, rest = (rest + piece).split(b"\n") if rest else piece.split(b"\n")
                for line in lines:
                    if line[:6] == _DATA:
                        if line[6:12] == _DONE:
                            return
                        yield orjson.loads(line[6:])
    finally:
        await response.aclose()
