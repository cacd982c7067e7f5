from django.apps import AppConfig
from django.utils.translation import gettext_noop

# Django 6.1's blank choice label (admin selects, filters), not yet in Django's own Chinese catalogue:
# listed here so ours (LOCALE_PATHS, read first) carries its translation.
DJANGO_STRINGS = (gettext_noop("- Select an option -"), gettext_noop("Filter by %(field_name)s"))


class ChatappConfig(AppConfig):
    name = "chatapp"
    verbose_name = "clearloop"  # the product's name, the same in every language
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from chatapp.services import languages

        # A person's saved UI language comes back with every login (password or single sign-on).
        user_logged_in.connect(languages.restore, dispatch_uid="clearloop-language-restore")
