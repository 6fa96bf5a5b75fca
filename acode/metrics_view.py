"""``/metrics``: the Prometheus metrics, for the scraper and operators only.

The counters say how busy the system is and what its agents tried, so anonymous clients
get them only from ``ACODE_METRICS_ALLOWED_IPS`` (loopback by default: a scraper on the
same host). Elsewhere the scraper sends ``Authorization: Bearer <ACODE_METRICS_TOKEN>``,
and staff users logged in to the dashboard may look too.
"""

from __future__ import annotations

import hmac
import ipaddress
from functools import cache

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from acode.metrics import metrics_registry
from acode.middleware import error_response

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@cache
def _networks(allowed: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(item, strict=False) for item in allowed)


def _address_allowed(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    return any(ip in net for net in _networks(tuple(settings.ACODE_METRICS_ALLOWED_IPS)))


def _token_matches(request: HttpRequest) -> bool:
    expected = settings.ACODE_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if not expected or scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), expected.encode())


def metrics_allowed(request: HttpRequest) -> bool:
    """Whether this request may read the metrics: allowed address, token, or staff."""
    user = getattr(request, "user", None)
    return (
        _address_allowed(str(request.META.get("REMOTE_ADDR") or ""))
        or _token_matches(request)
        or bool(user is not None and user.is_authenticated and user.is_staff)
    )


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Every metric in the Prometheus text format, or 403 ACODE-API-403."""
    if not metrics_allowed(request):
        return error_response(
            request,
            "ACODE-API-403",
            "Metrics are served to ACODE_METRICS_ALLOWED_IPS, the ACODE_METRICS_TOKEN "
            "bearer token and staff users only.",
        )
    return HttpResponse(generate_latest(metrics_registry()), content_type=CONTENT_TYPE_LATEST)
