"""Custom agents (issue 41): a user with ``roles.configure`` makes a role from a template.

The agent is an ordinary role, written by ``role_write`` (every check a role write has,
versioned, audited as a data change) with ``custom`` set: a child of its template (so it
never gets more than the template), holding the template's effective permissions minus
``roles.access.CUSTOM_LOCKED`` and ``configure`` (seed 004: never inherited). Its goals
become the role's capabilities, its checklist the role's constraints (both reach the
prompt), its prompt the component ``roles/<slug>`` of the active pack. Who made it, the
template and the routing keywords are kept in ``CustomAgent`` (admin shows them)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils.text import slugify

from acode.errors import AcodeError
from roles.access import CUSTOM_LOCKED
from roles.models import (
    CUSTOM_MAX_LLM_CALLS,
    CUSTOM_MAX_SECONDS,
    DEFAULT_ROLE_SLUG,
    CustomAgent,
    PromptComponent,
    PromptPack,
    Role,
    TransitionRule,
)
from roles.registry import registry
from roles.services.catalog import (
    prompt_component_delete,
    prompt_component_save,
    transition_rule_delete,
    transition_rule_save,
)
from roles.services.roles import role_delete, role_write

CONFIGURE_PERMISSION = "roles.configure"
NOT_FOR_CUSTOM = CUSTOM_LOCKED | {"configure"}


def may_configure_agents(user: Any) -> bool:
    """May create custom agents: ``roles.configure`` (superusers hold every permission)."""
    return bool(user.is_authenticated and user.has_perm(CONFIGURE_PERMISSION))


def may_see_all_agents(user: Any) -> bool:
    """Admins who may see roles see every custom agent and who made it."""
    return bool(user.is_superuser or user.has_perm("roles.view_role"))


def custom_agents_visible_to(user: Any) -> QuerySet[CustomAgent]:
    agents = CustomAgent.objects.select_related("role", "created_by").order_by("-created_at")
    return agents if may_see_all_agents(user) else agents.filter(created_by_id=user.pk)


def routing_matches(text: str, slugs: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Which of the custom agents ``slugs`` the text calls for: each agent's routing keywords
    found in it, as whole words, whatever the case (agents none of whose keywords occur are
    left out). A suggestion for a person choosing a role; nothing moves a session by it."""
    found: dict[str, tuple[str, ...]] = {}
    agents = CustomAgent.objects.filter(role__slug__in=list(slugs))
    for slug, keywords in agents.values_list("role__slug", "routing_keywords"):
        hits = tuple(
            k for k in keywords or () if isinstance(k, str) and k.strip()
            and re.search(rf"(?<!\w){re.escape(k.strip())}(?!\w)", text, re.IGNORECASE)
        )  # fmt: skip
        if hits:
            found[slug] = hits
    return found


def custom_agent_create(
    *,
    user: AbstractBaseUser,
    name: str,
    template: str,
    goals: Sequence[str],
    checklist: Sequence[str],
    routing_keywords: Sequence[str] = (),
    prompt: str = "",
    description: str = "",
    slug: str = "",
) -> CustomAgent:
    """Create a custom agent from role ``template`` (a slug or name): ACODE-ROL-017 without
    ``roles.configure``; otherwise the role write's own refusals (ACODE-ROL-001 unknown
    template, ACODE-API-409 a taken slug or name, ACODE-PRM-001 dangerous text)."""
    if not may_configure_agents(user):
        raise AcodeError(
            "ACODE-ROL-017",
            "Creating custom agents needs the roles.configure permission.",
            {"permission": CONFIGURE_PERMISSION},
        )
    if not (1 <= len(goals) <= 20 and 1 <= len(checklist) <= 50 and name.strip()):
        raise AcodeError(
            "ACODE-ROL-004",
            "A custom agent needs a name, 1 to 20 goals and 1 to 50 checklist items.",
            {"goals": len(goals), "checklist": len(checklist)},
        )
    base = registry.get(template)  # ACODE-ROL-001 when there is none
    slug = slug or slugify(name)[:64]
    data = _agent_role(base, slug=slug, name=name, description=description, goals=goals,
                       checklist=checklist, own_prompt=bool(prompt))  # fmt: skip
    actor = user.get_username()
    with transaction.atomic():
        role_write(data=data, actor=actor, user=user, create=True)
        agent_role = Role.objects.get(slug=slug)
        _entered_like(agent_role, base.slug, actor=actor, user=user)
        if prompt:
            pack, _ = PromptPack.objects.get_or_create(name=settings.ACODE_PROMPT_PACK)
            key = f"roles/{slug}"
            component = PromptComponent.objects.filter(pack=pack, key=key).first()
            component = component or PromptComponent(pack=pack, key=key)
            component.content = prompt
            prompt_component_save(component=component, actor=actor)
        return CustomAgent.objects.create(
            role=agent_role,
            template=Role.objects.get(slug=base.slug),
            template_slug=base.slug,
            created_by=user,  # type: ignore[misc]
            created_by_name=actor,
            routing_keywords=list(routing_keywords),
        )


def may_delete_agent(user: Any, agent: CustomAgent) -> bool:
    """Its maker while they hold ``roles.configure``, and admins who may delete roles."""
    if not user.is_authenticated:
        return False
    if user.has_perm("roles.delete_role"):
        return True
    return agent.created_by_id == user.pk and may_configure_agents(user)


def custom_agent_delete(*, user: AbstractBaseUser, slug: str) -> None:
    """Delete a custom agent: the transition rules into and out of it (made with it), its
    own prompt, then its role, which ``role_delete`` refuses while sessions, jobs or roles
    below it use it (ACODE-ROL-005, and then nothing is deleted). An agent the user cannot
    see is unknown (ACODE-ROL-001); one they see but may not delete, ACODE-API-403."""
    agent = custom_agents_visible_to(user).filter(role__slug=slug).first()
    if agent is None:
        raise AcodeError("ACODE-ROL-001", f"No custom agent {slug!r} of yours.", {"agent": slug})
    if not may_delete_agent(user, agent):
        raise AcodeError(
            "ACODE-API-403",
            "Only its maker (holding roles.configure) or an admin who may delete roles "
            "deletes a custom agent.",
            {"agent": slug, "permission": "roles.delete_role"},
        )
    actor, role = user.get_username(), agent.role
    with transaction.atomic():
        rules = TransitionRule.objects.filter(Q(to_role=role) | Q(from_role=role))
        for rule in rules.select_related("from_role", "to_role"):
            transition_rule_delete(rule=rule, actor=actor, user=user)
        own_prompt = PromptComponent.objects.filter(
            pack__name=settings.ACODE_PROMPT_PACK, key=f"roles/{role.slug}"
        ).first()
        if own_prompt is not None and role.prompt_key == role.slug:
            prompt_component_delete(component=own_prompt, actor=actor)
        agent.delete()  # the row that makes the role an agent; the role itself next
        role_delete(role=role, actor=actor, user=user)


def _entered_like(agent: Role, template: str, *, actor: str, user: AbstractBaseUser) -> None:
    """A session enters the agent wherever it may enter the template, under the same
    precondition: one rule into the agent for each rule into the template, written like any
    rule (checked, audited), so admin, the export and the policy diff see them. None out of
    it: a session leaves the agent for Default (always allowed), so a user making an agent
    opens no new way into another role. Every role returns to Default without a rule, so an
    agent made from Default is entered from Default."""
    into = TransitionRule.objects.filter(to_role__slug=template).select_related("from_role")
    copies = [
        TransitionRule(from_role=rule.from_role, to_role=agent,
                       precondition=rule.precondition, explanation=rule.explanation)
        for rule in into.order_by("from_role__slug")
    ]  # fmt: skip
    if template == DEFAULT_ROLE_SLUG:
        copies.append(TransitionRule(from_role=Role.objects.get(slug=template), to_role=agent))
    for copy in copies:
        transition_rule_save(rule=copy, actor=actor, user=user)


def _agent_role(
    base: Any, *, slug: str, name: str, description: str, goals: Sequence[str],
    checklist: Sequence[str], own_prompt: bool,
) -> dict[str, Any]:  # fmt: skip
    """The role a custom agent is: a child of its template, its permissions less what a
    custom agent never holds, its goals and checklist as capabilities and constraints."""
    return {
        "slug": slug,
        "name": name,
        "description": description,
        "colour": base.spec.colour,
        "parent": base.slug,
        "permissions": sorted(set(base.access.permissions) - NOT_FOR_CUSTOM),
        "capabilities": list(goals),
        "constraints": list(checklist),
        "prompt_key": slug if own_prompt else base.spec.prompt_key,
        "context_strategy": base.spec.context_strategy,
        "preferred_model": base.spec.preferred_model,
        "fallback_model": base.spec.fallback_model,
        "queue": base.spec.queue,
        "max_llm_calls": min(base.spec.max_llm_calls, CUSTOM_MAX_LLM_CALLS),
        "max_tokens": base.spec.max_tokens,
        "timeout_seconds": min(base.spec.timeout_seconds, CUSTOM_MAX_SECONDS),
        "custom": True,
    }
