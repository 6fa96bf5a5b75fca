"""Login rate limits: one rule for the dashboard login, the admin login and the API token.

Every login attempt counts twice, against the client's address and against the username
it names, in fixed windows kept by ``django-ratelimit`` in the ``ratelimit`` cache (Redis
when ``REDIS_URL`` is set, so all web processes count together). An attempt over either
limit is refused before the password is checked, so a refused guess costs no password
hashing and learns nothing. Rates: ``ACODE_LOGIN_RATE`` (per username) and
``ACODE_LOGIN_IP_RATE`` (per address), ``10/min`` each by default.
"""

from __future__ import annotations

import ipaddress
import logging

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest
from django_ratelimit.core import get_usage

LOGIN_GROUP_IP = "acode.login.ip"
LOGIN_GROUP_USERNAME = "acode.login.username"

logger = logging.getLogger(__name__)


def client_address(request: HttpRequest) -> str:
    """The client's address as the rate limit sees it: IPv6 clients by their /64 network,
    since one host holds a whole /64. Behind a proxy, the web server puts the client's
    address in REMOTE_ADDR (daphne --proxy-headers, see deploy/)."""
    raw = str(request.META.get("REMOTE_ADDR") or "")
    try:
        address = ipaddress.ip_address(raw)
    except ValueError:
        return raw or "unknown"  # a unix socket: every client shares one budget
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False).network_address)
    return str(address)


def login_retry_after(request: HttpRequest, *, username: str) -> int | None:
    """Count one login attempt; the seconds to wait when it is over a limit, else None.

    Both counters are incremented even when the first is already over, so an address
    cannot spread guesses over usernames, nor usernames over addresses."""
    name = username.strip().lower()
    checks = [
        (LOGIN_GROUP_IP, settings.ACODE_LOGIN_IP_RATE, client_address(request)),
        (LOGIN_GROUP_USERNAME, settings.ACODE_LOGIN_RATE, name),
    ]
    waits: list[int] = []
    for group, rate, value in checks:
        if not value:
            continue  # no username given: the address limit alone applies
        try:
            usage = get_usage(
                request,
                group=group,
                key=lambda _group, _request, value=value: value,
                rate=rate,
                increment=True,
            )
        except Exception as exc:  # the counters' store (Redis) is down: logins keep working
            logger.warning("login rate limit not counted (%s: %s)", type(exc).__name__, exc)
            continue
        if usage is not None and usage["should_limit"]:
            # time_left is -1 when the cache could not count: refused, retry shortly.
            waits.append(max(int(usage["time_left"]), 1))
    return max(waits) if waits else None


def reset_login_limits() -> None:
    """Forget every login attempt counted so far (tests; an operator unlocking logins)."""
    cache = caches[settings.RATELIMIT_USE_CACHE]
    location = getattr(cache, "_cache", None)
    if hasattr(location, "get_client"):
        # Redis: clear() would empty the whole database (the broker's queues too), so
        # delete only this cache's keys.
        client = location.get_client(write=True)  # type: ignore[union-attr]
        pattern = cache.make_key("*")
        keys = list(client.scan_iter(match=pattern, count=1000))
        if keys:
            client.delete(*keys)
        return
    cache.clear()
