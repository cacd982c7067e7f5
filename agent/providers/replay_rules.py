"""The reasoning-replay rules providers enforce, recognised in their error messages.

When a provider rejects a follow-up because something it requires back is missing or altered, it
answers 400 with its own wording. The run then fails with that wording *and* the rule it broke, so
an admin can act on it (switch the preset, or the capability named here) instead of reading a bare
status. Each rule's source is in docs/providers.md ("Reasoning replay").
"""

from __future__ import annotations

import re

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"reasoning_content.*(must be passed back|in the assistant message)", re.I | re.S),
        "DeepSeek thinking mode: every assistant message of a user turn with tool calls must carry its "
        "reasoning_content (capability reasoning_replay=reasoning_content, preset deepseek)",
    ),
    (
        re.compile(r"Invalid `?signature`? in `?thinking`? block", re.I),
        "Anthropic extended thinking: thinking and redacted_thinking blocks must come back byte for byte, "
        "signature included (capability replay_blocks); blocks from another model or account fail",
    ),
    (
        re.compile(r"Expected `?thinking`? or `?redacted_thinking`?", re.I),
        "Anthropic extended thinking: the assistant turn holding a tool_use must start with its thinking "
        "blocks (capability replay_blocks, preset anthropic)",
    ),
    (
        re.compile(
            r"missing a thought_signature|corrupted thought signature|invalid thought signature"
            r"|thought signature is not valid",
            re.I,
        ),
        "Gemini 3: each function call's extra_content.google.thought_signature must be echoed unchanged "
        "(capability echo_tool_call_extra, preset gemini)",
    ),
    (
        re.compile(r"encrypted content .* could not be verified|encrypted_content`? was not issued", re.I),
        "OpenAI Responses: reasoning items are sealed to the account and endpoint that issued them and "
        "must come back unchanged (capability replay_blocks)",
    ),
    (
        re.compile(r"Items are not persisted when `?store`? is set to false", re.I),
        "OpenAI Responses with store=false: reasoning items are replayed by encrypted_content, never by id "
        "(include reasoning.encrypted_content; capability responses_encrypted_reasoning)",
    ),
    # Prompt caching (docs/providers.md, "Prompt caching"). clearloop drops its own markers when an
    # endpoint refuses them (caching.is_cache_refusal); these reach the run only when the markers
    # came from elsewhere (the admin's extra body, a proxy) or were refused in another way.
    (
        re.compile(r"A maximum of 4 blocks with cache_control", re.I),
        "Anthropic prompt caching: at most 4 blocks may carry cache_control; clearloop sends at most 4, "
        "so the others came from the provider's extra body or a proxy (capability prompt_cache)",
    ),
    (
        re.compile(r"thinking\.cache_control|cache_control cannot be set for empty text", re.I),
        "Anthropic prompt caching: cache_control may not be set on thinking blocks or empty text blocks",
    ),
    (
        re.compile(r"cache_control: Extra inputs are not permitted", re.I),
        "this endpoint takes no Anthropic prompt-cache markers: turn them off with the capability "
        "override prompt_cache=off and remove cache_control from the extra body",
    ),
    (
        re.compile(r"without its required 'reasoning' item", re.I),
        "OpenAI Responses: the reasoning items before a function_call must be sent back with it "
        "(capability replay_blocks)",
    ),
)


def broken_rule(message: str) -> str | None:
    """The replay rule a provider's error message says was broken, if it is one we know."""
    for pattern, rule in _RULES:
        if pattern.search(message):
            return rule
    return None


def explain(message: str) -> str:
    """The provider's message, followed by the rule it enforces (and where it is documented)."""
    rule = broken_rule(message)
    return f"{message} [rule broken: {rule}; see docs/providers.md]" if rule else message
