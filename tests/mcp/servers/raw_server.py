"""A hand-written MCP stdio server (legacy 2025-11-25 handshake) that misbehaves on request.

No SDK import, so it starts in a few milliseconds. Usage: ``python raw_server.py <mode>...`` where
modes combine: noise (non-protocol text on stdout), init_hang (never answers initialize),
broken_schema (adds a tool whose inputSchema is not a valid JSON Schema), paged (tools/list in pages
of 2). Tools: echo, crash (exits mid-call), hang (never answers), fail (isError), huge (200k chars),
image (image + embedded resources), add_tool (adds a tool, then sends tools/list_changed),
bad_params (answers JSON-RPC -32602), side_effect (appends to $RAW_SIDE_EFFECTS then crashes).
Every notifications/cancelled it receives is appended to $RAW_CANCEL_LOG.
"""

import base64
import json
import os
import sys

MODES = set(sys.argv[1:])
TOOLS = [
    {"name": n, "description": f"{n} tool", "inputSchema": {"type": "object", "properties": {}}}
    for n in ("crash", "hang", "fail", "huge", "image", "add_tool", "bad_params", "side_effect")
]
TOOLS.insert(
    0,
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        "annotations": {"readOnlyHint": True},
    },
)
if "broken_schema" in MODES:
    TOOLS.append(
        {
            "name": "broken",
            "description": "Tool with a broken schema.",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "strng", "minLength": -1}}},
        }
    )


def send(obj):
    if "noise" in MODES:
        sys.stdout.write("DEBUG: about to answer (this line is not MCP)\n")
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def result(mid, value):
    send({"jsonrpc": "2.0", "id": mid, "result": value})


def text(mid, value, is_error=False):
    result(mid, {"content": [{"type": "text", "text": value}], "isError": is_error})


def call_tool(mid, name, args):
    if name == "echo":
        return text(mid, args.get("text", ""))
    if name == "crash":
        os._exit(3)
    if name == "side_effect":
        with open(os.environ["RAW_SIDE_EFFECTS"], "a") as fh:
            fh.write("done\n")
        os._exit(4)
    if name == "hang":
        return None
    if name == "fail":
        return text(mid, "the backend said no", is_error=True)
    if name == "huge":
        return text(mid, "".join(f"line {i:06d} " + "x" * 40 + "\n" for i in range(4000)))
    if name == "bad_params":
        return send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "Invalid params: x"}})
    if name == "image":
        return result(
            mid,
            {
                "content": [
                    {"type": "text", "text": "here is the chart"},
                    {
                        "type": "image",
                        "data": base64.b64encode(b"\x89PNG\r\n\x1a\n" * 100).decode(),
                        "mimeType": "image/png",
                    },
                    {"type": "resource", "resource": {"uri": "file:///r.txt", "text": "resource text"}},
                    {
                        "type": "resource",
                        "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "x/y"},
                    },
                ]
            },
        )
    if name == "add_tool":
        TOOLS.append(
            {"name": f"extra{len(TOOLS)}", "description": "added", "inputSchema": {"type": "object"}}
        )
        text(mid, "added")
        return send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
    return send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def list_tools(mid, params):
    if "paged" not in MODES:
        return result(mid, {"tools": TOOLS})
    start = int((params or {}).get("cursor") or 0)
    page = {"tools": TOOLS[start : start + 2]}
    if start + 2 < len(TOOLS):
        page["nextCursor"] = str(start + 2)
    return result(mid, page)


def main():
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if method == "initialize":
            if "init_hang" in MODES:
                continue
            result(
                mid,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "raw", "version": "0.0.1"},
                },
            )
        elif method == "tools/list":
            list_tools(mid, params)
        elif method == "tools/call":
            call_tool(mid, params.get("name"), params.get("arguments") or {})
        elif method == "ping":
            result(mid, {})
        elif method == "notifications/cancelled" and os.environ.get("RAW_CANCEL_LOG"):
            with open(os.environ["RAW_CANCEL_LOG"], "a") as fh:
                fh.write(json.dumps(params) + "\n")
        elif mid is not None:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "error": {"code": -32601, "message": f"Method not found: {method}"},
                }
            )


if __name__ == "__main__":
    main()
