"""Which MCP argument limits a role is held to: its own and every ancestor's, so a child
never exceeds its parent. The registry, role versions, examples and replay all ask here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roles.access import RoleSpec, parent_chain


def limits_of(
    slug: str,
    specs: Mapping[str, RoleSpec],
    limits: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> dict[str, tuple[tuple[str, Mapping[str, Any]], ...]]:
    """The argument limits a role is held to: its own and every ancestor's."""
    out: dict[str, list[tuple[str, Mapping[str, Any]]]] = {}
    for owner in [slug, *parent_chain(slug, specs)]:
        for tool, schema in limits.get(owner, {}).items():
            out.setdefault(tool, []).append((owner, schema))
    return {tool: tuple(items) for tool, items in out.items()}
