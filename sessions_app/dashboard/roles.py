"""The roles page: every role's definition, the roles-by-tools matrix and the transition
rules, all read from the role registry.

It is live over ``/ws/roles/`` (``sessions_app.consumers.RolesConsumer``): a change to role
data pushes the same partials of ``dashboard/roles.html`` the view renders.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from roles.commands import rule_label
from roles.registry import RoleDef, registry
from roles.tools import tool_group_of
from sessions_app.dashboard.formatting import RoleBadge, badge_of, role_badge
from sessions_app.dashboard.live import ROLES_SOCKET_PATH
from sessions_app.services.event_catalog import ROLES_PAGE

ROLES_TEMPLATE = ROLES_PAGE.template
# The pushed partials, each with the stable id of its root (the event catalog's).
ROLES_FRAGMENTS = ROLES_PAGE.fragments

CONTEXT_STRATEGIES = {
    "adaptive": "Adaptive",
    "broad": "Broad",
    "focused": "Focused",
    "change_focused": "Change-focused",
}


@dataclass(frozen=True)
class MatrixCell:
    allowed: bool
    reason: str
    missing: tuple[str, ...]


@dataclass(frozen=True)
class MatrixRow:
    tool: str
    description: str
    required: tuple[str, ...]
    enabled: bool
    cells: list[MatrixCell]
    group: str = ""  # the tool group an allow-list names to let it through


@dataclass(frozen=True)
class RoleCard:
    role: RoleBadge
    description: str
    capabilities: tuple[str, ...]
    constraints: tuple[str, ...]
    prompt_key: str
    prompt_component: str
    context_strategy: str
    preferred_model: str
    fallback_model: str
    reassign_models: tuple[str, ...]  # where a run moves a step the role could not finish
    default_model: str
    queue: str
    max_llm_calls: int
    max_tokens: int
    timeout_seconds: int
    parent: RoleBadge | None
    permissions: tuple[str, ...]
    tools: tuple[str, ...]
    write_paths: tuple[str, ...]
    command_patterns: tuple[str, ...]
    version: int | None
    content_hash: str


@dataclass(frozen=True)
class RuleRow:
    from_role: RoleBadge
    to_role: RoleBadge
    condition: str
    explanation: str
    implicit: bool


def role_card(role: RoleDef) -> RoleCard:
    spec = role.spec
    return RoleCard(
        role=badge_of(role),
        description=spec.description,
        capabilities=spec.capabilities,
        constraints=spec.constraints,
        prompt_key=spec.prompt_key,
        prompt_component=role.prompt_component_key,
        context_strategy=CONTEXT_STRATEGIES.get(spec.context_strategy, spec.context_strategy),
        preferred_model=spec.preferred_model,
        fallback_model=spec.fallback_model,
        reassign_models=spec.reassign_models,
        default_model=str(settings.ACODE_LLM_DEFAULT_MODEL),
        queue=spec.queue,
        max_llm_calls=spec.max_llm_calls,
        max_tokens=spec.max_tokens,
        timeout_seconds=spec.timeout_seconds,
        parent=role_badge(spec.parent) if spec.parent else None,
        permissions=tuple(sorted(role.access.permissions)),
        tools=role.access.tools,
        write_paths=spec.write_paths,
        command_patterns=tuple(
            rule_label(i, rule).split(": ", 1)[1] for i, rule in enumerate(spec.command_patterns)
        ),
        version=role.version,
        content_hash=role.content_hash,
    )


def tool_matrix(roles: list[RoleDef]) -> list[MatrixRow]:
    """One row per tool, one cell per role: allowed, or why it is withheld."""
    rows = []
    for tool in sorted(registry.tools(), key=lambda t: t.name):
        cells = []
        for role in roles:
            withheld = role.access.withheld_reason(tool.name)
            if withheld is None:
                cells.append(MatrixCell(True, "", ()))
            else:
                cells.append(MatrixCell(False, withheld.reason, withheld.missing_permissions))
        rows.append(
            MatrixRow(
                tool.name,
                tool.description,
                tool.required_permissions,
                tool.enabled,
                cells,
                tool_group_of(tool.declaration),
            )
        )
    return rows


def transition_rules(roles: list[RoleDef]) -> list[RuleRow]:
    """Every transition rule, in the order of the roles it leaves and enters."""
    order = {r.slug: i for i, r in enumerate(roles)}
    rules = sorted(
        registry.all_rules(),
        key=lambda rule: (order.get(rule.from_slug, 99), order.get(rule.to_slug, 99)),
    )
    return [
        RuleRow(
            role_badge(rule.from_slug),
            role_badge(rule.to_slug),
            rule.condition_text,
            rule.explanation,
            rule.implicit,
        )
        for rule in rules
    ]


def roles_context() -> dict[str, Any]:
    """What the roles page and its pushes show: nothing in it depends on who looks."""
    role_defs = registry.list_roles()
    cards = [role_card(role) for role in role_defs]
    return {
        "roles": cards,
        "role_badges": [card.role for card in cards],
        "matrix": tool_matrix(role_defs),
        "rules": transition_rules(role_defs),
    }


def render_roles_fragments() -> str:
    """The roles page's fragments, as pushed when role data changes."""
    context = roles_context()
    return "".join(
        render_to_string(f"{ROLES_TEMPLATE}#{name}", context) for name in ROLES_FRAGMENTS
    )


@login_required
@require_GET
def roles(request: HttpRequest) -> HttpResponse:
    """Every role's definition, the roles-by-tools matrix and the transition rules."""
    return render(
        request,
        ROLES_TEMPLATE,
        {"nav": "roles", "ws_url": ROLES_SOCKET_PATH, **roles_context()},
    )
