"""The workflow templates and risk signals acode ships with (written once, on an empty
database; admins edit them afterwards)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from roles.models import Role
from sessions_app.models import RiskSignal, WorkflowStage, WorkflowTemplate

TEMPLATES: list[dict[str, Any]] = [
    {
        "slug": "low",
        "name": "Low risk: code, test, review",
        "description": "The request is its own one-step plan: Coder, then Tester, then Reviewer.",
        "risk_tier": "low",
        "stages": [
            {"purpose": "code", "role": "coder"},
            {"purpose": "test", "role": "tester"},
            {"purpose": "review", "role": "reviewer"},
        ],
    },
    {
        "slug": "medium",
        "name": "Medium risk: plan, then code, test and review each step",
        "description": "Planner writes a structured plan; each step goes Coder → Tester → "
        "Reviewer, back to the Coder when changes are requested. A model other than the "
        "Coder's reviews.",
        "risk_tier": "medium",
        "review_model_differs": True,
        "stages": [
            {"purpose": "plan", "role": "planner"},
            {"purpose": "code", "role": "coder"},
            {"purpose": "test", "role": "tester"},
            {"purpose": "review", "role": "reviewer"},
        ],
    },
    {
        "slug": "high",
        "name": "High risk: plan, explore, code/test/review, then a person approves",
        "description": "As medium, with an Explorer before coding, a final review of the whole "
        "change, and an approval gate at the end: a person other than the one who started the "
        "run approves exactly what is committed.",
        "risk_tier": "high",
        "review_model_differs": True,
        "stages": [
            {"purpose": "plan", "role": "planner"},
            {"purpose": "explore", "role": "explorer"},
            {"purpose": "code", "role": "coder"},
            {"purpose": "test", "role": "tester"},
            {"purpose": "review", "role": "reviewer"},
            {"purpose": "approval", "role": None},
        ],
        "final_review": True,
    },
]

SIGNALS: list[dict[str, Any]] = [
    {
        "name": "auth-paths",
        "description": "Authentication and authorisation code",
        "kind": "path_glob",
        "patterns": ["*auth*", "*login*", "*permission*", "*session*.py", "*jwt*", "*oauth*"],
        "tier": "high",
        "score": 3,
        "sensitive": True,
    },
    {
        "name": "secret-paths",
        "description": "Secrets, keys and environment files",
        "kind": "path_glob",
        "patterns": ["*secret*", ".env", ".env.*", "*.pem", "*.key", "*credential*", "*.p12"],
        "tier": "high",
        "score": 3,
        "sensitive": True,
    },
    {
        "name": "migration-paths",
        "description": "Database migrations",
        "kind": "path_glob",
        "patterns": ["*/migrations/*", "migrations/*", "*.sql"],
        "tier": "high",
        "score": 2,
        "sensitive": True,
    },
    {
        "name": "settings-paths",
        "description": "Settings and configuration",
        "kind": "path_glob",
        "patterns": ["settings.py", "*/settings/*", "*settings*.py", "*.ini", "*.cfg"],
        "tier": "medium",
        "score": 1,
        "sensitive": True,
    },
    {
        "name": "ci-paths",
        "description": "CI pipelines",
        "kind": "path_glob",
        "patterns": [".github/*", ".gitlab-ci.yml", ".ci/*", "Jenkinsfile", ".circleci/*"],
        "tier": "high",
        "score": 2,
        "sensitive": True,
    },
    {
        "name": "dependency-files",
        "description": "Dependency manifests and lock files",
        "kind": "path_glob",
        "patterns": [
            "requirements*.txt",
            "pyproject.toml",
            "poetry.lock",
            "Pipfile*",
            "package.json",
            "package-lock.json",
            "yarn.lock",
            "Cargo.toml",
            "Cargo.lock",
            "go.mod",
            "go.sum",
            "*.csproj",
        ],
        "tier": "medium",
        "score": 1,
        "sensitive": True,
    },
    {
        "name": "security-words",
        "description": "The request is about security-sensitive behaviour",
        "kind": "request_keyword",
        "patterns": [
            "auth",
            "authentication",
            "password",
            "secret",
            "token",
            "jwt",
            "crypto",
            "encrypt",
            "permission",
        ],
        "tier": "high",
        "score": 2,
        "sensitive": True,
    },
    {
        "name": "schema-words",
        "description": "The request changes data or dependencies",
        "kind": "request_keyword",
        "patterns": ["migration", "migrate", "schema", "dependency", "upgrade"],
        "tier": "medium",
        "score": 1,
    },
    {
        "name": "large-plan",
        "description": "A plan of many steps",
        "kind": "plan_steps",
        "threshold": 6,
        "tier": "medium",
        "score": 1,
    },
    {
        "name": "very-large-plan",
        "description": "A plan of very many steps",
        "kind": "plan_steps",
        "threshold": 12,
        "tier": "high",
        "score": 2,
    },
    {
        "name": "earlier-failures",
        "description": "Runs in this session failed or were blocked before",
        "kind": "failed_runs",
        "threshold": 2,
        "tier": "medium",
        "score": 1,
    },
    {
        "name": "unattended",
        "description": "Autonomy mode: the run commits without a person approving",
        "kind": "unattended",
        "tier": "low",
        "score": 1,
    },
]


@transaction.atomic
def runs_seed_defaults() -> bool:
    """Write the shipped templates and signals when there are none (and the roles exist)."""
    wrote = False
    roles = {role.slug: role for role in Role.objects.all()}
    if not WorkflowTemplate.objects.exists() and all(
        s["role"] in roles for t in TEMPLATES for s in t["stages"] if s["role"]
    ):
        for data in TEMPLATES:
            template = WorkflowTemplate.objects.create(
                **{k: v for k, v in data.items() if k != "stages"}
            )
            for position, stage in enumerate(data["stages"]):
                WorkflowStage.objects.create(
                    template=template,
                    position=position,
                    purpose=stage["purpose"],
                    role=roles[stage["role"]] if stage["role"] else None,
                )
        wrote = True
    if not RiskSignal.objects.exists():
        for signal in SIGNALS:
            RiskSignal.objects.create(**signal)
        wrote = True
    return wrote
