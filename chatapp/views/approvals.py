"""The approvers' badge: how many tool calls wait for a decision (polled by static/js/approvals.js)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from chatapp.services.approvals import may_approve, pending_count


@login_required
@require_GET
def count(request: HttpRequest) -> JsonResponse:
    if not may_approve(request.user):
        return JsonResponse({"error": "Only approvers see the approval queue."}, status=403)
    response = JsonResponse({"pending": pending_count()})
    response["Cache-Control"] = "no-store"
    return response
