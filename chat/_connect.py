"""Connecting and handshaking, with errors a person can act on (no tracebacks, no token).

``connect(settings)`` returns an initialised ``AhpClient`` subscribed to the root channel, or
raises ``ChatConnectError`` whose message says what went wrong and what to try: the host is not
running (refused), the token is missing or wrong (HTTP 403), the host speaks none of the versions
the client does (``client.PROTOCOL_VERSIONS``: AHP 1.0.0, else 0.9.0), or it did not answer in time.
"""

from __future__ import annotations

import re

from chat._settings import ChatSettings, display_url
from client import ROOT_CHANNEL, AhpClient, AhpClientError, AhpError, UnsupportedVersionError

__all__ = ["ChatConnectError", "connect", "describe_error"]

_UNSUPPORTED_VERSION = -32005


class ChatConnectError(Exception):
    """The host could not be reached or refused us; the message is for the user."""


def describe_error(error: BaseException, url: str) -> str:
    """A one-line explanation of a connection failure, without the token."""
    shown = display_url(url)
    text = str(error)
    if isinstance(error, UnsupportedVersionError):
        return str(error).replace(url, shown)
    if isinstance(error, AhpError) and error.code == _UNSUPPORTED_VERSION:
        return f"the host at {shown} speaks none of the AHP versions this client does: {error.message}"
    if isinstance(error, AhpError):
        return f"the host at {shown} refused the handshake: {error.message}"
    if re.search(r"HTTP 40[13]", text):
        return (
            f"the host at {shown} refused the connection: the token is missing or wrong. "
            "Pass the URL exactly as 'agent-host serve' printed it (or as 'url' in host.json in the "
            "host's data directory), or set --token / AGENT_HOST_TOKEN."
        )
    if "HTTP" in text:
        return f"the host at {shown} refused the connection ({text.split('(')[-1].rstrip(')')})"
    if re.search(r"refused|Errno 111|Connect call failed", text, re.IGNORECASE):
        return f"cannot connect to {shown}: connection refused. Is 'agent-host serve' running there?"
    if isinstance(error, TimeoutError):
        return f"the host at {shown} did not answer in time"
    # Keep the library's short sentence but never a URL with the token in it.
    return text.replace(url, shown) if text else f"cannot connect to {shown}"


async def connect(settings: ChatSettings, *, client_id: str | None = None) -> AhpClient:
    """Open, handshake and subscribe to the root channel; raises ``ChatConnectError``."""
    try:
        client = await AhpClient.connect(settings.url, token=settings.token, client_id=client_id, open_timeout=10.0)
    except (AhpClientError, OSError, TimeoutError) as error:
        raise ChatConnectError(describe_error(error, settings.url)) from None
    try:
        await client.initialize([ROOT_CHANNEL])
    except (AhpClientError, OSError, TimeoutError) as error:
        await client.close()
        raise ChatConnectError(describe_error(error, settings.url)) from None
    return client
