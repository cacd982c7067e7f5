"""Command line shared by the demo servers: stdio by default, ``--http`` / ``--sse`` on loopback."""

from __future__ import annotations

import argparse
import logging
import sys

from mcp.server import MCPServer


def run(server: MCPServer, argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m demo.servers.{server.name}")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--http", action="store_true", help="serve Streamable HTTP at /mcp")
    group.add_argument("--sse", action="store_true", help="serve legacy HTTP+SSE at /sse")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args(argv)
    # stdout belongs to the protocol on stdio (004 §3.1): logs go to stderr only.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    if args.http:
        server.run("streamable-http", host=args.host, port=args.port)
    elif args.sse:
        server.run("sse", host=args.host, port=args.port)
    else:
        server.run()
