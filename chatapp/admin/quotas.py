"""Quotas in the admin: set per user or group (nonsense refused with the reason, ``Quota.clean``),
and the usage report per user and group with a CSV export (``admin/chatapp/quota/usage/``)."""

from __future__ import annotations

import csv

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.translation import gettext, gettext_lazy

from chatapp.models import Quota
from chatapp.services import quotas


@admin.register(Quota)
class QuotaAdmin(admin.ModelAdmin):
    list_display = (
        "__str__",
        "tokens_per_day",
        "tokens_per_month",
        "cost_per_day",
        "cost_per_month",
        "max_concurrent_runs",
        "messages_per_minute",
        "enabled",
    )
    list_filter = ("enabled", "shared")
    autocomplete_fields = ()
    fieldsets = [
        (
            None,
            {
                "fields": ["user", "group", "shared", "enabled", "note"],
                "description": gettext_lazy(
                    "A quota belongs to one user, or to a group (each member alone, or the "
                    "members together when 'shared'). Everyone is held to every quota that applies to them. "
                    "Empty = no limit. Usage is counted per calendar day and month."
                ),
            },
        ),
        (
            gettext_lazy("Budgets"),
            {"fields": ["tokens_per_day", "tokens_per_month", "cost_per_day", "cost_per_month"]},
        ),
        (gettext_lazy("Rate"), {"fields": ["max_concurrent_runs", "messages_per_minute"]}),
    ]
    change_list_template = "admin/chatapp/quota/change_list.html"

    def get_urls(self):
        view = self.admin_site.admin_view(self.usage_view)
        return [path("usage/", view, name="chatapp_quota_usage"), *super().get_urls()]

    def usage_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            return HttpResponse("Not allowed.", status=403)
        rows = quotas.usage_report()
        if request.GET.get("format") == "csv":
            response = HttpResponse(content_type="text/csv; charset=utf-8")
            response["Content-Disposition"] = 'attachment; filename="clearloop-usage.csv"'
            writer = csv.writer(response)
            writer.writerow(quotas.UsageRow.CSV_HEADER)
            for row in rows:
                writer.writerow([_csv_safe(v) for v in row.csv()])
            return response
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Usage per user and group"),
            "rows": rows,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/chatapp/quota/usage.html", context)


def _csv_safe(value: str) -> str:
    # A name starting with = + - @ would run as a formula in a spreadsheet.
    return "'" + value if value[:1] in ("=", "+", "-", "@") and not value[1:2].isdigit() else value
