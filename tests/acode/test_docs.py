from __future__ import annotations

from pathlib import Path

from acode.errors import ERROR_CODES, error_table_markdown

ROOT = Path(__file__).resolve().parent.parent.parent


def test_readme_error_table_is_current() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert error_table_markdown() in readme, "regenerate with: python -m acode.error_codes"


def test_spec_codes_are_documented() -> None:
    assert {"ACODE-ROL-001", "ACODE-ROL-002", "ACODE-ROL-003"} <= set(ERROR_CODES)
