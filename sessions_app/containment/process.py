"""Running a local process with rlimits, a deadline and capped output; nothing it starts survives.

The process gets its own session, so its whole group can be killed, and where a pids cgroup
is writable (cgroup v1 ``/sys/fs/cgroup/pids`` or a delegated v2 directory named by
``ACODE_SANDBOX_CGROUP``) its own cgroup: that caps the process count even for host root,
which ``RLIMIT_NPROC`` never limits, and finds children that left the process group.
Output is read as a stream with a deadline and stops being stored at the cap.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import resource
import secrets
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

KILL_GRACE = 0.5  # how long leftover children may hold the pipes after the command ended
_cgroup_counter = itertools.count()


@dataclass(frozen=True)
class Limits:
    """Resource limits of one command (rlimits plus a pids cgroup where one is writable)."""

    cpu_seconds: int = 600
    memory_bytes: int = 4 << 30  # address space (RLIMIT_AS)
    processes: int = 256
    file_size_bytes: int = 1 << 30
    open_files: int = 1024
    tmp_bytes: int = 512 << 20  # size of the sandbox's /tmp, when bwrap supports --size
    max_output: int = 1 << 20  # bytes kept per stream
    max_drain: int = 64 << 20  # bytes read in all before the command is killed


@dataclass(frozen=True)
class CommandOutcome:
    """What a command did; ``exit_code`` is negative when a signal ended it."""

    exit_code: int
    stdout: str
    stderr: str
    truncated: bool
    timed_out: bool
    duration: float
    sandboxed: bool
    killed_reason: str = ""  # "timeout" or "output limit" when we killed it

    @property
    def output(self) -> str:
        """stdout then stderr, for callers that show one text."""
        if self.stdout and self.stderr and not self.stdout.endswith("\n"):
            return f"{self.stdout}\n{self.stderr}"
        return self.stdout + self.stderr


def process_limit_kind() -> str:
    """How the process count will be capped: "cgroup", "rlimit" or "none"."""
    if _cgroup_parent() is not None:
        return "cgroup"
    # RLIMIT_NPROC is never enforced for host root (the kernel exempts uid 0's user_struct).
    return "rlimit" if os.geteuid() != 0 else "none"


def _cgroup_parent() -> Path | None:
    """A writable pids cgroup (v1 hierarchy or a delegated v2 directory) to make children in."""
    configured = os.environ.get("ACODE_SANDBOX_CGROUP", "").strip()
    for candidate in ([Path(configured)] if configured else []) + [Path("/sys/fs/cgroup/pids")]:
        if (candidate / "cgroup.procs").exists() and os.access(candidate, os.W_OK):
            return candidate
    return None


class _PidsCgroup:
    """A pids cgroup of one call: caps the process count, and finds every process to kill."""

    def __init__(self, parent: Path, max_pids: int) -> None:
        name = f"acode-{os.getpid()}-{next(_cgroup_counter)}-{secrets.token_hex(3)}"
        self.path = parent / name
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(str(max_pids))
            # Opened here so a preexec_fn fallback only has to write(2) before exec.
            self.procs_fd = os.open(self.path / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            self.path.rmdir()
            raise

    def kill_all(self) -> None:
        """SIGKILL every member until the cgroup is empty (bounded), then remove it."""
        os.close(self.procs_fd)
        for _ in range(200):
            pids = [int(p) for p in (self.path / "cgroup.procs").read_text().split()]
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.005)
        try:
            self.path.rmdir()
        except OSError as exc:  # members still exiting; leave it rather than fail the call
            logger.warning("could not remove cgroup %s: %s", self.path, exc)


RLIMIT_FLAGS = {  # resource -> prlimit(1) option
    resource.RLIMIT_CPU: "--cpu",
    resource.RLIMIT_AS: "--as",
    resource.RLIMIT_FSIZE: "--fsize",
    resource.RLIMIT_NOFILE: "--nofile",
    resource.RLIMIT_NPROC: "--nproc",
}
# Joins the cgroup, then becomes the command (same pid): "$0" is cgroup.procs.
JOIN_CGROUP = 'echo $$ > "$0" && exec "$@"'


def _rlimits(limits: Limits, cgroup: _PidsCgroup | None) -> list[tuple[int, int]]:
    """(resource, value) pairs, never above the current hard limit (which only root raises)."""
    wanted = [
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_size_bytes),
        (resource.RLIMIT_NOFILE, limits.open_files),
    ]
    if cgroup is None and os.geteuid() != 0:
        wanted.append((resource.RLIMIT_NPROC, limits.processes))
    pairs = []
    for res, value in wanted:
        _, hard = resource.getrlimit(res)
        pairs.append((res, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return pairs


def prlimit_binary() -> str | None:
    """util-linux ``prlimit``, from the system directories only."""
    return shutil.which("prlimit", path="/usr/bin:/bin:/usr/sbin:/sbin")


def _launcher(
    limits: Limits, cgroup: _PidsCgroup | None
) -> tuple[list[str], Callable[[], None] | None]:
    """An argv prefix (``sh`` joining the cgroup, ``prlimit`` setting limits) that execs the
    command, or, without prlimit, a ``preexec_fn`` doing the same in the forked child.

    The prefix is preferred: a ``preexec_fn`` makes Python fork instead of vfork and run code
    in the child, about 10 ms a command, and is unsafe next to threads holding locks.
    """
    pairs = _rlimits(limits, cgroup)
    prlimit = prlimit_binary()
    if prlimit is None:
        procs_fd = cgroup.procs_fd if cgroup is not None else -1

        def apply() -> None:
            for res, value in pairs:
                resource.setrlimit(res, (value, value))
            if procs_fd >= 0:
                os.write(procs_fd, b"0")  # "0" moves the writing process into the cgroup

        return [], apply
    prefix = [prlimit, *(f"{RLIMIT_FLAGS[res]}={value}" for res, value in pairs), "--"]
    if cgroup is not None:
        prefix = ["/bin/sh", "-c", JOIN_CGROUP, str(cgroup.path / "cgroup.procs"), *prefix]
    return prefix, None


def run_process(
    argv: list[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    limits: Limits,
    pass_fds: Sequence[int] = (),
    sandboxed: bool = False,
    stdin: int | None = None,
) -> CommandOutcome:
    """Run ``argv`` with limits, a deadline and capped output; nothing it started survives.

    The process gets its own session (so its whole group can be killed) and, where a pids
    cgroup is writable, its own cgroup (so even children that left the group are found).
    ``stdin`` is a file descriptor to read from (default: nothing).
    """
    cgroup = None
    parent = _cgroup_parent()
    if parent is not None:
        try:
            cgroup = _PidsCgroup(parent, limits.processes)
        except OSError as exc:
            logger.warning("no pids cgroup for this command (%s); rlimits only", exc)
    start = time.monotonic()
    try:
        prefix, preexec = _launcher(limits, cgroup)
        proc = subprocess.Popen(
            [*prefix, *argv], cwd=cwd, env=dict(env),
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
            pass_fds=tuple(pass_fds), preexec_fn=preexec,
        )  # fmt: skip
    except BaseException:
        if cgroup is not None:
            cgroup.kill_all()
        raise
    try:
        capture, killed = _pump(proc, limits, start + timeout, cgroup)
    finally:
        _kill_everything(proc, cgroup)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
    return CommandOutcome(
        exit_code=proc.returncode,
        stdout=bytes(capture.buffers["stdout"]).decode("utf-8", "replace"),
        stderr=bytes(capture.buffers["stderr"]).decode("utf-8", "replace"),
        truncated=capture.truncated,
        timed_out=killed == "timeout",
        duration=time.monotonic() - start,
        sandboxed=sandboxed,
        killed_reason=killed,
    )


class _Capture:
    """Per-stream buffers that stop growing at the cap; the rest is only counted."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.buffers = {"stdout": bytearray(), "stderr": bytearray()}
        self.total = 0
        self.truncated = False

    def add(self, stream: str, data: bytes) -> None:
        self.total += len(data)
        buf = self.buffers[stream]
        room = self.cap - len(buf)
        if room > 0:
            buf += data[:room]
        if len(data) > room:
            self.truncated = True


def _pump(
    proc: subprocess.Popen[bytes], limits: Limits, deadline: float, cgroup: _PidsCgroup | None
) -> tuple[_Capture, str]:
    """Read both pipes until EOF, the deadline, or too much output; returns why it was killed."""
    assert proc.stdout is not None and proc.stderr is not None
    capture = _Capture(limits.max_output)
    killed = ""
    stop_at: float | None = None  # set once the command ended or was killed: bounded drain
    with selectors.DefaultSelector() as sel:
        for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
            os.set_blocking(stream.fileno(), False)
            sel.register(stream.fileno(), selectors.EVENT_READ, name)
        while sel.get_map():
            now = time.monotonic()
            exited = stop_at is None and _has_exited(proc.pid)
            if exited or (stop_at is None and now >= deadline):
                killed = "" if exited else "timeout"
                # Children that outlive the command would hold the pipes open: kill them now.
                _kill_group(proc.pid, cgroup)
                stop_at = now + KILL_GRACE
            if stop_at is not None and now >= stop_at:
                break
            until = stop_at if stop_at is not None else deadline
            for key, _ in sel.select(timeout=max(0.0, min(until - now, 0.1))):
                try:
                    data = os.read(key.fd, 65536)
                except BlockingIOError:
                    continue
                if not data:
                    sel.unregister(key.fd)
                    continue
                capture.add(str(key.data), data)
            if not killed and capture.total > limits.max_drain:
                killed = "output limit"
                _kill_group(proc.pid, cgroup)
                stop_at = time.monotonic() + KILL_GRACE
    return capture, killed


def _has_exited(pid: int) -> bool:
    """Whether ``pid`` ended, without reaping it (so its pid and group id stay ours)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _kill_group(pid: int, cgroup: _PidsCgroup | None) -> None:
    # Safe against pid reuse: the leader is not reaped yet, so the group id is still ours.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if cgroup is not None:
        for raw in (cgroup.path / "cgroup.procs").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(raw), signal.SIGKILL)


def _kill_everything(proc: subprocess.Popen[bytes], cgroup: _PidsCgroup | None) -> None:
    """Kill the group (and cgroup), then reap the leader; leaves no process of the call."""
    _kill_group(proc.pid, cgroup)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
        logger.error("process %s did not die after SIGKILL", proc.pid)
    if cgroup is not None:
        cgroup.kill_all()
