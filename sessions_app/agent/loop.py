"""The agent loop: one job, one role, only that role's tools, every call enforced.

Compose the role prompt, build the role's context, offer the model only the role's
effective tools, run each tool call through the executor, feed results back, and stop
on a final answer, a budget (LLM calls, tokens, wall time), a loop (the same call three
times), a cancel, or the session leaving the role. A Planner-like role's final answer
(``answer_sets_plan``) becomes the session plan. A job with commands (a test stage's, the
host-validation lane) asks no model: its commands are its calls (``_run_commands``).

One story, read top to bottom: the loop's state and how it stops (``LoopState``,
``Stop``), preparing a job, each turn with the model (the endpoints tried in order, usage
recorded, an unreadable answer retried once), each tool call, the budgets and the final
answer. What the tools reach beyond the workspace (the services that record, approve and
ask on the job's behalf) is ``tool_context``, which tools are also run with outside a job's
loop.
"""

from __future__ import annotations

import json
import logging
import shlex
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from acode.errors import AcodeError
from acode.llm import Completion, EndpointUnavailable, Provider, ToolCall, provider_for
from acode.logs import bind_log_context, restore_log_context
from acode.metrics import observe_llm_call
from roles.registry import RoleDef, registry
from roles.selectors import endpoint_for
from sessions_app.agent.context import build_context, role_gains
from sessions_app.agent.executor import ToolOutcome, tool_execute
from sessions_app.agent.mcp.tool import mcp_servers_close
from sessions_app.agent.plans import PLAN_ANSWER_SCHEMA, plan_from_answer
from sessions_app.agent.progress import resumed_section
from sessions_app.agent.project import job_project
from sessions_app.agent.tool_context import run_of, tool_context
from sessions_app.agent.tools import TOOL_IMPLEMENTATIONS, ToolContext
from sessions_app.containment import messages_seal, model_text
from sessions_app.models import AgentSession, Job, JobEventKind, JobStatus
from sessions_app.services.changes import pending_snapshot
from sessions_app.services.delegation import delegation_escalate
from sessions_app.services.jobs import (
    job_event,
    job_finish,
    job_heartbeat,
    job_record_usage,
    job_start,
)
from sessions_app.services.plans import plan_set
from sessions_app.services.runs.stages import PASSED, outcome_of_tests
from sessions_app.services.workspaces import session_git_dir

logger = logging.getLogger(__name__)

EVENT_TEXT_CAP = 8000
# A model's answers that are neither a tool call nor a final answer, in a row, before the
# job stops (ACODE-LLM-002); the first is answered with what was wrong, for a second try.
UNPARSEABLE_LIMIT = 2


class Stop(Exception):
    """Ends a job's loop with a final status, an ACODE code and a message."""

    def __init__(self, status: str, code: str, message: str, result: str = "") -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message
        self.result = result  # what the model answered, kept on the job even when it failed


@dataclass
class LoopState:
    """What one job's loop works with."""

    job: Job
    session: AgentSession
    role: RoleDef
    endpoints: list[Any]
    tools: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    tool_ctx: ToolContext
    deadline: float
    seen: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    ordinal: int = 0  # earlier jobs of this role in the session (scripted replays)
    asked: list[str] = field(default_factory=list)  # questions put to a person (ask_human)
    answer_schema: dict[str, Any] | None = None  # the final answer's structure (a plan)
    unparseable: int = 0  # answers in a row that did not parse
    suggestion: str = ""  # the last denial's suggestion, repeated if the job then fails


def tool_definitions(role: RoleDef) -> list[dict[str, Any]]:
    """What the model is offered: the role's effective tools, and nothing else (their
    descriptions, an MCP server's among them, through the one channel)."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": model_text(spec.description),
                "parameters": dict(spec.argument_schema) or {"type": "object", "properties": {}},
            },
        }
        for spec in registry.effective_tools(role.slug)
        if spec.name in TOOL_IMPLEMENTATIONS or spec.declaration.kind == "mcp"
    ]


class _Heartbeat:
    """Keeps ``heartbeat_at`` fresh while a job runs, so a dead worker is noticed."""

    def __init__(self, job_id: Any) -> None:
        self.job_id = job_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.wait(settings.ACODE_JOB_HEARTBEAT_SECONDS):
                job_heartbeat(self.job_id)
        finally:
            close_old_connections()

    def __enter__(self) -> _Heartbeat:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)


def run_job(
    job_id: Any, *, provider: Provider | None = None, worker: Mapping[str, str] | None = None
) -> Job:
    """Run one job to a final status. ``provider`` overrides model routing (tests);
    ``worker`` says which Celery worker and queue delivered it (see ``job_start``)."""
    registry.sync()
    job = job_start(job_id, worker=worker)
    if job is None:
        return Job.objects.get(pk=job_id)
    # Every log line of the job (ours, Django's, a tool's) says which job, session and role.
    log_context = bind_log_context(
        job=str(job.pk), session=str(job.session_id), role=registry.by_id(job.role_id).name
    )
    try:
        with _Heartbeat(job.pk):
            _loop(job, provider)
    except Stop as stop:
        job_finish(job, stop.status, code=stop.code, message=stop.message, result=stop.result)
    except AcodeError as exc:
        job_finish(job, JobStatus.FAILED, code=exc.code, message=exc.message)
    except Exception as exc:  # the job record must end, whatever went wrong
        logger.exception("job %s crashed", job.pk)
        job_finish(
            job, JobStatus.FAILED, code="ACODE-API-500", message=f"{type(exc).__name__}: {exc}"
        )
    finally:
        restore_log_context(log_context)
    return Job.objects.get(pk=job.pk)


def _loop(job: Job, provider_override: Provider | None) -> None:
    run = _commands_state(job) if job.commands else _prepare(job)
    try:
        if job.commands:
            _run_commands(job, run)
        else:
            _steps(job, run, provider_override)
    except Stop as stop:  # a job that fails after a refusal says what would have worked
        if run.suggestion and stop.status != JobStatus.SUCCEEDED:
            stop.message += f" After a refused tool: {run.suggestion}"
        raise
    finally:  # the job's MCP servers die with it; what they wrote is applied now
        actor = f"job:{str(job.pk)[:8]}"
        written = mcp_servers_close(
            run.tool_ctx, session=run.session, role=run.role.slug, actor=actor
        )
        if written:
            job_event(
                job, JobEventKind.NOTE, {"message": "MCP servers' writes", "servers": written}
            )


def _steps(job: Job, run: LoopState, provider_override: Provider | None) -> None:
    while True:
        _guard(run)
        completion = ask_model(run, provider_override)
        if completion.unparseable:
            unparseable_answer(run, completion)
            continue
        run.unparseable = 0
        if not completion.tool_calls:
            answered = delegation_escalate(job)  # sub-agents' blocks left: up, or a person
            if answered is None:
                _final_answer(job, run.role, run.session, completion.content)
                return
            run.deadline += answered.waited  # a person's time is not the job's
            run.messages.append({"role": "assistant", "content": model_text(completion.content)})
            run.messages.append({"role": "user", "content": model_text(answered.text)})
            continue
        run.messages.append(assistant_message(completion))
        for call in completion.tool_calls:
            _run_tool_call(run, call)
            if run.asked:  # the run (or a sub-agent's parent) waits for the answer
                who = "its parent agent" if job.parent_id else "a person"
                job_finish(job, JobStatus.SUCCEEDED, result=f"Asked {who}: {run.asked[0]}")
                return
        now = pending_snapshot(run.session)
        run.tool_ctx.pending_diffs, run.tool_ctx.review.current = now.diffs, now.digest


def _run_commands(job: Job, run: LoopState) -> None:
    """A job with commands (``Job.commands``: a test stage's) runs them instead of asking a
    model: each one a ``run_tests`` call through the executor, which decides and audits it
    as any call, in order, stopping at the first that does not pass, so the stage's
    evidence (the last command's) says how the checks ended. A refused command fails the
    job: the stage's role or its rules do not fit its commands, and no retry changes that."""
    said = []
    for index, argv in enumerate(job.commands, start=1):
        _guard(run)
        _check_budgets(job, run.role, run.deadline)  # its wall time, between commands
        arguments = {"argv": [str(part) for part in argv]}
        call = ToolCall(f"command-{index}", "run_tests", json.dumps(arguments), arguments)
        outcome = _run_tool_call(run, call)
        shown = shlex.join(arguments["argv"])
        if outcome.status == "denied":
            raise Stop(
                JobStatus.FAILED,
                outcome.code or "ACODE-ROL-003",
                f"The stage's command {shown} was refused: {outcome.reason}",
            )
        ended = outcome.summary or outcome.status
        said.append(f"{shown}: {ended}")
        # read as the stage's evidence reads it (stages.tester_evidence): one reading
        if outcome.status != "ok" or outcome_of_tests(shown, ended)[0] != PASSED:
            break
    job_finish(job, JobStatus.SUCCEEDED, result="\n".join(said))


def _commands_state(job: Job) -> LoopState:
    """What a job with commands works with: its tools' context and its time, no model."""
    session: AgentSession = job.session
    role = registry.get(job.role.slug)
    return LoopState(
        job=job, session=session, role=role, endpoints=[], tools=[], messages=[],
        tool_ctx=tool_context(job, session, [], pending_snapshot(session)),
        deadline=time.monotonic() + _limit(role.spec.timeout_seconds, job.limit_seconds),
    )  # fmt: skip


def _prepare(job: Job) -> LoopState:
    """The role's prompt, context and tools, as the model will first see them."""
    session: AgentSession = job.session
    role = registry.get(job.role.slug)
    shown = pending_snapshot(session)  # what the context shows, and its digest
    pending = shown.diffs
    writes, reviews = role_gains(registry.effective_tools(role.slug))
    if role.spec.context_strategy == "change_focused" and not pending and reviews:
        raise Stop(
            JobStatus.FAILED,
            "ACODE-JOB-004",
            f"No changes to review: role {role.name} works on pending changes and the session "
            "has none. Implement changes in Coder role first.",
        )
    git_dir = session_git_dir(session)
    project = job_project(role, Path(session.workspace), git_dir)
    prompt = project.prompt
    job_event(job, JobEventKind.PROMPT, project.prompt_event())
    endpoints = [endpoint_for(job.model_override or project.model_for(role))]
    if role.spec.fallback_model and not job.model_override:
        endpoints.append(endpoint_for(role.spec.fallback_model))
    # Each endpoint is asked with the role's reasoning effort (sent where it is set).
    endpoints = [replace(e, reasoning_effort=role.spec.reasoning_effort) for e in endpoints]
    context = build_context(
        workspace=Path(session.workspace),
        role_name=role.name,
        strategy=role.spec.context_strategy,
        request=job.request,
        task=session.task,
        plan=session.plan,
        pending=pending,
        budget_cap=min(e.context_window for e in endpoints) // 2,
        git_dir=git_dir,
        project=project.config.context,
        writes=writes,
        reviews=reviews,
    )
    job_event(job, JobEventKind.CONTEXT, context.as_dict())
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": model_text(prompt.text)},
        {
            "role": "user",
            "content": f"{context.text}\n\n## Your task\n{model_text(job.request)}"
            + resumed_section(job),
        },
    ]
    asked: list[str] = []
    return LoopState(
        job=job,
        session=session,
        role=role,
        endpoints=endpoints,
        tools=tool_definitions(role),
        messages=messages,
        tool_ctx=tool_context(job, session, asked, shown),
        asked=asked,
        deadline=time.monotonic() + _limit(role.spec.timeout_seconds, job.limit_seconds),
        ordinal=_scripted_ordinal(job, endpoints),
        answer_schema=PLAN_ANSWER_SCHEMA if role.spec.answer_sets_plan else None,
    )


def _scripted_ordinal(job: Job, endpoints: list[Any]) -> int:
    """Earlier jobs of this role in the session: which per-job script a scripted endpoint
    replays (a query only scripted endpoints need)."""
    if not any(e.kind == "scripted" for e in endpoints):
        return 0
    return Job.objects.filter(
        session_id=job.session_id, role_id=job.role_id, created_at__lt=job.created_at
    ).count()


def _guard(run: LoopState) -> None:
    """Stop on a cancel, on the session leaving the role, or on a spent budget."""
    run.job.refresh_from_db(fields=["cancel_requested"])
    if run.job.cancel_requested:
        raise Stop(JobStatus.CANCELLED, "", "cancelled by request")
    current = (
        AgentSession.objects.filter(pk=run.session.pk)
        .values_list("current_role__slug", flat=True)
        .first()
    )
    # A sub-agent (issue 41) runs in its own role while the session stays in its root's.
    expected, top = run.role.slug, run.job
    while top.parent_id is not None:
        top = Job.objects.select_related("role").get(pk=top.parent_id)
        expected = top.role.slug
    if current != expected:
        raise Stop(
            JobStatus.CANCELLED,
            "ACODE-JOB-007",
            f"the session left role {run.role.name if top is run.job else expected} (now {current})",
        )
    _check_budgets(run.job, run.role, run.deadline)


def ask_model(run: LoopState, provider_override: Provider | None) -> Completion:
    """Send what the model has not seen yet (through the one channel's last pass) and
    record its answer and usage."""
    job = run.job
    messages_seal(run.messages[run.sent :])
    job_event(
        job,
        JobEventKind.LLM_REQUEST,
        {
            "endpoints": [e.name for e in run.endpoints],
            **({"reasoning_effort": effort} if (effort := run.role.spec.reasoning_effort) else {}),
            "tools": [t["function"]["name"] for t in run.tools],
            "tool_definitions": run.tools,
            "messages": run.messages[run.sent :],
            "message_count": len(run.messages),
        },
    )
    run.sent = len(run.messages)
    started = time.monotonic()
    completion = complete(
        job,
        run.endpoints,
        provider_override,
        run.messages,
        run.tools,
        run.ordinal,
        answer_schema=run.answer_schema,
    )
    observe_llm_call(role=run.role.slug, model=completion.model, seconds=time.monotonic() - started,
                     tokens_in=completion.tokens_in, tokens_out=completion.tokens_out)  # fmt: skip
    job_record_usage(
        job,
        tokens_in=completion.tokens_in,
        tokens_out=completion.tokens_out,
        model=completion.model,
        endpoint=completion.endpoint,
        provider=completion.provider,
    )
    job_event(
        job,
        JobEventKind.LLM_RESPONSE,
        {
            "content": completion.content[:EVENT_TEXT_CAP],
            "tool_calls": [
                {"name": c.name, "arguments": c.raw_arguments[:EVENT_TEXT_CAP]}
                for c in completion.tool_calls
            ],
            "tokens_in": completion.tokens_in,
            "tokens_out": completion.tokens_out,
            "model": completion.model,
            "provider": completion.provider,
            **({"unparseable": completion.unparseable} if completion.unparseable else {}),
        },
    )
    return completion


def unparseable_answer(run: LoopState, completion: Completion) -> None:
    """An answer that is neither a tool call nor a final answer: say what was wrong and
    ask again once; stop the job the second time in a row."""
    run.unparseable += 1
    if run.unparseable >= UNPARSEABLE_LIMIT:
        job_event(run.job, JobEventKind.LIMIT, {"limit": "unparseable"})
        raise Stop(
            JobStatus.FAILED,
            "ACODE-LLM-002",
            f"The model's answer could not be read {run.unparseable} times in a row: "
            f"{completion.unparseable}.",
            result=completion.content[:EVENT_TEXT_CAP],
        )
    run.messages.append(
        {"role": "assistant", "content": model_text(completion.content[:EVENT_TEXT_CAP])}
    )
    run.messages.append(
        {
            "role": "user",
            "content": model_text(
                f"Your answer could not be read: {completion.unparseable}. Answer with "
                "exactly one JSON object: a tool call or the final answer, and keep it short."
            ),
        }
    )


def assistant_message(completion: Completion) -> dict[str, Any]:
    """The model's tool calls as the assistant turn of the conversation."""
    return {
        "role": "assistant",
        "content": completion.content or None,
        "tool_calls": [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.raw_arguments},
            }
            for c in completion.tool_calls
        ],
    }


def complete(
    job: Job,
    endpoints: list[Any],
    override: Provider | None,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    ordinal: int = 0,
    *,
    answer_schema: dict[str, Any] | None = None,
) -> Completion:
    """The first answer of ``endpoints`` in order (the preferred one, then the fallback
    when the first cannot be reached); ``override`` replaces them (tests)."""

    def ask(provider: Provider) -> Completion:
        return provider.complete(
            messages,
            tools,
            call_index=job.llm_calls,
            max_tokens=settings.ACODE_LLM_MAX_ANSWER_TOKENS,
            job_ordinal=ordinal,
            answer_schema=answer_schema,
        )

    if override is not None:
        return ask(override)
    failures = []
    for index, endpoint in enumerate(endpoints):
        try:
            completion = ask(provider_for(endpoint))
        except EndpointUnavailable as exc:
            failures.append(str(exc))
            job_event(job, JobEventKind.NOTE, {"message": f"model endpoint unavailable: {exc}"})
            continue
        if index > 0:
            job.fallback_used = True
        return completion
    raise Stop(JobStatus.FAILED, "ACODE-JOB-003", no_model_message(endpoints, failures))


def no_model_message(endpoints: list[Any], failures: list[str]) -> str:
    """ACODE-JOB-003's message: the endpoints tried (name, where) and the command that
    checks each."""
    tried = ", ".join(
        f"{e.name} ({'scripted' if e.kind == 'scripted' else e.base_url})" for e in endpoints
    )
    checks = " or ".join(f"`acode model check {e.name}`" for e in endpoints)
    return (
        f"No model endpoint answered; tried {tried or 'none'}: {'; '.join(failures)}. "
        f"Check {'it' if len(endpoints) == 1 else 'them'} with {checks}."
    )


def _run_tool_call(run: LoopState, call: Any) -> ToolOutcome:
    """One tool call through the executor (which re-checks and audits it); stop on a loop."""
    job = run.job
    arguments = (
        json.dumps(call.arguments, sort_keys=True)
        if call.arguments is not None
        else call.raw_arguments
    )
    run.seen[f"{call.name}:{arguments}"] += 1
    if run.seen[f"{call.name}:{arguments}"] >= 3:
        job_event(job, JobEventKind.LIMIT, {"limit": "loop", "tool": call.name})
        raise Stop(
            JobStatus.LIMIT_EXCEEDED,
            "ACODE-JOB-002",
            f"{call.name} was called three times with the same arguments",
        )
    job_event(
        job,
        JobEventKind.TOOL_CALL,
        {"id": call.id, "name": call.name, "arguments": call.raw_arguments[:EVENT_TEXT_CAP]},
    )
    outcome = tool_execute(
        session=run.session,
        role=registry.get(run.role.slug),
        tool=call.name,
        arguments=call.arguments,
        actor=f"job:{str(job.pk)[:8]}",
        context=run.tool_ctx,
        job=job,
    )
    run.deadline += outcome.waited  # waiting for a person's consent is not the job's time
    if outcome.status == "denied":
        data = {"name": call.name, "code": outcome.code, "reason": outcome.reason}
        if outcome.suggestion:
            data["suggestion"] = run.suggestion = outcome.suggestion
        job_event(job, JobEventKind.TOOL_DENIED, data)
    else:
        data = {
            "name": call.name,
            "status": outcome.status,
            "target": outcome.target,
            "output": outcome.for_model()[:EVENT_TEXT_CAP],
            **({"summary": outcome.summary} if outcome.summary else {}),
        }
        job_event(job, JobEventKind.TOOL_RESULT, data)
    run.messages.append({"role": "tool", "tool_call_id": call.id, "content": outcome.for_model()})
    return outcome


def _limit(own: int, cap: int | None) -> int:
    return min(own, cap) if cap is not None else own


def _check_budgets(job: Job, role: RoleDef, deadline: float) -> None:
    spec = role.spec
    whose = "the role's" if job.run_stage_id is None else "the role's or run's"
    calls = _limit(spec.max_llm_calls, job.limit_llm_calls)
    tokens = _limit(spec.max_tokens, job.limit_tokens)
    reason = ""
    if job.llm_calls >= calls:
        reason = f"reached {whose} limit of {calls} LLM calls"
    elif job.tokens_in + job.tokens_out >= tokens:
        reason = f"used {job.tokens_in + job.tokens_out} tokens of {whose} {tokens}"
    elif time.monotonic() > deadline:
        reason = f"ran past {whose} timeout of {_limit(spec.timeout_seconds, job.limit_seconds)} s"
    if reason:
        job_event(job, JobEventKind.LIMIT, {"limit": "budget", "reason": reason})
        raise Stop(JobStatus.LIMIT_EXCEEDED, "ACODE-JOB-001", reason)


def _final_answer(job: Job, role: RoleDef, session: AgentSession, content: str) -> None:
    if role.spec.answer_sets_plan:
        steps = plan_from_answer(content)
        if not steps:
            raise Stop(
                JobStatus.FAILED,
                "ACODE-JOB-008",
                "The answer is not a plan: it needs numbered steps or JSON "
                '{"steps": [{"title": ...}]}; nothing was set.',
                result=content,
            )
        plan_set(session=session, steps=steps, actor="orchestrator", run_id=run_of(job))
        job_event(job, JobEventKind.NOTE, {"message": f"plan set with {len(steps)} steps"})
    job_finish(job, JobStatus.SUCCEEDED, result=content)
