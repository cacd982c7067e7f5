"""Helper process for the orphan test: opens a pool with two stdio servers, prints the child PIDs,
then waits to be killed. Usage: python holder.py"""

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import psutil  # noqa: E402
from mcp_helpers import raw_config  # noqa: E402

from agent.mcp import McpPool  # noqa: E402


async def main() -> None:
    pool = McpPool([raw_config("a"), raw_config("b")])
    await pool.catalogue("a")
    await pool.catalogue("b")
    print(json.dumps([p.pid for p in psutil.Process().children(recursive=True)]), flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
