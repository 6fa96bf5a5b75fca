from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.agent.context import build_context
from tests.sessions_app.jobkit import session_in


@pytest.fixture
def project(tmp_path: Path) -> Path:
    ws = tmp_path / "shop"
    files = {
        "README.md": "# Shop\nOnline shop with users and orders.\n",
        "pyproject.toml": "[project]\nname = 'shop'\n",
        "shop/services/auth_service.py": "class AuthService:\n    def generate_token(self, user):\n        return 'token'\n",
        "shop/interfaces/auth.py": "class IAuthService:\n    pass\n",
        "shop/models/user.py": "class User:\n    name: str\n",
        "shop/controllers/orders.py": "def list_orders():\n    return []\n",
        "tests/test_auth_service.py": "def test_generate_token():\n    assert True\n",
        "tests/test_orders.py": "def test_list():\n    assert True\n",
        "node_modules/lib/index.js": "module.exports = 1\n",
        "static/vendor/htmx.min.js": "x",
        "build/out.py": "ignored = True\n",
        "logo.png": "\x89PNG\x00\x00binary",
        "data.bin": "abc\x00def",
        ".gitignore": "build/\n",
    }
    for name, text in files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    return ws


def paths(bundle: Any) -> list[str]:
    return [f.path for f in bundle.files]


def test_broad_context_has_structure_key_files_and_relevant_files(project: Path) -> None:
    bundle = build_context(
        workspace=project,
        role_name="Planner",
        strategy="broad",
        request="Add JWT authentication to the auth service",
    )
    got = paths(bundle)
    assert got[:2] == ["(request)", "(structure)"]
    assert "README.md" in got and "pyproject.toml" in got
    assert got.index("shop/services/auth_service.py") < got.index("shop/controllers/orders.py")
    for excluded in (
        "node_modules/lib/index.js",
        "static/vendor/htmx.min.js",
        "build/out.py",
        "logo.png",
        "data.bin",
    ):
        assert excluded not in got
    assert "shop/" in bundle.text  # the structure section
    assert bundle.token_count <= bundle.budget + 200


def test_focused_context_is_the_named_files_and_their_tests(project: Path) -> None:
    bundle = build_context(
        workspace=project,
        role_name="Coder",
        strategy="focused",
        request="Implement AuthService.GenerateToken",
    )
    assert paths(bundle) == [
        "(request)",
        "shop/services/auth_service.py",
        "tests/test_auth_service.py",
    ]


def test_change_focused_context_starts_from_the_diffs(project: Path) -> None:
    diff = "--- a/shop/models/user.py\n+++ b/shop/models/user.py\n@@\n+    password_hash: str\n"
    bundle = build_context(
        workspace=project,
        role_name="Reviewer",
        strategy="change_focused",
        request="Review",
        pending={"shop/models/user.py": diff},
    )
    assert [(f.path, f.mode) for f in bundle.files][:3] == [
        ("(request)", "request"),
        ("shop/models/user.py", "diff"),
        ("shop/models/user.py", "full"),
    ]
    assert "+    password_hash: str" in bundle.text


def test_scenario_8_strategies_differ_in_size(project: Path) -> None:
    broad = build_context(
        workspace=project, role_name="Planner", strategy="broad", request="Add authentication"
    )
    focused = build_context(
        workspace=project,
        role_name="Coder",
        strategy="focused",
        request="Implement AuthService.GenerateToken",
    )
    assert broad.token_count > focused.token_count
    assert abs(sum(f.share for f in broad.files) - 1.0) < 1e-6


def test_adaptive_picks_a_strategy(project: Path) -> None:
    assert (
        build_context(
            workspace=project,
            role_name="Default",
            strategy="adaptive",
            request="Explain the project",
        ).strategy
        == "broad"
    )
    assert (
        build_context(
            workspace=project,
            role_name="Default",
            strategy="adaptive",
            request="What does auth_service.py do?",
        ).strategy
        == "focused"
    )
    assert (
        build_context(
            workspace=project,
            role_name="Default",
            strategy="adaptive",
            request="x",
            pending={"README.md": "+x"},
        ).strategy
        == "change_focused"
    )


def test_budget_cap_from_the_model_window(project: Path) -> None:
    bundle = build_context(
        workspace=project, role_name="Planner", strategy="broad", request="x", budget_cap=100
    )
    assert bundle.budget == 100
    assert "capped" in bundle.notes[0]


@pytest.mark.django_db
def test_context_api_scenario_8(api: APIClient, user: Any, project: Path) -> None:
    session = session_in("planner", user, workspace=project, plan=False)
    broad = api.get(f"/api/sessions/{session.pk}/context/").json()
    assert broad["role"] == "Planner" and broad["strategy"] == "broad"
    coder = api.get(
        f"/api/sessions/{session.pk}/context/",
        {"role": "coder", "task": "Implement AuthService.GenerateToken"},
    ).json()
    assert coder["strategy"] == "focused"
    assert [f["path"] for f in coder["files"]][1:] == [
        "shop/services/auth_service.py",
        "tests/test_auth_service.py",
        "shop/controllers/orders.py (style)",  # a Coder also sees how the project writes code
    ]
    assert broad["token_count"] > coder["token_count"]
