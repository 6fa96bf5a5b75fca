"""The layering contracts of pyproject.toml ([tool.importlinter], STYLE.md's directions)
hold: the check `make lint` runs, here too so a test run alone catches a wrong-way import.

They replace tests/roles/test_layout.py: roles never imports the sessions app, its modules
import each other in layers (the leaf modules stay leaves) and without cycles.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_every_import_contract_is_kept() -> None:
    result = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_imports_inside_function_bodies_count() -> None:
    graph = grimp.build_graph("roles", "sessions_app", cache_dir=None)
    # Both imported inside a function only (AppConfig.ready, a task's body).
    assert graph.direct_import_exists(importer="roles.apps", imported="roles.receivers")
    assert graph.direct_import_exists(
        importer="sessions_app.tasks", imported="sessions_app.agent.loop"
    )
