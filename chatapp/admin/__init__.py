"""The Django admin (R-UI-3): providers, MCP servers, tool policies, the approval queue, and
read-only views of runs and their trace. One module per area; importing them registers them.
"""

from chatapp.admin import api_keys, approvals, mcp, policies, providers, quotas, trace

__all__ = ["api_keys", "approvals", "mcp", "policies", "providers", "quotas", "trace"]
