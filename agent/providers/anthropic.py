"""Anthropic Messages adapter (R-PROV-1): ``POST {base}/v1/messages``, ``x-api-key`` auth."""

from __future__ import annotations

from typing import Any, ClassVar

from agent.providers import anthropic_request, anthropic_stream
from agent.providers.http import HttpProvider, StreamAccumulator
from agent.providers.types import ModelEvent, ModelRequest

ANTHROPIC_VERSION = "2023-06-01"


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
