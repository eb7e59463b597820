"""Test MCP server over streamable HTTP that requires OAuth, with its own authorization server on
the same origin (the SDK's server-side auth pieces), on 127.0.0.1 port 0.

* Without a valid bearer token `/mcp` answers 401 with `WWW-Authenticate` naming its protected
  resource metadata; the metadata names this origin as the authorization server, which offers
  dynamic client registration, `/authorize` (PKCE) and `/token` (authorization code, refresh).
* `/authorize` consents at once (no login page): it redirects to the client's redirect URI with
  a code, so a test can play the browser with one GET that follows redirects.
* Tool `whoami()` returns the client id the token was issued to.
* Prints `PORT <n>` on stdout once listening; `--tokens-expire` issues tokens that expire
  at once (the client must refresh).
"""

from __future__ import annotations

import secrets
import socket
import sys
import time

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken


class Provider:
    """An in-memory authorization server that consents to everything."""

    def __init__(self, lifetime: int) -> None:
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.clients[str(client_info.client_id)] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=str(client.client_id),
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + self.lifetime, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=self.lifetime, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        return self._issue(str(client.client_id), authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        return self._issue(str(client.client_id), scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    import anyio
    import uvicorn

    lifetime = 0 if "--tokens-expire" in sys.argv else 3600
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    origin = f"http://127.0.0.1:{port}"
    server = MCPServer("oauth-protected", auth_server_provider=Provider(lifetime), auth=AuthSettings(
        issuer_url=origin, resource_server_url=f"{origin}/mcp", validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True)))

    @server.tool()
    def whoami() -> str:
        """The client id the request's token was issued to."""
        token = get_access_token()
        return f"client {token.client_id}" if token else "anonymous"

    async def run() -> None:
        http = uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning"))

        async def announce() -> None:
            while not http.started:
                await anyio.sleep(0.01)
            print(f"PORT {port}", flush=True)

        async with anyio.create_task_group() as group:
            group.start_soon(announce)
            await http.serve(sockets=[listener])

    anyio.run(run)


if __name__ == "__main__":
    main()
