from django.apps import AppConfig


class ChatappConfig(AppConfig):
    name = "chatapp"
    verbose_name = "clearloop"
    default_auto_field = "django.db.models.BigAutoField"
