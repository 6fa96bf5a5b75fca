"""Every YAML import is bounded (size, depth, aliases) and every failure is a clean 400.

One loader (``acode.yamldoc``) reads role imports (API and ``manage.py roles_import``),
workflow imports and the CLI's plan files; these tests send it what used to break it.
"""

from __future__ import annotations

import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from acode.cli.commands.plans import steps_from_file
from acode.cli.errors import UsageError
from roles.models import Role
from sessions_app.models import AuditEvent, WorkflowTemplate

pytestmark = pytest.mark.django_db

IMPORTS = ["/api/roles/import/", "/api/workflows/import/"]
DEEP = "[" * 10_000 + "]" * 10_000
DEEP_BLOCK = "".join(f"{' ' * level}k:\n" for level in range(1_000)) + " " * 1_000 + "x"
# Nine levels of nine aliases: under 1 KiB of text, 387 million values once expanded.
ALIAS_BOMB = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.fixture
def boss(admin_user: Any) -> APIClient:
    api = APIClient()
    api.force_authenticate(admin_user)
    return api


def written() -> tuple[int, int, int]:
    return Role.objects.count(), WorkflowTemplate.objects.count(), AuditEvent.objects.count()


def post_yaml(api: APIClient, url: str, text: str) -> Any:
    return api.generic("POST", url, text.encode(), content_type="application/yaml")


@pytest.mark.parametrize("url", IMPORTS)
@pytest.mark.parametrize(("body", "problem"), [(DEEP, "levels deep"), (DEEP_BLOCK, "levels deep")])
def test_deeply_nested_yaml_is_a_clean_400(
    boss: APIClient, url: str, body: str, problem: str
) -> None:
    before = written()
    response = post_yaml(boss, url, body)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "ACODE-IMP-002"
    assert problem in response.json()["message"]
    assert written() == before


@pytest.mark.parametrize("url", IMPORTS)
def test_an_alias_bomb_is_refused_at_once(boss: APIClient, url: str) -> None:
    before = written()
    started = time.monotonic()
    response = post_yaml(boss, url, ALIAS_BOMB)
    assert time.monotonic() - started < 5  # expanded, it would take minutes and gigabytes
    assert response.status_code == 400
    assert response.json()["code"] == "ACODE-IMP-002"
    assert "aliases are expanded" in response.json()["message"]
    assert written() == before


@pytest.mark.parametrize("url", IMPORTS)
@pytest.mark.parametrize(
    ("body", "code"),
    [
        ("a: &a [*a]\n", "ACODE-IMP-002"),  # an alias inside what it names
        ('format: "\\0"\n', "ACODE-INP-003"),  # NUL through an escape
        ('format: "\\ud800"\n', "ACODE-INP-003"),  # an unpaired surrogate
        ("format: acode-roles/1\nroles: !!set {a, b}\n", "ACODE-IMP-001"),
        ("format: acode-roles/1\nroles: !!int nine\n", "ACODE-IMP-001"),
        ("format: acode-roles/1\nroles: [*nowhere]\n", "ACODE-IMP-001"),
        ("- just\n- a list\n", "ACODE-IMP-001"),
    ],
)
def test_yaml_that_is_not_a_document_is_a_clean_400(
    boss: APIClient, url: str, body: str, code: str
) -> None:
    response = post_yaml(boss, url, body)
    assert response.status_code == 400, response.content
    assert response.json()["code"] == code


@pytest.mark.parametrize("url", IMPORTS)
def test_a_date_stays_text(boss: APIClient, url: str) -> None:
    # PyYAML makes 2001-13-01 a date, and a ValueError (a 500) for a month that is not one.
    response = post_yaml(boss, url, "format: 2001-13-01\n")
    assert response.status_code == 400
    assert response.json()["code"] == "ACODE-IMP-001"
    assert "'2001-13-01'" in response.json()["message"]


def test_a_yaml_document_over_the_size_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text("format: acode-roles/1\n# " + "x" * (2 * 1024 * 1024) + "\n")
    before = written()
    with pytest.raises(CommandError, match="ACODE-IMP-002"):
        call_command("roles_import", str(big), stdout=StringIO())
    assert written() == before


def test_manage_roles_import_refuses_deep_yaml_and_alias_bombs(tmp_path: Path) -> None:
    for name, text in (("deep.yaml", DEEP), ("bomb.yaml", ALIAS_BOMB)):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(CommandError, match="ACODE-IMP-002"):
            call_command("roles_import", str(path), stdout=StringIO())


def test_the_cli_reads_plan_files_with_the_same_loader(tmp_path: Path) -> None:
    for name, text in (("deep.yaml", DEEP), ("bomb.yaml", ALIAS_BOMB)):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(UsageError, match="is not valid YAML"):
            steps_from_file(path)
    plain = tmp_path / "plan.yaml"
    plain.write_text("- Write the test\n- title: Make it pass\n  files: [app.py]\n")
    assert steps_from_file(plain) == [
        "Write the test",
        {"title": "Make it pass", "files": ["app.py"]},
    ]
