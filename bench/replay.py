"""Replay of 100,000 recorded tool decisions under a draft role, against the executor's own
check (``tool_check``) of the same calls in the same run (issue 25; a report, no target).

A sample of real decisions is recorded first: the calls below go through ``tool_execute``
under the Default role in a fresh session's workspace (commands are not run: their
implementation is replaced for the sample), and their audit rows are read back. The
100,000 decisions are those rows' details cycled (each with its own audit id): what is
timed per decision is reading a row's details into a ``RecordedDecision`` and deciding it
again under the draft (``replay_decision`` plus the tally the report keeps), not the
database read. The baseline is ``tool_check`` of the same calls with the live facts
(the host probe is cached; workspace links are ``lstat``-ed each time).

    python bench/replay.py [--decisions 100000]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path
from typing import Any

from _report import record
from _setup import django_setup, fmt_time

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "src/app.py"}),
    ("list_directory", {"path": "."}),
    ("write_file", {"path": "src/app.py", "content": "x = 2\n"}),
    ("write_file", {"path": "docs/guide.md", "content": "hi\n"}),
    ("read_file", {"path": "../etc/passwd"}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-q", "tests"]}),
    ("execute_command", {"argv": ["python", "-m", "pytest", "-q", "outside/t.py"]}),
    ("execute_command", {"argv": ["rm", "-rf", "src"]}),
    ("execute_command", {"argv": ["pytest", "-q", "src/link/t.py"]}),
    ("grep_search", {"pattern": "x", "path": "src"}),
]
DRAFT = {
    "write_paths": ["src/**"],
    "command_patterns": [
        {"program": "pytest", "options": {"-q": None}, "args": "paths"},
        {"program": "python", "module": "pytest", "options": {"-q": None}, "args": "paths"},
    ],
    "examples": [],
}


def record_sample() -> tuple[Any, Path, list[dict[str, Any]]]:
    """The calls made live under Default; the role, the workspace and their decision rows."""
    from django.contrib.auth.models import User

    from roles.registry import registry
    from sessions_app.agent.executor import tool_execute
    from sessions_app.agent.tool_context import tool_context
    from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolImpl, ToolResult
    from sessions_app.models import AuditEvent
    from sessions_app.services.jobs import job_create
    from sessions_app.services.sessions import session_create

    user, _ = User.objects.get_or_create(username="bench")
    session = session_create(owner=user, title="bench replay", task="bench/replay.py")
    ws = Path(session.workspace)
    for name in ("src", "docs", "tests"):
        (ws / name).mkdir(parents=True, exist_ok=True)
    (ws / "src" / "app.py").write_text("x = 1\n")
    if not (ws / "src" / "link").is_symlink():
        (ws / "src" / "link").symlink_to("../docs")
    if not (ws / "outside").is_symlink():
        (ws / "outside").symlink_to("/tmp")
    job = job_create(session=session, request="bench", user=user)
    context = tool_context(job, session, [])
    registry.sync()
    role = registry.get("default")
    start = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    saved = TOOL_IMPLEMENTATIONS["execute_command"]
    TOOL_IMPLEMENTATIONS["execute_command"] = ToolImpl(
        "execute_command", lambda ctx, args: ToolResult("ok", "", "not run (bench)")
    )
    try:
        for tool, arguments in CALLS:
            tool_execute(session=session, role=role, tool=tool, arguments=arguments,
                         actor="bench", context=context, job=job)  # fmt: skip
    finally:
        TOOL_IMPLEMENTATIONS["execute_command"] = saved
    rows = [
        {
            "audit_id": pk,
            "at": at,
            "event_type": et,
            "result": result,
            "target": target,
            "details": details,
        }
        for pk, at, et, result, target, details in AuditEvent.objects.filter(
            id__gt=start, session=session, details__phase="decision"
        )
        .order_by("id")
        .values_list("id", "created_at", "event_type", "result", "target", "details")
    ]
    return role, ws, rows


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--decisions", type=int, default=100_000)
    args = parser.parse_args()
    django_setup()
    import logging

    logging.disable(logging.WARNING)
    from roles.decision.replay import ReplayTally, recorded_decision, replay_decision
    from roles.services.replay import role_draft
    from sessions_app.agent.executor import tool_check

    role, ws, rows = record_sample()
    if len(rows) != len(CALLS):
        print(f"ERROR recorded {len(rows)} decisions for {len(CALLS)} calls", file=sys.stderr)
        return 1
    draft = role_draft(slug="default", data=DRAFT).role
    n = args.decisions
    sample = [dict(row, audit_id=i) for i, row in zip(range(n), itertools.cycle(rows))]
    tally = ReplayTally()
    begin = time.perf_counter()
    for row in sample:
        tally.add(replay_decision(draft, recorded_decision(**row)))
    replay_each = (time.perf_counter() - begin) / n
    calls = [c for _, c in zip(range(n), itertools.cycle(CALLS))]
    begin = time.perf_counter()
    for tool, arguments in calls:
        tool_check(role, tool, arguments, ws)
    check_each = (time.perf_counter() - begin) / n
    report = tally.as_data()
    print(f"{n} recorded decisions ({len(rows)} distinct calls cycled) replayed under a draft "
          f"of Default: {report['unchanged']} unchanged, {report['allowed_to_denied']} "
          f"allowed -> denied, {report['denied_to_allowed']} denied -> allowed, "
          f"{report['not_replayable']} not replayable")  # fmt: skip
    for item in report["not_replayable_reasons"]:
        print(f"  not replayable {item['count']}: {item['reason']}")
    print(f"replay (read details + decide + tally)  {fmt_time(replay_each)} a decision, "
          f"{fmt_time(replay_each * n).strip()} in all")  # fmt: skip
    print(f"executor's tool_check (live facts)      {fmt_time(check_each)} a call")
    print(f"replay / tool_check: {replay_each / check_each:.2f}x")
    record("replay, per recorded decision", replay_each * 1e6, "µs",
           baseline=check_each * 1e6, note=f"{n} decisions; baseline: tool_check a call")  # fmt: skip
    record(f"replay of {n} decisions", replay_each * n, "s")
    record("replay / tool_check", replay_each / check_each, "x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
