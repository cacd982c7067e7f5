"""The approvers' badge and its live list: the tool calls that wait for an admin's decision (pushed
over /ws/approvals/, polled slowly as a fallback by static/js/approvals.js), and the chat's
Allow once / Deny for calls whose policy asks the user."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.utils.translation import gettext
from django.views.decorators.http import require_GET, require_POST

from chatapp.access import owned_conversation_or_404, viewable_run_or_404
from chatapp.models import ToolCall
from chatapp.services import approvals
from chatapp.services.approvals import may_approve
from chatapp.views.display import brief_arguments

LIST_LIMIT = 10  # the dropdown lists the oldest few; the queue in the admin has them all


@login_required
@require_GET
def count(request: HttpRequest) -> JsonResponse:
    """The badge's number and the newest waiting call (named in a browser notification)."""
    if not may_approve(request.user):
        return JsonResponse({"error": gettext("Only approvers see the approval queue.")}, status=403)
    body = approvals.summary()
    response = JsonResponse(body)
    response["Cache-Control"] = "no-store"
    return response


def waited(delta: timedelta) -> str:
    """How long a call has waited, as the chat's approval card says it: "12 s", "3 min", "2 h 5 min"."""
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 60:
        return gettext("%(s)d s") % {"s": seconds}
    if seconds < 3600:
        return gettext("%(m)d min") % {"m": seconds // 60}
    return gettext("%(h)d h %(m)d min") % {"h": seconds // 3600, "m": seconds % 3600 // 60}


@login_required
@require_GET
def waiting_list(request: HttpRequest) -> HttpResponse:
    """The approvers' live list (the badge's dropdown): each call's tool, arguments in brief, whose
    conversation, risk and how long it has waited, linked to its review page."""
    if not may_approve(request.user):
        return HttpResponse(gettext("Only approvers see the approval queue."), status=403)
    calls = approvals.pending()
    now = timezone.now()
    for call in calls[:LIST_LIMIT]:
        setattr(call, "brief", brief_arguments(call.arguments))  # noqa: B010 - for the template
        setattr(call, "waited", waited(now - call.updated_at))  # noqa: B010 - for the template
    context = {"calls": calls[:LIST_LIMIT], "more": max(0, len(calls) - LIST_LIMIT), "total": len(calls)}
    response = render(request, "_approvals_list.html", context)
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def answer_in_chat(request: HttpRequest, run_id: int, call_id: int, decision: str) -> HttpResponse:
    """Allow once / Deny in the chat, for tools whose policy asks the user (not an admin)."""
    run = viewable_run_or_404(request.user, run_id)
    owned_conversation_or_404(request.user, run.conversation_id)
    call = get_object_or_404(ToolCall, pk=call_id, run=run)
    if decision not in ("allow", "deny") or approvals.approver_for(call.name) != "user":
        raise Http404
    allow = decision == "allow"
    reason = "Allowed once in the chat" if allow else "Denied in the chat"
    try:
        approvals.decide(call.pk, request.user, approve=allow, reason=reason)
    except approvals.ChatError as error:
        return HttpResponse(str(error), status=409, content_type="text/plain; charset=utf-8")
    return HttpResponse(status=204)
