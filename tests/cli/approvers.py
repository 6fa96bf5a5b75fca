"""A second CLI user who may approve runs (separation of duties needs someone else)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token

from tests.cli.conftest import RunCli, make_runner
from tests.sessions_app.runkit import grant_approve


def approver_runner(url: str, django_user_model: Any, config_dir: Path) -> RunCli:
    """The CLI as ``approver``: holds 'approve run' and may see every session."""
    approver = grant_approve(django_user_model.objects.create_user("approver", password="x"))
    approver.user_permissions.add(Permission.objects.get(codename="view_all_sessions"))
    token = Token.objects.create(user=approver).key
    return make_runner(url, token, config_dir.parent / "approver-config")
