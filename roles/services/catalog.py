"""Writes to what roles are made of: tools, permissions, transition rules, prompt packs."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from acode.errors import AcodeError
from roles.models import Permission, PromptComponent, PromptPack, Tool, TransitionRule
from roles.services.common import (
    actor_label,
    data_changed,
    prompt_rejection_record,
    role_versions_record,
)
from roles.services.examples import catalog_examples_check
from roles.services.protection import protected_roles_guard
from roles.validation import check_prompt_text, tool_name_problems, transition_rule_problems


@transaction.atomic
def tool_save(
    *,
    tool: Tool,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> Tool:
    """Save a tool's row (enabled, description, position); roles whose tools moved get a
    new version. ACODE-ROL-004 for a name no tool is declared by: a row enables, describes
    and orders a tool acode has, it cannot make one (nor change what one takes or needs).
    ACODE-ROL-008 when switching it on would let a role make a call one of its examples
    says it must not (``catalog_examples_check``); nothing is kept."""
    problems = tool_name_problems(tool.name)
    if problems:
        raise AcodeError("ACODE-ROL-004", "; ".join(problems), {"problems": problems})
    tool.save()
    _catalog_written("tool", "saved", tool.name, actor=actor, user=user, versioned=versioned)
    return tool


@transaction.atomic
def tool_delete(
    *,
    tool: Tool,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> None:
    """Delete a tool; roles that had it get a new version."""
    tool.delete()
    _catalog_written("tool", "deleted", tool.name, actor=actor, user=user, versioned=versioned)


@transaction.atomic
def permission_save(
    *,
    permission: Permission,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> Permission:
    """Save a permission; a renamed code changes the roles holding it, so they are versioned.
    ACODE-ROL-008 when the new code would let a role make a call an example forbids."""
    permission.save()
    _catalog_written(
        "permission", "saved", permission.code, actor=actor, user=user, versioned=versioned
    )
    return permission


@transaction.atomic
def permission_delete(
    *,
    permission: Permission,
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
    versioned: bool = True,
) -> None:
    """Delete a permission (roles and tools lose it); roles whose access moved are versioned."""
    permission.delete()
    _catalog_written(
        "permission", "deleted", permission.code, actor=actor, user=user, versioned=versioned
    )


def _catalog_written(
    kind: str,
    action: str,
    name: str,
    *,
    actor: str | None,
    user: AbstractBaseUser | None,
    versioned: bool,
) -> None:
    """Record a tool's or permission's write; with ``versioned`` (an import checks and
    versions once, when the whole document is written) a save, which may widen access, is
    held to the roles' examples (ACODE-ROL-008), and roles whose access moved get a new
    version."""
    data_changed(kind, action, name, actor_label(actor, user))
    if versioned:
        if action == "saved":
            catalog_examples_check()
        role_versions_record(actor=actor, user=user)


# -- transition rules -----------------------------------------------------------------
@transaction.atomic
def transition_rule_save(
    *, rule: TransitionRule, actor: str | None = None, user: AbstractBaseUser | None = None
) -> TransitionRule:
    """Save a transition rule; ACODE-ROL-004 if it does not change the role or is malformed,
    ACODE-ROL-015 if it leads into a protected role a way it was not entered before."""
    ends = (rule.from_role.slug, rule.to_role.slug)
    problems = transition_rule_problems(
        from_slug=ends[0], to_slug=ends[1], precondition=rule.precondition, known_roles=ends
    )
    if problems:
        raise AcodeError("ACODE-ROL-004", "; ".join(problems), {"problems": problems})
    with protected_roles_guard():
        rule.save()
    data_changed("transition rule", "saved", str(rule), actor_label(actor, user))
    return rule


@transaction.atomic
def transition_rule_delete(
    *, rule: TransitionRule, actor: str | None = None, user: AbstractBaseUser | None = None
) -> None:
    """Delete a transition rule (never a gain: nothing is refused)."""
    rule.delete()
    data_changed("transition rule", "deleted", str(rule), actor_label(actor, user))


# -- prompt packs ---------------------------------------------------------------------
@transaction.atomic
def prompt_pack_save(*, pack: PromptPack, actor: str | None = None) -> PromptPack:
    """Save a prompt pack's name, version and description (its texts: prompt_component_save)."""
    pack.save()
    data_changed("prompt pack", "saved", pack.name, actor or "system")
    return pack


@transaction.atomic
def prompt_pack_delete(*, pack: PromptPack, actor: str | None = None) -> None:
    """Delete a prompt pack and its components."""
    pack.delete()
    data_changed("prompt pack", "deleted", pack.name, actor or "system")


def prompt_component_save(
    *, component: PromptComponent, actor: str | None = None
) -> PromptComponent:
    """Save a prompt component; dangerous text is refused with ACODE-PRM-001."""
    try:
        check_prompt_text(component.key, component.content)
    except AcodeError as exc:
        prompt_rejection_record(
            where=f"prompt {component.key}",
            actor=actor or "system",
            findings=exc.details.get("findings", []),
        )
        raise  # recorded before the save's transaction: the refusal is kept
    with transaction.atomic():
        component.save()
        data_changed("prompt", "saved", str(component), actor or "system")
    return component


@transaction.atomic
def prompt_component_delete(*, component: PromptComponent, actor: str | None = None) -> None:
    """Delete one prompt text of a pack."""
    component.delete()
    data_changed("prompt", "deleted", str(component), actor or "system")
