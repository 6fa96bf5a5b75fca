"""The roles page: every role's definition, the tool matrix and the transition rules."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_roles_page_shows_specs_tool_matrix_and_rules(lead_client: Client) -> None:
    html = lead_client.get("/roles/").content.decode()
    assert "Task decomposition and planning" in html
    assert "Cannot modify files (read-only access)" in html
    assert "roles/planner" in html
    assert "Change-focused" in html
    assert "80000 tokens" in html
    matrix = html.split('id="tool-matrix"')[1].split("</table>")[0]
    write_row = matrix.split("<code>write_file</code>")[1].split("</tr>")[0]
    assert "needs <code>write_files</code>" in write_row  # withheld from Planner, with the why
    rules = html.split('id="transition-rules"')[1]
    assert "when the session has a plan" in rules
    assert "built in" in rules
