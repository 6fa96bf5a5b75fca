"""Legitimate work under the one view (issue 35): what each role may do must still work.
Code and configuration that name credentials without holding one are visible and
unredacted at every door (commands, read_file, grep_search, git), the Coder's own test run
imports ``calc/credentials.py``, and git shows real changes. A test marked
``xfail(strict=True)`` with a reason "HIDDEN: ..." is legitimate work the view hides."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.independent.redkit import committed, probe, write
from tests.sessions_app.agent.containment.kit import Area, needs_sandbox

# As the attacks (test_attacks.py): run on PostgreSQL only in CI.
pytestmark = [pytest.mark.django_db, needs_sandbox, pytest.mark.db_agnostic]


def hidden(reason: str) -> Any:
    return pytest.mark.xfail(strict=True, reason=f"HIDDEN: {reason}")


CREDENTIALS_PY = '''"""Checks on credentials a user picks, and where tokens come from."""

import os

MAX_TOKENS = 4096
TOKEN_URL = "https://auth.example.com/oauth/token"
password_min_length = 12
TOKEN_TTL_SECONDS = 3600
API_KEY_HEADER = "X-Api-Key"
SECRET_NAME = "db-password"
token_type = "bearer"
session_key = "sessionid"


def strong(password: str) -> bool:
    return len(password) >= password_min_length


def database_password() -> str:
    password = os.environ.get("DB_PASSWORD", "")
    return password


def bearer(headers: dict[str, str]) -> str:
    token = headers.get("Authorization", "").removeprefix("Bearer ")
    return token
'''
TEST_CREDENTIALS_PY = """import pytest

from calc.credentials import MAX_TOKENS, TOKEN_URL, bearer, password_min_length, strong


@pytest.fixture
def secret_token() -> str:
    return "not-a-real-token"


@pytest.fixture
def secret_value() -> str:
    return "not-a-real-secret"


def test_rules(secret_token: str, secret_value: str) -> None:
    assert MAX_TOKENS == 4096 and TOKEN_URL.endswith("/token")
    assert password_min_length == 12
    assert strong("a" * 12) and not strong("short")
    assert bearer({"Authorization": f"Bearer {secret_token}"}) == secret_token
    assert secret_value.startswith("not-a-real")
"""
LEGIT = {
    "calc/credentials.py": CREDENTIALS_PY,
    "tests/test_credentials.py": TEST_CREDENTIALS_PY,
    "tests/test_secret_rotation.py": (
        "FAKE_TOKEN = 'test-token'\n\n\ndef secret_factory():\n    return {'password': 'x'}\n\n\n"
        "def test_secret_rotation():\n    assert secret_factory()['password'] == 'x'\n"
    ),
    "tests/fixtures/secret_users.json": '[{"name": "alice", "password_hint": "first pet"}]\n',
    "docs/auth.md": (
        "# Authentication\n\nSet `password` to at least 12 characters. The token endpoint\n"
        "returns `access_token`; send it as `Authorization: Bearer <token>`.\n\n"
        "```\nexport GITHUB_TOKEN=<your token>\npassword: ********\n```\n"
    ),
    "web/settings.py": (
        "import os\n\nSECRET_KEY = os.environ['SECRET_KEY']\nDEBUG = False\n"
        "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']\n"
        "AUTH_PASSWORD_VALIDATORS = [{'NAME': 'MinimumLengthValidator', 'OPTIONS': {'min_length': 12}}]\n"
    ),
    "docker-compose.yml": (
        "services:\n  db:\n    image: postgres\n    environment:\n"
        "      POSTGRES_PASSWORD: postgres\n  app:\n    environment:\n"
        "      DB_PASSWORD: ${DB_PASSWORD}\n"
    ),
    ".github/workflows/ci.yml": "env:\n  GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}\n",
    "package-lock.json": (
        '{"packages": {"node_modules/left-pad": {"version": "1.3.0", "integrity": '
        '"sha512-XI5MPzVNApjAyhQzphX8BkmKsKUxD4LdyK24iZeQEV4Y9QjTPjJ4XvlX3dCvFUNYmmPUgA8UFcyF8iDrpxGSgA=="}}}\n'
    ),
    "requirements.txt": (
        "django==5.2 \\\n    --hash=sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
    ),
    "src/digests.py": 'EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"\n',
    "src/secret_santa.py": "def draw(names: list[str]) -> dict[str, str]:\n    return {}\n",
    "tests/test_login.py": 'def test_login(client):\n    client.login(password="correct horse battery staple")\n',
}
LEGIT_HIDDEN = {
    ".env.example": (
        "DATABASE_URL=postgres://user:password@localhost:5432/app\nSECRET_KEY=change-me\n"
        "API_TOKEN=\nSTRIPE_KEY=<your stripe key>\n",
        "a .env.example holding only placeholders (the file a README tells a developer to "
        "copy) is hidden by its name: commands see it empty, read_file refuses its content",
    ),
    "public/locales/en/auth.json": (
        '{"login": "Log in", "password": "Password", "token_expired": "Your session expired"}\n',
        "an i18n translation file named auth.json (react-i18next's usual layout) is hidden "
        "by the name rule meant for Composer's auth.json",
    ),
    "certs/ca.pem": (
        "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ0m7\n-----END CERTIFICATE-----\n",
        "a public CA certificate (ca.pem) is hidden by the *.pem name rule, so a test that "
        "loads it for TLS reads an empty file",
    ),
    "deploy/id_ed25519.pub": (
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl deploy\n",
        "a public SSH key (id_ed25519.pub, for authorized_keys) is hidden by the name rule",
    ),
    ".yarnrc.yml": (
        "nodeLinker: node-modules\nenableTelemetry: false\n",
        ".yarnrc.yml with no credential (nodeLinker, needed for yarn to install) is hidden "
        "by its name: yarn in the sandbox reads an empty file",
    ),
}


def _check_visible(call: Any, rel: str, text: str) -> None:
    shown = call.sh(f"cat '{rel}'").output
    assert text in shown and "[REDACTED" not in shown, shown
    read = call("read_file", path=rel).output
    assert read == text, read
    line = next(ln for ln in text.splitlines() if ln.strip())
    found = call("grep_search", pattern=line[:20].replace("(", ".").replace("[", ".")
                 .replace("*", ".").replace("$", ".").replace("{", ".").replace("\\", "."),
                 path=rel).output  # fmt: skip
    assert "(no matches)" not in found and "[REDACTED" not in found, found


@pytest.mark.parametrize(
    "rel",
    [*LEGIT, *LEGIT_HIDDEN],  # LEGIT_HIDDEN: found hidden, visible since
)
def test_code_and_configuration_without_secrets_are_visible_unredacted(
    user: Any, area: Area, rel: str
) -> None:
    text = LEGIT[rel] if rel in LEGIT else LEGIT_HIDDEN[rel][0]
    write(area.ws, {rel: text})
    call = probe("coder", user, area)
    _check_visible(call, rel, text)


def _vendor_pytest(ws: Path) -> None:
    """pytest for the sandbox's python3 (the system one has none): copied into the workspace
    as a project would vendor a tool."""
    site = next(Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    for name in ("pytest", "_pytest", "pluggy", "iniconfig", "packaging"):
        shutil.copytree(site / name, ws / ".vendor" / name)
    shutil.copy(site / "py.py", ws / ".vendor" / "py.py")


def test_the_coders_own_test_run_imports_calc_credentials(user: Any, area: Area) -> None:
    write(area.ws, {"calc/__init__.py": "", "calc/credentials.py": CREDENTIALS_PY,
                    "tests/__init__.py": "", "tests/test_credentials.py": TEST_CREDENTIALS_PY})  # fmt: skip
    _vendor_pytest(area.ws)
    call = probe("coder", user, area)
    ran = call.sh("PYTHONPATH=.vendor:. python3 -m pytest -q -p no:cacheprovider tests 2>&1")
    assert "1 passed" in ran.output and "rror" not in ran.output, ran.output


def test_other_roles_read_credentials_py_as_it_is(user: Any, area: Area) -> None:
    write(area.ws, {"calc/credentials.py": CREDENTIALS_PY})
    for role in ("planner", "explorer", "tester"):
        call = probe(role, user, area)
        assert call("read_file", path="calc/credentials.py").output == CREDENTIALS_PY, role


def test_grep_finds_code_at_every_door(user: Any, area: Area) -> None:
    write(area.ws, {"calc/credentials.py": CREDENTIALS_PY})
    committed(area.ws)
    call = probe("coder", user, area)
    for pattern in ("MAX_TOKENS", "def strong", "password_min_length", "TOKEN_URL"):
        found = call("grep_search", pattern=pattern).output
        assert "calc/credentials.py" in found and "[REDACTED" not in found, (pattern, found)
    shown = call.sh(
        "grep -rn 'TOKEN_URL\\|password_min_length' calc; git grep -n MAX_TOKENS"
    ).output
    assert 'TOKEN_URL = "https://auth.example.com/oauth/token"' in shown, shown
    assert "calc/credentials.py:5:MAX_TOKENS = 4096" in shown, shown


def test_git_status_and_diff_show_the_real_changes(user: Any, area: Area) -> None:
    write(area.ws, {"calc/credentials.py": CREDENTIALS_PY, ".env": "K=v4lue-that-is-secret\n"})
    committed(area.ws)
    call = probe("coder", user, area, write_paths=["calc/**", "docs/**"])
    changed = CREDENTIALS_PY.replace("MAX_TOKENS = 4096", "MAX_TOKENS = 8192")
    assert call("write_file", path="calc/credentials.py", content=changed).status == "ok"
    shown = call.sh("git status --porcelain; git diff").output
    assert " M calc/credentials.py" in shown and "+MAX_TOKENS = 8192" in shown, shown
    assert "-MAX_TOKENS = 4096" in shown and ".env" not in shown, shown


@hidden(
    'git log shows one commit ("the workspace at <commit>, as your role sees it"), never '
    "the repository's history, so `git log`/`git blame` cannot tell a Coder who changed "
    "what or why (documented in the README as the design)"
)
def test_git_log_shows_the_real_history(user: Any, area: Area) -> None:
    committed(area.ws, "Add the guide")
    write(area.ws, {"calc/credentials.py": CREDENTIALS_PY})
    committed(area.ws, "Add password rules")
    call = probe("coder", user, area)
    shown = call.sh("git log --oneline; git blame calc/credentials.py | head -3").output
    assert "Add password rules" in shown and "Add the guide" in shown, shown


@hidden(
    "a text file over 16 MiB (a data set the tests read) is hidden whole from commands "
    "(LARGE: empty in the view) while read_file shows its first 200 kB"
)
def test_a_large_data_file_is_visible_to_commands(user: Any, area: Area) -> None:
    row = "2026-01-01,sensor-7,21.5\n"
    (area.ws / "data").mkdir()
    (area.ws / "data" / "readings.csv").write_text(row * (17 * (1 << 20) // len(row)))
    call = probe("coder", user, area)
    shown = call.sh("head -2 data/readings.csv; wc -l < data/readings.csv").output
    assert row in shown, shown


@hidden(
    "packages installed by pnpm (or a venv made by uv) are hard links into a store: every "
    "file with more than one link is hidden, so `node_modules/left-pad/index.js` is empty "
    "to commands and refused by read_file"
)
def test_packages_installed_as_hard_links_are_visible(
    user: Any, area: Area, tmp_path: Path
) -> None:
    store = tmp_path / "store" / "left-pad@1.3.0"
    store.mkdir(parents=True)
    (store / "index.js").write_text("module.exports = (s, n) => s.padStart(n);\n")
    target = area.ws / "node_modules" / "left-pad"
    target.mkdir(parents=True)
    os.link(store / "index.js", target / "index.js")
    call = probe("coder", user, area)
    shown = call.sh("cat node_modules/left-pad/index.js").output
    assert "padStart" in shown, shown
