"""MCP tool servers as data: a registration per server, a pinned definition per tool.

A server's secrets are never stored: its registration names environment variables of
acode's (as ``ModelEndpoint.api_key_env`` does) whose values become the stdio server's
environment or the HTTP server's headers, and nothing else of acode's environment does.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models

# Names a server gives its tools (server-everything uses "get-env"): letters, digits, _ - .
_tool_name = RegexValidator(r"^[A-Za-z0-9_.-]{1,128}$", "Letters, digits, _ - . only.")


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(i, str) and i for i in value)


# A secret is named, never given: each value is the name of one of acode's variables, so
# a token pasted where its variable's name belongs is refused (and never exported).
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def _names(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and k and isinstance(v, str) and _ENV_NAME.match(v)
        for k, v in value.items()
    )


# acode's own settings: never handed to a server as one of its secrets.
OWN_SETTING_PREFIXES = ("ACODE_", "DJANGO_", "CELERY_")
OWN_SETTINGS = frozenset({
    "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "PGPASSWORD", "PGPASSFILE", "PGSERVICEFILE",
})  # fmt: skip


def own_setting(name: str) -> bool:
    """Whether ``name`` is one of acode's own settings' variables."""
    upper = name.upper()
    return upper in OWN_SETTINGS or upper.startswith(OWN_SETTING_PREFIXES)


# Query parameters that carry credentials (``?api_key=``, ``?access_token=``, ``&sig=``).
_SECRET_QUERY = re.compile(
    r"(?i)key|token|secret|pass|pwd|auth|sig|credential|session|bearer|code$"
)


def url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why ``url`` may not be an MCP server's address: http(s) only, no user information
    nor credentials in its query (they go in declared secrets), and no loopback, private or link-local address
    unless an admin allowed the private network for this server."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        return f"Not a URL: {exc}."
    if parts.scheme not in ("http", "https"):
        return "Only http:// and https:// URLs."
    if "@" in parts.netloc:
        return "No user or password in the URL: name the credential in Header secrets instead."
    if not host:
        return "The URL needs a host."
    secret_query = [
        name
        for name, _ in parse_qsl(parts.query, keep_blank_values=True)
        if _SECRET_QUERY.search(name)
    ]
    if secret_query:
        return (
            f"No credentials in the URL ({', '.join(secret_query)}): a URL is "
            "shown and exported; name the credential in Header secrets instead."
        )
    if not allow_private and private_host(host):
        return (
            f"{host} is a loopback, private or link-local address; an admin may allow it for "
            "this server (Allow private network)."
        )
    return None


def shown_url(url: str) -> str:
    """A URL as the API, admin and an export show it: never its user part nor a credential
    in its query (a URL saved before they were refused still holds them)."""
    head, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    if sep and "@" in netloc:
        url = f"{head}://***@{netloc.rpartition('@')[2]}{slash}{path}"
    base, mark, query = url.partition("?")
    if mark and any(_SECRET_QUERY.search(name) for name, _ in parse_qsl(query, True)):
        query, _, fragment = query.partition("#")
        pairs = [
            (name, "***" if _SECRET_QUERY.search(name) else value)
            for name, value in parse_qsl(query, keep_blank_values=True)
        ]
        url = f"{base}?{urlencode(pairs, safe='*')}" + (f"#{fragment}" if fragment else "")
    return url


def private_host(host: str) -> bool:
    """Whether ``host`` names (not resolves to: see ``roles.services.mcp``) a private place."""
    if host.lower().rstrip(".") in ("localhost", "localhost.localdomain") or host.lower().endswith(
        ".localhost"
    ):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return private_address(address)


def private_address(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """Loopback, private, link-local, reserved, multicast or unspecified."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return bool(
        address.is_loopback or address.is_private or address.is_link_local
        or address.is_reserved or address.is_multicast or address.is_unspecified
    )  # fmt: skip


class McpTransport(models.TextChoices):
    STDIO = "stdio", "stdio (a command run in the sandbox)"
    HTTP = "http", "Streamable HTTP (a URL)"


class McpServerStatus(models.TextChoices):
    UNKNOWN = "unknown", "not reached yet"
    OK = "ok", "reached"
    ERROR = "error", "failed"


class McpServer(models.Model):
    """An MCP server admins registered; its tools are offered only once approved."""

    slug = models.SlugField(
        max_length=40,
        unique=True,
        validators=[
            RegexValidator(r"__", "No double underscore: it separates names.", inverse_match=True),
            RegexValidator(
                r"^_|_$",
                "No underscore first or last: it would blur where names part.",
                inverse_match=True,
            ),
        ],
        help_text="Its tools are named mcp__<slug>__<tool>.",
    )
    description = models.CharField(max_length=255, blank=True)
    transport = models.CharField(
        max_length=10, choices=McpTransport.choices, default=McpTransport.STDIO
    )
    command = models.JSONField(
        default=list,
        blank=True,
        help_text='stdio: the program and its arguments, e.g. ["node", "/opt/srv/index.js"].',
    )
    read_only_paths = models.JSONField(
        default=list,
        blank=True,
        help_text="stdio: host paths the server's own files are in, mounted read-only in its sandbox.",
    )
    url = models.CharField(
        max_length=500, blank=True, help_text="HTTP: the server's MCP endpoint URL."
    )
    env_secrets = models.JSONField(
        default=dict,
        blank=True,
        help_text="stdio: variable the server sees -> name of acode's environment variable holding its value.",
    )
    header_secrets = models.JSONField(
        default=dict,
        blank=True,
        help_text="HTTP: header sent -> name of acode's environment variable holding its value.",
    )
    network = models.BooleanField(
        default=False, help_text="stdio: the server may reach the network (else it has none)."
    )
    allow_private_network = models.BooleanField(
        default=False,
        help_text="HTTP: the URL may be (or resolve to) a loopback, private or link-local "
        "address. Off, such a server is refused: acode's own services live there.",
    )
    call_timeout_seconds = models.PositiveIntegerField(default=60)
    max_output_chars = models.PositiveIntegerField(default=65536)
    enabled = models.BooleanField(default=True)
    status = models.CharField(
        max_length=10,
        choices=McpServerStatus.choices,
        default=McpServerStatus.UNKNOWN,
        editable=False,
    )
    last_error = models.TextField(blank=True, editable=False)
    checked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["slug"]
        verbose_name = "MCP server"

    def __str__(self) -> str:
        return self.slug

    def clean(self) -> None:
        """Shapes the sandbox and transports rely on; messages name the field."""
        errors: dict[str, str] = {}
        if self.transport == McpTransport.STDIO and not (self.command and _strings(self.command)):
            errors["command"] = (
                "A stdio server needs its program and arguments as a list of strings."
            )
        if self.transport == McpTransport.HTTP and not self.url:
            errors["url"] = "An HTTP server needs its URL."
        elif self.url:
            problem = url_problem(self.url, allow_private=self.allow_private_network)
            if problem:
                errors["url"] = problem
        if not _strings(self.read_only_paths) or any(
            not p.startswith("/") for p in self.read_only_paths
        ):
            errors["read_only_paths"] = "A list of absolute host paths."
        for field in ("env_secrets", "header_secrets"):
            value = getattr(self, field)
            if not _names(value):
                errors[field] = (
                    "An object mapping each name to the name of an environment variable of "
                    "acode's (letters, digits, _), never its value."
                )
            elif any(own_setting(v) for v in value.values()):
                names = ", ".join(sorted(v for v in value.values() if own_setting(v)))
                errors[field] = f"{names}: acode's own settings are never given to a server."
        if errors:
            raise ValidationError(errors)


class McpToolState(models.TextChoices):
    PENDING = "pending", "new: waiting for approval"
    APPROVED = "approved", "approved (offered)"
    CHANGED = "changed", "changed since approval: disabled until approved again"
    MISSING = "missing", "no longer listed by the server"


class McpToolDefinition(models.Model):
    """One tool of a server: what it last said the tool is, and what an admin approved.

    Offered only while ``live_hash == approved_hash`` (``state`` approved): a description,
    schema or annotation that changes disables the tool until an admin approves it again.
    """

    server = models.ForeignKey(McpServer, on_delete=models.CASCADE, related_name="tools")
    name = models.CharField(max_length=128, validators=[_tool_name])
    live_definition = models.JSONField(default=dict, editable=False)
    live_hash = models.CharField(max_length=64, editable=False)
    approved_definition = models.JSONField(null=True, blank=True, editable=False)
    approved_hash = models.CharField(max_length=64, blank=True, editable=False)
    approved_by = models.CharField(max_length=150, blank=True, editable=False)
    approved_at = models.DateTimeField(null=True, blank=True, editable=False)
    state = models.CharField(
        max_length=10, choices=McpToolState.choices, default=McpToolState.PENDING, editable=False
    )
    seen_at = models.DateTimeField(editable=False)

    class Meta:
        ordering = ["server__slug", "name"]
        constraints = [
            models.UniqueConstraint(fields=["server", "name"], name="mcp_tool_unique_per_server")
        ]
        verbose_name = "MCP tool definition"

    def __str__(self) -> str:
        return f"mcp__{self.server.slug}__{self.name}"  # roles.mcp.tools.mcp_tool_name

    @property
    def offered(self) -> bool:
        """Approved, and the server still says exactly what was approved."""
        return self.state == McpToolState.APPROVED and self.live_hash == self.approved_hash


class McpArgumentLimit(models.Model):
    """A role's narrowing of one tool's arguments: a JSON Schema fragment every call must
    also fit (a pattern on a path, an enum of projects, a maximum). A child role is held
    to its ancestors' limits too, so it never exceeds its parent."""

    role = models.ForeignKey("roles.Role", on_delete=models.CASCADE, related_name="argument_limits")
    tool = models.CharField(max_length=200, help_text="The tool's name, e.g. mcp__tracker__issues.")
    schema = models.JSONField(help_text='e.g. {"properties": {"project": {"enum": ["acode"]}}}')

    class Meta:
        ordering = ["role__slug", "tool"]
        constraints = [
            models.UniqueConstraint(fields=["role", "tool"], name="argument_limit_unique_per_role")
        ]

    def __str__(self) -> str:
        return f"{self.role} · {self.tool}"

    def clean(self) -> None:
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        try:
            Draft202012Validator.check_schema(self.schema)
        except SchemaError as exc:
            raise ValidationError({"schema": f"Not a JSON Schema: {exc.message}"}) from exc
