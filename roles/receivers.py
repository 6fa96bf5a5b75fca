"""What the roles app does when models change: every write to role data moves the stamp,
and once its transaction commits, ``role_data_committed`` is sent.

Connected once, in ``RolesConfig.ready``.
"""

from __future__ import annotations

import logging
from typing import Any

from django.apps import AppConfig
from django.db import transaction
from django.db.models.signals import m2m_changed, post_delete, post_migrate, post_save

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
from roles.signals import role_data_committed

logger = logging.getLogger(__name__)

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
    _announce_after_commit()


def _announce() -> None:
    for receiver, result in role_data_committed.send_robust(sender=None):
        if isinstance(result, Exception):  # the change is committed: never fail its request
            logger.warning("role_data_committed: %r failed: %r", receiver, result)


def _announce_after_commit() -> None:
    # Once per transaction, however many rows it writes (a role saved in admin writes
    # the role, its permissions, its tools and a new version).
    connection = transaction.get_connection()
    if connection.in_atomic_block and any(
        callback is _announce for _, callback, _ in connection.run_on_commit
    ):
        return
    transaction.on_commit(_announce)


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
