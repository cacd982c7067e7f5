"""daphne bench.floors.asgi:application: Django's ASGI handler with the floor's settings."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.floors.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

application = get_asgi_application()
