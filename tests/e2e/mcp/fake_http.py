#!/usr/bin/env python3
"""A tiny streamable-HTTP MCP server for revolve's tests (tests/e2e/mcp.rs),
standard library only: it answers initialize and tools/list with plain
JSON and tools/call with an SSE stream (a notification first), gives a
session id, and forgets the first session after its first call (a 404, as
a restarted server does), so the client must initialize again. Every
request's method and session header are appended to the log file.
Usage: fake_http.py PORT LOG
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

PORT, LOG = int(sys.argv[1]), sys.argv[2]
sessions = {"count": 0, "live": set(), "forgot": False}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        session = self.headers.get("Mcp-Session-Id")
        with open(LOG, "a") as log:
            log.write("%s %s %s\n" % (body.get("method"), session, self.headers.get("Mcp-Protocol-Version")))
        method, mid = body.get("method"), body.get("id")
        if method == "initialize":
            sessions["count"] += 1
            sid = "s%d" % sessions["count"]
            sessions["live"].add(sid)
            return self.json({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": body["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "fake-http", "version": "1"}}}, sid)
        if session not in sessions["live"]:
            return self.reply(404, b"no such session")
        if mid is None:
            return self.reply(202, b"")
        if method == "tools/list":
            return self.json({"jsonrpc": "2.0", "id": mid, "result": {"tools": [
                {"name": "hello", "description": "Greets.",
                 "inputSchema": {"type": "object", "properties": {"who": {"type": "string"}}}}]}})
        if method == "tools/call":
            if not sessions["forgot"]:
                sessions["forgot"] = True
                sessions["live"].discard(session)
                return self.reply(404, b"session expired")
            who = body["params"]["arguments"].get("who", "?")
            events = [
                {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
                {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": "hello, " + who}]}},
            ]
            data = "".join("event: message\ndata: %s\n\n" % json.dumps(e) for e in events).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        return self.json({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown"}})

    def do_DELETE(self):
        self.reply(200, b"")

    def json(self, value, sid=None):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if sid:
            self.send_header("Mcp-Session-Id", sid)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def reply(self, status, data):
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


HTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
