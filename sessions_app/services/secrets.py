"""What is secret, as data: a team's secret rules, the secret values acode knows, and the
index and view of each workspace built from them.

``redaction_configure`` (called once per process by the app) tells containment where the
rules and the known values come from, so every door redacts with the same ones: the
command sandbox, ``read_file``, search, context, tool output, MCP results and audit rows.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.db import transaction

from roles.models import McpServer, ModelEndpoint
from roles.registry import registry
from sessions_app.containment import (
    SecretIndex,
    SecretRules,
    configure_redaction,
    workspace_key,
)
from sessions_app.models import AgentSession, AuditEventType, SecretRule, SecretRuleKind
from sessions_app.services.audit import audit_record

RULES_TTL = 5.0  # seconds a process keeps the team's rules before reading them again
_rules_lock = threading.Lock()
_rules_cache: tuple[float, SecretRules] = (0.0, SecretRules())


def secret_rules_current() -> SecretRules:
    """The team's secret rules (admin data), read at most every few seconds."""
    global _rules_cache
    with _rules_lock:
        stamp, rules = _rules_cache
        if time.monotonic() - stamp < RULES_TTL:
            return rules
    by_kind: dict[str, list[str]] = {kind: [] for kind in SecretRuleKind.values}
    try:
        for kind, value in SecretRule.objects.order_by("kind", "value").values_list(
            "kind", "value"
        ):
            by_kind[kind].append(value)
    except Exception:  # no database yet (a management command before migrate)
        return rules
    rules = SecretRules(
        patterns=tuple(by_kind[SecretRuleKind.PATTERN]),
        allow_paths=tuple(by_kind[SecretRuleKind.ALLOW_PATH]),
        allow_values=tuple(by_kind[SecretRuleKind.ALLOW_VALUE]),
    )
    with _rules_lock:
        _rules_cache = (time.monotonic(), rules)
    return rules


def _forget_rules() -> None:
    global _rules_cache
    with _rules_lock:
        _rules_cache = (0.0, SecretRules())


_values_lock = threading.Lock()
_values_cache: tuple[str, float, list[str]] = ("", 0.0, [])
VALUES_TTL = 60.0  # model endpoints do not move the registry stamp: read them this often


def known_values() -> list[str]:
    """Secret values acode itself holds (``_known_values``), read again whenever role data
    (MCP servers among it) moved, as the registry sees it."""
    global _values_cache
    try:
        stamp = str(registry.describe()["stamp"])
    except Exception:  # no database here (a process before migrate, a unit test)
        stamp = "no-database"
    with _values_lock:
        cached_stamp, at, values = _values_cache
        if cached_stamp == stamp and time.monotonic() - at < VALUES_TTL:
            return values
    values = _known_values()
    with _values_lock:
        _values_cache = (stamp, time.monotonic(), values)
    return values


def _known_values() -> list[str]:
    """Secret values acode itself holds: its settings (secret key, database and broker
    passwords), model endpoints' keys and every MCP server's declared secrets."""
    values: set[str] = {str(settings.SECRET_KEY)}
    for database in settings.DATABASES.values():
        values.add(str(database.get("PASSWORD") or ""))
    for url in (os.environ.get("REDIS_URL", ""), getattr(settings, "CELERY_BROKER_URL", "")):
        password = urlsplit(str(url or "")).password
        values.update({password or "", unquote(password or "")})
    names = {settings.ACODE_LLM_API_KEY_ENV}
    try:
        names.update(
            ModelEndpoint.objects.exclude(api_key_env="").values_list("api_key_env", flat=True)
        )
        for env_map, header_map in McpServer.objects.values_list("env_secrets", "header_secrets"):
            names.update(str(v) for v in {**(env_map or {}), **(header_map or {})}.values())
    except Exception:  # no database yet
        pass
    values.update(os.environ.get(name, "") for name in names)
    return sorted(v for v in values if v)


def redaction_configure() -> None:
    """Point containment's redaction at the team's rules and the known values."""
    configure_redaction(rules=secret_rules_current, values=known_values)


@transaction.atomic
def secret_rule_save(*, rule: SecretRule, actor: str) -> SecretRule:
    """Add or change a team's secret rule (every workspace index is scanned again)."""
    rule.full_clean()
    if not rule.pk:
        rule.created_by = actor
    rule.save()
    _rule_audit("saved", rule, actor)
    transaction.on_commit(_forget_rules)
    return rule


@transaction.atomic
def secret_rule_delete(*, rule: SecretRule, actor: str) -> None:
    """Remove a team's secret rule."""
    _rule_audit("deleted", rule, actor)
    rule.delete()
    transaction.on_commit(_forget_rules)


def _rule_audit(action: str, rule: SecretRule, actor: str) -> None:
    audit_record(
        event_type=AuditEventType.SECRET_RULE_CHANGED, actor=actor, target=str(rule.value),
        result=action, details={"kind": rule.kind, "description": rule.description},
    )  # fmt: skip


def workspace_index(workspace: Path, *, live: bool) -> SecretIndex:
    """The one secret index of ``workspace``, shared by every session on it; ``live`` when
    it can change behind acode's back (an attached directory)."""
    home = Path(settings.ACODE_INDEX_ROOT) / workspace_key(workspace)
    return SecretIndex(workspace, home, live=live, rules=secret_rules_current())


def session_index(session: AgentSession) -> SecretIndex:
    """The secret index of the session's workspace."""
    return workspace_index(Path(session.workspace), live=not session.workspace_managed)


def index_rebuild(paths: Iterable[Path], *, live: bool = False) -> None:
    """Scan these workspaces again from scratch (after a checkout)."""
    for path in paths:
        workspace_index(path, live=live).rebuild()
