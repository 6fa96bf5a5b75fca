"""Audit what the roles app reports: new role versions, every change to role data
(deletions included) and refused prompt text; push committed role changes to open pages."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models.signals import post_migrate

from roles.models import RoleVersion
from roles.signals import (
    mcp_refresh_requested,
    prompt_rejected,
    role_data_changed,
    role_data_committed,
    role_version_created,
)
from sessions_app.agent.mcp.servers import mcp_server_refresh_asked
from sessions_app.models import AuditEventType
from sessions_app.services.audit import audit_record
from sessions_app.services.events import publish_roles_event


def _role_versioned(sender: Any, version: RoleVersion, **kwargs: Any) -> None:
    audit_record(
        event_type=AuditEventType.ROLE_EDITED,
        actor=version.actor,
        role=version.role_slug,
        target=f"{version.role_slug} v{version.number}",
        result="versioned",
        details={"number": version.number, "content_hash": version.content_hash},
    )


def _prompt_rejected(
    sender: Any, where: str, actor: str, findings: list[Any], **kwargs: Any
) -> None:
    audit_record(
        event_type=AuditEventType.PROMPT_REJECTED,
        actor=actor,
        target=where,
        result="ACODE-PRM-001",
        details={"findings": findings},
    )


def _role_data_changed(
    sender: Any, kind: str, action: str, name: str, actor: str, **kwargs: Any
) -> None:
    audit_record(
        event_type=AuditEventType.ROLE_DATA_CHANGED,
        actor=actor,
        target=f"{kind} {name}"[:1000],
        result=action,
        details={"kind": kind, "name": name, **kwargs.get("details", {})},
    )


def _mcp_refresh_requested(sender: Any, server: Any, actor: str, **kwargs: Any) -> Any:
    # A server that cannot be reached is its state (recorded on it), not our error: the
    # failure is returned to the caller (send_robust) instead of being logged with a trace.
    return mcp_server_refresh_asked(server=server, actor=actor)


def _role_data_committed(sender: Any, **kwargs: Any) -> None:
    # Already after commit (roles.receivers): publish at once.
    publish_roles_event()


def _seed_runs(sender: Any, **kwargs: Any) -> None:
    # After roles are seeded (their app migrates first): the shipped workflow templates and
    # risk signals, written only when there are none, so admins' edits are kept.
    from sessions_app.services.runs import runs_seed_defaults

    runs_seed_defaults()


def connect() -> None:
    post_migrate.connect(
        _seed_runs, sender=apps.get_app_config("sessions_app"), dispatch_uid="acode-runs-seed"
    )
    role_data_changed.connect(_role_data_changed, dispatch_uid="acode-audit-role-data")
    role_version_created.connect(_role_versioned, dispatch_uid="acode-audit-role-version")
    prompt_rejected.connect(_prompt_rejected, dispatch_uid="acode-audit-prompt-rejected")
    role_data_committed.connect(_role_data_committed, dispatch_uid="acode-live-role-data")
    mcp_refresh_requested.connect(_mcp_refresh_requested, dispatch_uid="acode-mcp-refresh")
