"""Workspace search (issue 38): the three tools, the API and the CLI show only what the one
view shows (no file secret by its name, no known secret value, nothing in .git or a skipped
directory), a change applied by a Coder is found by the next search, and bad input is
refused with its code. Real PostgreSQL, real index files; tool calls made as the job loop
makes them (through the executor, its audit rows and the one channel)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import override_settings

from roles.registry import registry
from sessions_app.agent.executor import ToolOutcome
from sessions_app.models import AgentSession
from sessions_app.services.search_index import (
    index_dir,
    search_index_build,
    workspace_search,
)
from tests.sessions_app.agent.containment.kit import Area, Caller, audit_text, fingerprint
from tests.sessions_app.jobkit import run, scripted_model, session_in

pytestmark = pytest.mark.django_db

# A value only the workspace holds, in a file secret by its name, and one the server knows
# as secret (its environment), in an ordinary file.
NAMED_VALUE = f"retrytoken{uuid.uuid4().hex}"
KNOWN_VALUE = f"known-retry-secret-{uuid.uuid4().hex}"
HIDDEN = (".env", ".git/", "node_modules/", "__pycache__/")


def plant(ws: Path) -> None:
    files = {
        "src/retry.py": (
            "import time\n\n\ndef with_retries(call, attempts=3):\n"
            '    """Call again with exponential backoff when the call fails."""\n'
            "    for attempt in range(attempts):\n        try:\n            return call()\n"
            "        except OSError:\n            time.sleep(2 ** attempt)\n"
            "    raise RuntimeError('gave up retrying')\n"
        ),
        "src/client.py": (
            "from src.retry import with_retries\n\n\ndef fetch(url):\n"
            "    return with_retries(lambda: open(url).read())\n"
        ),
        "src/config.py": f"RETRY_SERVICE_KEY = '{KNOWN_VALUE}'  # retry backoff service\n",
        ".env": f"RETRY_TOKEN={NAMED_VALUE}\nwith_retries=1\n",
        ".git/config": f"[retry]\n\twith_retries = {NAMED_VALUE}\n",
        "node_modules/retry/index.js": "function with_retries() { /* retry backoff */ }\n",
        "__pycache__/retry.py": "def with_retries(): pass  # retry backoff\n",
        "README.md": "# Demo\n\nRetries are handled in src/retry.py with backoff.\n",
    }
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)


def leaks(text: str) -> list[str]:
    found = [v for v in (NAMED_VALUE, KNOWN_VALUE) if v in text]
    return found + [h for h in HIDDEN if h in text]


@pytest.fixture
def known_secret(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("ACODE_TEST_RETRY_SECRET_TOKEN", KNOWN_VALUE)
    return KNOWN_VALUE


@pytest.fixture
def index_root(tmp_path: Path) -> Any:
    with override_settings(ACODE_INDEX_ROOT=tmp_path / "index"):
        yield tmp_path / "index"


@pytest.fixture
def workspace(tmp_path: Path, index_root: Path, known_secret: str) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    plant(ws)
    return ws


@pytest.fixture
def planner(user: User, workspace: Path) -> AgentSession:
    session = session_in("planner", user, workspace=workspace)
    search_index_build(workspace)
    return session


def call(session: AgentSession, user: User, tmp_path: Path, tool: str, **args: Any) -> ToolOutcome:
    sentinel = tmp_path / "sentinel"
    sentinel.mkdir(exist_ok=True)
    caller = Caller(session, user, Area(Path(session.workspace), sentinel, fingerprint(sentinel)))
    outcome = caller(tool, **args)
    audited = audit_text(caller.rows)
    assert NAMED_VALUE not in audited and KNOWN_VALUE not in audited
    return outcome


def test_the_index_lives_in_server_state_outside_the_workspace(
    planner: AgentSession, workspace: Path, index_root: Path
) -> None:
    where = index_dir(workspace)
    assert where.is_dir() and index_root in where.parents
    assert workspace not in where.parents and where not in workspace.parents


def test_semantic_search_finds_by_meaning_and_shows_nothing_hidden(
    planner: AgentSession, user: User, tmp_path: Path
) -> None:
    outcome = call(planner, user, tmp_path, "semantic_search",
                   query="where are retries handled with backoff?", limit=10)  # fmt: skip
    assert outcome.status == "ok", outcome
    shown = outcome.for_model()
    assert "src/retry.py:" in shown and "with_retries" in shown
    assert not leaks(shown), shown
    assert "untrusted" in shown.lower() or "<" in shown  # through the one channel, as data


def test_search_code_and_find_references_show_nothing_hidden(
    planner: AgentSession, user: User, tmp_path: Path
) -> None:
    defined = call(planner, user, tmp_path, "search_code", name="with_retries")
    assert defined.status == "ok", defined
    assert "src/retry.py:4: definition of with_retries" in defined.output, defined.output
    used = call(planner, user, tmp_path, "find_references", symbol="with_retries")
    assert "src/client.py:" in used.output, used.output
    for outcome in (defined, used):
        assert not leaks(outcome.for_model()), outcome.output


def test_globs_narrow_the_search_and_are_checked_like_paths(
    planner: AgentSession, user: User, tmp_path: Path
) -> None:
    only_docs = call(planner, user, tmp_path, "semantic_search", query="retries backoff",
                     paths=["*.md"])  # fmt: skip
    ranked = [line for line in only_docs.output.splitlines() if not line.startswith(" ")]
    assert ranked and all(line.split(" ")[1].startswith("README.md:") for line in ranked), ranked
    blank = call(planner, user, tmp_path, "semantic_search", query="   ")
    assert blank.status == "denied" and "empty" in blank.reason
    for bad in ("/etc/*", "../*", ".git/**", "src/../../x"):
        refused = call(planner, user, tmp_path, "semantic_search", query="x", paths=[bad])
        assert refused.status == "denied", (bad, refused)
        assert refused.code == "ACODE-ROL-003"


def test_the_planner_holds_the_search_tools(planner: AgentSession) -> None:
    tools = set(registry.get("planner").access.tools)
    assert {"semantic_search", "search_code", "find_references"} <= tools
    assert {"semantic_search", "search_code", "find_references"} <= set(
        registry.get("explorer").access.tools
    )


def test_a_search_before_any_index_says_it_is_missing_and_queued(
    user: User, workspace: Path
) -> None:
    answer = workspace_search(workspace, "retries")
    assert answer.progress.state in ("missing", "building", "ready")
    if answer.progress.state == "missing":
        assert "a build was queued" in answer.note


def test_a_search_while_building_says_how_far_it_got(workspace: Path) -> None:
    from sessions_app.services.search_index import code_index

    index = code_index(workspace)
    index.begin(5000)
    index.put("src/retry.py", (workspace / "src/retry.py").read_text())
    answer = workspace_search(workspace, "retries")
    assert answer.note == "index building: 1 of 5,000 files; results may be incomplete"
    index.finish()


# -- the API ---------------------------------------------------------------------------
def test_api_search_returns_the_same_hits_without_hidden_files(
    planner: AgentSession, api: Any
) -> None:
    url = f"/api/sessions/{planner.pk}/search/"
    response = api.post(url, {"query": "retries with backoff", "limit": 5}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["index"]["state"] == "ready" and body["index"]["note"] == ""
    assert body["hits"][0]["path"].startswith("src/") or body["hits"][0]["path"] == "README.md"
    assert all(h["why"] for h in body["hits"])
    assert not leaks(response.content.decode())
    for kind in ("definitions", "references"):
        found = api.post(url, {"query": "with_retries", "kind": kind}, format="json")
        assert found.status_code == 200 and found.json()["hits"], found.content
        assert not leaks(found.content.decode())


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"query": ""}, "ACODE-INP-002"),
        ({"query": "x", "limit": 0}, "ACODE-API-400"),
        ({"query": "x", "limit": 51}, "ACODE-API-400"),
        ({"query": "x", "mode": "psychic"}, "ACODE-API-400"),
        ({"query": "x", "paths": ["/etc/passwd"]}, "ACODE-SRC-001"),
        ({"query": "x", "paths": ["src/../../etc"]}, "ACODE-SRC-001"),
        ({"query": "x", "paths": [".git/config"]}, "ACODE-SRC-001"),
        ({"query": "x", "extra": 1}, "ACODE-API-400"),
    ],
)
def test_api_search_refuses_bad_input(
    planner: AgentSession, api: Any, body: dict[str, Any], code: str
) -> None:
    response = api.post(f"/api/sessions/{planner.pk}/search/", body, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == code, response.content


def test_api_search_of_a_session_one_may_not_see_is_404(
    planner: AgentSession, django_user_model: Any
) -> None:
    from rest_framework.test import APIClient

    other = APIClient()
    other.force_authenticate(django_user_model.objects.create_user("eve", "e@x.org", "pw-eve-1"))
    response = other.post(f"/api/sessions/{planner.pk}/search/", {"query": "x"}, format="json")
    assert response.status_code == 404


def test_the_search_api_is_in_the_schema(api: Any) -> None:
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operation = schema["paths"]["/api/sessions/{id}/search/"]["post"]
    assert operation["operationId"] == "sessions_search"
    assert "400" in operation["responses"] and "200" in operation["responses"]


# -- a Coder's change is found by the next search --------------------------------------
def test_a_change_applied_by_a_coder_is_found_by_the_next_search(
    user: User, workspace: Path, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    session = session_in("coder", user, workspace=workspace)
    search_index_build(workspace)
    assert not workspace_search(workspace, "quaternion_slerp", mode="bm25").hits
    scripted_model("coder", [
        {"tool_calls": [{"name": "create_file", "arguments": {
            "path": "src/rotation.py",
            "content": "def quaternion_slerp(a, b, t):\n    return a * (1 - t) + b * t\n",
        }}]},
        {"content": "Added quaternion_slerp."},
    ])  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        job = run(session, "Add slerp", user)
    assert job.status == "succeeded", job.error
    hits = workspace_search(workspace, "quaternion_slerp", mode="bm25").hits
    assert hits and hits[0].path == "src/rotation.py"
    outcome = call(session, user, tmp_path, "search_code", name="quaternion_slerp")
    assert "src/rotation.py:1: definition of quaternion_slerp" in outcome.output


def test_dashboard_panel_shows_the_index_state(
    planner: AgentSession, client: Any, user: User
) -> None:
    client.force_login(user)
    page = client.get(f"/sessions/{planner.pk}/").content.decode()
    assert 'id="session-search-index"' in page and 'data-state="ready"' in page
    panel = client.get(f"/sessions/{planner.pk}/search-index/").content.decode()
    assert 'id="session-search-index"' in panel


def test_the_upgrade_gives_an_existing_database_the_search_tools() -> None:
    import importlib

    from django.apps import apps

    from roles.models import Role, Tool

    upgrade = importlib.import_module("roles.migrations.0015_issue38_search_tools")
    planner = Role.objects.get(slug="planner")
    planner.allowed_tools.remove(*Tool.objects.filter(name__in=upgrade.SEARCH_TOOLS))
    Tool.objects.filter(name__in=upgrade.SEARCH_TOOLS).delete()  # as before issue 38
    upgrade.forwards(apps, None)
    assert set(Tool.objects.filter(enabled=True).values_list("name", flat=True)) >= set(
        upgrade.SEARCH_TOOLS
    )
    assert set(planner.allowed_tools.values_list("name", flat=True)) == {
        *upgrade.OLD_PLANNER_TOOLS, *upgrade.SEARCH_TOOLS
    }  # fmt: skip
