"""Shared pieces of the independent suite: the secrets it plants, and tool calls made the
way the job loop makes them, checked for every form of those secrets (``leaks``)."""

from __future__ import annotations

import os
import secrets
import string
import subprocess
from pathlib import Path
from typing import Any

from roles.models import McpServer, McpToolDefinition, Permission, Role
from roles.registry import registry
from roles.services import role_saved, role_write
from roles.services.mcp import mcp_tool_approve
from sessions_app.agent.executor import ToolOutcome
from sessions_app.agent.mcp.servers import mcp_server_refresh
from tests.independent.leaks import exposures
from tests.sessions_app.agent.containment.kit import Area, Caller, audit_text
from tests.sessions_app.jobkit import session_in

HOSTILE = Path(__file__).with_name("hostile_server.py")
ALNUM = string.ascii_letters + string.digits


def random_value(n: int = 40) -> str:
    """A random password-like value. Its shape is fixed (an upper-case letter first, then
    at least one digit and one lower-case letter) so the suite is deterministic: a value
    that starts lower-case then upper-case looks like a camelCase name to the detector
    (``test_a_camel_case_looking_password_is_still_a_secret``)."""
    while True:
        value = secrets.choice(string.ascii_uppercase) + "".join(
            secrets.choice(ALNUM) for _ in range(n - 1)
        )
        if any(c.isdigit() for c in value) and any(c.islower() for c in value):
            return value


def camel_value(n: int = 40) -> str:
    """A random value that starts lower-case, then upper-case (``hJ...``)."""
    rest = random_value(n - 2)
    return secrets.choice(string.ascii_lowercase) + secrets.choice(string.ascii_uppercase) + rest


# Values planted in workspaces, never in the server's environment: only the view (and the
# detector, for token formats) can keep them from the model.
VALUE = random_value()  # known only by the name of the file it is in
TOKEN = "ghp_" + random_value(36)  # a GitHub token: a format any detector knows
AWS_SECRET = random_value(40)  # the secret half of an AWS key pair
PLANTED = (VALUE, TOKEN, AWS_SECRET)


def committed(repo: Path, message: str = "c") -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


class Probe:
    """A role's tool calls (``kit.Caller``: audit rows, acode's own secret, the sentinel),
    each also checked for every form of ``values`` in what the model and the audit see."""

    def __init__(self, caller: Caller, values: tuple[str, ...] = PLANTED) -> None:
        self.caller, self.values = caller, values

    @property
    def session(self) -> Any:
        return self.caller.session

    def __call__(self, tool: str, **arguments: Any) -> ToolOutcome:
        outcome = self.caller(tool, **arguments)
        shown = outcome.for_model()
        if os.environ.get("REDKIT_DUMP"):  # a reader's aid: what the model was shown
            with open(os.environ["REDKIT_DUMP"], "a") as dump:
                test = os.environ.get("PYTEST_CURRENT_TEST", "").split(" ")[0]
                dump.write(f"\n=== {test} :: {tool} {arguments}\n{shown}\n")
        found = exposures(shown, self.values)
        assert not found, (found, tool, arguments, shown[:3000])
        assert not exposures(audit_text(self.caller.rows), self.values), (tool, arguments)
        return outcome

    def sh(self, script: str) -> ToolOutcome:
        return self("execute_command", argv=["sh", "-c", script])


def probe(role: str, user: Any, area: Area, *, workspace: Path | None = None, **data: Any) -> Probe:
    """A probe in ``role`` on ``workspace`` (the area's by default): the Coder writes docs/**
    unless ``data`` says otherwise; any command is allowed."""
    if role == "coder":
        role_write(
            data={"write_paths": ["docs/**"], "command_patterns": [], **data},
            create=False, slug="coder", actor="test",
        )  # fmt: skip
    elif data:
        role_write(data=data, create=False, slug=role, actor="test")
    ws = area.ws if workspace is None else workspace
    return Probe(Caller(session_in(role, user, workspace=ws), user, area))


def managed_probe(user: Any, repo: Path, area: Area, name: str = "leaky") -> Probe:
    """The Coder in a managed session on a clone of ``repo``."""
    from sessions_app.models import Repository

    role_write(
        data={"write_paths": ["docs/**"], "command_patterns": []},
        create=False, slug="coder", actor="test",
    )  # fmt: skip
    Repository.objects.create(name=name, source=str(repo)).users.add(user)
    return Probe(Caller(session_in("coder", user, repository=name), user, area))


def approve(server: McpServer, *names: str) -> None:
    mcp_server_refresh(server=server)
    for name in names:
        mcp_tool_approve(tool=McpToolDefinition.objects.get(server=server, name=name))


def grant(role_slug: str, server: McpServer) -> None:
    role = Role.objects.get(slug=role_slug)
    role.permissions.add(Permission.objects.get(code=f"mcp-{server.slug}"))
    role_saved(role=role, actor="test")
    registry.invalidate()
