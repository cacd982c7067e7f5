"""API keys in the admin: listed with their owner and use, revoked by an admin; never created or
edited here (a key is shown once, to the person who creates it: the key page or ``manage.py apikey``)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils.translation import gettext_lazy

from chatapp.models import ApiKey
from chatapp.services import api_keys


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "user",
        "shown_prefix",
        "scopes",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    )
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    readonly_fields = [f.name for f in ApiKey._meta.fields if f.name != "key_hash"]
    exclude = ("key_hash",)
    actions = ["revoke"]

    @admin.display(description=gettext_lazy("key"))
    def shown_prefix(self, obj: ApiKey) -> str:
        return f"clk_{obj.prefix}_…"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_revoke_permission(self, request) -> bool:
        return request.user.has_perm("chatapp.change_apikey")

    @admin.action(description=gettext_lazy("Revoke the selected keys"), permissions=["revoke"])
    def revoke(self, request, queryset) -> None:
        done = sum(api_keys.revoke_key(key, request.user) for key in queryset.select_related("user"))
        self.message_user(request, f"{done} key(s) revoked.", messages.SUCCESS)
