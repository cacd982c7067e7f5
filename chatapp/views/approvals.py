"""The approvers' badge: how many tool calls wait for a decision (polled by static/js/approvals.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET, require_POST

from chatapp.access import owned_conversation_or_404, viewable_run_or_404
from chatapp.models import ToolCall
from chatapp.services import approvals
from chatapp.services.approvals import may_approve, pending_count


@login_required
@require_GET
def count(request: HttpRequest) -> JsonResponse:
    if not may_approve(request.user):
        return JsonResponse({"error": "Only approvers see the approval queue."}, status=403)
    response = JsonResponse({"pending": pending_count()})
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
