"""ASGI entry point: HTTP through Django, websockets through Channels.

Every HTTP view in acode is synchronous (DRF, admin, dashboard), so HTTP requests go to
Django's WSGI handler on a fixed pool of threads (a2wsgi): one hand-off from the event
loop per request. Django's own ASGI handler would start a thread per request and hop
between the loop and threads around each synchronous middleware and the view, which
cost about 3 ms per request here (bench/transitions.py). Websockets stay on Channels.
Request bodies over the limit are refused before they are read (``acode.bodylimit``).
"""

from __future__ import annotations

import gc
import os
import sys

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "acode.settings")
django_wsgi_app = get_wsgi_application()

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import StaticFilesHandler  # noqa: E402

from acode.bodylimit import BodyLimit, limit_daphne_bodies  # noqa: E402

if settings.ACODE_SERVE_STATIC:
    # Embedded mode serves static/ itself; production puts a proxy or CDN in front.
    django_wsgi_app = StaticFilesHandler(django_wsgi_app)
django_http_app = BodyLimit(
    WSGIMiddleware(
        django_wsgi_app,  # type: ignore[arg-type]  # returns an iterable response
        workers=settings.ACODE_HTTP_THREADS,
    ),
    limit=settings.ACODE_MAX_BODY_BYTES,
)
if "daphne.server" in sys.modules:
    # Served by daphne, which reads whole bodies before calling any application: its
    # requests get the limit themselves (acode/bodylimit.py).
    limit_daphne_bodies(settings.ACODE_MAX_BODY_BYTES)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from acode.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_http_app,
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
