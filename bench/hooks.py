"""Outside agents' hooks (issue 43): acode's decision time for one hook event, through the
whole web stack (middleware, hook-token authentication, the session lookup, the mapping,
the one decision, the audit row, the answer), against a trivial endpoint (``/healthz``)
through the same stack, in the same run.

The events are Claude Code's PreToolUse as recorded: an allowed read, a write outside the
role's globs (denied) and a compound shell line (each command decided), in turn. Targets
(issue 43): p50 ≤ 5 ms, p99 ≤ 25 ms. In-process (Django's test client): what the agent
adds on top is its HTTP connection to acode.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from _report import record
from _setup import django_setup, fmt_time

RUNS = 600


def percentile(times: list[float], share: float) -> float:
    ordered = sorted(times)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def main() -> int:
    django_setup()
    from django.contrib.auth.models import User
    from django.test import Client

    from roles.registry import registry
    from roles.services import role_write
    from sessions_app.services.outside.tokens import hook_token_create

    root = Path(tempfile.mkdtemp(prefix="acode-bench-hooks-"))
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print(1)\n")
    before = registry.get("coder").spec
    role_write(data={"write_paths": ["src/**"], "command_patterns": [
        {"program": "ls", "args": "paths"}, {"program": "cat", "args": "paths"}]},
        create=False, slug="coder", actor="bench")  # fmt: skip
    registry.sync()
    user, _ = User.objects.get_or_create(username="bench-hooks")
    _, key = hook_token_create(user=user, role="coder", label="bench")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}", HTTP_HOST="127.0.0.1")
    sid = f"bench-{uuid.uuid4().hex[:8]}"
    base = {"session_id": sid, "transcript_path": "/tmp/t.jsonl", "cwd": str(root),
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_use_id": "t"}  # fmt: skip
    calls = [
        {**base, "tool_name": "Read", "tool_input": {"file_path": str(root / "src/app.py")}},
        {**base, "tool_name": "Write", "tool_input": {"file_path": str(root / "setup.py"), "content": "x"}},
        {**base, "tool_name": "Bash", "tool_input": {"command": "ls src && cat src/app.py | cat"}},
    ]  # fmt: skip
    url = "/api/hooks/claude-code/"
    try:
        first = client.post(url, calls[0], content_type="application/json")
        assert first.status_code == 200, first.content
        hook_times, trivial_times, hook_cpu = [], [], []
        load_before = os.getloadavg()[0]
        for index in range(RUNS):
            start, cpu = time.perf_counter(), time.process_time()
            response = client.post(url, calls[index % 3], content_type="application/json")
            hook_times.append(time.perf_counter() - start)
            hook_cpu.append(time.process_time() - cpu)
            assert response.status_code == 200, response.content
            start = time.perf_counter()
            assert client.get("/healthz").status_code == 200
            trivial_times.append(time.perf_counter() - start)
    finally:
        role_write(data={"write_paths": list(before.write_paths),
                         "command_patterns": list(before.command_patterns)},
                   create=False, slug="coder", actor="bench")  # fmt: skip
    hook50, hook99 = statistics.median(hook_times), percentile(hook_times, 0.99)
    base50, base99 = statistics.median(trivial_times), percentile(trivial_times, 0.99)
    cpu50, cpu99 = statistics.median(hook_cpu), percentile(hook_cpu, 0.99)
    load = f"load average {load_before:.1f} to {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    print(f"info hook decision p50 {fmt_time(hook50)} p99 {fmt_time(hook99)}")
    print(f"info trivial endpoint p50 {fmt_time(base50)} p99 {fmt_time(base99)}")
    # The process's CPU time (every thread): what acode computes, without the waits for the
    # database's answers and for a core, which a loaded machine stretches.
    print(f"info hook decision CPU p50 {fmt_time(cpu50)} p99 {fmt_time(cpu99)}")
    print(f"info {load}")
    note = (f"{RUNS} PreToolUse events (read, denied write, compound line); baseline: /healthz; "
            f"{load}")  # fmt: skip
    record("hook decision, PreToolUse, p50", hook50 * 1000, "ms", target=5, baseline=base50 * 1000,
           note=note)  # fmt: skip
    record("hook decision, PreToolUse, p99", hook99 * 1000, "ms", target=25, baseline=base99 * 1000,
           note=note)  # fmt: skip
    record("hook decision CPU time, p50", cpu50 * 1000, "ms", note=note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
