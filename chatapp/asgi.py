"""ASGI entry point: Django views, the websocket consumer, and the demo model under /demo-llm/ (demo
mode only)."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatapp.settings")

import django  # noqa: E402
from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

django.setup(set_prefix=False)  # what get_asgi_application() does, with the handler below instead

from chatapp.asgi_handler import OneHopASGIHandler  # noqa: E402

django_app = OneHopASGIHandler()

from chatapp import gil, slow_sockets  # noqa: E402

gil.tune(settings.GIL_SWITCH_MS)
from chatapp.http_pacing import paced  # noqa: E402

slow_sockets.install(settings.WS_SEND_BUFFER_BYTES)

from chatapp.routing import websocket_urlpatterns  # noqa: E402
from demo.model import DemoModelSettings, create_app  # noqa: E402

DEMO_PREFIX = "/demo-llm"
demo_app = create_app(DemoModelSettings(tokens_per_second=settings.DEMO_MODEL_TOKENS_PER_SECOND))


if settings.GC_FREEZE:
    from chatapp.gc_freeze import freeze_startup  # noqa: E402

    freeze_startup()  # after the app is loaded; below, only functions are defined


async def http_app(scope, receive, send):
    path = scope.get("path", "")
    if settings.DEMO_MODE and path.startswith(DEMO_PREFIX + "/"):
        # Mounted here so `make run` needs no extra process; the demo model is plain HTTP like any API.
        # Only in demo mode (issue 16, L3): otherwise the path is Django's, which answers 404.
        inner = dict(scope, path=path[len(DEMO_PREFIX) :], root_path=scope.get("root_path", "") + DEMO_PREFIX)
        await demo_app(inner, receive, send)
        return
    await django_app(scope, receive, paced(send))


application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
