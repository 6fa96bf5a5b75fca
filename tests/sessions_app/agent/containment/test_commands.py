"""Containment of commands: interpreters, launchers, option injection, workspace code,
processes, output, the sandbox itself and a whole job. See the package's kit for the rules
every attack is held to."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from roles.models import Permission
from roles.registry import registry
from roles.services import role_write
from sessions_app.agent.tools import OUTPUT_CAP, TOOL_IMPLEMENTATIONS, ToolImpl
from sessions_app.containment import sandbox
from sessions_app.containment.sandbox import SandboxStatus
from sessions_app.models import AuditEvent, JobEvent, JobStatus
from tests.sessions_app.agent.containment.kit import (
    SECRET,
    Area,
    as_tester,
    audit_text,
    coder,
    fingerprint,
    needs_sandbox,
    no_processes_left,
    src_tree,
)
from tests.sessions_app.jobkit import run, scripted_model, session_in

# Containment holds or not whatever the database (it keeps the calls' audit rows and pending
# changes): CI runs this on PostgreSQL only (tests/conftest.py, db_agnostic).
pytestmark = [pytest.mark.django_db, pytest.mark.db_agnostic]


# -- interpreters and launchers -------------------------------------------------------
def attack_script(area: Area) -> str:
    """Write inside (outside write_paths) and outside, and dump every environment it can."""
    return (
        f"touch src/pwn {area.sentinel}/pwn ../sentinel/pwn; rm -f {area.sentinel}/keep.txt; "
        "cat /proc/1/environ /proc/$PPID/environ /proc/self/environ; env; "
        "echo secret=$ACODE_TEST_SECRET"
    )


def launchers(area: Area) -> dict[str, list[str]]:
    script = attack_script(area)
    quoted = script.replace('"', '\\"')
    return {
        "python -c": [
            "python", "-c",
            f"import os, subprocess; subprocess.run(['sh', '-c', {script!r}]); "
            f"print(dict(os.environ))",
        ],
        "perl -e": ["perl", "-e", f'system("{quoted}"); print %ENV;'],
        "awk system()": ["awk", f'BEGIN{{system("{quoted}")}}'],
        "find -exec": ["find", ".", "-maxdepth", "0", "-exec", "sh", "-c", script, "{}", "+"],
        "tar --to-command": ["tar", "-xf", "docs/a.tar", f"--to-command=sh -c '{script}'"],
        "git -c alias": ["git", "-c", f"alias.x=!sh -c '{script}'", "x"],
        "sed e": ["sed", "-n", f"1e {script}", "README.md"],
        "timeout": ["timeout", "20", "sh", "-c", script],
        "taskset": ["taskset", "-c", "0", "sh", "-c", script],
        "prlimit": ["prlimit", "--nofile=256", "sh", "-c", script],
        "setsid nohup": ["setsid", "nohup", "sh", "-c", script],
        "env -i": ["env", "-i", "sh", "-c", script],
        "sh -c": ["sh", "-c", script],
    }  # fmt: skip


@needs_sandbox
@pytest.mark.parametrize(
    "name",
    ["python -c", "perl -e", "awk system()", "find -exec", "tar --to-command", "git -c alias",
     "sed e", "timeout", "taskset", "prlimit", "setsid nohup", "env -i", "sh -c"],
)  # fmt: skip
def test_interpreters_and_launchers_stay_inside(user: Any, area: Area, name: str) -> None:
    with tarfile.open(area.ws / "docs" / "a.tar", "w") as tar:
        tar.add(area.ws / "README.md", arcname="README.md")
    call = coder(user, area)
    before = src_tree(area.ws)
    outcome = call("execute_command", argv=launchers(area)[name])
    assert outcome.status == "ok", outcome.for_model()
    # It really ran: it wrote src/pwn, which was undone and audited as denied.
    assert ("src/pwn", "created", "write_paths") in call.denied_writes()
    assert src_tree(area.ws) == before
    assert call.outcome_row().details["sandboxed"] is True
    assert "discarded (your role may not change these): src/pwn" in outcome.output


@needs_sandbox
def test_a_script_the_coder_wrote_runs_contained(user: Any, area: Area) -> None:
    call = coder(user, area)
    script = "#!/bin/sh\n" + attack_script(area) + "\n"
    assert call("create_file", path="docs/run.sh", content=script).status == "ok"
    assert call("execute_command", argv=["chmod", "+x", "docs/run.sh"]).status == "ok"
    outcome = call("execute_command", argv=["./docs/run.sh"])
    assert outcome.status == "ok", outcome.for_model()
    assert ("src/pwn", "created", "write_paths") in call.denied_writes()
    assert not (area.ws / "src" / "pwn").exists()


# -- option injection and workspace code run by test commands ------------------------
@needs_sandbox
def test_option_injection_in_allowed_test_commands(user: Any, area: Area) -> None:
    (area.ws / "evilplugin.py").write_text(
        "import os, pathlib\n"
        f"for p in ({str(area.sentinel / 'pwn')!r}, 'src/pwn'):\n"
        "    try:\n        pathlib.Path(p).write_text('x')\n    except OSError as e:\n"
        "        print('blocked', e)\n"
        "print(dict(os.environ))\n"
    )
    call = as_tester(user, area)
    before = fingerprint(area.ws)
    attacks = [
        ["pytest", f"--junitxml={area.sentinel}/keep.txt"],
        ["pytest", f"--basetemp={area.sentinel}"],
        ["pytest", "--basetemp=src"],
        ["pytest", "--junitxml=src/app.py"],
        ["python", "-m", "pytest", "-p", "evilplugin"],
        ["pytest", "--rootdir=/", "-o", f"cache_dir={area.sentinel}"],
        ["pytest", "-o", "cache_dir=src"],
    ]
    for argv in attacks:
        outcome = call("execute_command", argv=argv)
        assert outcome.status == "ok", (argv, outcome.for_model())
        assert call.outcome_row().details["writable"] is False
    assert fingerprint(area.ws) == before
    for argv in (
        ["pytest", f"@/proc/{os.getppid()}/environ"],
        ["pytest", "@/proc/1/environ"],
        ["python", "-m", "pytest", "@args.txt"],
    ):
        refused = call("execute_command", argv=argv)
        assert refused.status == "denied" and "@file arguments are refused" in refused.reason
        assert call.rows[0].details["rule"] == "argument_file"


def test_the_seeded_tester_rules_refuse_option_injection_up_front(user: Any, area: Area) -> None:
    call = as_tester(user, area, loose=False)
    for argv in (
        ["pytest", f"--junitxml={area.sentinel}/keep.txt"],
        ["pytest", f"--basetemp={area.sentinel}"],
        ["python", "-m", "pytest", "-p", "evilplugin"],
        ["pytest", "--rootdir=/"],
        ["python", "-c", "print(1)"],
        ["pytest", "tests/../../sentinel"],
    ):
        refused = call("execute_command", argv=argv)
        assert refused.status == "denied", argv
        assert call.rows[0].details["rule"].startswith("command_rules"), call.rows[0].details
    assert call("execute_command", argv=["python", "-m", "pytest", "-q", "-k", "x"]).status == "ok"


@needs_sandbox
def test_output_options_of_commands_stay_inside(user: Any, area: Area) -> None:
    call = coder(user, area)
    outside = call("execute_command", argv=["git", "diff", f"--output={area.sentinel}/pwn"])
    assert outside.status == "ok"
    inside = call("execute_command", argv=["git", "diff", "--output=src/pwn"])
    assert inside.status == "ok"
    assert ("src/pwn", "created", "write_paths") in call.denied_writes()
    assert not (area.ws / "src" / "pwn").exists()


@needs_sandbox
def test_workspace_code_run_by_test_commands_is_contained(user: Any, area: Area) -> None:
    marker = f"acode-daemon-{uuid.uuid4().hex}"
    hostile = (
        "import os, pathlib, subprocess\n"
        f"for p in ({str(area.sentinel / 'pwn')!r}, 'src/app.py', 'src/new.py'):\n"
        "    try:\n        pathlib.Path(p).write_text('pwned')\n    except OSError as e:\n"
        "        print('blocked', p, e)\n"
        "print('ENV', dict(os.environ))\n"
        f"subprocess.Popen(['sh', '-c', 'sleep 60 # {marker}'], start_new_session=True)\n"
    )
    (area.ws / "conftest.py").write_text(hostile)
    (area.ws / "Makefile").write_text(
        f"test:\n\t-touch src/pwn {area.sentinel}/pwn\n\t-cat /proc/1/environ\n"
        f"\t-sh -c 'sleep 60 # {marker}-make' &\n\tpython -m pytest -q\n"
    )
    call = as_tester(user, area)
    before = fingerprint(area.ws)
    shown = call("execute_command", argv=["python", "-m", "pytest", "-q", "-s"])
    assert "blocked src/app.py" in shown.output and "ENV {" in shown.output
    for argv in (["pytest"], ["make", "test"]):
        assert call("execute_command", argv=argv).status == "ok"
    ran = call("run_tests")
    assert ran.status == "ok" and "1 passed" in ran.output
    assert fingerprint(area.ws) == before
    assert no_processes_left(marker)


@needs_sandbox
def test_proc_environment_reads_find_no_secret(user: Any, area: Area) -> None:
    call = coder(user, area)
    for argv in (
        ["cat", "/proc/1/environ"],
        ["sh", "-c", "cat /proc/$PPID/environ; cat /proc/*/environ; ls /proc"],
        ["python", "-c", "import os; print([open(f'/proc/{p}/environ','rb').read() "
                         "for p in os.listdir('/proc') if p.isdigit()])"],
    ):  # fmt: skip
        assert call("execute_command", argv=argv).status == "ok"


# -- processes and output -----------------------------------------------------------------
@needs_sandbox
def test_background_daemons_die_with_the_call(user: Any, area: Area) -> None:
    marker = f"acode-daemon-{uuid.uuid4().hex}"
    call = coder(user, area)
    loop = f"while true; do echo tick >> docs/tick.md; sleep 0.05; : {marker}; done"
    for argv in (
        ["sh", "-c", f"({loop}) & sleep 0.3"],
        ["setsid", "sh", "-c", f"nohup sh -c '{loop}' >/dev/null 2>&1 & sleep 0.3"],
        ["python", "-c", f"import subprocess, time; subprocess.Popen(['sh', '-c', {loop!r}], "
                         "start_new_session=True); time.sleep(0.3)"],
    ):  # fmt: skip
        outcome = call("execute_command", argv=argv)
        assert outcome.status == "ok", outcome.for_model()
        size = (area.ws / "docs" / "tick.md").stat().st_size
        time.sleep(0.4)
        assert (area.ws / "docs" / "tick.md").stat().st_size == size
        assert no_processes_left(marker)


@needs_sandbox
def test_huge_output_is_capped(user: Any, area: Area) -> None:
    call = coder(user, area)
    started = time.monotonic()
    big = call("execute_command", argv=["python", "-c", "print('x' * 20_000_000)"])
    endless = call("execute_command", argv=["yes", SECRET[:8]])
    assert time.monotonic() - started < 60
    assert len(big.output) < OUTPUT_CAP + 2000 and "[output truncated" in big.output
    assert call.outcome_row().details["killed_reason"] == "output limit"
    assert len(endless.output) < OUTPUT_CAP + 2000


@needs_sandbox
def test_a_catastrophic_regex_runs_in_linear_time(user: Any, area: Area) -> None:
    (area.ws / "docs" / "a.md").write_text("a" * 40_000 + "!\n")
    call = coder(user, area)
    started = time.monotonic()
    outcome = call("grep_search", pattern="(a+)+$")
    assert time.monotonic() - started < 15  # RE2: no backtracking, whatever the pattern
    assert outcome.status == "ok" and "(no matches)" in outcome.output
    refused = call("grep_search", pattern="(a)\\1")
    assert refused.status == "denied" and "linear time" in refused.reason


# -- the sandbox itself -------------------------------------------------------------------
def test_commands_are_refused_with_their_own_code_without_a_sandbox(
    user: Any, area: Area, monkeypatch: pytest.MonkeyPatch
) -> None:
    hint = "no bwrap binary found: install bubblewrap (apt install bubblewrap)"
    monkeypatch.setattr(sandbox, "_status", SandboxStatus(False, None, hint))
    call = coder(user, area)
    outcome = call("execute_command", argv=["touch", "docs/made.md"])
    assert outcome.status == "denied" and outcome.code == "ACODE-TOL-003"
    assert "install bubblewrap" in outcome.reason
    (row,) = call.rows
    assert (row.event_type, row.result, row.details["rule"]) == (
        "ToolDenied", "ACODE-TOL-003", "sandbox",
    )  # fmt: skip
    assert not (area.ws / "docs" / "made.md").exists()
    assert call("read_file", path="README.md").status == "ok"


@needs_sandbox
def test_commands_that_may_write_are_refused_without_a_copy_on_write_layer(
    user: Any, area: Area, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = sandbox.sandbox_available()
    reason = "the kernel refused the overlay (EPERM): commands write to a copy-on-write layer"
    monkeypatch.setattr(sandbox, "_status", SandboxStatus(
        True, real.binary, "ok", real.process_limit, real.disable_userns, real.tmp_size,
        overlay=False, overlay_reason=reason,
    ))  # fmt: skip
    call = coder(user, area)
    outcome = call("execute_command", argv=["touch", "docs/made.md"])
    assert outcome.status == "denied" and outcome.code == "ACODE-TOL-004"
    assert "copy-on-write layer" in outcome.reason
    (row,) = call.rows
    assert (row.event_type, row.result, row.details["rule"]) == (
        "ToolDenied", "ACODE-TOL-004", "layer",
    )  # fmt: skip
    assert not (area.ws / "docs" / "made.md").exists()
    # A role that cannot write needs no layer: its commands still run, read-only.
    tester = as_tester(user, area)
    assert tester("execute_command", argv=["python", "-m", "pytest", "-q"]).status == "ok"


def test_the_development_switch_is_visible_and_writes_are_still_checked(
    user: Any, area: Area, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ACODE_SANDBOX", "off")
    call = coder(user, area)
    outcome = call("execute_command", argv=["sh", "-c", "echo x > src/app.py; echo y > docs/y.md"])
    assert outcome.status == "ok" and "WITHOUT the sandbox" in outcome.output
    assert call.rows[0].details["normalised"]["sandbox"] == "off (ACODE_SANDBOX=off)"
    assert call.outcome_row().details["sandboxed"] is False
    assert (area.ws / "src" / "app.py").read_text() == "x = 1\n"
    assert ("src/app.py", "modified", "write_paths") in call.denied_writes()
    assert (area.ws / "docs" / "y.md").read_text() == "y\n"


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    yield server.getsockname()[1]
    server.close()


@needs_sandbox
def test_network_only_with_the_network_permission(user: Any, area: Area, listener: int) -> None:
    connect = ["python", "-c", f"import socket; socket.create_connection(('127.0.0.1', {listener}), 3); print('CONN' + 'ECTED')"]  # fmt: skip
    call = coder(user, area)
    offline = call("execute_command", argv=connect)
    assert (
        "CONNECTED" not in offline.output and call.rows[0].details["normalised"]["network"] is False
    )
    Permission.objects.get_or_create(code="network", defaults={"description": "Network access"})
    permissions = [*registry.get("coder").spec.permissions, "network"]
    role_write(data={"permissions": permissions}, create=False, slug="coder", actor="test")
    online = call("execute_command", argv=connect)
    assert "CONNECTED" in online.output and call.outcome_row().details["network"] is True


def test_a_crashing_tool_is_an_audited_clean_error(
    user: Any, area: Area, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(ctx: Any, args: Any) -> Any:
        raise RuntimeError(f"kaboom {SECRET}")

    monkeypatch.setitem(TOOL_IMPLEMENTATIONS, "read_file", ToolImpl("read_file", boom))
    call = coder(user, area)
    crashed = call("read_file", path="README.md")
    assert crashed.status == "error" and crashed.code == "ACODE-TOL-002"
    assert "RuntimeError" in crashed.reason
    # The exception's words reach the model as untrusted data, the server's secret masked.
    assert "RuntimeError: kaboom [REDACTED]" in crashed.detail
    assert "<untrusted-data" in crashed.for_model() and "kaboom [REDACTED]" in crashed.for_model()
    row = call.outcome_row()
    assert (row.event_type, row.result) == ("RoleAction", "ACODE-TOL-002")
    assert row.details["error_type"] == "RuntimeError" and row.details["status"] == "error"

    def divide(ctx: Any, args: Any) -> Any:
        return 1 / 0

    monkeypatch.setitem(TOOL_IMPLEMENTATIONS, "read_file", ToolImpl("read_file", divide))
    outcome = call("read_file", path="README.md")
    assert outcome.status == "error" and outcome.code == "ACODE-TOL-002"
    assert "ZeroDivisionError" in outcome.reason


def test_a_check_that_fails_refuses_the_call_and_is_audited(
    user: Any, area: Area, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roles.decision import core as decision_core

    def broken(*args: Any) -> Any:
        raise KeyError("rules")

    monkeypatch.setattr(decision_core, "command_rule_check", broken)
    call = coder(user, area)
    outcome = call("execute_command", argv=["touch", "docs/made.md"])
    assert outcome.status == "denied" and outcome.code == "ACODE-TOL-002"
    assert call.rows[0].details["rule"] == "check_failed"
    assert not (area.ws / "docs" / "made.md").exists()


# -- a whole job --------------------------------------------------------------------------
@needs_sandbox
def test_a_hostile_job_leaks_nothing_into_its_events(user: Any, area: Area) -> None:
    role_write(data={"write_paths": ["docs/**"], "max_llm_calls": 30}, create=False, slug="coder",
               actor="test")  # fmt: skip
    attacks = [
        {"name": "execute_command", "arguments": {"argv": ["sh", "-c", attack_script(area)]}},
        {"name": "execute_command", "arguments": {"argv": ["cat", "/proc/1/environ"]}},
        {"name": "execute_command", "arguments": {"argv": ["python", "-c", "import os; print(os.environ)"]}},
        {"name": "read_file", "arguments": {"path": "../sentinel/keep.txt"}},
        {"name": "grep_search", "arguments": {"pattern": "(x+x+)+y"}},
        {"name": "write_file", "arguments": {"path": "src/app.py", "content": "pwned"}},
    ]  # fmt: skip
    scripted_model("coder", [{"tool_calls": [a]} for a in attacks] + [{"content": "done"}])
    session = session_in("coder", user, workspace=area.ws)
    job = run(session, "attack", user)
    assert job.status == JobStatus.SUCCEEDED, job.error_message
    events = json.dumps([e.data for e in JobEvent.objects.filter(job=job)])
    assert SECRET not in events
    rows = list(AuditEvent.objects.filter(session=session))
    assert SECRET not in audit_text(rows)
    calls = job.events.filter(kind="tool_call").count()
    outcomes = AuditEvent.objects.filter(session=session, details__phase="outcome").count()
    refused_first = AuditEvent.objects.filter(session=session, details__phase="decision",
                                              event_type="ToolDenied").count()  # fmt: skip
    assert calls == len(attacks) == outcomes + refused_first
    assert (area.ws / "src" / "app.py").read_text() == "x = 1\n"
    area.assert_sentinel_unchanged()


def test_redaction_masks_credentials_in_urls(user: Any, area: Area) -> None:
    (area.ws / "docs" / "deploy.md").write_text(
        "DATABASE_URL=postgres://app:hunter2-db@db.internal:5432/shop\n"
        "remote: https://deploy:ghs_tokenvalue123@github.com/acme/shop.git\n"
    )
    call = coder(user, area)
    text = call("read_file", path="docs/deploy.md").output
    assert "hunter2-db" not in text and "ghs_tokenvalue123" not in text
    assert "postgres://app:***@db.internal:5432/shop" in text
    found = call("grep_search", pattern="postgres").output
    assert "hunter2-db" not in found and "app:***@" in found


@needs_sandbox
def test_git_remote_credentials_in_command_output_are_masked(user: Any, area: Area) -> None:
    subprocess.run(
        ["git", "-C", str(area.ws), "remote", "add", "origin",
         "https://bot:s3cret-push-token@git.example.com/acme/shop.git"],
        check=True,
    )  # fmt: skip
    call = coder(user, area)
    outcome = call("execute_command", argv=["git", "remote", "-v"])
    # The git view's config is acode's own: no remote, so no credentials to mask.
    assert "s3cret-push-token" not in outcome.output and "git.example.com" not in outcome.output
    shown = call("execute_command", argv=["cat", ".git/config"])
    assert "s3cret-push-token" not in shown.output  # the workspace's own .git is masked


def test_python_of_the_server_is_what_commands_use() -> None:
    from sessions_app.agent.tools import command_env, command_ro_paths

    assert command_env()["PATH"].startswith(str(Path(sys.prefix) / "bin"))
    assert all(len(p.parts) >= 3 for p in command_ro_paths())
