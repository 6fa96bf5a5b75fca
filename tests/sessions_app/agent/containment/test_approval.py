"""Approved means exactly this: every attack a command can make on the workspace's git and
files, followed by an approval. Nothing outside the workspace changes, no repository
program runs on the host, and the commit and patch hold exactly the approved content
(compared byte for byte with the base tree plus the recorded changes)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from roles.models import Permission
from roles.registry import registry
from roles.services import role_write
from sessions_app.models import AgentSession, PendingChange, Repository
from sessions_app.services.changes import changes_approve, pending_digest
from sessions_app.services.plans import plan_set
from sessions_app.services.sessions import session_create
from sessions_app.services.transitions import session_transition
from sessions_app.services.workspaces import git_dir_of, workspace_patch
from tests.sessions_app.agent.containment.kit import Area, Caller, fingerprint, needs_sandbox

pytestmark = [pytest.mark.django_db, needs_sandbox]

ENV_SECRET = "hunter2-db-password-7f3a"
BASE = {
    "src/app.py": b"x = 1\n",
    "docs/guide.md": b"# Guide\n",
    "README.md": b"# Project\n",
    ".env": f"DB_PASSWORD={ENV_SECRET}\n".encode(),
}


def git(*args: str, cwd: Path, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, input=stdin
    ).stdout


@pytest.fixture
def managed(user: Any, tmp_path: Path) -> tuple[Caller, Area]:
    """A Coder (``docs/**`` and ``.gitattributes`` only) in a workspace acode cloned from a
    registered repository, and a sentinel directory next to everything."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "-q", "-b", "main", cwd=upstream)
    for rel, data in BASE.items():
        (upstream / rel).parent.mkdir(parents=True, exist_ok=True)
        (upstream / rel).write_bytes(data)
    git("add", "-A", cwd=upstream)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base", cwd=upstream)
    Repository.objects.create(name="app", source=str(upstream)).users.add(user)
    session = session_create(owner=user, title="t", repository="app")
    plan_set(session=session, steps=["Document it"], actor="test")
    for role in ("planner", "coder"):
        session_transition(session=session, to_role=role, reason="test", actor="test")
    role_write(
        data={"write_paths": ["docs/**", ".gitattributes"], "command_patterns": []},
        create=False, slug="coder", actor="test",
    )  # fmt: skip
    session.refresh_from_db()
    sentinel = tmp_path / "sentinel"
    sentinel.mkdir()
    (sentinel / "keep.txt").write_text("outside, do not touch\n")
    area = Area(Path(session.workspace), sentinel, fingerprint(sentinel))
    return Caller(session, user, area), area


def approve(caller: Caller, user: Any) -> str:
    """The Reviewer approves what is pending; the new commit's id."""
    session = AgentSession.objects.get(pk=caller.session.pk)
    session_transition(session=session, to_role="reviewer", reason="review", actor="test")
    changes_approve(
        session=session, summary="Approved work", user=user, digest=pending_digest(session)
    )
    ref = f"refs/heads/acode/{session.pk}"
    return git("rev-parse", ref, cwd=git_dir_of(session.pk)).decode().strip()


def committed_tree(session: AgentSession, commit: str) -> dict[str, tuple[str, bytes]]:
    """Every path of the commit's tree: its mode and its bytes."""
    where = git_dir_of(session.pk)
    listing = git("ls-tree", "-r", "-z", commit, cwd=where).split(b"\0")
    out = {}
    for line in filter(None, listing):
        meta, path = line.split(b"\t", 1)
        mode, _, blob = meta.decode().split()
        out[path.decode()] = (mode, git("cat-file", "blob", blob, cwd=where))
    return out


def expected_tree(pending: dict[str, tuple[str, int, str]], session: AgentSession) -> dict:
    """The base tree plus exactly the pending changes' recorded content."""
    where = git_dir_of(session.pk)
    out = {rel: ("100644", data) for rel, data in BASE.items()}
    for path, (kind, mode, blob) in pending.items():
        if kind == "deleted":
            out.pop(path, None)
        else:
            out[path] = (f"{mode:o}", git("cat-file", "blob", blob, cwd=where))
    return out


def pending_of(session: AgentSession) -> dict[str, tuple[str, int, str]]:
    rows = PendingChange.objects.filter(session=session)
    return {r.path: (r.kind, r.mode, r.content) for r in rows}


def assert_exactly_approved(caller: Caller, user: Any, wanted: dict[str, bytes]) -> None:
    """Approve; the commit is base + the recorded changes, which are exactly ``wanted``."""
    session = caller.session
    pending = pending_of(session)
    assert {p: v[0] for p, v in pending.items()} == {
        p: "created" if p not in BASE else "modified" for p in wanted
    }
    commit = approve(caller, user)
    tree = committed_tree(session, commit)
    assert tree == expected_tree(pending, session)
    assert {p: tree[p][1] for p in wanted} == wanted
    patch = workspace_patch(AgentSession.objects.get(pk=session.pk))
    touched = {line[6:] for line in patch.splitlines() if line.startswith("+++ b/")}
    assert touched == set(wanted)
    caller.area.assert_sentinel_unchanged()


def test_links_planted_in_git_metadata_reach_nothing(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, area = managed
    keep = area.sentinel / "keep.txt"
    outcome = call("execute_command", argv=["sh", "-c", (
        f"mkdir -p .git/logs .git/objects; ln -s {keep} .git/logs/HEAD; "
        f"ln -s {area.sentinel} .git/objects/ab; ln -s {keep} $GIT_DIR/logs/HEAD; "
        f"ln -s {area.sentinel} $GIT_DIR/objects/cd; echo doc > docs/new.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    denied = call.denied_writes()
    assert (".git/logs/HEAD", "created", "git_dir") in denied
    assert (".git/objects/ab", "created", "git_dir") in denied
    assert not (area.ws / ".git").exists()
    assert_exactly_approved(call, user, {"docs/new.md": b"doc\n"})


def test_a_filter_driver_never_runs_on_the_host(managed: tuple[Caller, Area], user: Any) -> None:
    call, area = managed
    marker = area.sentinel / "filter-ran"
    outcome = call("execute_command", argv=["sh", "-c", (
        f"git config filter.x.clean 'touch {marker}'; "
        f"mkdir -p .git && printf '[filter \"x\"]\\n\\tclean = touch {marker}\\n' > .git/config; "
        "echo '* filter=x diff=x' > .gitattributes; echo changed >> docs/guide.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    assert (".git/config", "created", "git_dir") in call.denied_writes()
    assert_exactly_approved(
        call,
        user,
        {".gitattributes": b"* filter=x diff=x\n", "docs/guide.md": b"# Guide\nchanged\n"},
    )
    area.original = fingerprint(area.sentinel)
    assert not marker.exists()


def test_staging_or_committing_inside_the_sandbox_carries_nothing(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, area = managed
    where = git_dir_of(call.session.pk)
    head = git("rev-parse", "HEAD", cwd=where)
    outcome = call("execute_command", argv=["sh", "-c", (
        "echo pwned > src/app.py; git update-index --add src/app.py; "
        "git -c user.name=a -c user.email=a@a commit -qam sneaky; "
        "mkdir -p .git && git rev-parse HEAD > .git/MERGE_HEAD; "
        "echo '# Guide v2' > docs/guide.md; git status --porcelain"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    assert " M docs/guide.md" in outcome.output and " M src/app.py" in outcome.output
    assert ("src/app.py", "modified", "write_paths") in call.denied_writes()
    assert git("rev-parse", "HEAD", cwd=where) == head
    assert (area.ws / "src" / "app.py").read_bytes() == BASE["src/app.py"]
    assert_exactly_approved(call, user, {"docs/guide.md": b"# Guide v2\n"})


def test_a_setuid_shell_is_refused_and_audited(managed: tuple[Caller, Area], user: Any) -> None:
    call, area = managed
    outcome = call("execute_command", argv=["sh", "-c", (
        "cp /bin/sh docs/sh; chmod 4755 docs/sh; cp /bin/sh docs/sg; chmod 2755 docs/sg; "
        "id -u; echo ok > docs/ok.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    assert "\n1000\n" in outcome.output  # commands run unprivileged
    denied = call.denied_writes()
    assert {("docs/sh", "created", "file_mode"), ("docs/sg", "created", "file_mode")} <= denied
    assert not (area.ws / "docs" / "sh").exists() and not (area.ws / "docs" / "sg").exists()
    assert_exactly_approved(call, user, {"docs/ok.md": b"ok\n"})


def test_secret_files_are_not_there_to_leak(managed: tuple[Caller, Area], user: Any) -> None:
    call, area = managed
    encoded = base64.b64encode(BASE[".env"]).decode()
    for argv in (["base64", ".env"], ["cat", ".env"], ["sh", "-c", "xxd .env; od -c .env"]):
        outcome = call("execute_command", argv=argv)
        assert outcome.status == "ok", outcome.for_model()
        assert ENV_SECRET not in outcome.output and encoded[:12] not in outcome.output
        assert call.outcome_row().details["hidden_secrets"] == 1
    # A role granted read_secrets sees the file (what it prints still passes the one
    # channel's redaction, which finds the password in the base64 too: its digest shows it).
    Permission.objects.get_or_create(code="read_secrets", defaults={"description": "Secrets"})
    permissions = [*registry.get("coder").spec.permissions, "read_secrets"]
    role_write(data={"permissions": permissions}, create=False, slug="coder", actor="test")
    shown = call("execute_command", argv=["sha256sum", ".env"])
    assert hashlib.sha256(BASE[".env"]).hexdigest() in shown.output
    # The file itself is untouched, and writing over it changes nothing.
    call("execute_command", argv=["sh", "-c", "echo x > .env; rm -f .env"])
    assert (area.ws / ".env").read_bytes() == BASE[".env"]


def test_a_fifo_in_git_metadata_stalls_nothing(managed: tuple[Caller, Area], user: Any) -> None:
    call, _ = managed
    outcome = call("execute_command", argv=["sh", "-c", (
        "mkdir -p .git && mkfifo .git/index; mkfifo docs/pipe; mkfifo $GIT_DIR/index2; "
        "echo fine > docs/fine.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    denied = call.denied_writes()
    assert (".git/index", "created", "git_dir") in denied
    assert ("docs/pipe", "created", "file_kind") in denied
    started = time.monotonic()
    assert_exactly_approved(call, user, {"docs/fine.md": b"fine\n"})
    assert time.monotonic() - started < 20


def test_file_names_that_could_forge_a_diff_are_refused(
    managed: tuple[Caller, Area], user: Any
) -> None:
    call, _ = managed
    outcome = call("execute_command", argv=["sh", "-c", (
        "echo a > \"$(printf 'docs/a\\n+++ b')\"; "
        "echo b > \"$(printf 'docs/b\\r')\"; echo c > \"$(printf 'docs/\\033[2Kc')\"; "
        "echo d > docs/d.md"
    )])  # fmt: skip
    assert outcome.status == "ok", outcome.for_model()
    rules = {path: rule for path, _, rule in call.denied_writes()}
    assert rules == {
        "docs/a\\x0a+++ b": "file_name",
        "docs/b\\x0d": "file_name",
        "docs/\\x1b[2Kc": "file_name",
    }
    refused = call("create_file", path="docs/x\ny.md", content="x")
    assert refused.status == "denied" and call.rows[0].details["rule"] == "file_name"
    assert_exactly_approved(call, user, {"docs/d.md": b"d\n"})
