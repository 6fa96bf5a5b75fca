"""HTTPS, cookies, headers and login rate limits.

Every value reads an environment variable whose default depends on ``ACODE_ENV``: under
``production`` the defaults pass ``manage.py check --deploy`` (HTTPS only, secure cookies,
HSTS), under ``development`` they keep plain-HTTP `make run` and the tests working.
"""

from __future__ import annotations

from acode.settings.base import PRODUCTION
from acode.settings.env import env_bool, env_int, env_rate

# Behind a proxy that terminates TLS the request reaches Django over plain HTTP; the proxy
# says what the client used in X-Forwarded-Proto, which is trusted only when the web
# process is reachable through the proxy alone (deploy/nginx/acode.conf sets the header).
if env_bool("ACODE_TRUST_X_FORWARDED_PROTO", PRODUCTION):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("ACODE_SSL_REDIRECT", PRODUCTION)
# Probes of a load balancer or orchestrator, and a metrics scraper, speak plain HTTP to
# the web process itself.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("ACODE_HSTS_SECONDS", 31_536_000 if PRODUCTION else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("ACODE_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION)
SECURE_HSTS_PRELOAD = env_bool("ACODE_HSTS_PRELOAD", PRODUCTION)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

_secure_cookies = env_bool("ACODE_SECURE_COOKIES", PRODUCTION)
SESSION_COOKIE_SECURE = _secure_cookies
CSRF_COOKIE_SECURE = _secure_cookies
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"

# Login attempts (dashboard, admin, POST /api/auth/token/), counted per client address and
# per username in the "ratelimit" cache (Redis when REDIS_URL is set, so every web process
# counts together): see acode/ratelimit.py.
ACODE_LOGIN_RATE = env_rate("ACODE_LOGIN_RATE", "10/min")
ACODE_LOGIN_IP_RATE = env_rate("ACODE_LOGIN_IP_RATE", ACODE_LOGIN_RATE)
RATELIMIT_USE_CACHE = "ratelimit"
RATELIMIT_CACHE_PREFIX = "login:"
