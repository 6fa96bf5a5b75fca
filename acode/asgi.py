"""ASGI entry point: HTTP through Django, websockets through Channels."""

from __future__ import annotations

import gc
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

if settings.ACODE_SERVE_STATIC:
    # Embedded mode serves static/ itself; production puts a proxy or CDN in front.
    django_asgi_app = ASGIStaticFilesHandler(django_asgi_app)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from acode.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

# Everything imported so far lives as long as the server: move it out of the collector's
# reach, and collect the oldest generation less often. Full collections over a large heap
# paused every websocket push for ~100 ms (bench/push.py, p99).
gc.collect()
gc.freeze()
gc.set_threshold(700, 10, 100)
