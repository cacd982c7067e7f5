"""A conversation as one document: JSON (every branch, message, run, tool call, usage and cost) and
Markdown (each branch readable top to bottom). Share links keep the JSON as their snapshot.

Everything goes through ``redact`` like the auditors' exports: known secrets and key-like fields are
``[REDACTED]`` whatever text they sit in. Raw provider requests and responses are left out (the
auditors' export has them); tool media are shown as type and size.
"""

from __future__ import annotations

import json
import secrets
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chatapp import costs
from chatapp.audit import record
from chatapp.models import Conversation, Message, Run, ShareLink
from chatapp.redaction import redact
from chatapp.services import branches
from chatapp.services.trace import run_trace

FORMAT = "clearloop.conversation/1"


class ShareRefused(Exception):
    pass


def _dt(value: Any) -> str | None:
    return value.isoformat() if value else None


def _run(run: Run) -> dict[str, Any]:
    data = run_trace(run, include_events=False)
    for r in data["rounds"]:
        r.pop("request", None)
        r.pop("response", None)
    answers = Message.objects.filter(run=run, role=Message.Role.ASSISTANT).order_by("id")
    data["user_message_id"] = run.user_message_id
    data["answer"] = "\n\n".join(m.content for m in answers) or None
    return data


def leaves(convo: Conversation) -> list[Run]:
    """Runs nobody replied to: each ends one branch."""
    replied = set(
        Message.objects.filter(conversation=convo, role=Message.Role.USER, parent_run__isnull=False)
        .exclude(run__isnull=True)
        .values_list("parent_run_id", flat=True)
    )
    return [run for run in convo.runs.order_by("id") if run.pk not in replied]


def conversation_document(convo: Conversation) -> dict[str, Any]:
    active = branches.leaf(convo)
    messages = Message.objects.filter(conversation=convo, role__in=("user", "system")).order_by("id")
    runs = list(convo.runs.order_by("id"))
    round_costs = {run.pk: list(run.rounds.values_list("cost", flat=True)) for run in runs}
    document = {
        "format": FORMAT,
        "exported_at": _dt(timezone.now()),
        "conversation": {
            "id": convo.pk,
            "title": convo.title,
            "owner": convo.owner.get_username(),
            "created_at": _dt(convo.created_at),
            "cost": costs.total_of_values(c for v in round_costs.values() for c in v).to_dict(),
            "cost_currency": getattr(settings, "COST_CURRENCY", None),
        },
        "messages": [
            {
                "id": m.pk,
                "role": m.role,
                "content": m.content,
                "parent_run_id": m.parent_run_id,
                "attachments": [
                    {"name": u.name, "size": u.size, "sha256": u.sha256} for u in m.attached()
                ],
                "created_at": _dt(m.created_at),
            }
            for m in messages
        ],
        "runs": [_run(run) for run in runs],
        "branches": [
            _branch(branches.path(convo, leaf), round_costs, active is not None and leaf.pk == active.pk)
            for leaf in leaves(convo)
        ],
    }
    return redact(document)


def _branch(path: list[Run], round_costs: dict[int, list], active: bool) -> dict[str, Any]:
    """One branch: its runs from the first question to its leaf, with what they used and cost together."""
    prompt = sum(r.prompt_tokens for r in path)
    completion = sum(r.completion_tokens for r in path)
    return {
        "leaf_run_id": path[-1].pk,
        "run_ids": [r.pk for r in path],
        "active": active,
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
        "cost": costs.total_of_values(c for r in path for c in round_costs.get(r.pk, [])).to_dict(),
    }


def as_json(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2, default=str)


def as_markdown(document: dict[str, Any]) -> str:
    runs = {r["run_id"]: r for r in document["runs"]}
    questions = {m["id"]: m for m in document["messages"]}
    convo = document["conversation"]
    out = [
        f"# {convo['title']}",
        "",
        f"Exported {document['exported_at']} · owner {convo['owner']} · cost {_cost(convo['cost'])}",
        "",
    ]
    for number, branch in enumerate(document["branches"], start=1):
        label = " (shown)" if branch["active"] else ""
        out += [f"## Branch {number}{label}", ""]
        usage = branch.get("usage") or {}
        if usage:
            out += [
                f"*{len(branch['run_ids'])} exchanges · {usage['prompt_tokens']} prompt / "
                f"{usage['completion_tokens']} completion tokens · cost {_cost(branch.get('cost'))}*",
                "",
            ]
        for run_id in branch["run_ids"]:
            out += _exchange_md(runs[run_id], questions.get(runs[run_id]["user_message_id"]))
    return "\n".join(out).rstrip() + "\n"


def _cost(cost: dict[str, Any] | None) -> str:
    """As the trace says it ("USD 0.0200"); the JSON keeps the exact amount."""
    if not cost or not cost.get("priced_rounds"):
        return "unknown"
    shown = costs.money(Decimal(cost["amount"]))
    unpriced = cost.get("unpriced_rounds") or 0
    return f"≥ {shown} ({unpriced} round{'s' if unpriced != 1 else ''} unpriced)" if unpriced else shown


def _fence(text: str, lang: str = "") -> list[str]:
    fence = "````" if "```" in text else "```"
    return [f"{fence}{lang}", text, fence]


def _exchange_md(run: dict[str, Any], question: dict[str, Any] | None) -> list[str]:
    out: list[str] = []
    if question:
        out += ["### You", "", question["content"], ""]
        for a in question["attachments"]:
            out.append(f"- attached: `{a['name']}` ({a['size']} bytes)")
        if question["attachments"]:
            out.append("")
    usage = run["usage"]
    out += [f"### Assistant · {run['provider']} · {run['model']} · {run['status']}", ""]
    for call in run["tool_calls"]:
        out += [f"**Tool `{call['name']}`** ({call['status']})", ""] + _fence(call["arguments"] or "", "json")
        if call["result"]:
            out += ["", "Result:", ""] + _fence(call["result"])
        out.append("")
    if run["answer"]:
        out += [run["answer"], ""]
    if run["error"]:
        out += [f"*The run failed: {run['error_class']}: {run['error']}*", ""]
    out += [
        f"*{usage['prompt_tokens']} prompt / {usage['completion_tokens']} completion tokens · "
        f"cost {_cost(run['cost'])}*",
        "",
    ]
    return out


def record_export(convo: Conversation, actor: Any, fmt: str) -> None:
    record(
        "export",
        actor=actor.get_username(),
        payload={"format": fmt, "filter": {"conversation": str(convo.pk)}, "runs": convo.runs.count()},
    )


# --- share links -----------------------------------------------------------------------------


def create_share(convo: Conversation, actor: Any, *, public: bool = False) -> ShareLink:
    if public and not settings.PUBLIC_SHARE_LINKS:
        raise ShareRefused(
            "Public links are turned off by the administrator; links open for signed-in users."
        )
    with transaction.atomic():
        link = ShareLink.objects.create(
            conversation=convo,
            token=secrets.token_urlsafe(24),
            created_by=actor,
            public=public,
            snapshot=conversation_document(convo),
        )
        record(
            "share_created",
            actor=actor.get_username(),
            payload={"conversation_id": convo.pk, "share_id": link.pk, "public": public},
        )
    return link


def revoke_share(link: ShareLink, actor: Any) -> None:
    with transaction.atomic():
        if ShareLink.objects.filter(pk=link.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
            record(
                "share_revoked",
                actor=actor.get_username(),
                payload={"conversation_id": link.conversation_id, "share_id": link.pk},
            )
