"""The example deployment in deploy/: every variable of acode.env.example is one acode
reads, the example is a production configuration that passes the deploy check, and every
unit starts a real module with arguments its command line accepts."""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from celery.bin.base import CLIContext
from celery.bin.celery import celery as celery_cli
from daphne.cli import CommandLineInterface

from acode.celery import app as celery_app

ROOT = Path(__file__).resolve().parent.parent.parent
DEPLOY = ROOT / "deploy"
ENV_EXAMPLE = DEPLOY / "systemd" / "acode.env.example"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
SETTINGS_SOURCE = "\n".join(p.read_text() for p in (ROOT / "acode" / "settings").glob("*.py"))
# Variables read outside acode/settings, and where.
READ_ELSEWHERE = {
    "ACODE_SANDBOX": "sessions_app/containment/sandbox.py",
    "ACODE_SANDBOX_CGROUP": "sessions_app/containment/process.py",
    "PROMETHEUS_MULTIPROC_DIR": "acode/metrics.py",  # also prometheus_client itself
    "ACODE_HOST": "deploy/systemd/acode-web.service",  # daphne's -b (and `make run`)
    "ACODE_PORT": "deploy/systemd/acode-web.service",
}
# What a production deployment must set: the example sets each (not commented out).
REQUIRED = {
    "ACODE_ENV",
    "ACODE_SECRET_KEY",
    "ACODE_ALLOWED_HOSTS",
    "ACODE_CSRF_TRUSTED_ORIGINS",
    "DATABASE_URL",
    "REDIS_URL",
    "ACODE_LLM_BASE_URL",
    "ACODE_LLM_DEFAULT_MODEL",
    "ACODE_SANDBOX",
    "ACODE_LOG_FORMAT",
    "ACODE_METRICS_TOKEN",
    "ACODE_WORKER_METRICS_PORT",
}
_LINE = re.compile(r"^(?P<comment>#)?(?P<name>[A-Z][A-Z0-9_]*)=(?P<value>.*)$")


def example_variables() -> dict[str, tuple[bool, str]]:
    """NAME -> (set, value) for every NAME=value line, set or commented out."""
    found: dict[str, tuple[bool, str]] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        match = _LINE.match(line.strip())
        if match:
            found.setdefault(match["name"], (not match["comment"], match["value"]))
    return found


def unit_lines(unit: Path, key: str) -> list[str]:
    return [
        line.split("=", 1)[1]
        for line in unit.read_text().splitlines()
        if line.startswith(f"{key}=") and not line.startswith("#")
    ]


def test_every_example_variable_is_read_by_acode() -> None:
    variables = example_variables()
    assert len(variables) > 20
    for name in variables:
        if name in READ_ELSEWHERE:
            where = (ROOT / READ_ELSEWHERE[name]).read_text()
            assert re.search(rf"\b{name}\b", where), f"{name} is not read in {READ_ELSEWHERE[name]}"
        else:
            assert f'"{name}"' in SETTINGS_SOURCE, f"{name} is not read by acode/settings"


def test_the_example_sets_what_production_needs() -> None:
    variables = example_variables()
    unset = sorted(name for name in REQUIRED if not variables.get(name, (False, ""))[0])
    assert unset == []
    assert variables["ACODE_ENV"][1] == "production"
    assert variables["ACODE_SANDBOX"][1] == "on"
    assert variables["ACODE_SERVE_STATIC"][1] == "0"  # the proxy serves /static/
    for name, (is_set, value) in variables.items():
        assert not (is_set and value[:1] in {'"', "'"}), f"{name}: systemd keeps the quotes"


def test_the_example_passes_the_deploy_check(tmp_path: Path) -> None:
    """The example, with a real secret, is a production configuration `check --deploy`
    finds nothing to warn about."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACODE_", "CELERY_"))}
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update({name: value for name, (is_set, value) in example_variables().items() if is_set})
    env.update(
        ACODE_SECRET_KEY=secrets.token_urlsafe(50),
        ACODE_VAR_DIR=str(tmp_path),
        ACODE_WORKSPACES_ROOT=str(tmp_path / "workspaces"),
        DJANGO_SETTINGS_MODULE="acode.settings",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout + result.stderr


def expanded_exec_start(unit: Path) -> list[str]:
    """ExecStart with the unit's specifiers and ${VARIABLES} filled in as systemd would for
    the instance ``agents,review`` (escaped ``agents\\x2creview``)."""
    (command,) = unit_lines(unit, "ExecStart")
    defaults = dict(entry.split("=", 1) for entry in unit_lines(unit, "Environment"))
    examples = {name: value for name, (_, value) in example_variables().items()}

    def variable(match: re.Match[str]) -> str:
        name = match[1]
        assert name in defaults or name in examples, f"{unit.name}: ${{{name}}} is never set"
        return defaults.get(name) or examples[name]

    command = re.sub(r"\$\{(\w+)\}", variable, command)
    for spec, value in {"%I": "agents,review", "%i": r"agents\x2creview", "%H": "host"}.items():
        command = command.replace(spec, value)
    return shlex.split(command)


def test_units_are_the_three_documented_ones() -> None:
    assert [unit.name for unit in UNITS] == [
        "acode-beat.service",
        "acode-web.service",
        "acode-worker@.service",
    ]
    for unit in UNITS:
        assert unit_lines(unit, "EnvironmentFile")[0] == "/etc/acode/acode.env"
        assert unit_lines(unit, "User") == ["acode"]


@pytest.mark.parametrize("unit", UNITS, ids=[u.name for u in UNITS])
def test_exec_start_names_a_real_module_and_valid_arguments(unit: Path) -> None:
    argv = expanded_exec_start(unit)
    assert argv[0] == "/opt/acode/.venv/bin/python"
    assert argv[1] == "-m"
    module, args = argv[2], argv[3:]
    assert importlib.util.find_spec(module), f"{unit.name}: no module {module}"
    if module == "daphne":
        parsed = CommandLineInterface().parser.parse_args(args)  # exits on a bad option
        app_module = parsed.application.split(":")[0]
        assert importlib.util.find_spec(app_module), parsed.application
        assert parsed.proxy_headers  # the client's address and scheme come from the proxy
        assert (parsed.host, parsed.port) == ("127.0.0.1", 8000)
        return
    assert module == "celery"
    assert args[:2] == ["-A", "acode"]
    assert importlib.util.find_spec("acode.celery")
    command = args[2]
    assert command in celery_cli.commands, f"celery has no command {command}"
    parent = celery_cli.make_context("celery", ["-A", "acode", command])
    parent.obj = CLIContext(app=celery_app, no_color=True, workdir=None, quiet=True)
    parsed = celery_cli.commands[command].make_context(command, args[3:], parent=parent).params
    if command == "worker":
        # The instance name is the queue list: one pool per unit instance.
        assert parsed["queues"] == ["agents", "review"]
        assert parsed["hostname"] == "agents,review@host"


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze not installed")
def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    """systemd's own check of the units (pointed at this checkout's interpreter)."""
    for unit in UNITS:
        text = unit.read_text().replace("/opt/acode/.venv/bin/python", sys.executable)
        text = text.replace("/opt/acode", str(ROOT))
        name = unit.name.replace("@.service", "@agents.service")
        (tmp_path / name).write_text(text)
    names = sorted(str(p) for p in tmp_path.glob("*.service"))
    result = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", *names],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_nginx_proxies_websockets_and_serves_static_files() -> None:
    conf = (DEPLOY / "nginx" / "acode.conf").read_text()
    websocket = re.search(r"location /ws/ \{(.*?)\n    \}", conf, re.S)
    assert websocket
    assert "proxy_set_header Upgrade $http_upgrade;" in websocket[1]
    assert "proxy_set_header Connection $acode_connection;" in websocket[1]
    assert "proxy_http_version 1.1;" in websocket[1]
    # daphne --proxy-headers believes the first X-Forwarded-For address: never append.
    assert "$proxy_add_x_forwarded_for" not in conf
    assert conf.count("proxy_set_header X-Forwarded-For $remote_addr;") == 2
    assert conf.count("proxy_set_header X-Forwarded-Proto $scheme;") == 2
    static = re.search(r"location /static/ \{\s*alias (\S+);", conf)
    assert static
    var_dir = example_variables()["ACODE_VAR_DIR"][1]
    assert static[1] == f"{var_dir}/staticfiles/"  # STATIC_ROOT under ACODE_VAR_DIR
    assert re.search(r"location = /metrics \{\s*return 404;", conf)


def test_readme_links_the_deployment_files() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Deploying on several hosts", 1)[1].split("\n## ", 1)[0]
    for path in [*UNITS, ENV_EXAMPLE, DEPLOY / "nginx" / "acode.conf"]:
        assert str(path.relative_to(ROOT)) in section
