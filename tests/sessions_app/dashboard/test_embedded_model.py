"""The dashboard and ``make run`` say in one line that the embedded small model is for
trying acode, not for real work, and link to the model settings."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from acode import devserver, modelserver
from acode.embedded import free_port, stop_process
from roles.models import Role
from roles.services import role_write
from tests.sessions_app.jobkit import scripted_model

pytestmark = pytest.mark.django_db

LINE = "is for trying acode, not for real work"


def test_the_board_says_the_embedded_model_is_for_trying_acode(dev_client: Client) -> None:
    page = dev_client.get("/").content.decode()
    assert LINE in page
    assert 'href="/admin/roles/modelendpoint/"' in page


def test_no_such_line_when_the_default_model_is_not_the_embedded_one(
    dev_client: Client, settings: Any
) -> None:
    settings.ACODE_LLM_DEFAULT_MODEL = "qwen2.5-coder:7b"
    assert LINE not in dev_client.get("/").content.decode()


def test_no_such_line_when_every_role_names_its_model(dev_client: Client) -> None:
    endpoint = scripted_model("default", [{"content": "ok"}])
    for slug in Role.objects.exclude(slug="default").values_list("slug", flat=True):
        role_write(data={"preferred_model": endpoint.name}, create=False, slug=slug, actor="t")
    assert LINE not in dev_client.get("/").content.decode()


@pytest.mark.slow
@pytest.mark.skipif(not modelserver.available(), reason="llama-cpp-python and the model wheel")
def test_make_run_says_it_in_one_line_when_it_serves_the_embedded_model(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    monkeypatch.delenv("ACODE_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("ACODE_LLM_MODEL_PATH", raising=False)
    monkeypatch.setattr(devserver, "MODEL_PORT", free_port())
    env = {**os.environ, "ACODE_VAR_DIR": str(tmp_path)}
    proc = devserver._start_model(env)
    assert proc is not None
    stop_process(proc)
    lines = [line for line in capsys.readouterr().out.splitlines() if LINE in line]
    assert len(lines) == 1 and "/admin/roles/modelendpoint/" in lines[0]
    assert env["ACODE_LLM_BASE_URL"].endswith(f":{devserver.MODEL_PORT}/v1")
