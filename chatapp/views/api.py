from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from chatapp.access import viewable_run_or_404
from chatapp.services.trace import run_trace as build_trace


@login_required
@require_GET
def run_trace(request: HttpRequest, run_id: int) -> JsonResponse:
    run = viewable_run_or_404(request.user, run_id)
    return JsonResponse(build_trace(run), json_dumps_params={"ensure_ascii": False})
