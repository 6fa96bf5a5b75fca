"""``acode backlog``: a project made, a spec imported from YAML, the board listed by
status, a proposal accepted or rejected, a task reprioritised, and the refusals a person can meet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sessions_app.models import BacklogProject, BacklogTask
from sessions_app.services.backlog import backlog_import
from tests.cli.conftest import RunCli

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = """\
epics:
  - key: greetings
    title: Greetings
    tasks:
      - key: hello
        title: Add hello.py
        priority: high
        acceptance_criteria:
          - hello() returns 'hello'
      - key: both
        title: Use hello
        depends_on: [hello]
"""


def test_a_spec_imported_and_the_board_listed(cli: RunCli, tmp_path: Path) -> None:
    made = cli("backlog", "new", "shop", "Shop", "--runs", "3")
    assert made.exit_code == 0, made.output
    assert "shop" in made.stdout and "acode/integration" in made.stdout
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC)

    imported = cli("backlog", "import", "shop", str(spec))
    assert imported.exit_code == 0, imported.output
    listed = cli("backlog", "list", "shop")
    assert "backlog (2)" in listed.stdout
    assert "hello (high) Add hello.py" in listed.stdout
    assert "both (medium) Use hello after hello" in listed.stdout

    shown = cli("backlog", "show", "shop", "hello")
    assert "- hello() returns 'hello'" in shown.stdout
    bumped = cli("backlog", "priority", "shop", "both", "high", "--json")
    assert json.loads(bumped.stdout)["priority"] == "high"


def test_a_proposal_accepted_and_refusals(cli: RunCli, tmp_path: Path) -> None:
    assert cli("backlog", "new", "shop", "Shop").exit_code == 0
    backlog_import(project=BacklogProject.objects.get(slug="shop"), actor="pm",
                   proposed_by="product-manager",
                   document={"tasks": [{"key": "docs", "title": "Write the docs"}]})  # fmt: skip
    assert "proposed (1)" in cli("backlog", "list", "shop").stdout
    accepted = cli("backlog", "accept", "shop", "docs")
    assert accepted.exit_code == 0, accepted.output
    assert BacklogTask.objects.get(key="docs").status == "backlog"

    again = cli("backlog", "accept", "shop", "docs")
    assert again.exit_code != 0
    assert "ACODE-BKL-001" in again.output
    missing = cli("backlog", "list", "nope")
    assert "ACODE-BKL-003" in missing.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("tasks:\n  - key: x\n    title: X\n    depends_on: [ghost]\n")
    refused = cli("backlog", "import", "shop", str(bad))
    assert "ACODE-BKL-004" in refused.output and "ghost" in refused.output


def test_a_proposal_rejected_with_a_reason(cli: RunCli) -> None:
    assert cli("backlog", "new", "shop", "Shop").exit_code == 0
    backlog_import(project=BacklogProject.objects.get(slug="shop"), actor="pm",
                   proposed_by="product-manager",
                   document={"tasks": [{"key": "docs", "title": "Write the docs"},
                                       {"key": "more", "title": "More docs",
                                        "depends_on": ["docs"]}]})  # fmt: skip
    kept = cli("backlog", "reject", "shop", "docs", "--reason", "No docs site")
    assert kept.exit_code != 0 and "ACODE-BKL-008" in kept.output and "more" in kept.output
    assert cli("backlog", "reject", "shop", "more", "--reason", "").exit_code != 0

    rejected = cli("backlog", "reject", "shop", "more", "--reason", "Not needed")
    assert rejected.exit_code == 0, rejected.output
    assert "more" in rejected.stdout and "(rejected" in rejected.stdout
    assert "Reason: Not needed" in rejected.stdout
    assert BacklogTask.objects.get(key="more").status == "rejected"
    listed = cli("backlog", "list", "shop").stdout
    assert "rejected (1)" in listed and "Not needed" in listed
