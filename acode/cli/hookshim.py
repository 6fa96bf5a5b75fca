"""``acode hook codex``: Codex's command hook, answered by acode (standard library only).

Codex runs the hook with the event as JSON on stdin and blocks the call on exit status 2
(the reason on stderr). It has no fail-closed setting: a hook that fails, hangs or prints
something odd lets the call run. So this shim answers "deny" itself on any error of its
own (acode unreachable, a refused token, a non-JSON answer, its own time limit), for the
events that decide a call; other events are recorded and never block.

It imports nothing of acode, so Codex can run it as a script as fast as Python starts:
``python3 -I .../acode/cli/hookshim.py codex --url URL --token-file FILE`` (what
``acode agents connect codex`` writes), or as ``acode hook codex``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from typing import Any

DECIDING = {"PreToolUse", "PermissionRequest"}
MAX_EVENT = 4_000_000
DEFAULT_SECONDS = 55.0  # under the 60 s the written Codex hook is given


class _OutOfTime(Exception):
    pass


def _options(argv: list[str]) -> tuple[str, dict[str, str]]:
    agent = argv[0] if argv and not argv[0].startswith("--") else "codex"
    rest = argv[1:] if argv and not argv[0].startswith("--") else argv
    options: dict[str, str] = {}
    for index in range(0, len(rest) - 1, 2):
        options[rest[index].lstrip("-")] = rest[index + 1]
    return agent, options


def _token(options: dict[str, str]) -> str:
    if options.get("token-file"):
        with open(os.path.expanduser(options["token-file"]), encoding="utf-8") as handle:
            return handle.read().strip()
    return os.environ.get("ACODE_HOOK_TOKEN", "")


def repository(cwd: object) -> str:
    """The repository at ``cwd`` (its ``origin`` remote, without credentials), or ""."""
    try:
        found = subprocess.run(
            ["git", "-C", str(cwd), "config", "--get", "remote.origin.url"],
            capture_output=True, text=True, timeout=2, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return re.sub(r"://[^/@]*@", "://", found.stdout.strip())[:500]


def ask(agent: str, raw: bytes, options: dict[str, str], seconds: float) -> dict[str, Any]:
    """acode's answer to the event ``raw`` (raises on any failure)."""
    url = options.get("url") or os.environ.get("ACODE_URL", "http://127.0.0.1:8000")
    event = json.loads(raw)
    first = isinstance(event, dict) and event.get("hook_event_name") == "SessionStart"
    where = repository(event.get("cwd", ".")) if first else ""  # once, when the session starts
    request = urllib.request.Request(
        f"{url.rstrip('/')}/api/hooks/{agent}/",
        data=raw,
        method="POST",
        headers={
            "Authorization": f"Bearer {_token(options)}",
            "Content-Type": "application/json",
            "X-Acode-Machine": socket.gethostname()[:200],
            **({"X-Acode-Repository": where} if where else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=seconds) as response:
            body = json.loads(response.read(1_000_000))
    except urllib.error.HTTPError as exc:
        detail = exc.read(2000).decode("utf-8", "replace")
        raise RuntimeError(f"acode answered {exc.code}: {detail}") from None
    if not isinstance(body, dict) or not isinstance(body.get("acode"), dict):
        raise RuntimeError("acode's answer is not a hook answer")
    return body["acode"]


def _on_alarm(signum: int, frame: Any) -> None:
    raise _OutOfTime()


def run(argv: list[str], stdin: Any = None) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) for the event on ``stdin``."""
    agent, options = _options(argv)
    seconds = float(options.get("timeout", os.environ.get("ACODE_HOOK_SECONDS", DEFAULT_SECONDS)))
    name = ""
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        raw = (stdin or sys.stdin.buffer).read(MAX_EVENT + 1)
        if len(raw) > MAX_EVENT:
            raise RuntimeError("the event is larger than the shim reads")
        event = json.loads(raw)
        name = str(event.get("hook_event_name", "")) if isinstance(event, dict) else ""
        answer = ask(agent, raw, options, seconds)
        outcome, reason = str(answer.get("outcome", "")), str(answer.get("reason", ""))
    except (Exception, _OutOfTime) as exc:
        if name and name not in DECIDING:
            return 0, "", ""  # nothing to block; the event is lost, said nowhere
        problem = "out of time" if isinstance(exc, _OutOfTime) else str(exc)[:500]
        outcome, reason = "deny", f"acode could not decide this call ({problem}); it is blocked."
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if outcome == "deny" or (outcome == "ask" and name in DECIDING):
        return 2, "", reason or "acode denied this call."
    return 0, "", ""


def main(argv: list[str] | None = None) -> int:
    status, out, err = run(sys.argv[1:] if argv is None else argv)
    if out:
        sys.stdout.write(out)
    if err:
        sys.stderr.write(err + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
