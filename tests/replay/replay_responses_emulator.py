"""A strict OpenAI Responses emulator for a reasoning model (gpt-5.x) used statelessly.

Rules enforced, with the API's wording (sources in docs/providers.md):

* reasoning items come back by ``encrypted_content`` when ``store`` is false: an item with only an
  id is 400 "Item with id 'rs_…' not found. Items are not persisted when `store` is set to false. …";
  an altered blob is 400 ``invalid_encrypted_content`` "The encrypted content … could not be verified.";
* "you must include all reasoning items between the function call and the last user message":
  a function_call replayed without the reasoning item that preceded it is 400 "Item 'fc_…' of type
  'function_call' was provided without its required 'reasoning' item: 'rs_…'.";
* a function_call_output must answer a function_call in the input ("No tool call found for
  function call output with call_id …");
* function tools default to ``strict: true``; a tool sent without ``strict`` whose schema is not
  strict-compatible is rejected as the API does.

The encrypted reasoning is only in the output when ``include`` asks for
``reasoning.encrypted_content``; ``store`` defaults to true in the API, so the emulator records it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from replay_emulator_http import PrefixCache, json_response, seal, sealed_ok, sse
from replay_seed import FINAL_TEXT, reasoning_for, round_calls
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


def error(message: str, code: str | None = None, param: str | None = None) -> Response:
    return json_response(400, {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}})


def _sealed_payload(item_id: Any, summary: Any) -> str:
    """What the blob is bound to: the item and its content, not the spelling of our JSON. A JSON
    object's keys are unordered (RFC 8259), and PostgreSQL's jsonb, where a round is stored, keeps
    them in its own order; the API parses the item, it does not compare bytes of it."""
    return f"{item_id}\n{json.dumps(summary, ensure_ascii=False, sort_keys=True)}"


def _blob_label(blob: str) -> str:
    return f"{blob[:4]}...{blob[-4:]}"


@dataclass
class ResponsesEmulator:
    requests: list[dict[str, Any]] = field(default_factory=list)
    # call_id -> the reasoning item id that came before it in the same response
    reasoning_of_call: dict[str, str] = field(default_factory=dict)
    fc_ids: dict[str, str] = field(default_factory=dict)
    cache: PrefixCache = field(default_factory=PrefixCache)
    # An output item type and a delta event no client knows yet (a future reasoning shape).
    unknown_shape: bool = False

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/v1/responses", self.endpoint, methods=["POST"])])

    async def endpoint(self, request: Request) -> Response:
        body = json.loads(await request.body())
        self.requests.append(body)
        problem = self.validate(body)
        if problem is not None:
            return problem
        response = self.answer(body)
        if body.get("stream"):
            return sse(self.events(response))
        return json_response(200, response)

    # -- validation ------------------------------------------------------------------------------
    def validate(self, body: dict[str, Any]) -> Response | None:
        for tool in body.get("tools") or ():
            if tool.get("type") == "function" and tool.get("strict", True):
                params = tool.get("parameters") or {}
                missing = sorted(set(params.get("properties") or {}) - set(params.get("required") or []))
                if missing or params.get("additionalProperties", True) is not False:
                    return error(
                        f"Invalid schema for function '{tool.get('name')}': In context=(), 'required' is required to be "
                        f"supplied and to be an array including every key in properties. Missing '{missing[0] if missing else ''}'.",
                        "invalid_function_parameters", "tools[0].parameters",
                    )
        store = body.get("store", True)
        items = body.get("input") or []
        if isinstance(items, str):
            return None
        seen_reasoning: set[str] = set()
        calls: set[str] = set()
        for item in items:
            kind = item.get("type") or ("message" if "role" in item else None)
            if kind == "message" and item.get("role") == "user":
                seen_reasoning = set()
            elif kind == "reasoning":
                blob = item.get("encrypted_content")
                if blob is None and not store:
                    return error(
                        f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is set to "
                        "false. Try again with `store` set to true, or remove this item from your input.", None, "input")
                if blob is not None and not sealed_ok("reasoning", _sealed_payload(item.get("id"), item.get("summary")), blob):
                    return error(f"The encrypted content {_blob_label(blob)} could not be verified.", "invalid_encrypted_content")
                seen_reasoning.add(item.get("id"))
            elif kind == "function_call":
                calls.add(item.get("call_id"))
                needed = self.reasoning_of_call.get(item.get("call_id"))
                if needed and needed not in seen_reasoning:
                    fc = self.fc_ids.get(item.get("call_id"), item.get("call_id"))
                    return error(f"Item '{fc}' of type 'function_call' was provided without its required 'reasoning' item: '{needed}'.")
            elif kind == "function_call_output" and item.get("call_id") not in calls:
                return error(f"No tool call found for function call output with call_id {item.get('call_id')}.", None, "input")
        return None

    # -- the answer ------------------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        items = body.get("input") or []
        seen = 0
        for item in reversed(items):
            if item.get("role") == "user":
                break
            seen += item.get("type") == "function_call_output"
        encrypted = "reasoning.encrypted_content" in (body.get("include") or [])
        rs_id = f"rs_emu_{seen:02d}"
        summary = [{"type": "summary_text", "text": reasoning_for(seen)}]
        reasoning: dict[str, Any] = {"id": rs_id, "type": "reasoning", "summary": summary}
        if encrypted:
            reasoning["encrypted_content"] = seal("reasoning", _sealed_payload(rs_id, summary))
        output: list[dict[str, Any]] = [reasoning]
        if self.unknown_shape:
            output.append({"id": f"rt_emu_{seen:02d}", "type": "reasoning_trace", "steps": [{"kind": "plan", "weight": 0.5}]})
        calls = round_calls(seen)
        if calls is None:
            output.append({"id": f"msg_emu_{seen}", "type": "message", "status": "completed", "role": "assistant",
                           "content": [{"type": "output_text", "text": FINAL_TEXT, "annotations": []}]})
        for position, (name, arguments) in enumerate(calls or ()):
            call_id = f"call_{seen:02d}_{position}"
            fc_id = f"fc_emu_{seen:02d}_{position}"
            self.reasoning_of_call[call_id] = rs_id
            self.fc_ids[call_id] = fc_id
            output.append({"id": fc_id, "type": "function_call", "status": "completed", "call_id": call_id,
                           "name": name, "arguments": arguments})
        # Automatic prefix caching, reported as input_tokens_details.cached_tokens.
        read, _, total = self.cache.automatic([body.get("tools") or [], *items])
        usage = {"input_tokens": total, "input_tokens_details": {"cached_tokens": read},
                 "output_tokens": 80, "output_tokens_details": {"reasoning_tokens": 40}, "total_tokens": total + 80}
        return {"id": f"resp_emu_{seen}", "object": "response", "status": "completed", "model": body["model"],
                "output": output, "usage": usage, "store": body.get("store", True), "incomplete_details": None}

    @staticmethod
    def events(response: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        seq = iter(range(10_000))
        shell = {**response, "status": "in_progress", "output": [], "usage": None}

        def event(kind: str, **data: Any) -> tuple[str, dict[str, Any]]:
            return kind, {"type": kind, "sequence_number": next(seq), **data}

        out = [event("response.created", response=shell), event("response.in_progress", response=shell)]
        for index, item in enumerate(response["output"]):
            kind = item["type"]
            if kind == "reasoning":
                out.append(event("response.output_item.added", output_index=index,
                                 item={"id": item["id"], "type": "reasoning", "summary": []}))
                text = item["summary"][0]["text"]
                for piece in (text[:6], text[6:]):
                    out.append(event("response.reasoning_summary_text.delta", item_id=item["id"], output_index=index,
                                     summary_index=0, delta=piece))
            elif kind == "reasoning_trace":
                out.append(event("response.output_item.added", output_index=index, item={**item, "steps": []}))
                out.append(event("response.reasoning_trace.delta", item_id=item["id"], output_index=index,
                                 delta=item["steps"][0]))
            elif kind == "function_call":
                out.append(event("response.output_item.added", output_index=index,
                                 item={**item, "arguments": "", "status": "in_progress"}))
                for piece in (item["arguments"][:5], item["arguments"][5:]):
                    out.append(event("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece))
                out.append(event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                                 arguments=item["arguments"]))
            else:
                out.append(event("response.output_item.added", output_index=index, item={**item, "content": []}))
                text = item["content"][0]["text"]
                for piece in (text[:3], text[3:]):
                    out.append(event("response.output_text.delta", item_id=item["id"], output_index=index,
                                     content_index=0, delta=piece))
            out.append(event("response.output_item.done", output_index=index, item=item))
        out.append(event("response.completed", response=response))
        return out
