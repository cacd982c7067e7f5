"""What stands beside the engine, never inside it: nothing in ``agent/`` or ``chatapp/``'s run path
imports this package except to serve a demo.

- ``demo.model``: the demo model, a scripted OpenAI-compatible endpoint (``make run`` mounts it
  under ``/demo-llm/``; the tests and the benches serve it on their own ports).
- ``demo.servers``: the demo MCP servers (``python -m demo.servers.<name>``).
- ``demo.conformance_client``: the client the official MCP conformance suite drives against
  clearloop's own MCP layer (``make conformance``).
"""
