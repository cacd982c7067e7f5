"""The policy hook: after validation, before execution, the host says allow / needs_approval / deny.

Policies live on the host (admin-set per tool, R-TOOL-2); MCP annotations are only hints. Approval is
not an authorisation boundary against an untrusted client: the host must check who decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from agent.toolbox import ToolInfo

PolicyAction = Literal["allow", "needs_approval", "deny"]


@dataclass(frozen=True, slots=True)
class ProposedCall:
    run_key: str
    call_id: str
    name: str
    arguments: dict[str, Any]
    info: ToolInfo
    # The run's calls of this tool that were started before this one (EXECUTED_CALL_STATUSES), from
    # the run's state: what a per-run limit counts, with no read of the host's store (the state holds
    # every stored status, and a resumed run rebuilds it from them).
    executed_before: int = 0


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    action: PolicyAction
    reason: str | None = None


class PolicyHook(Protocol):
    async def check(self, call: ProposedCall) -> PolicyDecision:
        """Decide what happens to a valid call. Called once per call, in tool_calls order."""
        ...


class RiskPolicy:
    """The default: high-risk tools wait for an approval, everything else runs."""

    async def check(self, call: ProposedCall) -> PolicyDecision:
        if call.info.risk == "high":
            return PolicyDecision("needs_approval", f"{call.name} is a high-risk tool")
        return PolicyDecision("allow")


class AllowAll:
    async def check(self, call: ProposedCall) -> PolicyDecision:
        return PolicyDecision("allow")
