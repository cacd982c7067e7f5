"""Model providers: one interface (``base.Provider``), three wire adapters, one factory.

Use ``build_provider(ProviderSettings(...), http)``; see ``registry`` and docs/providers.md.
"""

from agent.providers.base import Provider, complete
from agent.providers.profiles import PRESETS, Capabilities
from agent.providers.redact import redact_request
from agent.providers.registry import build_provider, describe_request
from agent.providers.settings import ProviderSettings

__all__ = [
    "PRESETS",
    "Capabilities",
    "Provider",
    "ProviderSettings",
    "build_provider",
    "complete",
    "describe_request",
    "redact_request",
]
