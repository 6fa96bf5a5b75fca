"""Workflow templates and risk signals as one YAML document: export, check, import.

The document (``FORMAT``) holds every template with its stages and every risk signal.
``document_problems`` finds every problem in one pass, so an import refuses a bad file
before writing anything (ACODE-IMP-001, the code of every refused import file, with the
problems listed). ``stage_order_problems`` is the check of a template's stage order that
admin uses too: the engine moves the session through the one transition service, so
each role stage must be reachable from the one before it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from acode.errors import AcodeError
from acode.inputs import NOT_WHITESPACE, json_schema_problems
from roles.models import DEFAULT_ROLE_SLUG, ModelEndpoint, Role
from roles.portability.document import load_yaml
from roles.registry import registry
from sessions_app.models import (
    AuditEventType,
    RiskSignal,
    RiskTier,
    SignalKind,
    StagePurpose,
    WorkflowStage,
    WorkflowTemplate,
)
from sessions_app.services.audit import audit_record

FORMAT = "acode-workflows/1"
SECTIONS = ("templates", "risk_signals")
SLUG = re.compile(r"[-a-zA-Z0-9_]+")
SMALL_INT = 32_767  # PositiveSmallIntegerField
INT = 2_147_483_647  # PositiveIntegerField
TEMPLATE_INTS = {
    "max_revisions_per_step": SMALL_INT,
    "max_revisions_per_run": SMALL_INT,
    "max_llm_calls": INT,
    "max_tokens": INT,
    "max_seconds": INT,
    "approval_ttl_minutes": INT,
}
# What a template gets for a number the document leaves out (the model's defaults).
TEMPLATE_DEFAULTS = {key: getattr(WorkflowTemplate(), key) for key in TEMPLATE_INTS}
STAGE_INTS = {"max_llm_calls": INT, "max_tokens": INT, "timeout_seconds": INT}
TEMPLATE_KEYS = {"slug", "name", "description", "risk_tier", "enabled", "stages", *TEMPLATE_INTS}
STAGE_KEYS = {"position", "purpose", "role", "model", *STAGE_INTS}
SIGNAL_KEYS = {"name", "description", "kind", "patterns", "threshold", "tier", "enabled"}
COUNTING_KINDS = (SignalKind.PLAN_STEPS, SignalKind.FAILED_RUNS)
ROLE_PURPOSES = (StagePurpose.CODE, StagePurpose.TEST, StagePurpose.REVIEW)


def _ints(limits: Mapping[str, int]) -> dict[str, Any]:
    return {
        key: {"type": "integer", "minimum": 0, "maximum": limit} for key, limit in limits.items()
    }


def _object(required: list[str], properties: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "properties": properties,
        "additionalProperties": False,
        **more,
    }


_NULLABLE_TEXT = {"type": ["string", "null"]}
_NAME = {"type": "string", "pattern": SLUG.pattern.join("^$"), "maxLength": 64}
# The form of a document: what an import checks first (ACODE-IMP-001) and what the API
# publishes for POST /api/workflows/import/. What it allows and ``document_problems``
# still refuses is about how the templates fit the roles, rules, endpoints and each other
# (ACODE-IMP-003).
DOCUMENT_SCHEMA: dict[str, Any] = _object(
    ["format"],
    {
        "format": {"const": FORMAT},
        "templates": {
            "type": ["array", "null"],
            "items": _object(
                ["slug", "name", "risk_tier", "stages"],
                {
                    "slug": _NAME,
                    "name": {"type": "string", "maxLength": 100, "pattern": NOT_WHITESPACE},
                    "description": {**_NULLABLE_TEXT, "maxLength": 10_000},
                    "risk_tier": {"type": "string", "enum": list(RiskTier.values)},
                    "enabled": {"type": "boolean"},
                    **_ints(TEMPLATE_INTS),
                    "stages": {
                        "type": "array",
                        "minItems": 1,
                        "items": _object(
                            ["purpose"],
                            {
                                "position": {"type": "integer", "minimum": 0, "maximum": SMALL_INT},
                                "purpose": {"type": "string", "enum": list(StagePurpose.values)},
                                "role": _NULLABLE_TEXT,
                                "model": {**_NULLABLE_TEXT, "maxLength": 100},
                                **_ints(STAGE_INTS),
                            },
                        ),
                    },
                },
            ),
        },
        "risk_signals": {
            "type": ["array", "null"],
            "items": _object(
                ["name", "kind", "tier"],
                {
                    "name": _NAME,
                    "description": {**_NULLABLE_TEXT, "maxLength": 255},
                    "kind": {"type": "string", "enum": list(SignalKind.values)},
                    "patterns": {
                        "type": "array",
                        "items": {"type": "string", "pattern": NOT_WHITESPACE},
                    },
                    "threshold": {"type": "integer", "minimum": 0, "maximum": INT},
                    "tier": {"type": "string", "enum": list(RiskTier.values)},
                    "enabled": {"type": "boolean"},
                },
                # Counting signals need a threshold, the others a pattern.
                anyOf=[
                    {
                        "properties": {
                            "kind": {"enum": list(COUNTING_KINDS)},
                            "threshold": {"minimum": 1},
                        },
                        "required": ["threshold"],
                    },
                    {
                        "properties": {
                            "kind": {
                                "enum": [k for k in SignalKind.values if k not in COUNTING_KINDS]
                            },
                            "patterns": {"minItems": 1},
                        },
                        "required": ["patterns"],
                    },
                ],
            ),
        },
    },
)


# -- export -------------------------------------------------------------------------------


def workflows_export() -> dict[str, Any]:
    """Every workflow template (with its stages) and risk signal, as a document."""
    templates = []
    for template in WorkflowTemplate.objects.order_by("slug").prefetch_related("stages__role"):
        templates.append(
            {
                "slug": template.slug,
                "name": template.name,
                "description": template.description,
                "risk_tier": template.risk_tier,
                "enabled": template.enabled,
                **{key: getattr(template, key) for key in TEMPLATE_INTS},
                "stages": [
                    {
                        "position": stage.position,
                        "purpose": stage.purpose,
                        "role": stage.role.slug if stage.role is not None else None,
                        **{key: getattr(stage, key) for key in STAGE_INTS},
                        "model": stage.model,
                    }
                    for stage in sorted(template.stages.all(), key=lambda s: s.position)
                ],
            }
        )
    signals = [
        {
            "name": signal.name,
            "description": signal.description,
            "kind": signal.kind,
            "patterns": list(signal.patterns or []),
            "threshold": signal.threshold,
            "tier": signal.tier,
            "enabled": signal.enabled,
        }
        for signal in RiskSignal.objects.order_by("name")
    ]
    return {"format": FORMAT, "templates": templates, "risk_signals": signals}


# -- checking -----------------------------------------------------------------------------


def stage_order_problems(stages: Sequence[tuple[int, str, str | None]]) -> list[str]:
    """What keeps a run from going through these stages, given as (position, purpose, role
    slug or None): positions, the approval gate, and a transition rule between each role
    stage and the next (from Default for the first; back from the review to the code
    stage, which requested changes and later plan steps take)."""
    problems: list[str] = []
    positions = [position for position, _, _ in stages]
    for position in sorted({p for p in positions if positions.count(p) > 1}):
        problems.append(f"position {position} is used by more than one stage")
    ordered = sorted(stages, key=lambda s: s[0])
    purposes = [purpose for _, purpose, _ in ordered]
    for position, purpose, role in ordered:
        if purpose == StagePurpose.APPROVAL and role:
            problems.append(f"stage {position}: the approval gate has no role (got {role!r})")
        elif purpose != StagePurpose.APPROVAL and not role:
            problems.append(f"stage {position}: a {purpose} stage needs a role")
    if purposes.count(StagePurpose.APPROVAL) > 1:
        problems.append("only one approval stage per template")
    elif StagePurpose.APPROVAL in purposes and purposes[-1] != StagePurpose.APPROVAL:
        problems.append("the approval stage must be the last stage")
    for needs in (StagePurpose.TEST, StagePurpose.REVIEW):
        if needs in purposes and (
            StagePurpose.CODE not in purposes
            or purposes.index(StagePurpose.CODE) > purposes.index(needs)
        ):
            problems.append(f"a {needs} stage needs a code stage before it")
    if problems:
        return problems
    previous = DEFAULT_ROLE_SLUG
    for position, _, role in ordered:
        if role is None:
            continue
        if role != previous and registry.rule(previous, role) is None:
            problems.append(
                f"stage {position}: no transition rule from {previous} to {role}; add one "
                "in admin (Transition rules) or reorder the stages"
            )
        previous = role
    roles = {purpose: role for _, purpose, role in ordered if role}
    code, review = roles.get(StagePurpose.CODE), roles.get(StagePurpose.REVIEW)
    if code and review and code != review and registry.rule(review, code) is None:
        problems.append(
            f"no transition rule from {review} back to {code}: a review that requests "
            "changes, and each further plan step, go back to the code stage"
        )
    return problems


@dataclass
class _Check:
    problems: list[str] = field(default_factory=list)

    def mappings(self, value: Any, where: str) -> list[dict[str, Any]]:
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            self.problems.append(f"{where}: must be a list of mappings")
            return []
        return value

    def text(self, item: Mapping[str, Any], key: str, where: str, *, limit: int) -> str:
        value = item.get(key, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            self.problems.append(f"{where}: {key} must be text")
            return ""
        if len(value) > limit:
            self.problems.append(f"{where}: {key} has more than {limit} characters")
        if "\x00" in value:
            self.problems.append(f"{where}: {key} holds a NUL character")
        return value

    def slug(self, item: Mapping[str, Any], key: str, where: str, *, limit: int) -> str:
        value = item.get(key)
        if not isinstance(value, str) or not SLUG.fullmatch(value) or len(value) > limit:
            self.problems.append(
                f"{where}: {key} must be a slug (letters, digits, - and _; at most {limit})"
            )
            return ""
        return value

    def choice(self, item: Mapping[str, Any], key: str, where: str, allowed: list[str]) -> str:
        value = item.get(key)
        if value not in allowed:
            self.problems.append(f"{where}: {key} must be one of {', '.join(allowed)}")
            return ""
        return str(value)

    def integer(self, item: Mapping[str, Any], key: str, where: str, *, limit: int) -> None:
        if key not in item:
            return
        value = item[key]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
            self.problems.append(f"{where}: {key} must be a whole number from 0 to {limit}")

    def boolean(self, item: Mapping[str, Any], key: str, where: str) -> None:
        if key in item and not isinstance(item[key], bool):
            self.problems.append(f"{where}: {key} must be true or false")

    def keys(self, item: Mapping[str, Any], allowed: set[str], where: str) -> None:
        unknown = sorted(str(k) for k in item if k not in allowed)
        if unknown:
            self.problems.append(f"{where}: unknown keys {', '.join(unknown)}")

    def unique(self, values: list[str], what: str) -> None:
        for value in sorted({v for v in values if v and values.count(v) > 1}):
            self.problems.append(f"{what} {value!r} appears twice")


def _check_stages(check: _Check, stages: list[dict[str, Any]], where: str) -> None:
    roles = set(Role.objects.values_list("slug", flat=True))
    endpoints = set(ModelEndpoint.objects.values_list("name", flat=True))
    if not stages:
        check.problems.append(f"{where}: a template needs at least one stage")
        return
    order: list[tuple[int, str, str | None]] = []
    before = len(check.problems)
    for index, stage in enumerate(stages):
        at = f"{where} stage {index + 1}"
        check.keys(stage, STAGE_KEYS, at)
        position = stage.get("position", index)
        if isinstance(position, bool) or not isinstance(position, int):
            check.problems.append(f"{at}: position must be a whole number")
        elif not 0 <= position <= SMALL_INT:
            check.problems.append(f"{at}: position must be from 0 to {SMALL_INT}")
        purpose = check.choice(stage, "purpose", at, list(StagePurpose.values))
        role = stage.get("role")
        if role is not None and (not isinstance(role, str) or role not in roles):
            check.problems.append(
                f"{at}: unknown role {role!r}; known roles: {', '.join(sorted(roles))}"
            )
        for key, limit in STAGE_INTS.items():
            check.integer(stage, key, at, limit=limit)
        model = check.text(stage, "model", at, limit=100)
        if model and model not in endpoints:
            check.problems.append(f"{at}: unknown model endpoint {model!r}")
        if len(check.problems) == before:
            order.append((int(position), purpose, role or None))
    if len(check.problems) == before:
        check.problems.extend(f"{where}: {p}" for p in stage_order_problems(order))


def _check_templates(check: _Check, templates: list[dict[str, Any]]) -> None:
    for index, template in enumerate(templates):
        where = f"templates[{index + 1}]"
        slug = check.slug(template, "slug", where, limit=64)
        where = f"template {slug!r}" if slug else where
        check.keys(template, TEMPLATE_KEYS, where)
        name = template.get("name")
        if not isinstance(name, str) or not name.strip():
            check.problems.append(f"{where}: name must be non-blank text")
        else:
            check.text(template, "name", where, limit=100)
        check.text(template, "description", where, limit=10_000)
        check.choice(template, "risk_tier", where, list(RiskTier.values))
        check.boolean(template, "enabled", where)
        for key, limit in TEMPLATE_INTS.items():
            check.integer(template, key, where, limit=limit)
        _check_stages(check, check.mappings(template.get("stages"), f"{where} stages"), where)
    check.unique([str(t.get("slug", "")) for t in templates], "template slug")
    check.unique([str(t.get("name", "")) for t in templates], "template name")
    # A name may move between templates in one import, but not onto one the file leaves.
    names = {str(t.get("name")): str(t.get("slug")) for t in templates}
    kept = WorkflowTemplate.objects.exclude(slug__in=[str(t.get("slug")) for t in templates])
    for other_slug, other_name in kept.values_list("slug", "name"):
        if other_name in names:
            check.problems.append(
                f"template {names[other_name]!r}: name {other_name!r} belongs to template "
                f"{other_slug!r}"
            )


def _check_signals(check: _Check, signals: list[dict[str, Any]]) -> None:
    for index, signal in enumerate(signals):
        where = f"risk_signals[{index + 1}]"
        name = check.slug(signal, "name", where, limit=64)
        where = f"risk signal {name!r}" if name else where
        check.keys(signal, SIGNAL_KEYS, where)
        check.text(signal, "description", where, limit=255)
        kind = check.choice(signal, "kind", where, list(SignalKind.values))
        check.choice(signal, "tier", where, list(RiskTier.values))
        check.boolean(signal, "enabled", where)
        check.integer(signal, "threshold", where, limit=INT)
        patterns = signal.get("patterns", [])
        if not isinstance(patterns, list) or not all(
            isinstance(p, str) and p.strip() and "\x00" not in p for p in patterns
        ):
            check.problems.append(f"{where}: patterns must be a list of non-blank text")
        elif kind and kind not in COUNTING_KINDS and not patterns:
            check.problems.append(f"{where}: a {kind} signal needs at least one pattern")
        if kind in COUNTING_KINDS and not signal.get("threshold"):
            check.problems.append(f"{where}: a {kind} signal needs a threshold of at least 1")
    check.unique([str(s.get("name", "")) for s in signals], "risk signal")


def document_problems(data: Mapping[str, Any]) -> list[str]:
    """Every problem of a document, against itself and the roles and endpoints there are."""
    check = _Check()
    if data.get("format") != FORMAT:
        check.problems.append(f"format: must be {FORMAT!r}, got {data.get('format')!r}")
    unknown = sorted(str(k) for k in data if k not in ("format", *SECTIONS))
    if unknown:
        check.problems.append(f"unknown sections: {', '.join(unknown)}")
    _check_templates(check, check.mappings(data.get("templates"), "templates"))
    _check_signals(check, check.mappings(data.get("risk_signals"), "risk_signals"))
    return check.problems


def workflows_load(text: str) -> dict[str, Any]:
    """Parse a document's YAML with the bounded loader the role import uses
    (``roles.portability.document.load_yaml``)."""
    return load_yaml(text)


# -- import -------------------------------------------------------------------------------


@dataclass
class WorkflowImportSummary:
    """What an import wrote."""

    templates: int = 0
    stages: int = 0
    signals: int = 0
    removed: list[str] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


def workflows_import(
    data: Mapping[str, Any], *, replace: bool, actor: str
) -> WorkflowImportSummary:
    """Check then write a whole document: templates (with their stages) and risk signals,
    created or updated by slug and name. Nothing is written if anything is wrong:
    ACODE-IMP-001 when the file is not of the document's form, ACODE-IMP-003 with every
    problem when its templates do not fit the roles, rules and endpoints there are.

    With ``replace`` what the document lacks goes: risk signals are deleted, and templates
    too unless runs used them (runs keep their template), which are disabled instead.
    Audited as one RoleDataChanged event: like role definitions, templates and signals
    are the configuration that decides what runs do, not a decision about one run.
    """
    # The form first (the schema the API publishes), so the checks below only ever see
    # a well-formed document.
    malformed = json_schema_problems(DOCUMENT_SCHEMA, data)
    if malformed:
        raise AcodeError(
            "ACODE-IMP-001",
            f"Import refused, the file is not a {FORMAT} document: " + "; ".join(malformed[:5]),
            {"problems": malformed},
        )
    problems = document_problems(data)
    if problems:
        raise AcodeError(
            "ACODE-IMP-003",
            f"Import refused, {len(problems)} problem(s): " + "; ".join(problems[:5]),
            {"problems": problems},
        )
    summary = WorkflowImportSummary()
    templates: list[dict[str, Any]] = data.get("templates") or []
    signals: list[dict[str, Any]] = data.get("risk_signals") or []
    roles = {role.slug: role for role in Role.objects.all()}
    with transaction.atomic():
        existing = {t.slug: t for t in WorkflowTemplate.objects.select_for_update()}
        # Names may move between templates: park the ones being written first.
        for slug in [t["slug"] for t in templates if t["slug"] in existing]:
            WorkflowTemplate.objects.filter(pk=existing[slug].pk).update(
                name=f"~importing {existing[slug].pk}"
            )
        for item in templates:
            template = existing.get(item["slug"]) or WorkflowTemplate(slug=item["slug"])
            template.name = item["name"]
            template.description = item.get("description") or ""
            template.risk_tier = item["risk_tier"]
            template.enabled = item.get("enabled", True)
            for key in TEMPLATE_INTS:
                setattr(template, key, item.get(key, TEMPLATE_DEFAULTS[key]))
            template.save()
            template.stages.all().delete()
            for index, stage in enumerate(item["stages"]):
                WorkflowStage.objects.create(
                    template=template,
                    position=stage.get("position", index),
                    purpose=stage["purpose"],
                    role=roles[stage["role"]] if stage.get("role") else None,
                    model=stage.get("model") or "",
                    **{key: stage.get(key, 0) for key in STAGE_INTS},
                )
                summary.stages += 1
            summary.templates += 1
        for item in signals:
            RiskSignal.objects.update_or_create(
                name=item["name"],
                defaults={
                    "description": item.get("description") or "",
                    "kind": item["kind"],
                    "patterns": list(item.get("patterns", [])),
                    "threshold": item.get("threshold", 0),
                    "tier": item["tier"],
                    "enabled": item.get("enabled", True),
                },
            )
            summary.signals += 1
        if replace:
            _remove_absent(templates, signals, summary)
        audit_record(
            event_type=AuditEventType.ROLE_DATA_CHANGED,
            actor=actor,
            target="workflow templates and risk signals",
            result="imported",
            details={
                "kind": "workflows",
                "replace": replace,
                "templates": [t["slug"] for t in templates],
                "risk_signals": [s["name"] for s in signals],
                "removed": summary.removed,
                "disabled": summary.disabled,
            },
        )
    return summary


def _remove_absent(
    templates: list[dict[str, Any]], signals: list[dict[str, Any]], summary: WorkflowImportSummary
) -> None:
    absent = WorkflowTemplate.objects.exclude(slug__in=[t["slug"] for t in templates])
    for template in absent.order_by("slug"):
        if template.runs.exists():
            template.enabled = False
            template.save(update_fields=["enabled", "updated_at"])
            summary.disabled.append(f"template {template.slug}")
        else:
            template.delete()
            summary.removed.append(f"template {template.slug}")
    gone = RiskSignal.objects.exclude(name__in=[s["name"] for s in signals]).order_by("name")
    summary.removed += [f"risk signal {name}" for name in gone.values_list("name", flat=True)]
    gone.delete()
