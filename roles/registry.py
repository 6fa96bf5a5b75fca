"""The role registry: one fast, consistent, read-only view of role data for every process.

Lookups are dictionary reads on an immutable in-process snapshot. Every change to role
data moves a stamp in the database (``RegistryStamp``, written in the change's own
transaction); :meth:`RoleRegistry.sync` compares it with one primary-key read and reloads
when it moved. Requests (middleware), Celery tasks and the tool executor sync at their
start, so a change made in any process is seen on the next read; a process that does none
of those still syncs on its own when its snapshot is older than ``ACODE_REGISTRY_MAX_AGE``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import QuerySet, Subquery

from acode.errors import AcodeError
from roles.access import (
    RoleAccess,
    RoleSpec,
    ToolSpec,
    compute_access,
    content_hash,
    role_snapshot,
)
from roles.decision.denial import with_routes
from roles.decision.examples import RoleView
from roles.decision.limits import limits_of
from roles.mcp.tools import argument_limits, mcp_tool_specs
from roles.models import (
    DEFAULT_ROLE_SLUG,
    Precondition,
    PromptComponent,
    PromptPack,
    RegistryStamp,
    Role,
    RoleVersion,
    Tool,
    TransitionRule,
)
from roles.tools import declared_tools

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class RoleDef(RoleView):
    """A role with everything derived from it, as every reader sees it: what the decision
    reads (its definition, access, argument limits and the routes of its denials) with
    its row, version and content hash."""

    id: int
    version: int | None
    content_hash: str
    version_id: int | None = None  # the RoleVersion row of ``version``

    @property
    def slug(self) -> str:
        return self.spec.slug

    @property
    def prompt_component_key(self) -> str:
        """The pack key of this role's prompt (``system`` for the Default role)."""
        key = self.spec.prompt_key.strip()
        if key in ("", "system", "system.md"):
            return "system"
        key = key.removesuffix(".md")
        return key if key.startswith("roles/") else f"roles/{key}"


@dataclass(frozen=True)
class RuleDef:
    """An allowed transition and its precondition."""

    from_slug: str
    to_slug: str
    precondition: str
    explanation: str
    implicit: bool = False

    @property
    def condition_text(self) -> str:
        if self.precondition == Precondition.NONE:
            return "always"
        if self.precondition in Precondition.values:
            return "when " + str(Precondition(self.precondition).label)
        return "when " + self.precondition.replace("_", " ")


@dataclass(frozen=True)
class _State:
    stamp: str
    roles: Mapping[str, RoleDef]  # by slug, in admin order
    by_id: Mapping[int, RoleDef]
    keys: Mapping[str, str]  # lower-cased slug or name -> slug
    tools: Mapping[str, ToolSpec]
    rules: Mapping[str, tuple[RuleDef, ...]]  # by from-slug
    prompts: Mapping[str, Mapping[str, str]]  # pack name -> key -> content


def tool_specs(using: str = "default") -> list[ToolSpec]:
    """Every declared tool with what its row says (in admin order: position, then name).

    A declared tool without a row is not enabled (an admin adds its row); a row whose name
    no tool declares is ignored.
    """
    rows = {
        name: (description, enabled, position)
        for name, description, enabled, position in Tool.objects.using(using).values_list(
            "name", "description", "enabled", "position"
        )
    }
    specs = []
    for declaration in declared_tools().values():
        description, enabled, position = rows.get(declaration.name, ("", False, 0))
        specs.append(
            ToolSpec(declaration, description or declaration.description, enabled, position)
        )
    specs += mcp_tool_specs(rows, using)
    return sorted(specs, key=lambda t: (t.position, t.name))


def read_specs(using: str = "default") -> tuple[list[tuple[int, RoleSpec]], list[ToolSpec]]:
    """Build role and tool specs from the database in a fixed number of queries."""
    tools = tool_specs(using)
    roles = []
    for r in (
        Role.objects.using(using)
        .select_related("parent")
        .prefetch_related("permissions", "allowed_tools")
    ):
        budget = r.job_budget()  # a custom agent's within its fixed limits
        roles.append(
            (
                r.pk,
                RoleSpec(
                    slug=r.slug,
                    name=r.name,
                    description=r.description,
                    colour=r.colour,
                    permissions=tuple(sorted(p.code for p in r.permissions.all())),
                    allowed_tools=tuple(sorted(t.name for t in r.allowed_tools.all())),
                    allowed_tool_groups=tuple(sorted(r.allowed_tool_groups or ())),
                    capabilities=tuple(r.capabilities),
                    constraints=tuple(r.constraints),
                    prompt_key=r.prompt_key,
                    context_strategy=r.context_strategy,
                    preferred_model=r.preferred_model,
                    fallback_model=r.fallback_model,
                    queue=r.queue,
                    max_llm_calls=budget[0],
                    max_tokens=r.max_tokens,
                    timeout_seconds=budget[1],
                    parent=r.parent.slug if r.parent else None,
                    write_paths=tuple(r.write_paths),
                    command_patterns=tuple(r.command_patterns),
                    answer_sets_plan=r.answer_sets_plan,
                    examples=tuple(r.examples or ()),
                    protected=r.protected,
                    reassign_models=tuple(r.reassign_models or ()),
                    reasoning_effort=r.reasoning_effort,
                    custom=r.custom,
                    max_sub_agents=r.max_sub_agents,
                    max_delegation_depth=r.max_delegation_depth,
                ),
            )
        )
    return roles, tools


def _stamp_rows(using: str = "default") -> QuerySet[RegistryStamp]:
    return RegistryStamp.objects.using(using).filter(pk=1)


def current_stamp(using: str = "default") -> str:
    """The stamp now in the database ('' before the first change)."""
    # Read at the start of every request: by its key, without first()'s ORDER BY to build.
    tokens = _stamp_rows(using).values_list("token", flat=True)[:1]
    return next(iter(tokens), None) or ""


def stamp_column() -> Subquery:
    """The stamp as a column of another query (``annotate(stamp=stamp_column())``): for a
    hot path that reads its own row anyway and hands the stamp to :meth:`RoleRegistry.sync`,
    one round trip fewer (an outside agent's hook). NULL before the first change."""
    return Subquery(_stamp_rows().values("token")[:1])


def registry_stamp_bump() -> None:
    """Mark role data as changed, in the caller's transaction; every registry reloads.

    Called by the receivers in ``roles.receivers`` on every write to role data, whatever
    made it (admin, API, import, shell), so no writer can forget it.
    """
    updated = RegistryStamp.objects.filter(pk=1).update(token=uuid.uuid4().hex)
    if not updated:
        RegistryStamp.objects.get_or_create(pk=1, defaults={"token": uuid.uuid4().hex})
    registry.invalidate()  # this process knows already; others compare stamps


class RoleRegistry:
    """Cached, process-wide access to roles, tools, rules and prompt texts."""

    def __init__(self, using: str = "default", max_age: float | None = None) -> None:
        self._using = using
        self._max_age = (
            max_age
            if max_age is not None
            else float(getattr(settings, "ACODE_REGISTRY_MAX_AGE", 1.0))
        )
        self._state: _State | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()

    # -- freshness -----------------------------------------------------------------
    def sync(self, stamp: str | None = None) -> bool:
        """Reload if role data changed anywhere since the last load; True if it reloaded.
        ``stamp``: the stamp as the caller just read it (``stamp_column``), else read now."""
        stamp = current_stamp(self._using) if stamp is None else stamp
        state = self._state
        if state is not None and state.stamp == stamp:
            self._checked_at = time.monotonic()
            return False
        with self._lock:
            state = self._state
            if state is not None and state.stamp == stamp:
                return False
            self._state = self._load(stamp)
            self._checked_at = time.monotonic()
        return True

    def invalidate(self) -> None:
        """Forget the snapshot; the next read loads again."""
        self._state = None

    def _current(self) -> _State:
        state = self._state
        if state is None or time.monotonic() - self._checked_at > self._max_age:
            self.sync()
            state = self._state
            assert state is not None
        return state

    def _load(self, stamp: str) -> _State:
        id_specs, tool_specs = read_specs(self._using)
        specs = {spec.slug: spec for _, spec in id_specs}
        latest: dict[str, tuple[int, str, int]] = {}
        for slug, number, digest, version_pk in (
            RoleVersion.objects.using(self._using)
            .order_by("role_slug", "-number")
            .values_list("role_slug", "number", "content_hash", "pk")
        ):
            latest.setdefault(slug, (number, digest, version_pk))
        roles: dict[str, RoleDef] = {}
        keys: dict[str, str] = {}
        limits = argument_limits(self._using)
        for pk, spec in id_specs:
            access = compute_access(spec.slug, specs, tool_specs)
            role_limits = limits_of(spec.slug, specs, limits)
            digest = content_hash(role_snapshot(spec, access, role_limits))
            number, stored, version_pk = latest.get(spec.slug, (0, "", 0))
            current = bool(number) and stored == digest
            roles[spec.slug] = RoleDef(
                id=pk,
                spec=spec,
                access=access,
                version=number if current else None,
                content_hash=digest,
                version_id=version_pk if current else None,
                argument_limits=role_limits,
            )
            keys[spec.slug.lower()] = spec.slug
            keys[spec.name.lower()] = spec.slug
        rules = self._load_rules(roles)
        roles = with_routes(roles, rules)  # the suggestion of each denial (roles.decision.denial)
        return _State(
            stamp=stamp,
            roles=roles,
            by_id={r.id: r for r in roles.values()},
            keys=keys,
            tools={t.name: t for t in tool_specs},
            rules=rules,
            prompts=self._load_prompts(),
        )

    def _load_rules(self, roles: Mapping[str, RoleDef]) -> dict[str, tuple[RuleDef, ...]]:
        """Rules by from-slug, plus the implicit way back to Default from every role."""
        rules: dict[str, list[RuleDef]] = {slug: [] for slug in roles}
        for from_slug, to_slug, pre, explanation in TransitionRule.objects.using(
            self._using
        ).values_list("from_role__slug", "to_role__slug", "precondition", "explanation"):
            rules[from_slug].append(RuleDef(from_slug, to_slug, pre, explanation))
        for from_slug, out in rules.items():
            if (
                from_slug != DEFAULT_ROLE_SLUG
                and DEFAULT_ROLE_SLUG in roles
                and not any(r.to_slug == DEFAULT_ROLE_SLUG for r in out)
            ):
                out.append(
                    RuleDef(
                        from_slug,
                        DEFAULT_ROLE_SLUG,
                        Precondition.NONE,
                        "Returning to Default is always allowed.",
                        implicit=True,
                    )
                )
        return {k: tuple(v) for k, v in rules.items()}

    def _load_prompts(self) -> dict[str, dict[str, str]]:
        """Prompt texts by pack name, then key (a pack without texts maps to {})."""
        prompts: dict[str, dict[str, str]] = {
            name: {}
            for name in PromptPack.objects.using(self._using).values_list("name", flat=True)
        }
        for pack, key, text in PromptComponent.objects.using(self._using).values_list(
            "pack__name", "key", "content"
        ):
            prompts.setdefault(pack, {})[key] = text
        return prompts

    # -- lookups -------------------------------------------------------------------
    def get(self, name: str) -> RoleDef:
        """A role by slug or name, case-insensitive; ACODE-ROL-001 if unknown."""
        state = self._current()
        slug = state.keys.get(name.strip().lower())
        if slug is None:
            known = [r.name for r in state.roles.values()]
            raise AcodeError(
                "ACODE-ROL-001",
                f"Invalid role specified: {name!r} is not a role. Known roles: {', '.join(known)}.",
                {"role": name, "known_roles": known},
            )
        return state.roles[slug]

    def resolve(self, stored: str) -> RoleDef:
        """A stored role value; unknown values resolve to Default with a warning (FR-007)."""
        state = self._current()
        slug = state.keys.get((stored or "").strip().lower())
        if slug is None:
            logger.warning("Unknown stored role %r; resolving to Default", stored)
            return self.default()
        return state.roles[slug]

    def by_id(self, role_id: int) -> RoleDef:
        """A role by primary key (what sessions store); unknown ids resolve to Default."""
        role = self._current().by_id.get(role_id)
        if role is None:
            self.sync()
            role = self._current().by_id.get(role_id)
        if role is None:
            logger.warning("Unknown stored role id %r; resolving to Default", role_id)
            return self.default()
        return role

    def default(self) -> RoleDef:
        return self._current().roles[DEFAULT_ROLE_SLUG]

    def list_roles(self) -> list[RoleDef]:
        return list(self._current().roles.values())

    def access(self, name: str) -> RoleAccess:
        return self.get(name).access

    def effective_tools(self, name: str) -> list[ToolSpec]:
        """The tools the role may use, in admin order (position, then name)."""
        state = self._current()
        granted = set(self.get(name).access.tools)
        return [spec for spec in state.tools.values() if spec.name in granted]

    def tools(self) -> list[ToolSpec]:
        return list(self._current().tools.values())

    def tool(self, name: str) -> ToolSpec | None:
        return self._current().tools.get(name)

    def rules_from(self, name: str) -> tuple[RuleDef, ...]:
        """The transitions out of a role (explicit rules plus the implicit one to Default)."""
        return self._current().rules.get(self.get(name).slug, ())

    def rule(self, from_name: str, to_name: str) -> RuleDef | None:
        to_slug = self.get(to_name).slug
        for rule in self.rules_from(from_name):
            if rule.to_slug == to_slug:
                return rule
        return None

    def all_rules(self) -> list[RuleDef]:
        return [rule for rules in self._current().rules.values() for rule in rules]

    def prompt_texts(self, pack: str) -> Mapping[str, str]:
        """Prompt components of a pack by key; an unknown pack is ACODE-PRM-002."""
        prompts = self._current().prompts
        if pack not in prompts:
            raise AcodeError(
                "ACODE-PRM-002",
                f"Unknown prompt pack {pack!r}.",
                {"pack": pack, "known_packs": sorted(prompts)},
            )
        return prompts[pack]

    def prompt_packs(self) -> list[str]:
        return sorted(self._current().prompts)

    def describe(self) -> dict[str, Any]:
        state = self._current()
        return {"stamp": state.stamp, "roles": len(state.roles), "tools": len(state.tools)}


registry = RoleRegistry()
