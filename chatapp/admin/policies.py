"""Tool policies (R-TOOL-2): tier, approval mode and the description the model reads, per tool or glob."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy

from chatapp.models import ToolPolicy


@admin.register(ToolPolicy)
class ToolPolicyAdmin(admin.ModelAdmin):
    list_display = (
        "pattern",
        "tier",
        "approval",
        "enabled",
        "max_calls_per_run",
        "allow_self_approval",
        "approver",
        "has_override",
    )
    list_filter = ("tier", "approval", "enabled", "allow_self_approval")
    list_editable = ("enabled",)
    search_fields = ("pattern", "description_override")
    fieldsets = [
        (
            None,
            {
                "fields": ["pattern", "tier", "approval", "approver", "enabled"],
                "description": gettext_lazy(
                    "A pattern is a tool name as the model sees it (server__tool) or a glob (github__*). "
                    "An exact name beats a glob, a longer glob a shorter one. Without a policy an MCP tool "
                    "is high risk (MCP annotations are only hints, unless the server is trusted)."
                ),
            },
        ),
        (gettext_lazy("Limits"), {"fields": ["max_calls_per_run", "allow_self_approval"]}),
        (gettext_lazy("What the model reads"), {"fields": ["description_override"]}),
    ]

    @admin.display(description=gettext_lazy("description override"), boolean=True)
    def has_override(self, obj: ToolPolicy) -> bool:
        return bool(obj.description_override)
