"""Workflow templates and risk signals as one YAML document: export and check (writing
one is ``importing.py``).

The document (``FORMAT``) holds every template with its stages and every risk signal.
``DOCUMENT_SCHEMA`` (JSON Schema) checks its form, ``document_problems`` how it fits the
roles, rules and endpoints there are; each finds every problem in one pass, so an import
refuses a bad file before writing anything (ACODE-IMP-001 for the form, ACODE-IMP-003 for
the fit, with the problems listed). ``stage_order_problems`` is the check of a template's
stage order that admin uses too: the engine moves the session through the one transition
service, so each role stage must be reachable from the one before it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from acode.errors import AcodeError
from acode.inputs import NO_NUL, NOT_WHITESPACE, json_schema_problems
from roles.decision.diff_commands import argv_outcome
from roles.models import DEFAULT_ROLE_SLUG, ModelEndpoint, Role
from roles.portability.document import load_yaml
from roles.registry import registry
from sessions_app.models import (
    RiskSignal,
    RiskTier,
    SignalKind,
    StagePurpose,
    WorkflowTemplate,
)

FORMAT = "acode-workflows/1"
SECTIONS = ("templates", "risk_signals")
SLUG = re.compile(r"[-a-zA-Z0-9_]+")
SMALL_INT = 32_767  # PositiveSmallIntegerField
INT = 2_147_483_647  # PositiveIntegerField
TEMPLATE_INTS = {
    "max_revisions_per_step": SMALL_INT,
    "max_revisions_per_run": SMALL_INT,
    "max_test_attempts": SMALL_INT,
    "max_llm_calls": INT,
    "max_tokens": INT,
    "max_seconds": INT,
    "approval_ttl_minutes": INT,
}
# What a template gets for a number the document leaves out (the model's defaults).
TEMPLATE_DEFAULTS = {key: getattr(WorkflowTemplate(), key) for key in TEMPLATE_INTS}
STAGE_INTS = {"max_llm_calls": INT, "max_tokens": INT, "timeout_seconds": INT}
# A test stage's commands (``WorkflowStage.commands``): argument lists its job runs in order.
COMMANDS_SCHEMA: dict[str, Any] = {
    "type": "array",
    "maxItems": 20,
    "items": {
        "type": "array",
        "minItems": 1,
        "maxItems": 64,
        "items": {"type": "string", "minLength": 1, "maxLength": 2000, "pattern": NO_NUL},
    },
}
COUNTING_KINDS = (SignalKind.PLAN_STEPS, SignalKind.FAILED_RUNS)
BARE_KINDS = (SignalKind.UNATTENDED,)  # neither patterns nor a threshold


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
                    "review_model_differs": {"type": "boolean"},
                    "final_review": {"type": "boolean"},
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
                                "commands": COMMANDS_SCHEMA,
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
                    "score": {"type": "integer", "minimum": 0, "maximum": SMALL_INT},
                    "sensitive": {"type": "boolean"},
                    "enabled": {"type": "boolean"},
                },
                # Counting signals need a threshold, the autonomy one nothing, the others a
                # pattern.
                anyOf=[
                    {
                        "properties": {
                            "kind": {"enum": list(COUNTING_KINDS)},
                            "threshold": {"minimum": 1},
                        },
                        "required": ["threshold"],
                    },
                    {"properties": {"kind": {"enum": list(BARE_KINDS)}}},
                    {
                        "properties": {
                            "kind": {
                                "enum": [
                                    k
                                    for k in SignalKind.values
                                    if k not in (*COUNTING_KINDS, *BARE_KINDS)
                                ]
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
                "review_model_differs": template.review_model_differs,
                "final_review": template.final_review,
                **{key: getattr(template, key) for key in TEMPLATE_INTS},
                "stages": [
                    {
                        "position": stage.position,
                        "purpose": stage.purpose,
                        "role": stage.role.slug if stage.role is not None else None,
                        **{key: getattr(stage, key) for key in STAGE_INTS},
                        "model": stage.model,
                        # named only when set, so documents from before stay as they were
                        **({"commands": stage.commands} if stage.commands else {}),
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
            "score": signal.score,
            "sensitive": signal.sensitive,
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


def stage_commands_problems(
    position: int, purpose: str, role: str | None, commands: Any
) -> list[str]:
    """What keeps a stage from running its commands: only a test stage runs them, each an
    argument list (``COMMANDS_SCHEMA``), and each one its role lets it run, through its
    run_tests tool and command rules (one that asks a person first is allowed: the job
    waits for the consent). The executor decides each call again when it runs."""
    if not commands:
        return []
    at = f"stage {position}"
    if purpose != StagePurpose.TEST:
        return [f"{at}: only a test stage runs commands (this one is a {purpose} stage)"]
    shape = json_schema_problems(COMMANDS_SCHEMA, commands)
    if shape or role is None:  # no role: stage_order_problems says so
        return [f"{at}: commands: {problem}" for problem in shape]
    try:
        found = registry.get(role)
    except AcodeError:
        return []  # an unknown role is said where the stage names it
    if not found.access.allows("run_tests"):
        return [f"{at}: role {role} lacks the run_tests tool its commands run through"]
    return [
        f"{at}: role {role}'s command rules refuse {shlex.join(argv)}"
        for argv in commands
        if argv_outcome(argv, found.spec.command_patterns) == "deny"
    ]


def _duplicates(values: list[str], what: str) -> list[str]:
    return [
        f"{what} {value!r} appears twice"
        for value in sorted({v for v in values if v and values.count(v) > 1})
    ]


def _stage_problems(stages: list[dict[str, Any]], where: str) -> list[str]:
    """The roles and model endpoints the stages name, then the order they run in."""
    roles = set(Role.objects.values_list("slug", flat=True))
    endpoints = set(ModelEndpoint.objects.values_list("name", flat=True))
    problems: list[str] = []
    for index, stage in enumerate(stages):
        at = f"{where} stage {index + 1}"
        role, model = stage.get("role"), stage.get("model")
        if role and role not in roles:
            problems.append(f"{at}: unknown role {role!r}; known roles: {', '.join(sorted(roles))}")
        if model and model not in endpoints:
            problems.append(f"{at}: unknown model endpoint {model!r}")
        if not role or role in roles:
            position = stage.get("position", index)
            problems += [
                f"{where}: {p}"
                for p in stage_commands_problems(
                    position, stage["purpose"], role, stage.get("commands")
                )
            ]
    if problems:
        return problems
    order = [
        (stage.get("position", index), stage["purpose"], stage.get("role") or None)
        for index, stage in enumerate(stages)
    ]
    return [f"{where}: {p}" for p in stage_order_problems(order)]


def _template_problems(templates: list[dict[str, Any]]) -> list[str]:
    problems: list[str] = []
    for template in templates:
        problems += _stage_problems(template["stages"], f"template {template['slug']!r}")
    problems += _duplicates([t["slug"] for t in templates], "template slug")
    problems += _duplicates([t["name"] for t in templates], "template name")
    # A name may move between templates in one import, but not onto one the file leaves.
    names = {t["name"]: t["slug"] for t in templates}
    kept = WorkflowTemplate.objects.exclude(slug__in=list(names.values()))
    for other_slug, other_name in kept.values_list("slug", "name"):
        if other_name in names:
            problems.append(
                f"template {names[other_name]!r}: name {other_name!r} belongs to template "
                f"{other_slug!r}"
            )
    return problems


def document_problems(data: Mapping[str, Any]) -> list[str]:
    """Every problem of a document of the schema's form (``DOCUMENT_SCHEMA`` checks that
    first, and says what is wrong with the form): how its templates fit the roles, rules
    and endpoints there are, and each other."""
    signals = [str(s["name"]) for s in data.get("risk_signals") or []]
    return _template_problems(data.get("templates") or []) + _duplicates(signals, "risk signal")


def workflows_load(text: str) -> dict[str, Any]:
    """Parse a document's YAML with the bounded loader the role import uses
    (``roles.portability.document.load_yaml``)."""
    return load_yaml(text)
