"""Everything a worker needs to drive a run, loaded from the database in one go."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx

from agent.context.budget import ContextLimits
from agent.messages import Message as AgentMessage
from agent.providers.base import Provider
from agent.providers.registry import build_provider
from agent.providers.settings import ProviderSettings
from agent.state import ApprovalDecision, RunState
from chatapp import event_log
from chatapp.event_codec import event_from_row
from chatapp.models import Message, Run, RunEvent, ToolCall
from chatapp.services.provider_settings import max_output_tokens, provider_settings
from chatapp.worker import context_rows
from chatapp.worker.calibration import learned_ratios
from chatapp.workspaces import workspace_path

SYSTEM_PROMPT = (
    "You are the assistant of clearloop, a chat app where every step you take is shown to the user. "
    "Use the tools you are offered when they help; never invent tool results. Answer in the user's language."
)


@dataclass
class RunContext:
    run_id: int
    conversation_id: int
    owner_id: int
    last_seq: int
    provider_settings: ProviderSettings
    state: RunState
    workspace: str | None
    tool_settings: dict[str, Any] = field(default_factory=dict)
    limits: ContextLimits = field(default_factory=ContextLimits)
    # The tokenizer ratio learned for this provider and model in earlier runs (worker/calibration.py).
    token_ratio: float | None = None
    appended_token_ratio: float | None = None

    def build_provider(self, http: httpx.AsyncClient) -> Provider:
        return build_provider(self.provider_settings, http)


def branch_rows(run: Run) -> list[Message]:
    """The stored messages of the branch that ends with ``run``'s question: each earlier question on
    the path and its answer(s), oldest first. Sibling branches (edits, regenerations) are left out.

    Three queries whatever the conversation's length: the branch is walked over the conversation's
    message and run ids, then only its messages are loaded. Following each link with its own query
    (three per earlier exchange) was the largest item before the model call in a long conversation
    (docs/performance.md).
    """
    links, questions = context_rows.branch_links(run.conversation_id)
    answers: dict[int, list[int]] = {}
    for pk, (role, run_id, _) in sorted(links.items()):
        if run_id is not None and role == Message.Role.ASSISTANT:
            answers.setdefault(run_id, []).append(pk)
    question = run.user_message_id
    ids: list[int] = [question] if question else []
    earlier = links[question][2] if question in links else None
    seen: set[int] = set()
    while earlier is not None and earlier not in seen:
        seen.add(earlier)
        asked = questions.get(earlier)
        ids[:0] = ([asked] if asked else []) + answers.get(earlier, [])
        earlier = links[asked][2] if asked in links else None
    if ids:
        # History an API client sent with its first request is stored without a run, before the root.
        ids[:0] = sorted(pk for pk, (_, run_id, _) in links.items() if run_id is None and pk < ids[0])
    rows = context_rows.messages_by_id(ids)
    return [rows[pk] for pk in ids if pk in rows]


def history(run: Run) -> list[AgentMessage]:
    """The conversation as the model sees it: the active branch's exchanges, then this run's message."""
    messages = [AgentMessage.system(SYSTEM_PROMPT)]
    attached = run.conversation.attached_context or []
    if attached:
        # Resources the user attached from MCP servers (R-MCP-7) are context, not instructions.
        parts = [f"--- {a.get('server')}: {a.get('uri')}\n{a.get('text', '')}" for a in attached]
        messages.append(
            AgentMessage.system("The user attached these resources as context:\n" + "\n".join(parts))
        )
    for row in branch_rows(run):
        # System rows come only from API clients' own system messages (services/openai_compat.py).
        if row.role in (Message.Role.USER, Message.Role.ASSISTANT, Message.Role.SYSTEM) and row.content:
            messages.append(AgentMessage.from_dict(row.payload or {"role": row.role, "content": row.content}))
    return messages


def decisions(run: Run) -> list[ApprovalDecision]:
    calls = ToolCall.objects.filter(run=run, approval__isnull=False).select_related("approval__decided_by")
    return [
        ApprovalDecision(
            call_id=c.call_id,
            approved=c.approval.decision == "approved",
            reason=c.approval.reason,
            decided_by=c.approval.decided_by.get_username(),
        )
        for c in calls
    ]


def is_first_delivery(run: Run) -> bool:
    """Taken for the first time and nothing durable stored yet: no event, call or frame can exist.

    The one row it has is the ``running`` status frame its lease wrote (``last_seq`` 1). A run resumed
    after an approval has more (``approval_requested``, its moves); one whose worker died has been
    delivered before (``deliveries`` > 1).
    """
    return run.deliveries == 1 and run.last_seq <= 1


def load_context_ahead(run_id: int) -> RunContext | None:
    """The context of a run about to be taken for the first time, read while its lease is being
    taken (on another DB thread, so the two round trips overlap: docs/performance.md). Only for a run
    still ``queued`` and never delivered: nothing durable is stored for it, and its first delivery
    would read exactly this, after the lease's ``running`` frame (seq 1). None for any other run; the
    caller uses it only when the lease it took was that first delivery (``lease.TakenLease.first``)."""
    run = context_rows.run_with_conversation(run_id)
    if run.status != Run.Status.QUEUED or run.deliveries or run.last_seq:
        return None
    return _context(run, RunState.rebuild(str(run.pk), history(run), [], decisions=[]), last_seq=1)


def load_run_context(run_id: int) -> RunContext:
    """Four queries for a run's first delivery (the usual case), seven when it resumes."""
    run = context_rows.run_with_conversation(run_id)
    if is_first_delivery(run):
        state = RunState.rebuild(str(run.pk), history(run), [], decisions=[])
        last_seq = run.last_seq
    else:
        stored = [
            event_from_row(e.type, e.payload)
            for e in RunEvent.objects.filter(run=run, durable=True).order_by("seq")
        ]
        state = RunState.rebuild(
            str(run.pk), history(run), [e for e in stored if e is not None], decisions=decisions(run)
        )
        last_seq = event_log.last_stored_seq(run.pk)
    return _context(run, state, last_seq)


def _context(run: Run, state: RunState, last_seq: int) -> RunContext:
    config = context_rows.provider_named(run.provider_name)
    workspace = workspace_path(run.conversation.owner_id, run.conversation_id)
    output = max_output_tokens(config, run.model)
    ratios = learned_ratios(run.provider_name, run.model)
    limits = ContextLimits(
        context_window=config.context_window, model_max_output=output, requested_max_output=output
    )
    return RunContext(
        run_id=run.pk,
        conversation_id=run.conversation_id,
        owner_id=run.conversation.owner_id,
        last_seq=last_seq,
        provider_settings=provider_settings(config, run.model),
        state=state,
        workspace=str(workspace),
        tool_settings=dict(run.conversation.tool_settings or {}),
        limits=limits,
        token_ratio=ratios[0],
        appended_token_ratio=ratios[1],
    )
