#!/usr/bin/env python3
"""A tiny MCP stdio server for revolve's fault tests (tests/e2e/mcp.rs).

Tools: echo (its text back), fail (an error result), slow (sleeps
`seconds`), crash (exits in the middle of the call), env (the value of
the variable `name`), big (`n` characters), grow (adds the tool extra and
sends notifications/tools/list_changed). With --bad-version it answers
initialize with a version nobody speaks; with --exit-at-start it exits
before reading anything; with --start-delay SECONDS it sleeps that long
before reading anything.
"""
import json
import os
import sys
import time

if "--start-delay" in sys.argv:
    time.sleep(float(sys.argv[sys.argv.index("--start-delay") + 1]))

if "--exit-at-start" in sys.argv:
    sys.stderr.write("fake server: exiting at start as asked\n")
    sys.exit(3)

TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "fail", "description": "Always fails.", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Sleeps.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "crash", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "env", "description": "A variable's value.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "grow", "description": "Adds the tool extra and says the list changed.",
     "inputSchema": {"type": "object"}},
    {"name": "big", "description": "Much text.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def result(text, error=False):
    return {"content": [{"type": "text", "text": text}], "isError": error}


for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mid is None:
        continue
    if method == "initialize":
        version = "1999-01-01" if "--bad-version" in sys.argv else params.get("protocolVersion")
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "fake", "version": "1"}}})
    elif method == "tools/list":
        # Two pages, to exercise pagination.
        if params.get("cursor") == "2":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS[3:]}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS[:3], "nextCursor": "2"}})
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            send({"jsonrpc": "2.0", "id": mid, "result": result("echo: " + str(args.get("text")))})
        elif name == "fail":
            send({"jsonrpc": "2.0", "id": mid, "result": result("it failed on purpose", True)})
        elif name == "slow":
            time.sleep(float(args.get("seconds", 30)))
            send({"jsonrpc": "2.0", "id": mid, "result": result("slept")})
        elif name == "crash":
            sys.stderr.write("fake server: crashing as asked\n")
            os._exit(1)
        elif name == "env":
            send({"jsonrpc": "2.0", "id": mid, "result": result(os.environ.get(args.get("name", ""), "(unset)"))})
        elif name == "grow":
            TOOLS.append({"name": "extra", "description": "Added later.", "inputSchema": {"type": "object"}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            send({"jsonrpc": "2.0", "id": mid, "result": result("grown")})
        elif name == "big":
            send({"jsonrpc": "2.0", "id": mid, "result": result("b" * int(args.get("n", 100000)))})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such tool"}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown method"}})
