"""Core Django settings."""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from acode.settings.env import (
    env_bool,
    env_choice,
    env_float,
    env_int,
    env_list,
    env_optional,
    env_required,
    env_str,
)

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("ACODE_VAR_DIR", str(BASE_DIR / "var")))

# ``production`` turns the embedded defaults into required settings and safe ones (HTTPS,
# secure cookies, HSTS: acode/settings/security.py); ``development`` keeps `make run` and
# the tests working with no configuration at all.
ACODE_ENV = env_choice("ACODE_ENV", "development", ("development", "production"))
PRODUCTION = ACODE_ENV == "production"

DEBUG = env_bool("ACODE_DEBUG", False)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured("ACODE_DEBUG must be off when ACODE_ENV=production")
_EMBEDDED_SECRET = "acode-insecure-embedded-default-key-set-ACODE_SECRET_KEY-in-production"
if PRODUCTION:
    SECRET_KEY = env_required(
        "ACODE_SECRET_KEY", "ACODE_ENV=production has no default secret key (50+ random characters)"
    )
    if SECRET_KEY == _EMBEDDED_SECRET:
        raise ImproperlyConfigured("ACODE_SECRET_KEY must not be the embedded default key")
    env_required("ACODE_ALLOWED_HOSTS", "name the hosts the site answers to, comma-separated")
    ALLOWED_HOSTS = env_list("ACODE_ALLOWED_HOSTS", [])
else:
    SECRET_KEY = env_optional("ACODE_SECRET_KEY") or _EMBEDDED_SECRET
    ALLOWED_HOSTS = env_list("ACODE_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "testserver"])
# Origins (scheme://host[:port]) whose HTTPS forms and htmx posts pass the CSRF origin check.
CSRF_TRUSTED_ORIGINS = env_list("ACODE_CSRF_TRUSTED_ORIGINS", [])

# daphne is started directly (make run, production), so it is not an app here: keeping
# it out spares every worker process its import cost.
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "template_partials",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc from static/, so the docs work offline
    "channels",
    "audit",
    "roles",
    "sessions_app",
]

MIDDLEWARE = [
    # First, so every answer under /api/ (Django's own 404/500 too) leaves as a JSON error.
    "acode.middleware.ApiRequestMiddleware",
    # Every log line of the request carries its id (acode/logs.py).
    "acode.middleware.LogContextMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "roles.middleware.RegistrySyncMiddleware",
]

ROOT_URLCONF = "acode.urls"
ASGI_APPLICATION = "acode.asgi.application"
WSGI_APPLICATION = "acode.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# Request bodies above this are refused before they are read: 413 ACODE-API-413 under /api/.
ACODE_MAX_BODY_BYTES = env_int("ACODE_MAX_BODY_BYTES", 2 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = ACODE_MAX_BODY_BYTES

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # drf-spectacular's, plus what acode's inputs refuse (acode/schema.py).
    "DEFAULT_SCHEMA_CLASS": "acode.schema.AutoSchema",
    # JSON in, JSON out: errors are always JSON, bodies are checked by one parser.
    "DEFAULT_PARSER_CLASSES": ["acode.inputs.StrictJSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "EXCEPTION_HANDLER": "acode.errors.api_exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # ?format= is ours (audit export as jsonl or csv), not DRF's renderer override.
    "URL_FORMAT_OVERRIDE": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "acode API",
    "DESCRIPTION": "Run AI coding agents under explicit, enforced roles.",
    "VERSION": "0.1.0",
    # 3.1: request schemas are JSON Schema (a role's command rules need propertyNames).
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # A PATCH body is the serializer as declared (acode's have no required fields, except
    # a plan step's status), not every field made optional.
    "COMPONENT_SPLIT_PATCH": False,
    "ENUM_NAME_OVERRIDES": {
        "SessionStatusEnum": "sessions_app.models.SessionStatus",
        "StepStatusEnum": "sessions_app.models.StepStatus",
        "JobStatusEnum": "sessions_app.models.JobStatus",
        # A policy example's expected and actual decision (POST /api/roles/test/).
        "PolicyDecisionEnum": [("allow", "allow"), ("ask", "ask"), ("deny", "deny")],
        "ChangeKindEnum": "sessions_app.models.ChangeKind",
        "RiskTierEnum": "sessions_app.models.RiskTier",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "acode.errors.document_common_errors",
        "acode.schema.describe_inputs",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# acode's own knobs.
ACODE_WORKSPACES_ROOT = Path(env_str("ACODE_WORKSPACES_ROOT", str(VAR_DIR / "workspaces")))
# Each managed workspace's git directory lives here, outside every mount a command sees
# (shared between hosts like the workspaces: the web process commits approved changes).
ACODE_GIT_ROOT = Path(env_str("ACODE_GIT_ROOT", str(VAR_DIR / "git")))
# Scratch for the copy-on-write layer of each command (local to a worker; a filesystem that
# can hold an overlayfs upper directory: ext4, xfs, btrfs, or tmpfs on Linux 6.6+).
ACODE_LAYERS_ROOT = Path(env_str("ACODE_LAYERS_ROOT", str(VAR_DIR / "layers")))
# Per-workspace indexes in server state (which files are hidden, the git view commands see),
# shared between hosts like the workspaces and never mounted into a sandbox.
ACODE_INDEX_ROOT = Path(env_str("ACODE_INDEX_ROOT", str(VAR_DIR / "index")))
# Workspace search (issue 38): an OpenAI-compatible /v1/embeddings endpoint (Ollama, vLLM,
# OpenAI) and its model; unset, the packaged small model embeds offline. The index lives in
# ACODE_INDEX_ROOT/search/. A change touching at most ACODE_SEARCH_INLINE_FILES files is
# re-indexed in the process that applied it, once committed; a larger one by a Celery task.
ACODE_EMBEDDINGS_URL = env_str("ACODE_EMBEDDINGS_URL", "")
ACODE_EMBEDDINGS_MODEL = env_str("ACODE_EMBEDDINGS_MODEL", "")
ACODE_EMBEDDINGS_API_KEY = env_str("ACODE_EMBEDDINGS_API_KEY", "")
ACODE_SEARCH_INLINE_FILES = env_int("ACODE_SEARCH_INLINE_FILES", 3)
# Index builds and refreshes go to a queue of their own: a large workspace's build takes
# minutes and must never hold a worker slot an agent's job is waiting for.
ACODE_SEARCH_QUEUE = env_str("ACODE_SEARCH_QUEUE", "search")
# What one command's layer may hold (bytes by apparent size: sparse files count whole), past
# which none of its writes are applied (ACODE-TOL-005); what the session keeps counts too.
ACODE_LAYER_MAX_BYTES = env_int("ACODE_LAYER_MAX_BYTES", 1 << 30)
ACODE_LAYER_MAX_ENTRIES = env_int("ACODE_LAYER_MAX_ENTRIES", 200_000)
# Existing directories users with attach_workspace may start sessions on (none by default).
ACODE_ATTACH_ROOTS = env_list("ACODE_ATTACH_ROOTS", [])
ACODE_PROMPT_PACK = env_str("ACODE_PROMPT_PACK", "acode-standard")
ACODE_SERVE_STATIC = env_bool("ACODE_SERVE_STATIC", True)
# Threads per web process that run Django's (synchronous) request handling; see acode/asgi.py.
ACODE_HTTP_THREADS = env_int("ACODE_HTTP_THREADS", 16)
ACODE_REGISTRY_MAX_AGE = env_float("ACODE_REGISTRY_MAX_AGE", 1.0)
# How far back a protected role's draft is replayed against recorded tool decisions.
ACODE_DRAFT_REPLAY_DAYS = env_int("ACODE_DRAFT_REPLAY_DAYS", 7)
