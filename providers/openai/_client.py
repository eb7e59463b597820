"""The ``AsyncOpenAI`` client both OpenAI providers own: created on first use, closed by ``aclose``.

SDK retries are off (the host's turn loop owns retries), and a missing key is an
``AuthenticationError`` that says which variable to set, raised before any request is made.
Without an ``http_client`` the SDK's own aiohttp-backed client (``openai.DefaultAioHttpClient``,
the ``openai[aiohttp]`` extra) carries the requests: it reads a streamed chunk for about half the
CPU of the default httpx/httpcore/anyio stack (``benchmarks/provider_parsing.py``), which is what
bounds how many sessions one event loop can stream. Proxies and CA settings from the environment
still apply (the transport takes them from httpx's own settings).
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import AuthenticationError

__all__ = ["OpenAIClientOwner", "make_client"]

PROVIDER = "openai"


def make_client(api_key: str | None, **kwargs: Any) -> Any:
    """An ``AsyncOpenAI`` with SDK retries off; a missing key is an :class:`AuthenticationError`."""
    import openai

    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise AuthenticationError("No OpenAI API key is configured: set OPENAI_API_KEY.", provider=PROVIDER)
    options = {k: v for k, v in kwargs.items() if v is not None}
    options.setdefault("http_client", openai.DefaultAioHttpClient())
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
