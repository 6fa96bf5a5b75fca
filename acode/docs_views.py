"""The API's schema and ReDoc as a browser gets them (issue 34).

- :class:`SchemaView`: ``/api/schema/`` is YAML (``application/vnd.oai.openapi``), which a
  browser saves as a file instead of showing it; asked by a browser (``Accept`` names
  ``text/html``), the same YAML comes as ``text/plain``, shown in the tab. Clients that ask
  for the OpenAPI type (or anything) get it unchanged.
- :class:`OfflineRedocView`: ReDoc's bundle always draws its maker's logo from their CDN;
  the page's Content-Security-Policy allows images from this server only, so the browser
  never asks (the badge is hidden too: ``templates/api/redoc.html``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView
from rest_framework.request import Request
from rest_framework.response import Response

# Scripts and styles inline (the page's init script, ReDoc's styled components), its
# search in a blob: worker; everything else from this server.
REDOC_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; "
    "script-src 'self' 'unsafe-inline'; worker-src 'self' blob:; font-src 'self' data:; "
    "connect-src 'self'"
)


class SchemaView(SpectacularAPIView):
    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        wants_page = "text/html" in request.META.get("HTTP_ACCEPT", "")
        if wants_page and "format" not in request.query_params:
            response.content_type = "text/plain; charset=utf-8"  # read when it is rendered
            response["Content-Disposition"] = "inline"
        return response


class OfflineRedocView(SpectacularRedocView):
    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = REDOC_POLICY
        return response
