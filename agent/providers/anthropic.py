"""Anthropic Messages adapter (R-PROV-1): ``POST {base}/v1/messages``, ``x-api-key`` auth."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import httpx

from agent.providers import anthropic_request, anthropic_stream
from agent.providers.http import HttpProvider, StreamAccumulator
from agent.providers.types import ModelEvent, ModelRequest

ANTHROPIC_VERSION = "2023-06-01"
# What POST /v1/messages/count_tokens accepts: "the same structured list of inputs as creating a
# message" without the sampling fields (max_tokens, stream, temperature ... are refused as extra
# inputs). https://platform.claude.com/docs/en/build-with-claude/token-counting
_COUNT_FIELDS = frozenset({"model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers"})
COUNT_TIMEOUT = 10.0

log = logging.getLogger(__name__)


class AnthropicProvider(HttpProvider):
    kind: ClassVar[str] = "anthropic"

    def url(self) -> str:
        base = self.settings.base_url.rstrip("/")
        # The SDK's base URL has no /v1; accept both spellings.
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")

    def auth_headers(self) -> dict[str, str]:
        return {"x-api-key": self.settings.api_key} if self.settings.api_key else {}

    def protocol_headers(self) -> dict[str, str]:
        return {"anthropic-version": ANTHROPIC_VERSION}

    def build_payload(self, request: ModelRequest) -> dict[str, Any]:
        return anthropic_request.build_payload(
            request, self.capabilities, model=self.settings.model, max_output=self.settings.max_output_tokens
        )

    def new_accumulator(self) -> StreamAccumulator:
        return anthropic_stream.AnthropicAccumulator()

    def events_from_body(self, body: dict[str, Any]) -> list[ModelEvent]:
        return anthropic_stream.events_from_message(body)

    async def count_input_tokens(self, request: ModelRequest) -> int | None:
        """The request's input tokens as Anthropic counts them (free, rate limited on its own).

        An estimate helper, never a reason to fail a run: any error answers None and the loop
        keeps its own estimate.
        """
        if not self.capabilities.count_tokens_endpoint:
            return None
        body = {k: v for k, v in self.payload(request).items() if k in _COUNT_FIELDS}
        headers = {**self.settings.extra_headers, **self.protocol_headers(), **self.auth_headers()}
        try:
            response = await self._http.post(
                self.url() + "/count_tokens", json=body, headers=headers, timeout=COUNT_TIMEOUT
            )
            counted = response.json().get("input_tokens") if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError) as exc:
            log.info("%s: token count unavailable (%s); using the estimate", self.name, type(exc).__name__)
            return None
        if not isinstance(counted, int) or counted <= 0:
            log.info("%s: token count refused (HTTP %s); using the estimate", self.name, response.status_code)
            return None
        return counted
