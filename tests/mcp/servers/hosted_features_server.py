"""An ``MCPServer`` (mcp 2.x) with what hosted servers do that the demo servers do not.

* ``index(steps, delay)`` reports progress ("indexing") every ``delay`` seconds, then answers;
* ``silent(seconds)`` works without reporting anything;
* ``screenshot()`` answers with a PNG image and a line of text; ``recording()`` with WAV audio;
* ``connect_account(service)`` asks the user to open a link (URL-mode elicitation, spec 2025-11-25)
  and answers with what the user decided;
* ``needs_login()`` answers with the -32042 "URL elicitation required" error.

Tool bodies append one line per run to ``$HOSTED_RUNS`` when set, so tests can count executions.
Usage: python hosted_features_server.py [--http --port N]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import struct
import zlib

from mcp import UrlElicitationRequiredError
from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Image
from mcp.types import AudioContent, ElicitRequestURLParams, TextContent

server = MCPServer("hosted-features", version="1.0")
LINK = "https://accounts.example.com/connect?flow=4f2a"


def _ran(name: str) -> None:
    path = os.environ.get("HOSTED_RUNS")
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(name + "\n")


def tiny_png(width: int = 4, height: int = 3) -> bytes:
    """A real, decodable RGB PNG (red pixels)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def tiny_wav(samples: int = 800) -> bytes:
    data = b"\x00\x00" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, 8000, 16000, 2, 16)
    return (
        b"RIFF"
        + struct.pack("<I", 36 + len(data))
        + b"WAVE"
        + b"fmt "
        + struct.pack("<I", 16)
        + fmt
        + b"data"
        + struct.pack("<I", len(data))
        + data
    )


@server.tool()
async def index(ctx: Context, steps: int = 5, delay: float = 0.2) -> dict:
    """Index the workspace, reporting progress after each step."""
    _ran("index")
    for step in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(step, steps, "indexing")
    return {"indexed": steps}


@server.tool()
async def silent(seconds: float = 1.0) -> dict:
    """Work for a while without reporting progress."""
    _ran("silent")
    await asyncio.sleep(seconds)
    return {"slept": seconds}


@server.tool()
def screenshot() -> list:
    """A screenshot of the page (a PNG) and its title."""
    _ran("screenshot")
    return [TextContent(type="text", text="Page title: Example"), Image(data=tiny_png(), format="png")]


@server.tool()
def recording() -> list:
    """A short audio recording (WAV)."""
    _ran("recording")
    data = base64.b64encode(tiny_wav()).decode()
    return [AudioContent(type="audio", data=data, mime_type="audio/wav")]


@server.tool()
async def connect_account(ctx: Context, service: str = "files", link: str = LINK) -> dict:
    """Connect the user's account on a third-party service (the user finishes it in the browser)."""
    _ran("connect_account")
    result = await ctx.elicit_url(f"Connect your {service} account to continue.", link, "el-4f2a")
    return {"action": result.action}


@server.tool()
def needs_login() -> dict:
    """A tool that first needs the user to sign in elsewhere."""
    _ran("needs_login")
    raise UrlElicitationRequiredError(
        [
            ElicitRequestURLParams(
                mode="url", message="Sign in to Example Co.", url=LINK, elicitation_id="el-9"
            )
        ]
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
