"""Demo MCP servers that ship with clearloop (R-MCP-8), each runnable as
``python -m demo.servers.<name>`` (stdio) or with ``--http --port N`` (Streamable HTTP on
127.0.0.1, endpoint ``/mcp``) or ``--sse --port N`` (legacy HTTP+SSE, endpoint ``/sse``).

They answer deterministically (no network, no randomness) so demos and tests can rely on them.
"""
