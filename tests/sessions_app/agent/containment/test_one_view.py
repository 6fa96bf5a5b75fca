"""One view for every door (issue 35): what a role may not read never reaches the model,
whether through a command, git, a search or a file tool, and the same files are hidden
from each. Real sandbox, real git; every call is made the way the job loop makes it.

The secrets here are NOT in the server's environment (that would make redaction of known
values hide them from output): only the view can keep them out, in any encoding.
"""

from __future__ import annotations

import base64
import os
import re
import secrets
import string
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sessions_app.agent.executor import ToolOutcome
from sessions_app.containment import encodings
from sessions_app.models import AgentSession, Repository
from tests.sessions_app.agent.containment.kit import Area, Caller, audit_text, coder, needs_sandbox
from tests.sessions_app.jobkit import session_in

# Containment holds or not whatever the database (it keeps the calls' audit rows and pending
# changes): CI runs this on PostgreSQL only (tests/conftest.py, db_agnostic).
pytestmark = [pytest.mark.django_db, needs_sandbox, pytest.mark.db_agnostic]

ALNUM = string.ascii_letters + string.digits
# A GitHub token (a format the detector knows) and a random value held only by name.
TOKEN = "ghp_" + "".join(secrets.choice(ALNUM) for _ in range(36))
VALUE = "".join(secrets.choice(ALNUM) for _ in range(40))
SECRETS = (TOKEN, VALUE)
NAMED = (
    ".env", ".git-credentials", ".vault-token", ".htpasswd", ".s3cfg", ".boto", ".aws/config",
    ".docker/config.json", "id_ed25519_sk", "keys/deploy.ppk", "keys/signing.asc",
    "keys/store.jks", "kubeconfig", "infra/terraform.tfvars", "gcp-service-account.json",
    "wp-config.php", "notes/.env.staging",
)  # fmt: skip


def leaked(text: str) -> list[str]:
    """The forms of the test secrets found in ``text``: plain, base64 at any alignment,
    hex, percent-encoding, and inside any base64 run of the text decoded."""
    found = [f for value in SECRETS for f in encodings(value) if f in text.replace("\n", "")]
    for run in re.findall(r"[A-Za-z0-9+/=\n]{24,}", text):
        try:
            decoded = base64.b64decode(run.replace("\n", "") + "==", validate=False)
        except ValueError:
            continue
        found += [v for v in SECRETS if v.encode() in decoded]
    return found


def attempt(call: Caller, tool: str, **arguments: Any) -> ToolOutcome:
    outcome = call(tool, **arguments)  # the kit checks audit rows and the sentinel
    shown = outcome.for_model()
    assert not leaked(shown), (tool, arguments, shown[:2000])
    assert not leaked(audit_text(call.rows)), (tool, arguments)
    return outcome


def sh(call: Caller, script: str) -> ToolOutcome:
    return attempt(call, "execute_command", argv=["sh", "-c", script])


# -- secrets known only by name, or by content -----------------------------------------
def plant(ws: Path) -> None:
    for rel in NAMED:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(f"{VALUE}\n")
    (ws / "config").mkdir(exist_ok=True)
    (ws / "config" / "settings.toml").write_text(
        f'[service]\nurl = "https://api.example.com"\ntoken = "{TOKEN}"\nretries = 3\n'
    )
    (ws / "notes").mkdir(exist_ok=True)
    (ws / "notes" / "todo.txt").write_text(f"rotate this one: {TOKEN}\nthen lunch\n")


def test_secrets_known_by_name_or_content_reach_no_door(user: Any, area: Area) -> None:
    plant(area.ws)
    call = coder(user, area)
    for rel in NAMED:
        sh(call, f"cat '{rel}'; base64 '{rel}'; od -c '{rel}' | head -3")
        assert VALUE not in attempt(call, "read_file", path=rel).output
    toml = sh(call, "cat config/settings.toml; base64 config/settings.toml")
    assert "retries = 3" in toml.output and "[REDACTED]" in toml.output  # the rest is there
    bare = sh(call, "cat notes/todo.txt; base64 -w0 notes/todo.txt; xxd notes/todo.txt")
    assert "then lunch" in bare.output
    read = attempt(call, "read_file", path="config/settings.toml")
    assert "retries = 3" in read.output and "[REDACTED]" in read.output
    # Searching cannot tell a hidden value is there, character by character.
    for pattern in (TOKEN[:10], "ghp_", VALUE[:8]):
        found = attempt(call, "grep_search", pattern=pattern)
        assert "(no matches)" in found.output, found.output
    sh(call, "grep -r . . ; tar cf - . | base64")  # everything at once, as an archive


def test_the_same_files_are_hidden_from_commands_and_from_read_file(user: Any, area: Area) -> None:
    plant(area.ws)
    call = coder(user, area)
    for rel in ("config/settings.toml", "notes/todo.txt"):
        by_tool = attempt(call, "read_file", path=rel).output
        by_command = sh(call, f"cat {rel}").output
        assert by_tool.strip() in by_command, (by_tool, by_command)


# -- the git view ---------------------------------------------------------------------
def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def leaky_upstream(tmp_path: Path) -> Path:
    """A repository whose history holds secrets: a committed .env and settings file, and a
    token committed and then removed."""
    repo = tmp_path / "upstream"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    plant(repo)
    (repo / "src").mkdir()
    (repo / "src" / "app.py").write_text("x = 1\n")
    (repo / "old.txt").write_text(f"api_key = '{TOKEN}'\n")
    git("add", "-A", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "first", cwd=repo)
    git("rm", "-q", "old.txt", cwd=repo)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "rm", cwd=repo)
    return repo


def managed_coder(user: Any, upstream: Path, area: Area) -> Caller:
    Repository.objects.create(name="leaky", source=str(upstream)).users.add(user)
    session = session_in("coder", user, repository="leaky")
    return Caller(session, user, area)


def test_git_shows_a_role_no_committed_secret(user: Any, leaky_upstream: Path, area: Area) -> None:
    call = managed_coder(user, leaky_upstream, area)
    status = sh(call, "git status --porcelain; echo END")
    assert status.output.split("\n")[1] == "END", "hidden files are not changes"
    sh(call, "git diff; git diff HEAD")
    sh(call, "git show HEAD:.env; git show HEAD:config/settings.toml; git show HEAD~1 || true")
    log = sh(call, "git log -p --all --full-history; git log --format=%H%n%s%n%b")
    assert "as your role sees it" in log.output and "rm" not in log.output.split("\n")
    sh(call, "git cat-file --batch-all-objects --batch | base64")
    sh(call, "git rev-list --all --objects | git cat-file --batch | base64 -w0")
    sh(call, "ls -la /run/acode-git; cat /run/acode-git/config; find /run/acode-git -type f")
    sh(call, "git fsck --lost-found --unreachable --dangling 2>&1; git reflog 2>&1")


def test_git_shows_real_changes_only(user: Any, leaky_upstream: Path, area: Area) -> None:
    call = managed_coder(user, leaky_upstream, area)
    attempt(call, "write_file", path="src/app.py", content="x = 2\n")
    diff = sh(call, "git status --porcelain; git diff")
    assert " M src/app.py" in diff.output and "+x = 2" in diff.output
    assert ".env" not in diff.output and "settings.toml" not in diff.output


def test_an_attached_workspaces_own_git_is_masked_and_viewed(user: Any, area: Area) -> None:
    plant(area.ws)
    git("add", "-A", cwd=area.ws)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c", cwd=area.ws)
    call = coder(user, area)
    sh(call, "cat .git/config; ls -la .git; find .git -type f | head")
    sh(call, "git log -p --all; git cat-file --batch-all-objects --batch | base64")
    clean = sh(call, "git status --porcelain; echo END")
    assert clean.output.split("\n")[1] == "END"


# -- two sessions, one workspace ------------------------------------------------------
def test_a_secret_written_by_another_session_is_hidden_here_too(
    user: Any, area: Area, settings: Any
) -> None:
    owner = session_in("coder", user)  # a managed workspace
    settings.ACODE_ATTACH_ROOTS = [*settings.ACODE_ATTACH_ROOTS, str(Path(owner.workspace).parent)]
    other = Caller(session_in("coder", user, workspace=Path(owner.workspace)), user, area)
    attempt(other, "create_file", path="notes/.env.staging", content=f"KEY={VALUE}\n")
    attempt(other, "create_file", path="notes/deploy.txt", content=f"token: {TOKEN}\n")
    mine = Caller(AgentSession.objects.get(pk=owner.pk), user, area)
    sh(mine, "cat notes/.env.staging notes/deploy.txt; base64 notes/*")


# -- a hard link to a file outside ----------------------------------------------------
def test_a_planted_hard_link_is_hidden_from_commands(user: Any, area: Area, tmp_path: Path) -> None:
    outside = tmp_path / "outside-secret.txt"
    outside.write_text(f"{VALUE}\n")
    (area.ws / "docs").mkdir(exist_ok=True)
    os.link(outside, area.ws / "docs" / "notes.md")
    call = coder(user, area)
    refused = attempt(call, "read_file", path="docs/notes.md")
    assert refused.status == "denied"
    sh(call, "cat docs/notes.md; base64 docs/notes.md; ls -la docs")
    assert outside.read_text() == f"{VALUE}\n"


# -- and the other way: legitimate work stays visible ---------------------------------
LEGIT = {
    "calc/__init__.py": "",
    "calc/credentials.py": (
        '"""Checks on credentials a user picks."""\n\n'
        "MAX_TOKENS = 4096\n"
        'TOKEN_URL = "https://auth.example.com/oauth/token"\n'
        "password_min_length = 12\n\n\n"
        "def strong(password: str) -> bool:\n"
        "    return len(password) >= password_min_length\n"
    ),
    "tests/test_credentials.py": (
        "from calc.credentials import MAX_TOKENS, TOKEN_URL, strong\n\n\n"
        "def test_rules():\n"
        "    assert MAX_TOKENS == 4096 and TOKEN_URL.endswith('/token')\n"
        "    assert strong('a' * 12) and not strong('short')\n"
    ),
}


def test_code_that_holds_no_secret_is_visible_and_unredacted(user: Any, area: Area) -> None:
    for rel, text in LEGIT.items():
        (area.ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (area.ws / rel).write_text(text)
    call = coder(user, area)
    module = LEGIT["calc/credentials.py"]
    assert attempt(call, "read_file", path="calc/credentials.py").output == module
    shown = sh(call, "cat calc/credentials.py").output
    assert module in shown and "[REDACTED]" not in shown
    found = attempt(call, "grep_search", pattern="MAX_TOKENS")
    assert "MAX_TOKENS = 4096" in found.output
    tester = Caller(session_in("tester", user, workspace=area.ws), user, area)
    passed = attempt(tester, "run_tests", argv=["python", "-m", "pytest", "-q", "tests"])
    assert "2 passed" in passed.output and "error" not in passed.output, passed.output


def test_what_a_role_that_reads_secrets_kept_for_the_session_is_hidden_from_one_that_does_not(
    user: Any, area: Area
) -> None:
    from roles.registry import registry
    from roles.services import role_write

    (area.ws / ".gitignore").write_text("build/\n")
    git("add", "-A", cwd=area.ws)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "c", cwd=area.ws)
    call = coder(user, area)
    permissions = [*registry.get("coder").spec.permissions, "read_secrets"]
    role_write(data={"permissions": permissions}, create=False, slug="coder", actor="test")
    kept = call(
        "execute_command", argv=["sh", "-c", f"mkdir -p build && echo 'K={VALUE}' > build/.env"]
    )
    assert kept.status == "ok" and not (area.ws / "build").exists()  # kept for the session only
    assert VALUE in call("execute_command", argv=["cat", "build/.env"]).output  # it may read it
    permissions.remove("read_secrets")
    role_write(data={"permissions": permissions}, create=False, slug="coder", actor="test")
    sh(call, "cat build/.env; base64 build/.env; ls -la build")
