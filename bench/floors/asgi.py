"""daphne bench.floors.asgi:application: the app's ASGI handler with the floor's settings."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.floors.settings")

import django  # noqa: E402

django.setup(set_prefix=False)

from chatapp.asgi_handler import OneHopASGIHandler  # noqa: E402

application = OneHopASGIHandler()
