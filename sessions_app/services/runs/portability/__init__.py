"""Workflow templates and risk signals as one YAML document: export, check, import."""

from __future__ import annotations

from sessions_app.services.runs.portability.document import (
    DOCUMENT_SCHEMA,
    FORMAT,
    document_problems,
    stage_commands_problems,
    stage_order_problems,
    workflows_export,
    workflows_load,
)
from sessions_app.services.runs.portability.importing import (
    WorkflowImportSummary,
    workflows_import,
)

__all__ = [
    "DOCUMENT_SCHEMA",
    "FORMAT",
    "WorkflowImportSummary",
    "document_problems",
    "stage_commands_problems",
    "stage_order_problems",
    "workflows_export",
    "workflows_import",
    "workflows_load",
]
