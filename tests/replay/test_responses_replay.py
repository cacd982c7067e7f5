"""OpenAI Responses with a reasoning model, stateless (store: false): reasoning items captured from
response.output_item.done and replayed, whole, before their function_call."""

from __future__ import annotations

import pytest
from replay_harness import provider_for, run_seed
from replay_responses_emulator import ResponsesEmulator
from replay_seed import FINAL_TEXT, expected_report

from agent.loop.steps import NextStepFailed, NextStepFinalOutput

MODEL = "gpt-5.2"


def assert_items_replayed(emulator: ResponsesEmulator) -> None:
    for body in emulator.requests:
        assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
        assert all(t["strict"] is False for t in body["tools"])
    third = emulator.requests[2]["input"]
    kinds = [i.get("type") or i.get("role") for i in third]
    assert kinds == ["system", "user", "reasoning", "function_call", "function_call", "function_call_output",
                     "function_call_output", "reasoning", "function_call", "function_call_output"]
    assert third[2]["id"] == "rs_emu_00" and third[2]["encrypted_content"]


@pytest.mark.parametrize("stream", [True, False])
async def test_seed_three_rounds_against_responses(stream):
    emulator = ResponsesEmulator()
    overrides = {} if stream else {"capability_overrides": {"stream": False}}
    async with provider_for(emulator.app(), "openai_responses", "openai_responses", MODEL, **overrides) as provider:
        step, state, _, files = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert files.written == {"report.md": expected_report()}
    assert_items_replayed(emulator)
    assert [b.type for b in state.rounds[0].choice.replay] == ["reasoning"]


@pytest.mark.parametrize("die_after", range(1, 9))
async def test_resumed_after_a_crash_replays_the_same_items(die_after):
    emulator = ResponsesEmulator()
    async with provider_for(emulator.app(), "openai_responses", "openai_responses", MODEL) as provider:
        step, _, _, files = await run_seed(provider, die_after=die_after)
    assert step == NextStepFinalOutput(FINAL_TEXT), die_after
    assert sorted(files.executed) == ["read_file", "search_files", "write_file"]
    assert_items_replayed(emulator)


async def test_without_encrypted_reasoning_the_call_lacks_its_reasoning_item():
    """An admin who turns encrypted reasoning off (and storage stays off) gets the API's 400 with
    the rule named; the items are never sent by id alone (that would be the store=false 400)."""
    emulator = ResponsesEmulator()
    off = {"capability_overrides": {"responses_encrypted_reasoning": False}}
    async with provider_for(emulator.app(), "openai_responses", "openai_responses", MODEL, **off) as provider:
        step, state, _, _ = await run_seed(provider)
    assert isinstance(step, NextStepFailed)
    assert "was provided without its required 'reasoning' item: 'rs_emu_00'" in state.outcome.message
    assert "rule broken: OpenAI Responses" in state.outcome.message
    assert all(i.get("type") != "reasoning" for i in emulator.requests[1]["input"])


async def test_storage_on_replays_items_by_id():
    emulator = ResponsesEmulator()
    on = {"capability_overrides": {"responses_encrypted_reasoning": False, "responses_store": True}}
    async with provider_for(emulator.app(), "openai_responses", "openai_responses", MODEL, **on) as provider:
        step, _, _, _ = await run_seed(provider)
    assert step == NextStepFinalOutput(FINAL_TEXT)
    assert emulator.requests[1]["store"] is True
    assert [i for i in emulator.requests[1]["input"] if i.get("type") == "reasoning"][0]["id"] == "rs_emu_00"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "field, value",
    [("capability_overrides", {"responses_store": True}), ("extra_body", {"store": True})],
)
def test_the_admin_turns_storage_on_per_provider(field, value):
    """store: false is the default; an admin turns storage on in the provider's row (capability
    override or extra body), and the request then says store: true, reasoning still replayable."""
    import httpx

    from agent.messages import Message
    from agent.providers.registry import build_provider
    from agent.providers.types import ModelRequest
    from chatapp.models import ProviderConfig
    from chatapp.services.provider_settings import provider_settings

    default = ProviderConfig.objects.create(
        name="responses", kind="openai_responses", preset="openai_responses", base_url="http://127.0.0.1:9/v1", model=MODEL
    )
    stored = ProviderConfig.objects.create(
        name="responses-stored", kind="openai_responses", preset="openai_responses",
        base_url="http://127.0.0.1:9/v1", model=MODEL, **{field: value},
    )
    request = ModelRequest((Message.user("hi"),))
    http = httpx.AsyncClient()  # never used to send: describe_request builds the body only
    bodies = [build_provider(provider_settings(c, MODEL), http).describe_request(request)["body"] for c in (default, stored)]
    assert bodies[0]["store"] is False and bodies[1]["store"] is True
    assert all(b["include"] == ["reasoning.encrypted_content"] for b in bodies)
