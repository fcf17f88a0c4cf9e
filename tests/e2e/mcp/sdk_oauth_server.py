"""A FastMCP server (PyPI `mcp`, the official SDK) that is its own OAuth
authorization server, for revolve's real-server OAuth test
(tests/e2e/mcp_oauth.rs): the SDK serves the protected resource metadata,
the authorization server's metadata, dynamic registration, the
authorization endpoint and the token endpoint (PKCE checked by the SDK),
and refuses the MCP endpoint without a token. This file holds only the
in-memory store the SDK asks for, whose `authorize` says yes at once for
a test user. Run with the python `.ci/mcp-servers` prints.
Usage: sdk_oauth_server.py PORT
"""
import secrets
import sys
import time

from mcp.server.auth.provider import (AccessToken, AuthorizationCode, RefreshToken,
                                      construct_redirect_uri)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.fastmcp import FastMCP
from mcp.shared.auth import OAuthToken

PORT = int(sys.argv[1])
BASE = "http://127.0.0.1:%d" % PORT


class Store:
    def __init__(self):
        self.clients, self.codes, self.access, self.refresh = {}, {}, {}, {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params):
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or ["tools"], expires_at=time.time() + 300,
            client_id=client.client_id, code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri, resource=params.resource,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly)
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    def grant(self, client_id, scopes, resource):
        access, refresh = "sdk-at-" + secrets.token_hex(16), "sdk-rt-" + secrets.token_hex(16)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, resource=resource)
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                             resource=resource)
        return OAuthToken(access_token=access, expires_in=3600, scope=" ".join(scopes),
                          refresh_token=refresh)

    async def exchange_authorization_code(self, client, code):
        del self.codes[code.code]
        return self.grant(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client, token):
        return self.refresh.get(token)

    async def exchange_refresh_token(self, client, token, scopes):
        del self.refresh[token.token]
        return self.grant(client.client_id, scopes or token.scopes, token.resource)

    async def load_access_token(self, token):
        return self.access.get(token)

    async def revoke_token(self, token):
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


mcp = FastMCP(
    "sdk-oauth", host="127.0.0.1", port=PORT, log_level="WARNING",
    auth_server_provider=Store(),
    auth=AuthSettings(issuer_url=BASE, resource_server_url=BASE + "/mcp",
                      validate_token_resource=True, required_scopes=["tools"],
                      client_registration_options=ClientRegistrationOptions(
                          enabled=True, valid_scopes=["tools"], default_scopes=["tools"])))


@mcp.tool()
def shout(text: str) -> str:
    """Says it louder."""
    return text.upper() + "!"


mcp.run(transport="streamable-http")
