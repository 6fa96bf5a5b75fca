"""Small builders for test data, going through the same services as users do."""

from __future__ import annotations

from typing import Any

from roles.models import Permission, Role, Tool
from roles.services import role_saved


def make_role(
    slug: str,
    *,
    name: str | None = None,
    permissions: list[str] = (),  # type: ignore[assignment]
    allowed_tools: list[str] = (),  # type: ignore[assignment]
    parent: Role | None = None,
    **fields: Any,
) -> Role:
    role = Role.objects.create(
        slug=slug,
        name=name or slug.replace("-", " ").title(),
        prompt_key=fields.pop("prompt_key", slug),
        parent=parent,
        **fields,
    )
    role.permissions.set(Permission.objects.filter(code__in=permissions))
    role.allowed_tools.set(Tool.objects.filter(name__in=allowed_tools))
    role_saved(role=role, actor="test")
    return role
