"""django-axes (login throttling) in the admin's language.

Its own AppConfig lives here, not in chatapp/apps.py: a second AppConfig there would stop Django
picking ChatappConfig for "chatapp" on its own.
"""

from __future__ import annotations

from axes.apps import AppConfig as AxesAppConfig
from django.utils.translation import gettext_lazy, gettext_noop

# django-axes (login throttling) marks its admin texts for translation but ships no Chinese catalogue.
# Django looks a msgid up in every catalogue, ours first (LOCALE_PATHS), so its msgids listed here
# (copied from axes/models.py and axes/admin.py; tests/admin/test_admin_chinese.py checks they are still
# the ones axes uses) are translated in locale/zh_Hans like our own.
AXES_STRINGS = (
    # models: names and fields
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("User Agent"),
    gettext_noop("IP Address"),
    gettext_noop("Username"),
    gettext_noop("HTTP Accept"),
    gettext_noop("Path"),
    gettext_noop("Attempt Time"),
    gettext_noop("Access lock out"),
    gettext_noop("GET Data"),
    gettext_noop("POST Data"),
    gettext_noop("Failed Logins"),
    gettext_noop("Access Attempt"),
    gettext_noop("Expires At"),
    gettext_noop("The time when access attempt expires and is no longer valid."),
    gettext_noop("Logout Time"),
    gettext_noop("Session key hash (sha256)"),
    # admin: filters, sections, the action, the status column
    gettext_noop("Locked Out"),
    gettext_noop("Form Data"),
    gettext_noop("Meta Data"),
    gettext_noop("Clean up expired attempts"),
    gettext_noop("Not set"),
    gettext_noop("Attempt Remaining"),
)


class AxesConfig(AxesAppConfig):
    """django-axes as it is, with a name in the admin's language (axes' own is the label, "Axes")."""

    verbose_name = gettext_lazy("Login throttling")

    def ready(self) -> None:
        super().ready()
        from axes.admin import AccessAttemptAdmin

        # axes' status column has no description, so Django shows its method name ("Status"),
        # which no catalogue can translate; give it the same (translated) word as ours.
        AccessAttemptAdmin.status.short_description = gettext_lazy("Status")
