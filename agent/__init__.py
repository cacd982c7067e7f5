"""clearloop's engine: providers, the agent loop, tools, MCP and the context budget.

Plain Python (asyncio, httpx, mcp, jsonschema). Nothing here imports Django, Channels, Celery or
``chatapp``; ``tests/test_agent_is_django_free.py`` enforces it. Values here carry no database ids:
identity is a storage concern that lives in ``chatapp``'s recorder.
"""
