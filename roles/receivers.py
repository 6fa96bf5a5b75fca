"""What the roles app does when models change: every write to role data moves the stamp
and schedules the live push to open pages for when its transaction commits
(``acode.live.roles_changed_on_commit``). Model signals are the only hook that sees every
writer (a service, admin, the shell, a data migration); the services schedule the same
push themselves, and a transaction publishes it once.

Connected once, in ``RolesConfig.ready``.
"""

from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.models.signals import m2m_changed, post_delete, post_migrate, post_save

from acode.live import roles_changed_on_commit
from roles.models import (
    McpArgumentLimit,
    McpServer,
    McpToolDefinition,
    Permission,
    PromptComponent,
    PromptPack,
    Role,
    RoleVersion,
    Tool,
    TransitionRule,
)
from roles.portability.definitions import seed_defaults
from roles.registry import registry_stamp_bump

_WATCHED = (
    Permission, Tool, Role, RoleVersion, TransitionRule, PromptPack, PromptComponent,
    McpServer, McpToolDefinition, McpArgumentLimit,
)  # fmt: skip
_THROUGH = (Role.permissions.through, Role.allowed_tools.through)


def _role_data_changed(sender: Any, **kwargs: Any) -> None:
    # Receivers, not services, move the stamp: a write from the shell or a data
    # migration is seen by every registry too.
    if kwargs.get("raw"):
        return
    action = kwargs.get("action")
    if action is not None and not str(action).startswith("post_"):
        return
    registry_stamp_bump()
    roles_changed_on_commit()


def _seed_after_migrate(sender: AppConfig, using: str = "default", **kwargs: Any) -> None:
    # Seeding runs after every migrate (and after a test flush) but only writes when
    # the database holds no roles at all, so admins' edits are never overwritten.
    seed_defaults(using=using)


def connect(app_config: AppConfig) -> None:
    """Connect the receivers (idempotent: each has a dispatch uid)."""
    for model in _WATCHED:
        post_save.connect(
            _role_data_changed, sender=model, dispatch_uid=f"acode-stamp-save-{model.__name__}"
        )
        post_delete.connect(
            _role_data_changed, sender=model, dispatch_uid=f"acode-stamp-del-{model.__name__}"
        )
    for through in _THROUGH:
        m2m_changed.connect(
            _role_data_changed, sender=through, dispatch_uid=f"acode-stamp-m2m-{through.__name__}"
        )
    post_migrate.connect(_seed_after_migrate, sender=app_config, dispatch_uid="acode-roles-seed")
