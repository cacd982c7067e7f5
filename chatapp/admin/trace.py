"""Read-only admin pages for runs and their trace, for inspection: nothing here can be added,
changed or deleted (the trace is evidence; auditors have their own browser, R-UI-4)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.db.models import Q
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext, gettext_lazy, gettext_noop

from chatapp.blobs import references_containing
from chatapp.models import Approval, Conversation, Message, Round, Run, RunEvent
from chatapp.redaction import shown


def pre_json(value: Any) -> str:
    """Indented JSON in a <pre>; format_html escapes it."""
    return format_html('<pre class="cl-json">{}</pre>', json.dumps(value, indent=2, ensure_ascii=False))


class ReadOnlyAdmin(admin.ModelAdmin):
    list_per_page = 50

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    # Text columns whose long values are stored once in Blob (chatapp/blobs.py): the search looks
    # inside those too, for the whole search term.
    large_search_fields: tuple[str, ...] = ()

    def get_search_results(self, request: Any, queryset: Any, search_term: str) -> tuple[Any, bool]:
        found, duplicates = super().get_search_results(request, queryset, search_term)
        term = search_term.strip()
        if term and self.large_search_fields:
            inside = Q()
            for name in self.large_search_fields:
                inside |= Q(**{f"{name}__in": references_containing(term)})
            found = found | queryset.filter(inside)
        return found, duplicates


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ("id", "title", "owner", "provider", "model_override", "created_at", "updated_at")
    list_filter = ("provider",)
    search_fields = ("title", "owner__username")
    list_select_related = ("owner", "provider")
    readonly_fields = ("messages_link", "runs_link")

    @admin.display(description=gettext_lazy("messages"))
    def messages_link(self, obj: Conversation) -> str:
        url = reverse("admin:chatapp_message_changelist") + f"?conversation__id__exact={obj.pk}"
        return format_html(
            '<a href="{}">{}</a>', url, _count(gettext_noop("%(n)s messages"), obj.messages.count())
        )

    @admin.display(description=gettext_lazy("runs"))
    def runs_link(self, obj: Conversation) -> str:
        url = reverse("admin:chatapp_run_changelist") + f"?conversation__id__exact={obj.pk}"
        return format_html('<a href="{}">{}</a>', url, _count(gettext_noop("%(n)s runs"), obj.runs.count()))


def _count(template: str, n: int) -> str:
    return gettext(template) % {"n": n}


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("id", "conversation", "role", "excerpt", "partial", "run", "created_at")
    list_filter = ("role", "partial")
    search_fields = ("content",)
    large_search_fields = ("content",)
    list_select_related = ("conversation",)
    readonly_fields = ("payload_pretty",)
    exclude = ("payload",)

    @admin.display(description=gettext_lazy("content"))
    def excerpt(self, obj: Message) -> str:
        return obj.content[:120]

    @admin.display(description=gettext_lazy("payload"))
    def payload_pretty(self, obj: Message) -> str:
        return pre_json(obj.payload)


class RoundInline(admin.TabularInline):
    model = Round
    fields = ("index", "kind", "model", "finish_reason", "usage", "ttft_ms", "duration_ms")
    readonly_fields = fields
    show_change_link = True
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "conversation",
        "owner",
        "status",
        "provider_name",
        "model",
        "rounds_count",
        "tool_calls_count",
        "prompt_tokens",
        "completion_tokens",
        "created_at",
    )
    list_filter = ("status", "provider_name")
    search_fields = ("conversation__title", "conversation__owner__username", "error", "final_text")
    large_search_fields = ("final_text",)
    list_select_related = ("conversation__owner",)
    inlines = [RoundInline]

    @admin.display(description=gettext_lazy("owner"), ordering="conversation__owner__username")
    def owner(self, obj: Run) -> str:
        return obj.conversation.owner.get_username()


@admin.register(Round)
class RoundAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "index", "kind", "provider_name", "model", "finish_reason", "duration_ms")
    list_filter = ("kind", "finish_reason", "provider_name")
    exclude = ("request", "response", "usage", "compressions")
    readonly_fields = ("request_pretty", "response_pretty", "usage_pretty", "compressions_pretty")

    @admin.display(description=gettext_lazy("request (as sent, secrets removed)"))
    def request_pretty(self, obj: Round) -> str:
        return pre_json(shown(obj.request))

    @admin.display(description=gettext_lazy("response (sealed reasoning parts shown by size)"))
    def response_pretty(self, obj: Round) -> str:
        # The row keeps thinking signatures and encrypted reasoning verbatim (they go back to the
        # provider); what is shown is their size only (docs/providers.md, "Reasoning replay").
        return pre_json(shown(obj.response))

    @admin.display(description=gettext_lazy("usage"))
    def usage_pretty(self, obj: Round) -> str:
        return pre_json(obj.usage)

    @admin.display(description=gettext_lazy("compressions"))
    def compressions_pretty(self, obj: Round) -> str:
        return pre_json(obj.compressions)


@admin.register(RunEvent)
class RunEventAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "seq", "type", "durable", "created_at")
    list_filter = ("type", "durable")
    exclude = ("payload",)
    readonly_fields = ("payload_pretty",)

    @admin.display(description=gettext_lazy("payload"))
    def payload_pretty(self, obj: RunEvent) -> str:
        return pre_json(shown(obj.payload))


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = ("id", "tool_call", "decision", "decided_by", "reason", "decided_at")
    list_filter = ("decision",)
    search_fields = ("reason", "decided_by__username", "tool_call__name")
    list_select_related = ("tool_call", "decided_by")
