"""The user's own API keys: create (shown once), list, revoke."""

from __future__ import annotations

from datetime import datetime, time

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from chatapp.models import ApiKey
from chatapp.services import api_keys


def _expiry(raw: str) -> datetime | None:
    if not raw:
        return None
    try:
        day = datetime.strptime(raw, "%Y-%m-%d").date()
    except ValueError:
        raise api_keys.KeyRefused(_("The expiry date is not a date (YYYY-MM-DD).")) from None
    return timezone.make_aware(datetime.combine(day, time.max))


@login_required
@require_http_methods(["GET", "POST"])
def key_list(request: HttpRequest) -> HttpResponse:
    context: dict = {"scopes": ApiKey.Scope.choices}
    status = 200
    if request.method == "POST":
        try:
            context["new_key"] = api_keys.create_key(
                request.user,
                request.POST.get("name", ""),
                request.POST.getlist("scopes"),
                expires_at=_expiry(request.POST.get("expires", "").strip()),
            )
        except api_keys.KeyRefused as error:
            context["error"] = str(error)
            status = 422
    context["keys"] = ApiKey.objects.filter(user_id=request.user.pk or 0)
    response = render(request, "keys/list.html", context, status=status)
    response["Cache-Control"] = "no-store"  # the page holding a new key is never cached
    return response


@login_required
@require_POST
def revoke(request: HttpRequest, key_id: int) -> HttpResponse:
    key = get_object_or_404(ApiKey, pk=key_id, user=request.user)
    api_keys.revoke_key(key, request.user)
    return redirect("api_keys")
