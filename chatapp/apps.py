from django.apps import AppConfig


class ChatappConfig(AppConfig):
    name = "chatapp"
    verbose_name = "clearloop"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from chatapp.services import languages

        # A person's saved UI language comes back with every login (password or single sign-on).
        user_logged_in.connect(languages.restore, dispatch_uid="clearloop-language-restore")
