"""Every write to role data moves the registry stamp, whoever made it."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save
from django.dispatch import Signal

from roles.models import (
    Permission,
    PromptComponent,
    PromptPack,
    Role,
    RoleVersion,
    Tool,
    TransitionRule,
)

# Sent with ``version`` (a RoleVersion) when a role's content changed and was versioned.
role_version_created = Signal()
# Sent with ``where``, ``actor`` and ``findings`` when dangerous prompt text was refused.
prompt_rejected = Signal()

_WATCHED = (Permission, Tool, Role, RoleVersion, TransitionRule, PromptPack, PromptComponent)
_THROUGH = (Tool.required_permissions.through, Role.permissions.through, Role.allowed_tools.through)


def _changed(sender: Any, **kwargs: Any) -> None:
    if kwargs.get("raw"):
        return
    action = kwargs.get("action")
    if action is not None and not str(action).startswith("post_"):
        return
    from roles.services import stamp_bump

    stamp_bump()


def connect() -> None:
    for model in _WATCHED:
        post_save.connect(_changed, sender=model, dispatch_uid=f"acode-stamp-save-{model.__name__}")
        post_delete.connect(
            _changed, sender=model, dispatch_uid=f"acode-stamp-del-{model.__name__}"
        )
    for through in _THROUGH:
        m2m_changed.connect(
            _changed, sender=through, dispatch_uid=f"acode-stamp-m2m-{through.__name__}"
        )
