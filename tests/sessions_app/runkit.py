"""Helpers for run tests: scripted stage models and an in-process driver.

The driver does what the Celery task does for each job of a run (``run_job`` then
``run_after_job``), in this process, so a test sees the same engine the workers run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from django.contrib.auth.models import User

from sessions_app.agent.loop import run_job
from sessions_app.models import Run, RunStatus
from sessions_app.services.runs import run_after_job
from sessions_app.services.workspaces import git_dir_of
from tests.sessions_app.jobkit import scripted_model

PLAN_ONE_STEP = '{"steps": [{"title": "Add a greeting helper", "files": ["greet.py"]}]}'
FIRST = "def greet():\n    return 'hi'\n"
SECOND = "def greet(name):\n    return f'hi {name}'\n"


def calls(*steps: tuple[str, dict[str, Any]], final: str = "done") -> list[dict[str, Any]]:
    """One job's script: each tool call in turn, then a final answer."""
    return [{"tool_calls": [{"name": n, "arguments": a}]} for n, a in steps] + [{"content": final}]


def review(verdict: str, summary: str, *findings: dict[str, Any]) -> list[dict[str, Any]]:
    args: dict[str, Any] = {"verdict": verdict, "summary": summary}
    if findings:
        args["comments"] = list(findings)
    return calls(("submit_review", args), final=f"verdict: {verdict}")


def script_tester() -> list[dict[str, Any]]:
    return calls(("run_tests", {"argv": ["python", "-m", "pytest", "-q"]}), final="tests ran")


def other_reviewer() -> None:
    """Route the Reviewer to a model of its own: the seeded medium and high templates want a
    review by a model other than the Coder's (issue 39; ACODE-RUN-013 otherwise)."""
    scripted_model("reviewer", [review("approve", "looks right")])


def script_medium_run(*, reviews: list[list[dict[str, Any]]]) -> None:
    """Planner: a one-step plan; Coder: creates, then revises greet.py; Tester runs the
    tests; Reviewer: the given verdicts in turn."""
    scripted_model("planner", [[{"content": PLAN_ONE_STEP}]])
    scripted_model(
        "coder",
        [
            calls(("create_file", {"path": "greet.py", "content": FIRST}), final="created"),
            calls(("write_file", {"path": "greet.py", "content": SECOND}), final="revised"),
        ],
    )
    scripted_model("tester", [script_tester()])
    scripted_model("reviewer", reviews)


def drive(run: Run, *, limit: int = 40) -> Run:
    """Run the run's jobs in this process until it stops running."""
    for _ in range(limit):
        run.refresh_from_db()
        if run.status != RunStatus.RUNNING:
            return run
        stage = run.stages.order_by("-seq").first()
        assert stage is not None and stage.job_id is not None, "a running run has a job"
        run_job(stage.job_id)
        run_after_job(stage.job_id)
    raise AssertionError(f"run still {run.status} after {limit} jobs")


def history(run: Run) -> list[str]:
    return [
        t.to_role.name for t in run.session.transitions.order_by("seq").select_related("to_role")
    ]


def branch_log(run: Run, *, body: bool = False) -> list[str]:
    """Commit subjects (or bodies, one line each) on the session branch (its git directory
    is in server state)."""
    git_dir = git_dir_of(run.session.pk)
    shown = "%b%x00" if body else "%s"
    out = subprocess.run(
        [
            "git",
            f"--git-dir={git_dir}",
            "log",
            f"--format={shown}",
            f"refs/heads/{run.session.branch}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        return []  # no commit yet
    if body:
        return [" ".join(b.split()) for b in out.stdout.split("\0") if b.strip()]
    return out.stdout.splitlines()


def grant_approve(user: User) -> User:
    from django.contrib.auth.models import Permission

    user.user_permissions.add(Permission.objects.get(codename="approve_run"))
    return User.objects.get(pk=user.pk)  # a fresh object: no cached permissions


def bare_remote(where: Path) -> Path:
    """A bare repository at ``where`` with one commit on main: a registered repository's
    source, and the remote approved work is pushed to."""
    seed = where.with_name(where.name + "-seed")
    seed.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], capture_output=True, check=True)

    git("-C", str(seed), "init", "-q", "-b", "main")
    (seed / "README.md").write_text("# app\n")
    git("-C", str(seed), "add", ".")
    git("-C", str(seed), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "initial")
    git("init", "-q", "--bare", "-b", "main", str(where))
    git("-C", str(seed), "push", "-q", str(where), "main")
    return where


def remote_branch(remote: Path, branch: str) -> str:
    """The commit ``branch`` points at in ``remote`` ('' when it has no such branch)."""
    done = subprocess.run(
        ["git", f"--git-dir={remote}", "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip()
