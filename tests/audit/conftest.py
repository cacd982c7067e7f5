"""Audit test helpers: runs with rounds, tool calls and approvals built straight in the database."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from chatapp.models import Approval, Conversation, Message, Round, Run, RunEvent, ToolCall

_calls = itertools.count(1)

needs_postgres = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the append-only trigger and advisory lock are PostgreSQL's"
)


def on_postgres() -> bool:
    return connection.vendor == "postgresql"



@pytest.fixture
def client_for(cast):
    def make(name: str) -> Client:
        client = Client()
        client.force_login(cast[name])
        return client

    return make


def make_run(
    owner: Any,
    *,
    text: str = "hello",
    final_text: str = "hi there",
    status: str = "succeeded",
    provider: str = "demo",
    model: str = "demo-model",
    tools: tuple[tuple[str, str, str], ...] = (),
    request: dict[str, Any] | None = None,
    response: dict[str, Any] | None = None,
    approver: Any = None,
) -> Run:
    """A finished run with one round; ``tools`` are (name, arguments, result) triples."""
    convo = Conversation.objects.create(owner=owner, title=text[:60])
    message = Message.objects.create(conversation=convo, role="user", content=text, payload={})
    run = Run.objects.create(
        conversation=convo,
        user_message=message,
        status=status,
        provider_name=provider,
        model=model,
        final_text=final_text,
        rounds_count=1,
        tool_calls_count=len(tools),
        prompt_tokens=12,
        completion_tokens=5,
    )
    message.run = run
    message.save(update_fields=["run"])
    Message.objects.create(conversation=convo, run=run, role="assistant", content=final_text, payload={})
    Round.objects.create(
        run=run,
        index=0,
        provider_name=provider,
        model=model,
        request=request
        if request is not None
        else {"model": model, "messages": [{"role": "user", "content": text}]},
        response=response
        if response is not None
        else {"response_id": "resp-1", "model": model, "choices": [{"text": final_text}]},
        finish_reason="tool_calls" if tools else "stop",
        finish_reason_raw="tool_calls" if tools else "stop",
        usage={"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        ttft_ms=40.0,
        duration_ms=120.5,
    )
    for index, (name, arguments, result) in enumerate(tools):
        call = ToolCall.objects.create(
            run=run,
            round_index=0,
            index=index,
            call_id=f"call_{next(_calls)}",
            name=name,
            arguments=arguments,
            status="succeeded",
            result=result,
            risk="high" if approver else "low",
            attempts=1,
            duration_ms=33.0,
        )
        if approver is not None:
            Approval.objects.create(
                tool_call=call, decision="approved", decided_by=approver, reason="looks fine"
            )
    RunEvent.objects.create(run=run, seq=1, type="run_started", payload={"model": model}, durable=True)
    return run
