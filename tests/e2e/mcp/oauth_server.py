#!/usr/bin/env python3
"""An MCP server behind OAuth and its authorization server, on one port,
for revolve's tests (tests/e2e/mcp_oauth.rs), standard library only:

* POST /mcp: streamable HTTP (initialize, tools/list, tools/call of
  `whoami`, and `leak`, which echoes the token), only with `Authorization: Bearer <a live access token>`;
  otherwise 401 with `WWW-Authenticate: Bearer resource_metadata="…"`
  (bare `Bearer` with --bare-challenge, so the client must try the
  well-known URI itself).
* GET /.well-known/oauth-protected-resource/mcp: RFC 9728 metadata naming
  the authorization server http://127.0.0.1:PORT/auth.
* GET /.well-known/oauth-authorization-server/auth: RFC 8414 metadata.
* POST /auth/register: RFC 7591, loopback redirect URIs only.
* GET /auth/authorize: checks the client, redirect URI, S256 challenge and
  resource, and redirects straight back with a code for the test user.
* POST /auth/token: authorization_code (the PKCE verifier checked against
  the challenge, the redirect URI, client and resource) and refresh_token
  (rotated: the old one dies).
* GET /test/revoke: every access token dies (with ?all=1 the refresh
  tokens too), as a server that restarted or an admin would do.

Every event is appended to LOG, one line, never a token's value: tokens
are `at-N-…` / `rt-N-…` and lines name only N.
Usage: oauth_server.py PORT LOG [--expires-in SECONDS] [--bare-challenge]
"""
import base64
import hashlib
import json
import secrets
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

PORT, LOG = int(sys.argv[1]), sys.argv[2]
EXPIRES_IN = int(sys.argv[sys.argv.index("--expires-in") + 1]) if "--expires-in" in sys.argv else 3600
BARE = "--bare-challenge" in sys.argv
BASE = "http://127.0.0.1:%d" % PORT
RESOURCE = BASE + "/mcp"
ISSUER = BASE + "/auth"
state = {"clients": {}, "codes": {}, "access": {}, "refresh": {}, "n": 0, "sessions": 0}


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


def number(token):
    return token.split("-")[1]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urlsplit(self.path)
        q = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            log("prm")
            return self.json(200, {"resource": RESOURCE, "authorization_servers": [ISSUER],
                                   "scopes_supported": ["tools"], "bearer_methods_supported": ["header"]})
        if url.path == "/.well-known/oauth-authorization-server/auth":
            log("asm")
            return self.json(200, {
                "issuer": ISSUER, "authorization_endpoint": ISSUER + "/authorize",
                "token_endpoint": ISSUER + "/token", "registration_endpoint": ISSUER + "/register",
                "response_types_supported": ["code"], "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"], "token_endpoint_auth_methods_supported": ["none"]})
        if url.path == "/auth/authorize":
            client = state["clients"].get(q.get("client_id"))
            problems = []
            if client is None:
                problems.append("unknown client")
            elif q.get("redirect_uri") not in client:
                problems.append("redirect_uri not registered")
            if q.get("response_type") != "code":
                problems.append("response_type")
            if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
                problems.append("no S256 challenge")
            if q.get("resource") != RESOURCE:
                problems.append("resource %r" % q.get("resource"))
            if problems:
                log("authorize refused: " + ", ".join(problems))
                return self.json(400, {"error": "invalid_request", "error_description": ", ".join(problems)})
            state["n"] += 1
            code = "code-%d" % state["n"]
            state["codes"][code] = {"client": q["client_id"], "redirect_uri": q["redirect_uri"],
                                    "challenge": q["code_challenge"], "scope": q.get("scope")}
            log("authorize %s scope=%s" % (q["client_id"], q.get("scope")))
            location = q["redirect_uri"] + "?" + urlencode({"code": code, "state": q.get("state", "")})
            self.send_response(302)
            self.send_header("Location", location)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if url.path == "/test/revoke":
            state["access"].clear()
            if q.get("all"):
                state["refresh"].clear()
            log("revoked" + (" all" if q.get("all") else ""))
            return self.json(200, {})
        return self.json(404, {"error": "not_found"})

    def do_POST(self):
        url = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if url.path == "/auth/register":
            body = json.loads(raw)
            uris = body.get("redirect_uris") or []
            if not uris or not all(u.startswith("http://127.0.0.1:") for u in uris):
                return self.json(400, {"error": "invalid_redirect_uri"})
            client = "client-%d" % (len(state["clients"]) + 1)
            state["clients"][client] = uris
            log("register %s auth=%s" % (client, body.get("token_endpoint_auth_method")))
            return self.json(201, {"client_id": client, "redirect_uris": uris,
                                   "token_endpoint_auth_method": "none"})
        if url.path == "/auth/token":
            return self.token({k: v[0] for k, v in parse_qs(raw.decode()).items()})
        if url.path == "/mcp":
            return self.mcp(json.loads(raw))
        return self.json(404, {"error": "not_found"})

    def token(self, form):
        grant = form.get("grant_type")
        if form.get("resource") != RESOURCE:
            log("token refused: resource")
            return self.json(400, {"error": "invalid_target"})
        if grant == "authorization_code":
            c = state["codes"].pop(form.get("code"), None)
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
            if c is None or c["client"] != form.get("client_id") or c["redirect_uri"] != form.get("redirect_uri"):
                log("token refused: code")
                return self.json(400, {"error": "invalid_grant"})
            if digest != c["challenge"]:
                log("token refused: pkce")
                return self.json(400, {"error": "invalid_grant", "error_description": "PKCE verifier does not match"})
            client = c["client"]
        elif grant == "refresh_token":
            client = state["refresh"].pop(form.get("refresh_token"), None)
            if client is None or client != form.get("client_id"):
                log("token refused: refresh")
                return self.json(400, {"error": "invalid_grant", "error_description": "refresh token unknown"})
        else:
            return self.json(400, {"error": "unsupported_grant_type"})
        state["n"] += 1
        # Distinctive values, so a test can look for them in every file.
        access = "at-%d-%s" % (state["n"], secrets.token_hex(12))
        refresh = "rt-%d-%s" % (state["n"], secrets.token_hex(12))
        state["access"][access] = time.time() + EXPIRES_IN
        state["refresh"][refresh] = client
        log("token %s %s -> %s" % (grant, client, state["n"]))
        return self.json(200, {"access_token": access, "token_type": "Bearer", "expires_in": EXPIRES_IN,
                               "refresh_token": refresh, "scope": "tools"})

    def mcp(self, body):
        auth = self.headers.get("Authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        method, mid = body.get("method"), body.get("id")
        if token is None or state["access"].get(token, 0) < time.time():
            log("mcp 401 %s" % method)
            challenge = "Bearer" if BARE else 'Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp", scope="tools"' % BASE
            data = b'{"error": "unauthorized"}'
            self.send_response(401)
            self.send_header("WWW-Authenticate", challenge)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        log("mcp %s with %s" % (method, number(token)))
        if method == "initialize":
            state["sessions"] += 1
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-test", "version": "1"}}},
                sid="s%d" % state["sessions"])
        if mid is None:
            return self.json(202, None)
        if method == "tools/list":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {"tools": [
                {"name": "whoami", "description": "Who the token is for.",
                 "inputSchema": {"type": "object", "properties": {}}},
                {"name": "leak", "description": "Echoes the token it was called with (a careless server).",
                 "inputSchema": {"type": "object", "properties": {}}}]}})
        if method == "tools/call" and body["params"]["name"] == "leak":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": "your token: " + token}]}})
        if method == "tools/call":
            return self.json(200, {"jsonrpc": "2.0", "id": mid, "result": {"content": [
                {"type": "text", "text": "alice, with grant %s" % number(token)}]}})
        return self.json(200, {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown"}})

    def json(self, status, value, sid=None):
        data = b"" if value is None else json.dumps(value).encode()
        self.send_response(status)
        if value is not None:
            self.send_header("Content-Type", "application/json")
        if sid:
            self.send_header("Mcp-Session-Id", sid)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_DELETE(self):
        self.json(200, None)


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
