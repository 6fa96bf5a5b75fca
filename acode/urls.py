"""URL routes: admin, REST API with OpenAPI schema, dashboard pages."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerView,
)

from acode.auth_api import TokenApi
from acode.views import health, ready

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path(
        "api/redoc/",
        SpectacularRedocView.as_view(url_name="schema", template_name="api/redoc.html"),
        name="redoc",
    ),
    path("api/auth/token/", TokenApi.as_view(), name="api-auth-token"),
    path("api/", include("roles.urls")),
    path("api/", include("sessions_app.urls")),
    path("healthz", health, name="health"),
    path("readyz", ready, name="ready"),
    path("", include("sessions_app.dashboard.urls")),
]

admin.site.site_header = "acode administration"
admin.site.site_title = "acode admin"
