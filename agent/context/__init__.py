"""Tokens and context: offline counting, the output budget, shrinking the working context (R-CTX)."""

from agent.context.budget import ContextLimits, output_budget, over_threshold
from agent.context.caps import DEFAULT_RESULT_CAP, cap_text
from agent.context.compress import CompressionPlan, CompressionStep, Compressor
from agent.context.tokens import Calibration, TokenCounter, estimate_tokens

__all__ = [
    "DEFAULT_RESULT_CAP",
    "Calibration",
    "CompressionPlan",
    "CompressionStep",
    "Compressor",
    "ContextLimits",
    "TokenCounter",
    "cap_text",
    "estimate_tokens",
    "output_budget",
    "over_threshold",
]
