"""What a run's tests said (issue 34): a test stage's result (its evidence) follows the test
command's exit status, not whether the command ran; a template may require passing tests before a run
can pass (by default the tiers in ``ACODE_RUN_REQUIRE_TESTS_TIERS``: medium and high);
and a run that passed without passing tests says so in its message.

pytest's exit statuses are told apart (pytest is the command the Tester's rules allow):
0 passed, 1 tests failed, 2 interrupted, 3 internal error, 4 usage error, 5 no tests
collected; any other command's non-zero status is a failure.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from sessions_app.models import Job, JobEventKind, Run, StagePurpose

PASSED, FAILED, NO_TESTS, ERROR, TIMED_OUT = "passed", "failed", "no_tests", "error", "timed_out"
PYTEST_STATUSES = {
    0: (PASSED, "passed"),
    1: (FAILED, "tests failed"),
    2: (ERROR, "error: the test run was interrupted"),
    3: (ERROR, "error: pytest's internal error"),
    4: (ERROR, "error: pytest was called wrongly"),
    5: (NO_TESTS, "no tests collected"),
}
_EXIT = re.compile(r"^exit (-?\d+)$")
EVIDENCE_CHARS = 4_000  # how much of a stage's output its evidence keeps


def outcome_of_tests(command: str, summary: str) -> tuple[str, str]:
    """(result, words) of a test command that ended as ``summary`` ("exit 5", "timed
    out", "killed (...)"): result is passed, failed, no_tests, error or timed_out."""
    found = _EXIT.match(summary.strip())
    if found is None:
        if summary.startswith("timed out"):
            return TIMED_OUT, "timed out"
        return ERROR, f"error: {summary or 'no exit status'}"
    code = int(found.group(1))
    if "pytest" in command and code in PYTEST_STATUSES:
        result, words = PYTEST_STATUSES[code]
    else:
        result, words = (PASSED, "passed") if code == 0 else (FAILED, "failed")
    return result, f"{words} (exit {code})"


def tester_evidence(job: Job) -> dict[str, Any]:
    """A test stage's evidence: the Tester's last test command, its result following its
    exit status (``outcome_of_tests``)."""
    for event in job.events.filter(kind=JobEventKind.TOOL_RESULT).order_by("-seq"):
        if event.data.get("name") in ("run_tests", "execute_command"):
            command = str(event.data.get("target", ""))
            ended = str(event.data.get("summary") or "")
            result, said = (
                outcome_of_tests(command, ended) if ended else (ERROR, "error: no exit status")
            )
            if event.data.get("status") != "ok":
                result, said = ERROR, f"error: the command did not run ({event.data.get('status')})"
            return {
                "ran": True,
                "result": result,
                "status": said,
                "command": command,
                "output": str(event.data.get("output", ""))[-EVIDENCE_CHARS:],
                "summary": job.result[:EVIDENCE_CHARS],
            }
    return {"ran": False, "result": NO_TESTS, "summary": job.result[:EVIDENCE_CHARS]}


def requires_tests(run: Run) -> bool:
    """Whether the run passes only with passing tests: its template's setting, else by
    its tier."""
    own = run.template.require_tests
    if own is not None:
        return bool(own)
    return run.effective_tier in settings.ACODE_RUN_REQUIRE_TESTS_TIERS


def _last_evidence(run: Run) -> list[Mapping[str, Any]]:
    """The evidence of each plan step's last test stage, in step order."""
    last: dict[int, Mapping[str, Any]] = {}
    for stage in run.stages.filter(purpose=StagePurpose.TEST).order_by("seq"):
        last[stage.plan_step] = stage.evidence or {}
    return [last[step] for step in sorted(last)]


def tests_verdict(run: Run) -> tuple[bool, str]:
    """(whether the run's tests passed, what they said in words): every plan step's last
    test stage passed; "no tests were run" when it had none or its Tester ran none."""
    evidence = _last_evidence(run)
    if not evidence:
        return False, "no tests were run (the workflow has no test stage)"
    for found in evidence:
        if not found.get("ran"):
            return False, "no tests were run (the Tester ran no test command)"
        if found.get("result", PASSED if "result" not in found else "") != PASSED:
            return False, f"the last test run ended: {found.get('status') or 'unknown'}"
    return True, "tests passed"


def tests_refusal(run: Run) -> str:
    """Why the run may not pass for its tests ("": it may)."""
    if not requires_tests(run):
        return ""
    passed, said = tests_verdict(run)
    if passed:
        return ""
    return (
        f"The {run.template.name} workflow requires passing tests before a run can pass, "
        f"and {said}."
    )


def tests_note(run: Run) -> str:
    """What a passing run's message adds when its tests did not pass ("": they did)."""
    passed, said = tests_verdict(run)
    return "" if passed else f"Note: {said}."
