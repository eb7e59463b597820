"""The ``AsyncOpenAI`` client both OpenAI providers own (created on first use, closed by ``aclose``),
and how both open a stream with it (:func:`open_raw_stream`).

SDK retries are off (the host's turn loop owns retries), and a missing key is an
``AuthenticationError`` that says which variable to set, raised before any request is made.
Without an ``http_client`` the SDK's own aiohttp-backed client (``openai.DefaultAioHttpClient``,
the ``openai[aiohttp]`` extra) carries the requests: it reads a streamed chunk for about half the
CPU of the default httpx/httpcore/anyio stack (``benchmarks/provider_parsing.py``), which is what
bounds how many sessions one event loop can stream. Proxies and CA settings from the environment
still apply (the transport takes them from httpx's own settings), and every such client shares the
process's one TLS context (``providers._tls``).
"""

from __future__ import annotations

import os
from typing import Any

from .._events import TypedEventStream, open_events
from .._sse import RawEventStream
from .._tls import ssl_context
from ..errors import AuthenticationError

__all__ = ["OpenAIClientOwner", "make_client", "open_raw_stream", "stream_error"]

PROVIDER = "openai"


def make_client(api_key: str | None, **kwargs: Any) -> Any:
    """An ``AsyncOpenAI`` with SDK retries off; a missing key is an :class:`AuthenticationError`."""
    import openai

    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise AuthenticationError("No OpenAI API key is configured: set OPENAI_API_KEY.", provider=PROVIDER)
    options = {k: v for k, v in kwargs.items() if v is not None}
    if options.get("http_client") is None:
        options["http_client"] = openai.DefaultAioHttpClient(verify=ssl_context())  # one CA bundle load per process
    return openai.AsyncOpenAI(api_key=key, max_retries=0, **options)


class OpenAIClientOwner:
    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        organization: str | None = None,
        http_client: Any = None,
        timeout: float | None = 600.0,
    ) -> None:
        self._kwargs = {"base_url": base_url, "organization": organization, "http_client": http_client, "timeout": timeout}
        self._api_key = api_key
        self._client: Any = None

    def _sdk(self) -> Any:
        if self._client is None:
            self._client = make_client(self._api_key, **self._kwargs)
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.close()


async def open_raw_stream(client: Any, path: str, params: dict[str, Any], stall_timeout: float | None = None,
                          ) -> RawEventStream | TypedEventStream:
    """POST ``params`` to ``path`` with ``stream: true``: the SDK sends the request (auth, timeouts,
    HTTP error statuses as its exceptions), the body goes as built (``providers._request_body``),
    and the events are read from the raw response as plain dicts (``providers._sse``), not as SDK
    models; or through the SDK's typed events where that cannot be done (``providers._events``).
    ``stall_timeout``: the caller's stall watch bounds every read (no per-read bound in the client)."""
    import openai

    watched = (stall_timeout, openai.Timeout) if stall_timeout is not None else None
    return await open_events(client, path, params, done="[DONE]", error=stream_error, names=False, watched=watched)


def stream_error(response: Any, data: Any) -> BaseException | None:
    """An ``{"error": ...}`` payload inside the stream, as the SDK would raise it."""
    if not isinstance(data, dict) or not data.get("error"):
        return None
    import openai

    error = data["error"]
    message = error.get("message") if isinstance(error, dict) else None
    return openai.APIError(message if isinstance(message, str) and message else "An error occurred during streaming",
                           request=response.request, body=error)
