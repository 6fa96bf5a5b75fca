"""Importing a workflow document: check it whole, then write templates, stages and risk
signals in one transaction (``document.py`` defines the document and its checks)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from acode.errors import AcodeError
from acode.inputs import json_schema_problems
from roles.models import Role
from sessions_app.models import AuditEventType, RiskSignal, WorkflowStage, WorkflowTemplate
from sessions_app.services.audit import audit_record
from sessions_app.services.runs.portability.document import (
    DOCUMENT_SCHEMA,
    FORMAT,
    STAGE_INTS,
    TEMPLATE_DEFAULTS,
    TEMPLATE_INTS,
    document_problems,
)


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
    with transaction.atomic():
        _write_templates(templates, summary)
        _write_signals(signals, summary)
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


def _write_templates(templates: list[dict[str, Any]], summary: WorkflowImportSummary) -> None:
    roles = {role.slug: role for role in Role.objects.all()}
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
        template.review_model_differs = item.get("review_model_differs", False)
        template.final_review = item.get("final_review", False)
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
                commands=stage.get("commands") or [],
                **{key: stage.get(key, 0) for key in STAGE_INTS},
            )
            summary.stages += 1
        summary.templates += 1


def _write_signals(signals: list[dict[str, Any]], summary: WorkflowImportSummary) -> None:
    for item in signals:
        RiskSignal.objects.update_or_create(
            name=item["name"],
            defaults={
                "description": item.get("description") or "",
                "kind": item["kind"],
                "patterns": list(item.get("patterns", [])),
                "threshold": item.get("threshold", 0),
                "tier": item["tier"],
                "score": item.get("score", 0),
                "sensitive": item.get("sensitive", False),
                "enabled": item.get("enabled", True),
            },
        )
        summary.signals += 1
