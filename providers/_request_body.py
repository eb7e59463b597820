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
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["RAW_RESPONSE_HEADER", "open_stream"]

RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
"""What ``with_raw_response`` sets to get the response unparsed (both SDKs' ``RAW_RESPONSE_HEADER``;
a test checks they still agree)."""


async def open_stream(client: Any, path: str, params: dict[str, Any]) -> Any:
    """POST ``params`` with ``"stream": true`` to ``path`` through ``client`` (an ``AsyncOpenAI``
    or ``AsyncAnthropic``); the raw response (``.http_response`` of the SDK's raw-response
    wrapper), its body not read yet. SDK errors (status codes, connection) are raised as the SDK
    raises them."""
    raw = await client.post(
        path,
        cast_to=object,  # never parsed: the raw response is asked for
        content=orjson.dumps({**params, "stream": True}),
        options={"headers": {RAW_RESPONSE_HEADER: "true"}},
        stream=True,
    )
    return raw.http_response
