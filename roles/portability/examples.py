"""Policy examples run on demand: of the stored roles, or of a roles document before it is
imported (so a team's CI can check a role file), with a report as data (in words:
``acode.policy_report``).

``manage.py acode_policy_test``, ``acode role test`` (through POST /api/roles/test/) and
the API share this; the examples are decided by ``roles.services.policy_examples_run``
exactly as a save decides them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from acode.inputs import json_schema_check
from roles.decision import ExampleResult
from roles.portability.document import DOCUMENT_SCHEMA, FORMAT
from roles.services import policy_examples_run


def policy_test(document: Mapping[str, Any] | None = None) -> list[ExampleResult]:
    """Decide the examples of the stored roles (``document`` None) or of a document's roles
    (its form checked first: ACODE-IMP-001). Writes nothing."""
    if document is not None:
        refusal = f"Not a {FORMAT} document"
        json_schema_check(DOCUMENT_SCHEMA, document, code="ACODE-IMP-001", refusal=refusal)
    return policy_examples_run(document)


def policy_report(results: Sequence[ExampleResult]) -> dict[str, Any]:
    """The results as data: counts, then every example with its decision and rule."""
    failed = sum(1 for r in results if not r.passed)
    return {
        "passed": failed == 0,
        "examples": len(results),
        "failed": failed,
        "results": [r.as_data() for r in results],
    }
