"""Reads of the roles app that callers share."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from acode.errors import AcodeError
from acode.llm import Endpoint, default_endpoint, endpoint_from_row
from roles.models import ModelEndpoint, PromptPack, Role, RoleDraft


def endpoint_for(name: str) -> Endpoint:
    """The endpoint a role's model name routes to (empty: the settings default)."""
    if not name:
        return default_endpoint()
    row = ModelEndpoint.objects.filter(name=name, enabled=True).first()
    if row is None:
        raise AcodeError(
            "ACODE-LLM-001",
            f"Unknown or disabled model endpoint {name!r}.",
            {"model": name, "known": list(ModelEndpoint.objects.values_list("name", flat=True))},
        )
    return endpoint_from_row(row)


def roles_all() -> QuerySet[Role]:
    """Every role row (DRF's model permissions read the model from it; no row is read)."""
    return Role.objects.all()


def role_row(slug: str) -> Role:
    """The row of the role ``slug`` (the registry found it first)."""
    return Role.objects.get(slug=slug)


def prompt_pack_row(name: str) -> PromptPack:
    return PromptPack.objects.get(name=name)


def model_endpoints_all() -> QuerySet[ModelEndpoint]:
    """Every model endpoint row (DRF's model permissions read the model from it)."""
    return ModelEndpoint.objects.all()


def model_endpoint_exists(name: str) -> bool:
    return ModelEndpoint.objects.filter(name=name).exists()


def model_endpoint_values(fields: Iterable[str]) -> list[dict[str, Any]]:
    """``fields`` of every model endpoint row, in the model's order."""
    return list(ModelEndpoint.objects.values(*fields))


def role_drafts(*, status: str | None = None, role: str | None = None) -> QuerySet[RoleDraft]:
    """Drafts of protected roles, newest first; only ``status`` or ``role`` (a slug)."""
    drafts = RoleDraft.objects.order_by("-id")
    if status:
        drafts = drafts.filter(status=status)
    if role:
        drafts = drafts.filter(role_slug=role)
    return drafts


def role_draft(pk: int) -> RoleDraft | None:
    """One draft by id, or None."""
    return RoleDraft.objects.filter(pk=pk).first()
