"""The least a chat app's send can do, for the floor measurement: who is asking (session and user),
is the conversation theirs, store the message in a committed transaction. No run, no queue, no
limits, no audit, no page to render. Not part of the app."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from chatapp.models import Conversation, Message


@csrf_exempt  # the bench's own client; the real send checks the token (a dictionary lookup)
@login_required
@require_POST
def send(request: HttpRequest, conversation_id: int) -> HttpResponse:
    convo = get_object_or_404(Conversation, pk=conversation_id, owner=request.user, deleted_at__isnull=True)
    text = request.POST.get("message", "")
    with transaction.atomic():
        Message.objects.create(conversation=convo, role=Message.Role.USER, content=text, payload={})
    return HttpResponse(status=204)
