"""Reads of the roles app that callers share."""

from __future__ import annotations

from acode.errors import AcodeError
from acode.llm import Endpoint, default_endpoint, endpoint_from_row
from roles.models import ModelEndpoint


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
