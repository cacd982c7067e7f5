"""MCP layer benchmark: pool overhead vs the raw SDK, cold start per transport, concurrent throughput.

Run: .venv/bin/python bench/mcp/run.py [--calls 300]
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time

from mcp import Client, StdioServerParameters, stdio_client

from agent.mcp import McpPool, McpServerConfig

ARGS = ("-m", "demo.servers.demo_tools")
CALL = ("get_stock_price", {"symbol": "AAPL"})


async def timed_calls(call, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await call()
        out.append(time.perf_counter() - t)
    return out


async def raw_sdk(n: int) -> list[float]:
    params = StdioServerParameters(command=sys.executable, args=list(ARGS))
    with open("/dev/null", "w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            await client.call_tool(*CALL)
            return await timed_calls(lambda: client.call_tool(*CALL), n)


async def pooled(n: int) -> list[float]:
    async with McpPool([McpServerConfig(name="demo", command=sys.executable, args=ARGS)]) as pool:
        await pool.call_tool("demo", *CALL)
        return await timed_calls(lambda: pool.call_tool("demo", *CALL), n)


async def cold(config: McpServerConfig) -> float:
    t = time.perf_counter()
    async with McpPool([config]) as pool:
        await pool.call_tool(config.name, *CALL)
        return time.perf_counter() - t


async def throughput(config: McpServerConfig, total: int = 200, width: int = 10) -> float:
    async with McpPool([config]) as pool:
        await pool.call_tool(config.name, *CALL)
        sem = asyncio.Semaphore(width)

        async def one():
            async with sem:
                await pool.call_tool(config.name, *CALL)

        t = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(total)))
        return total / (time.perf_counter() - t)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_http() -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, *ARGS, "--http", "--port", str(port)], stderr=subprocess.DEVNULL)
    for _ in range(400):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("http server did not start")


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:.2f} ms (p90 {sorted(xs)[int(len(xs) * 0.9)] * 1000:.2f})"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=300)
    n = parser.parse_args().calls
    raw = await raw_sdk(n)
    pool = await pooled(n)
    proc, url = start_http()
    try:
        stdio_cfg = McpServerConfig(name="demo", command=sys.executable, args=ARGS)
        http_cfg = McpServerConfig(name="web", transport="http", url=url)
        rows = [
            ("warm call, raw SDK Client (stdio)", ms(raw)),
            ("warm call, McpPool (stdio)", ms(pool)),
            ("pool / raw median ratio", f"{statistics.median(pool) / statistics.median(raw):.2f}x"),
            ("cold start + first call, stdio", f"{await cold(stdio_cfg) * 1000:.0f} ms"),
            ("cold connect + first call, Streamable HTTP", f"{await cold(http_cfg) * 1000:.0f} ms"),
            ("throughput, 10 in flight, stdio", f"{await throughput(stdio_cfg):.0f} calls/s"),
            ("throughput, 10 in flight, HTTP", f"{await throughput(http_cfg):.0f} calls/s"),
        ]
    finally:
        proc.terminate()
        proc.wait(10)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  value")
    for name, value in rows:
        print(f"{name.ljust(width)}  {value}")


if __name__ == "__main__":
    asyncio.run(main())
