"""URL routes: admin, REST API with OpenAPI schema, dashboard pages."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.views import LoginView
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerView

from acode.auth_api import TokenApi
from acode.docs_views import OfflineRedocView, SchemaView
from acode.login import (
    RateLimitedAdminAuthenticationForm,
    RateLimitedAuthenticationForm,
    rate_limited_login,
)
from acode.metrics_view import metrics
from acode.views import health, ready

# Both login pages count attempts against the login rate limit (acode/ratelimit.py).
admin.site.login_form = RateLimitedAdminAuthenticationForm
login_view = LoginView.as_view(authentication_form=RateLimitedAuthenticationForm)

urlpatterns = [
    path("admin/login/", rate_limited_login(admin.site.login)),
    path("admin/", admin.site.urls),
    path("accounts/login/", rate_limited_login(login_view), name="login"),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path(
        "api/redoc/",
        OfflineRedocView.as_view(url_name="schema", template_name="api/redoc.html"),
        name="redoc",
    ),
    path("api/auth/token/", TokenApi.as_view(), name="api-auth-token"),
    path("api/", include("roles.urls")),
    path("api/", include("sessions_app.urls")),
    path("healthz", health, name="health"),
    path("readyz", ready, name="ready"),
    path("metrics", metrics, name="metrics"),
    path("", include("sessions_app.dashboard.urls")),
]

admin.site.site_header = "acode administration"
admin.site.site_title = "acode admin"
