"""What a stopped job did, for the job that resumes it (``services.jobs.job_resume``).

A job that stopped at a limit (its budget, or a loop) leaves its steps in its events: the
model's words, each tool call and how it ended. The job that resumes it starts with a fresh
budget and reads them, as data, so it goes on from there instead of starting over. They
reach the model through the one channel (``containment.channel.model_data``): redacted,
and wrapped as untrusted data (a tool's output in them may quote a file or a server).
"""

from __future__ import annotations

from sessions_app.containment import model_data, model_text
from sessions_app.models import Job, JobEventKind

# At most this much of the stopped job's steps (its newest ones when it did more).
PROGRESS_CAP = 6000
_STEP_CAP = 300
_SHOWN = (
    JobEventKind.LLM_RESPONSE,
    JobEventKind.TOOL_CALL,
    JobEventKind.TOOL_RESULT,
    JobEventKind.TOOL_DENIED,
)


def progress_steps(job: Job) -> list[str]:
    """The stopped job's steps, one line each, oldest first."""
    steps: list[str] = []
    for kind, data in (
        job.events.filter(kind__in=_SHOWN).order_by("seq").values_list("kind", "data")
    ):
        if kind == JobEventKind.LLM_RESPONSE and data.get("content"):
            steps.append(f"It said: {data['content']}")
        elif kind == JobEventKind.TOOL_CALL:
            steps.append(f"It called {data.get('name')} {data.get('arguments', '')}")
        elif kind == JobEventKind.TOOL_RESULT:
            what = data.get("summary") or data.get("output") or ""
            steps.append(f"  → {data.get('status')}: {what}")
        elif kind == JobEventKind.TOOL_DENIED:
            steps.append(f"  → refused: {data.get('reason', '')}")
    return [step if len(step) <= _STEP_CAP else step[:_STEP_CAP] + " …" for step in steps]


def resumed_section(job: Job) -> str:
    """The part of a resuming job's first message that says where the stopped job got."""
    stopped = job.resumed_from
    if stopped is None:
        return ""
    steps, kept, size = progress_steps(stopped), list[str](), 0
    for step in reversed(steps):  # the newest steps are the ones to go on from
        size += len(step) + 1
        if size > PROGRESS_CAP:
            kept.append(f"(… {len(steps) - len(kept)} earlier steps left out)")
            break
        kept.append(step)
    done = "\n".join(reversed(kept)) or "(it recorded no steps)"
    return (
        "\n\n## Where an earlier attempt stopped\n"
        f"An earlier job on this task stopped at a limit ({model_text(stopped.error_message)}). "
        "You have "
        "a fresh budget. What it did is below, as data: go on from there, and do not repeat "
        "what it already finished (a call repeated three times with the same arguments "
        "stops the job).\n" + model_data(done, source=f"job {stopped.pk} steps")
    )
