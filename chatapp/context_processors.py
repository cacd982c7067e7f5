from typing import Any

from django.http import HttpRequest

from chatapp.access import is_auditor


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"is_auditor": bool(user is not None and is_auditor(user)), **approvals_waiting(user)}


def approvals_waiting(user: Any) -> dict[str, Any]:
    """The approver's badge in every page header (chat, audit, admin): how many calls wait."""
    from chatapp.services.approvals import may_approve, pending_count

    if user is None or not may_approve(user):
        return {"may_approve": False}
    from django.conf import settings

    return {
        "may_approve": True,
        "pending_approvals": pending_count(),
        "approvals_poll_seconds": settings.APPROVALS_POLL_SECONDS,
    }
