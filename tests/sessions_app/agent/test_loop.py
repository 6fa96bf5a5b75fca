from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from sessions_app.models import AuditEvent, Job, JobStatus, PendingChange
from tests.sessions_app.jobkit import run, scripted_model, session_in

pytestmark = pytest.mark.django_db


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def events(job: Job, kind: str) -> list[dict[str, Any]]:
    return [e.data for e in job.events.filter(kind=kind).order_by("seq")]


def test_planner_job_executes_none_of_the_forbidden_calls(user: Any, tmp_path: Path) -> None:
    (tmp_path / "victim.txt").write_text("keep me")
    scripted_model(
        "planner",
        [
            {
                "tool_calls": [
                    call("write_file", path="victim.txt", content="pwned"),
                    call("execute_command", argv=["touch", "created-by-planner"]),
                    call("delete_file", path="victim.txt"),
                ]
            },
            {
                "content": '{"steps": [{"title": "Create AuthService"}, {"title": "Add login endpoint"}]}'
            },
        ],
    )
    session = session_in("planner", user, workspace=tmp_path, plan=False)
    job = run(session, "Add JWT authentication", user)
    assert job.status == JobStatus.SUCCEEDED
    assert (tmp_path / "victim.txt").read_text() == "keep me"
    assert not (tmp_path / "created-by-planner").exists()
    denied = AuditEvent.objects.filter(event_type="ToolDenied", session=session)
    assert denied.count() == 3
    assert set(denied.values_list("result", flat=True)) == {"ACODE-ROL-003"}
    assert {d.details["tool"] for d in denied} == {"write_file", "execute_command", "delete_file"}
    assert not AuditEvent.objects.filter(event_type="RoleAction", session=session).exists()
    assert not PendingChange.objects.filter(session=session).exists()
    reasons = [e["reason"] for e in events(job, "tool_denied")]
    assert "missing permission write_files" in reasons[0]


PLANNER_TOOLS = [
    "find_references", "grep_search", "list_directory", "read_file", "search_code",
    "semantic_search",
]  # fmt: skip


def test_planner_is_offered_only_its_effective_tools(user: Any) -> None:
    scripted_model("planner", [{"content": "1. Create AuthService\n2. Add login endpoint"}])
    job = run(session_in("planner", user, plan=False), "Plan it", user)
    request = events(job, "llm_request")[0]
    assert request["tools"] == PLANNER_TOOLS
    assert [t["function"]["name"] for t in request["tool_definitions"]] == request["tools"]
    system = request["messages"][0]["content"]
    assert "You are the Planner agent" in system


def test_planner_answer_becomes_the_plan(user: Any) -> None:
    scripted_model(
        "planner",
        [
            {
                "content": 'Here: {"steps": [{"title": "Create AuthService", "files": ["auth.py"]}, {"title": "Add login endpoint", "depends_on": [1]}]}'
            }
        ],
    )
    session = session_in("planner", user, plan=False)
    run(session, "Add JWT", user)
    session.refresh_from_db()
    assert [s["title"] for s in session.plan] == ["Create AuthService", "Add login endpoint"]
    assert session.plan[0]["files"] == ["auth.py"]
    scripted_model(
        "planner", [{"content": "1. First thing\n2. Second thing\n3. Third"}], name="plain"
    )
    run(session, "again", user)
    session.refresh_from_db()
    assert [s["title"] for s in session.plan] == ["First thing", "Second thing", "Third"]


def _adversarial_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "docs").mkdir()
    (ws / "src" / "app.py").write_text("x = 1\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    os.symlink(outside, ws / "src" / "escape")
    os.symlink(outside / "secret.txt", ws / "src" / "link.txt")
    return ws


def test_adversarial_calls_are_all_denied_and_audited(user: Any, tmp_path: Path) -> None:
    ws = _adversarial_workspace(tmp_path)
    from roles.services import role_write

    role_write(data={"write_paths": ["src/**"]}, create=False, slug="coder", actor="test")
    coder_calls = [
        call("write_file", path="../x", content="a"),
        call("create_file", path="../x", content="a"),
        call("create_file", path="/etc/x", content="a"),
        call("write_file", path="/etc/passwd", content="a"),
        call("create_file", path="docs/a.md", content="a"),
        call("create_file", path="src/escape/new.txt", content="a"),
        call("write_file", path="src/link.txt", content="a"),
        call("delete_file", path="src/link.txt"),
        call("create_file", path="~/x", content="a"),
        call("create_file", path="src/../../x", content="a"),
        call("create_file", path=".git/hooks/pre-commit", content="a"),
        call("read_file", path="src/escape/secret.txt"),
        call("read_file", path="/etc/passwd"),
        call("write_file", path="src/app.py"),  # missing content: schema
        call("execute_command", argv=["true"] * 1001),
        call("execute_command", argv="touch src/pwn"),
        call("execute_command", argv=[" ", "src/pwn"]),
        call("read_file", path="/dev/zero"),
    ]
    steps = [{"tool_calls": [c]} for c in coder_calls] + [{"content": "done"}]
    scripted_model("coder", steps)
    session = session_in("coder", user, workspace=ws)
    from roles.services import role_write as rw

    rw(data={"max_llm_calls": 50}, create=False, slug="coder", actor="test")
    job = run(session, "attack", user)
    assert job.status == JobStatus.SUCCEEDED, (job.error_code, job.error_message)

    tester_calls = [
        call("execute_command", argv=["pytest;", "rm", "-rf", "."]),
        call("execute_command", argv=["pytest", "-p", "evil_plugin"]),
        call("execute_command", argv=["sh", "-c", "pytest"]),
        call("run_tests", argv=["rm", "-rf", "."]),
        call("execute_command", argv=["pytest", "@/proc/1/environ"]),
        call("execute_command", argv=["python", "-c", "import os"]),
        call("write_file", path="src/app.py", content="y = 2\n"),
    ]
    scripted_model("tester", [{"tool_calls": [c]} for c in tester_calls] + [{"content": "done"}])
    tester_session = session_in("tester", user, workspace=ws, change=True)
    tester_job = run(tester_session, "attack", user)
    assert tester_job.status == JobStatus.SUCCEEDED

    total = len(coder_calls) + len(tester_calls)
    assert total >= 20
    denied = AuditEvent.objects.filter(event_type="ToolDenied")
    assert denied.count() == total
    assert not AuditEvent.objects.filter(event_type="RoleAction").exists()
    # Links are found when the path is opened: allowed by the lexical check, refused running.
    decided = AuditEvent.objects.filter(event_type="ToolDecision")
    refused_running = denied.filter(details__phase="outcome")
    assert decided.count() == refused_running.count() == 4
    assert set(refused_running.values_list("details__rule", flat=True)) == {"path"}
    assert not (tmp_path / "x").exists() and not (ws / "docs" / "a.md").exists()
    assert not (tmp_path / "outside" / "new.txt").exists()
    assert (tmp_path / "outside" / "secret.txt").read_text() == "outside"
    assert (ws / "src" / "app.py").read_text() == "x = 1\n"
    assert not (ws / "src" / "pwn").exists()
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    results = [e["reason"] for e in events(job, "tool_denied")]
    assert any("symbolic link" in r for r in results)
    assert any("may write only src/**" in r for r in results)


def test_allowed_calls_run_and_record_changes(user: Any, tmp_path: Path) -> None:
    scripted_model(
        "coder",
        [
            {"tool_calls": [call("create_file", path="test.txt", content="hello")]},
            {"tool_calls": [call("write_file", path="test.txt", content="hello world\n")]},
            {"tool_calls": [call("execute_command", argv=["python", "-c", "print(40 + 2)"])]},
            {"content": "[SUCCESS] File created: test.txt"},
        ],
    )
    session = session_in("coder", user, workspace=tmp_path)
    job = run(session, "Create a new file called test.txt with content 'hello'", user)
    assert job.status == JobStatus.SUCCEEDED and job.result == "[SUCCESS] File created: test.txt"
    assert (tmp_path / "test.txt").read_text() == "hello world\n"
    actions = AuditEvent.objects.filter(event_type="RoleAction", session=session).order_by("seq")
    assert [(a.role, a.details["tool"], a.target, a.result) for a in actions] == [
        ("coder", "create_file", "test.txt", "Success (5 bytes created)"),
        ("coder", "write_file", "test.txt", "Success (12 bytes written)"),
        ("coder", "execute_command", "python -c print(40 + 2)", "exit 0"),
    ]
    assert "42" in events(job, "tool_result")[2]["output"]
    change = PendingChange.objects.get(session=session, path="test.txt")
    assert change.kind == "created" and "+hello world" in change.diff


def test_secrets_never_reach_the_model(user: Any, tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / ".env").write_text("DATABASE_PASSWORD=hunter2-very-secret\n")
    (tmp_path / "src" / "settings.py").write_text(
        'api_key = "sk-live-abcdefghijklmnopqrstuvwxyz"\npassword="p4ssw0rd-xyz"\nDEBUG = True\n'
    )
    (tmp_path / "id_rsa").write_text(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAAsecretkeymaterial\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    (tmp_path / "src" / "token.txt").write_text("ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\n")
    secrets = [
        "hunter2-very-secret",
        "sk-live-abcdefghijklmnopqrstuvwxyz",
        "p4ssw0rd-xyz",
        "AAAAsecretkeymaterial",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789AB",
    ]
    reads = [
        call("read_file", path=".env"),
        call("read_file", path="src/settings.py"),
        call("read_file", path="id_rsa"),
        call("grep_search", pattern="password|api_key|ghp_|AAAA"),
        call("read_file", path="src/token.txt"),
    ]
    scripted_model(
        "coder",
        [
            *({"tool_calls": [c]} for c in reads),
            {"tool_calls": [call("execute_command", argv=["cat", ".env", "src/settings.py"])]},
            {"content": "ok"},
        ],
    )
    coder = session_in("coder", user, workspace=tmp_path, change=True)
    coder_job = run(coder, "Check settings.py and .env for the database config", user)
    scripted_model(
        "reviewer",
        [
            *({"tool_calls": [c]} for c in reads),
            {"tool_calls": [call("analyze_diff")]},
            {"content": "ok"},
        ],
        name="rev",
    )
    reviewer = session_in("reviewer", user, workspace=tmp_path, change=True)
    reviewer_job = run(reviewer, "Review settings.py", user)
    for job in (coder_job, reviewer_job):
        assert job.status == JobStatus.SUCCEEDED, job.error_message
        sent = json.dumps([e.data for e in job.events.filter(kind="llm_request")])
        assert "settings.py" in sent
        for secret in secrets:
            assert secret not in sent, secret
        assert "[REDACTED" in sent


def test_budget_and_loop_limits(user: Any) -> None:
    from roles.services import role_write

    role_write(data={"max_llm_calls": 2}, create=False, slug="explorer", actor="test")
    scripted_model(
        "explorer",
        [
            {"tool_calls": [call("list_directory", path=".")]},
            {"tool_calls": [call("read_file", path="README.md")]},
            {"content": "never"},
        ],
    )
    job = run(session_in("explorer", user), "look around", user)
    assert job.status == JobStatus.LIMIT_EXCEEDED and job.error_code == "ACODE-JOB-001"
    role_write(data={"max_llm_calls": 10}, create=False, slug="explorer", actor="test")
    scripted_model(
        "explorer", [{"tool_calls": [call("list_directory", path=".")]}] * 5, name="loop"
    )
    job = run(session_in("explorer", user), "loop", user)
    assert job.status == JobStatus.LIMIT_EXCEEDED and job.error_code == "ACODE-JOB-002"
    assert job.llm_calls == 3


def test_fallback_model_used_when_preferred_is_down(user: Any) -> None:
    scripted_model("explorer", [{"error": "connection"}])
    scripted_model("explorer", [{"content": "answered by fallback"}], name="backup", fallback=True)
    job = run(session_in("explorer", user), "hi", user)
    assert job.status == JobStatus.SUCCEEDED and job.result == "answered by fallback"
    assert job.fallback_used and job.provider == "scripted"
    scripted_model("explorer", [{"error": "server"}], name="down2")
    scripted_model("explorer", [{"error": "timeout"}], name="down3", fallback=True)
    job = run(session_in("explorer", user), "hi", user)
    assert job.status == JobStatus.FAILED and job.error_code == "ACODE-JOB-003"
    # It names the endpoints it tried and the command that checks them (issue 34).
    assert "tried down2 (scripted), down3 (scripted)" in job.error_message
    assert "`acode model check down2` or `acode model check down3`" in job.error_message


def test_reviewer_without_changes_says_nothing_to_review(user: Any) -> None:
    scripted_model("reviewer", [{"content": "should not be asked"}])
    session = session_in("reviewer", user, change=True)
    session.pending_changes.all().delete()
    job = run(session, "Add password validation to the User class", user)
    assert job.status == JobStatus.FAILED and job.error_code == "ACODE-JOB-004"
    assert "No changes to review" in job.error_message
    assert job.llm_calls == 0


def test_role_change_during_job_stops_it(user: Any) -> None:
    from sessions_app.services.transitions import session_transition

    session = session_in("planner", user)
    from sessions_app.services.jobs import job_create

    job = job_create(session=session, request="x", user=user)
    session_transition(session=session, to_role="default", reason="abort", actor="test")
    from sessions_app.agent.loop import run_job

    scripted_model("planner", [{"content": "x"}])
    job = run_job(job.pk)
    assert job.status == JobStatus.CANCELLED and job.error_code == "ACODE-JOB-007"


def test_jobs_api_create_detail_events_cancel(api: APIClient, user: Any) -> None:
    session = session_in("planner", user)
    created = api.post(
        f"/api/sessions/{session.pk}/jobs/", {"request": "Plan a simple feature"}, format="json"
    )
    assert created.status_code == 201
    job_id = created.json()["id"]
    assert created.json()["status"] == "queued" and created.json()["role"] == "planner"
    listed = api.get(f"/api/sessions/{session.pk}/jobs/").json()
    assert [j["id"] for j in listed] == [job_id]
    cancelled = api.post(f"/api/jobs/{job_id}/cancel/")
    assert cancelled.json()["status"] == "cancelled"
    again = api.post(f"/api/jobs/{job_id}/cancel/")
    assert again.status_code == 409 and again.json()["code"] == "ACODE-JOB-006"
    detail = api.get(f"/api/jobs/{job_id}/").json()
    assert next(e["kind"] for e in detail["events"]) == "status"
    after = api.get(f"/api/jobs/{job_id}/events/", {"after": 1}).json()
    assert all(e["seq"] > 1 for e in after)
    blank = api.post(f"/api/sessions/{session.pk}/jobs/", {"request": " "}, format="json")
    assert blank.status_code == 400


def test_session_tools_endpoint_scenario_5(api: APIClient, user: Any) -> None:
    session = session_in("planner", user)
    body = api.get(f"/api/sessions/{session.pk}/tools/").json()
    assert body["role"] == "Planner"
    assert [t["name"] for t in body["available"]] == PLANNER_TOOLS
    restricted = {t["name"]: t for t in body["restricted"]}
    assert restricted["write_file"]["missing_permissions"] == ["write_files"]
