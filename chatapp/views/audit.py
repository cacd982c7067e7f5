"""The auditor's trace browser (R-UI-4): read-only, GET only, auditors and superusers only.

Everyone else gets a 404, as for any object they may not see. Every export is itself recorded in
the audit chain (who, which filter, how many runs) before it is served.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import wraps
from typing import Any

from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from chatapp import costs
from chatapp.access import is_auditor
from chatapp.audit import record
from chatapp.audit.filters import RunFilter, filtered_runs
from chatapp.audit.otel import run_to_otel
from chatapp.models import AuditEvent, Round, Run, RunEvent
from chatapp.redaction import redact, shown
from chatapp.services.trace import run_trace
from chatapp.streaming import streaming_response
from chatapp.views.display import round_reasoning
from chatapp.views.htmx import HtmxHttpRequest
from chatapp.views.timeline import timeline

RUNS_PER_PAGE = 25
EVENTS_PER_PAGE = 100


def may_audit(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_active and (user.is_superuser or is_auditor(user)))


def auditor_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not may_audit(request.user):
            raise Http404("No such page")
        return view(request, *args, **kwargs)

    return wrapper


def pretty(value: Any) -> str:
    """Indented JSON of a redacted value; the template escapes it."""
    return json.dumps(redact(value), indent=2, ensure_ascii=False, default=str)


def pretty_text(text: str) -> str:
    """A tool's arguments or result: indented if it is JSON, else the (redacted) text as it is."""
    try:
        return pretty(json.loads(text))
    except (TypeError, ValueError):
        return redact(text or "")


@auditor_required
@require_GET
def runs(request: HtmxHttpRequest) -> HttpResponse:
    form = RunFilter(request.GET)
    selected = filtered_runs(form)
    page = Paginator(selected, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    run_costs = costs.per_run(run.pk for run in page)
    rows = [
        (run, redact(run.user_message.content)[:200] if run.user_message else "", run_costs.get(run.pk, "–"))
        for run in page
    ]
    context = {
        "form": form,
        "page": page,
        "rows": rows,
        "total": page.paginator.count,
        "by_user": costs.per_user(selected),
    }
    template = "audit/runs.html#results" if request.htmx else "audit/runs.html"
    return render(request, template, context)


@auditor_required
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = Run.objects.select_related("conversation__owner", "user_message").filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run")
    # The raw request and response of each round are loaded when the auditor opens it (round_raw):
    # every round repeats the tool schemas, and a long run's page was tens of thousands of pixels.
    rounds = list(run.rounds.defer("request", "response"))
    calls = [
        {"call": c, "arguments": pretty_text(c.arguments), "result": pretty_text(c.result)}
        for c in run.tool_calls.select_related("approval", "approval__decided_by")
    ]
    events = Paginator(RunEvent.objects.filter(run=run).order_by("seq"), EVENTS_PER_PAGE).get_page(
        request.GET.get("events")
    )
    context = {
        "run": run,
        "title": redact(run.conversation.title),
        "user_text": redact(run.user_message.content) if run.user_message else "",
        "final_text": redact(run.final_text),
        "error": redact(run.error),
        "rounds": rounds,
        "calls": calls,
        "events": events,
        "event_rows": [(e, json.dumps(shown(e.payload), ensure_ascii=False)) for e in events],
        "audit_events": AuditEvent.objects.filter(run_id=run.pk).order_by("seq"),
        "cost": costs.total_of(rounds),
        "timeline": timeline(run),
    }
    return render(request, "audit/run.html", context)


@auditor_required
@require_GET
def round_raw(request: HttpRequest, run_id: int, index: int) -> HttpResponse:
    """One round's raw request (as sent, secrets redacted), assembled response, usage and reasoning:
    the part of the run page that is loaded when its round is opened."""
    r = Round.objects.filter(run_id=run_id, index=index).first()
    if r is None:
        raise Http404("No such round")
    context = {
        "r": {
            "round": r,
            "request": pretty(shown(r.request)),
            "response": pretty(shown(r.response)),
            "usage": pretty(r.usage),
            "reasoning": round_reasoning(r.response),
        }
    }
    return render(request, "audit/_round_raw.html", context)


@auditor_required
@require_GET
def export_jsonl(request: HttpRequest) -> HttpResponseBase:
    form = RunFilter(request.GET)
    if not form.is_valid():
        return HttpResponse(form.errors.as_text(), status=400, content_type="text/plain; charset=utf-8")
    selected = filtered_runs(form)
    count = selected.count()
    record(
        "export",
        actor=request.user.get_username(),
        payload={"format": "jsonl", "filter": form.description(), "runs": count},
    )
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    # Sent run by run as it is read: under daphne a plain iterator was first collected whole in memory
    # (chatapp/streaming.py), every run's trace of the instance at once.
    response = streaming_response(
        request, _jsonl(selected), database=True, content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="clearloop-runs-{stamp}.jsonl"'
    return response


def _jsonl(selected: Any) -> Iterator[bytes]:
    for run in selected.iterator(chunk_size=200):
        yield (json.dumps(redact(run_trace(run)), ensure_ascii=False, default=str) + "\n").encode()


@auditor_required
@require_GET
def export_otel(request: HttpRequest, run_id: int) -> HttpResponse:
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise Http404("No such run")
    record(
        "export",
        run_id=run.pk,
        actor=request.user.get_username(),
        payload={"format": "otel", "filter": {"run": str(run.pk)}, "runs": 1},
    )
    response = JsonResponse(run_to_otel(run), json_dumps_params={"ensure_ascii": False, "indent": 2})
    response["Content-Disposition"] = f'attachment; filename="clearloop-run-{run.pk}.otel.json"'
    return response


@auditor_required
@require_GET
def audit_log(request: HttpRequest) -> HttpResponse:
    rows = AuditEvent.objects.order_by("-seq")
    run_filter = request.GET.get("run", "").strip()
    if run_filter.isdigit():
        rows = rows.filter(run_id=int(run_filter))
    page = Paginator(rows, EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    entries = [(e, json.dumps(e.payload, ensure_ascii=False, sort_keys=True)) for e in page]
    return render(request, "audit/log.html", {"page": page, "entries": entries, "run_filter": run_filter})
