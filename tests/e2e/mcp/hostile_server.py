#!/usr/bin/env python3
"""A hostile MCP stdio server for revolve's boundary tests
(tests/e2e/mcp_bounds.rs, issue 42).

It writes its pid to $HOSTILE_PIDS (a file, one pid a line) and starts a
child of its own (`sleep`) whose pid goes there too, so a test can see
whether both end with revolve. SIGTERM is ignored.

With --stuck it never answers `initialize` (nor reads its stdin). Tools:
huge (one answer of `n` bytes, sent in pieces), noisy (`n` bytes to
stderr), echo (its text back), and two whose names collide once
sanitised: `a.b` and `a_b`.
"""
import json
import os
import signal
import subprocess
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = os.environ.get("HOSTILE_PIDS")
child = subprocess.Popen(["sleep", "1000"])
if pids:
    with open(pids, "a") as f:
        f.write(f"{os.getpid()}\n{child.pid}\n")

if "--stuck" in sys.argv:
    while True:
        time.sleep(1000)

TOOLS = [
    {"name": "huge", "description": "One huge answer.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"name": "noisy", "description": "Much stderr.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "a.b", "description": "Dotted.", "inputSchema": {"type": "object"}},
    {"name": "a_b", "description": "Underscored.", "inputSchema": {"type": "object"}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(mid, t):
    send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": t}]}})


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "huge":
            n = int(args.get("n", 0))
            sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "' % mid)
            piece = "x" * (1 << 20)
            while n > 0:
                sys.stdout.write(piece[:n])
                n -= len(piece)
            sys.stdout.write('"}]}}\n')
            sys.stdout.flush()
        elif name == "noisy":
            n = int(args.get("n", 0))
            i = 0
            while n > 0:
                chunk = f"noise line {i}\n"
                sys.stderr.write(chunk)
                n -= len(chunk)
                i += 1
            sys.stderr.write("the last noise\n")
            sys.stderr.flush()
            text(mid, "noisy done")
        elif name == "echo":
            text(mid, "echo: " + str(args.get("text", "")))
        else:
            text(mid, "called " + str(name))
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no such method"}})
