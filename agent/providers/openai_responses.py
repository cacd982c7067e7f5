"""OpenAI Responses adapter (R-PROV-1, 000 §14): ``POST {base}/responses``, stateless replay."""

from __future__ import annotations

from typing import Any, ClassVar

from agent.providers import openai_responses_request, openai_responses_stream
from agent.providers.http import HttpProvider, StreamAccumulator
from agent.providers.types import ModelEvent, ModelRequest


class OpenAIResponsesProvider(HttpProvider):
    kind: ClassVar[str] = "openai_responses"

    def url(self) -> str:
        return self.settings.base_url.rstrip("/") + "/responses"

    def auth_headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.settings.api_key}"} if self.settings.api_key else {}

    def build_payload(self, request: ModelRequest) -> dict[str, Any]:
        return openai_responses_request.build_payload(
            request, self.capabilities, model=self.settings.model, max_output=self.settings.max_output_tokens
        )

    def new_accumulator(self) -> StreamAccumulator:
        return openai_responses_stream.ResponsesAccumulator()

    def events_from_body(self, body: dict[str, Any]) -> list[ModelEvent]:
        return openai_responses_stream.events_from_response(body)
