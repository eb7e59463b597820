"""OAuth for remote (streamable HTTP / SSE) MCP servers that ask for it, with the SDK's client
(``mcp.client.auth.OAuthClientProvider``: discovery from the 401's ``WWW-Authenticate`` and the
protected resource metadata, dynamic client registration, PKCE, token refresh).

Contract:
* ``TokenFile(path)`` is the SDK's ``TokenStorage`` for one server: tokens, the registered client
  and the loopback port of its redirect URI in one JSON file, written atomically with mode 0600
  in a folder of mode 0700. A file that cannot be read as such is treated as absent (the user
  signs in again) and is replaced on the next write.
* ``token_path(directory, spec)`` names that file: one per server name and URL, so a server
  whose URL changes signs in afresh.
* ``LoopbackCallback`` is the redirect target: an HTTP listener on 127.0.0.1 (the port the
  file remembers when it is free, else a new one, and then the old registration is dropped:
  its redirect URI no longer matches) that takes exactly one ``GET /callback?code=...&state=...``
  (or ``?error=...``) and answers the browser with a short page. Requests are read bounded.
* ``oauth_provider(spec, path, on_authorize, callback)`` builds the provider for one connection
  attempt. The SDK calls ``on_authorize(url)`` with the authorization URL when the user has to
  sign in (the connection shows it to the user) and then waits for ``callback``; nothing here
  opens a browser.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from pydantic import AnyUrl

from .errors import McpError
from .specs import McpServerSpec

__all__ = ["TokenFile", "LoopbackCallback", "OAuthDeclined", "oauth_provider", "token_path", "CALLBACK_PATH"]

CALLBACK_PATH = "/callback"
_REQUEST_LIMIT = 16 * 1024


class OAuthDeclined(McpError):
    """The sign-in did not complete (the user declined, or the authorization server said no)."""


def token_path(directory: Path, spec: McpServerSpec) -> Path:
    """The token file of a server (see the module contract)."""
    digest = hashlib.sha256(f"{spec.name}\0{spec.url}".encode()).hexdigest()[:16]
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in spec.name)[:40]
    return directory / f"{safe}-{digest}.json"


class TokenFile:
    """Tokens and client registration of one server, kept in one 0600 file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, **changes: Any) -> None:
        data = {**self._read(), **changes}
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.path.parent, 0o700)
        temporary = self.path.with_suffix(".tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.chmod(temporary, 0o600)
        os.replace(temporary, self.path)

    async def get_tokens(self) -> OAuthToken | None:
        tokens = self._read().get("tokens")
        try:
            return OAuthToken.model_validate(tokens) if tokens else None
        except ValueError:
            return None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._write(tokens=tokens.model_dump(mode="json", exclude_none=True))

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        client = self._read().get("client")
        try:
            return OAuthClientInformationFull.model_validate(client) if client else None
        except ValueError:
            return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._write(client=client_info.model_dump(mode="json", exclude_none=True))

    @property
    def port(self) -> int | None:
        """The loopback port of the registered redirect URI, if any."""
        port = self._read().get("redirectPort")
        return port if isinstance(port, int) else None

    def remember_port(self, port: int) -> None:
        """Remember the port the registered client's redirect URI uses."""
        if port != self.port:
            self._write(redirectPort=port)

    def use_port(self, port: int) -> None:
        """Move to another redirect port: the registration (made for the old one) is dropped."""
        if port != self.port:
            self._write(redirectPort=port, client=None)


class LoopbackCallback:
    """The one-shot HTTP listener the browser is redirected to (see the module contract)."""

    def __init__(self, port: int | None = None) -> None:
        self._wanted = port
        self.port = 0
        self._server: asyncio.Server | None = None
        self._result: asyncio.Future[AuthorizationCodeResult] | None = None

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{CALLBACK_PATH}"

    async def start(self) -> None:
        self._result = asyncio.get_running_loop().create_future()
        sock = None
        for port in ([self._wanted] if self._wanted else []) + [0]:
            candidate = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            candidate.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                candidate.bind(("127.0.0.1", port))
            except OSError:
                candidate.close()
                continue
            sock = candidate
            break
        assert sock is not None  # port 0 always binds on a working loopback
        self.port = sock.getsockname()[1]
        self._server = await asyncio.start_server(self._serve, sock=sock)

    async def result(self) -> AuthorizationCodeResult:
        if self._result is None or self._server is None:
            raise OAuthDeclined("signing in is possible only while the server starts; restart it to sign in again")
        return await asyncio.shield(self._result)

    @property
    def done(self) -> asyncio.Future[AuthorizationCodeResult] | None:
        """The future of the redirect (None before ``start``)."""
        return self._result

    def decline(self, reason: str) -> None:
        """End the wait for the browser: the user said no (or gave up)."""
        if self._result is not None and not self._result.done():
            self._result.set_exception(OAuthDeclined(reason))
            self._result.exception()  # retrieved here: nobody may be waiting for it any more

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        line = head[:_REQUEST_LIMIT].split(b"\r\n", 1)[0].decode("latin-1")
        method, _, rest = line.partition(" ")
        target = rest.rpartition(" ")[0] or rest
        parsed = urlparse(target)
        query = {key: values[0] for key, values in parse_qs(parsed.query).items()}
        if method != "GET" or parsed.path != CALLBACK_PATH or not ({"code", "error"} & set(query)):
            status, page = "404 Not Found", "Nothing here."
        elif self._result is None or self._result.done():
            status, page = "409 Conflict", "This sign-in was already completed. You can close this window."
        elif "error" in query:
            status, page = "400 Bad Request", "The sign-in did not complete. You can close this window."
            description = query.get("error_description") or query["error"]
            self._result.set_exception(OAuthDeclined(f"the authorization server answered: {description}"))
            self._result.exception()
        else:
            status, page = "200 OK", "Signed in. You can close this window and return to the agent."
            self._result.set_result(AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss")))
        body = f"<!doctype html><meta charset=utf-8><title>agent-host</title><p>{page}</p>".encode()
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()


def oauth_provider(spec: McpServerSpec, tokens: TokenFile, callback: LoopbackCallback,
                   on_authorize: Callable[[str], Awaitable[None]]) -> OAuthClientProvider:
    """The SDK's OAuth provider for one connection attempt to ``spec`` (callback already started)."""
    metadata = OAuthClientMetadata(client_name=f"agent-host ({spec.name})", redirect_uris=[AnyUrl(callback.redirect_uri)],
                                   grant_types=["authorization_code", "refresh_token"], response_types=["code"])

    async def redirect(url: str) -> None:
        await on_authorize(url)

    return OAuthClientProvider(server_url=spec.url or "", client_metadata=metadata, storage=tokens,
                               redirect_handler=redirect, callback_handler=callback.result)
