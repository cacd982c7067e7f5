"""Review L6: NUL from a model or a tool is stored (as U+FFFD) on both databases instead of failing
the run with an SQL error; NUL in a tool's arguments is refused to the model with a reason."""

from __future__ import annotations

import pytest

from agent import events as ev
from agent.loop.validation import parse_arguments
from agent.providers.types import AssembledToolCall, Usage
from chatapp.models import Conversation, Message, Run, RunEvent, ToolCall
from chatapp.services.errors import MessageRejected
from chatapp.services.runs import check_message
from chatapp.worker import store

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def test_nul_in_text_from_a_model_or_tool_is_stored_as_a_replacement_character(cast):
    convo = Conversation.objects.create(owner=cast["alice"])
    user = Message.objects.create(conversation=convo, role="user", content="hi", payload={})
    run = Run.objects.create(
        conversation=convo, user_message=user, provider_name="demo", model="m", status="running"
    )
    call = ev.ToolCallChanged(
        round_index=0,
        index=0,
        call_id="c1",
        name="write_file",
        status="failed",
        arguments='{"content": "a\\u0000b"}',
        result="out\x00put",
        is_error=True,
    )
    store.persist_durable(run.pk, 1, "tool_call", {"result": "out\x00put"}, call)
    store.append_ephemeral(run.pk, 2, "delta", {"text": "x\x00y"})
    store.persist_durable(
        run.pk, 3, "run_finished", {"text": "an\x00swer"}, ev.RunFinished(text="an\x00swer", usage=Usage())
    )
    assert ToolCall.objects.get(run=run).result == "out\ufffdput"
    assert RunEvent.objects.get(run=run, seq=2).payload["text"] == "x\ufffdy"
    run.refresh_from_db()
    assert run.status == "succeeded" and run.final_text == "an\ufffdswer"


def test_a_tool_call_with_nul_in_its_arguments_is_refused_with_a_reason():
    call = AssembledToolCall(
        id="c1", name="write_file", arguments_raw='{"content": "a\\u0000b"}', arguments=None
    )
    arguments, problem = parse_arguments(call)
    assert arguments is None and "NUL character" in problem


def test_a_message_with_nul_is_refused_before_any_database_sees_it():
    with pytest.raises(MessageRejected, match="NUL character"):
        check_message("a\x00b")
