from mcp_helpers import http_demo_server  # noqa: F401  (fixtures live with the helpers)
