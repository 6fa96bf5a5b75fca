"""One turn with the model: the request (recorded as a job event), the endpoints tried in
order, the usage recorded, and what to do with an answer that could not be read."""

from __future__ import annotations

import time
from typing import Any

from django.conf import settings

from acode.llm import Completion, EndpointUnavailable, Provider, provider_for
from acode.metrics import observe_llm_call
from sessions_app.agent.loop_state import EVENT_TEXT_CAP, LoopState, Stop
from sessions_app.containment import messages_seal, model_text
from sessions_app.models import Job, JobEventKind, JobStatus
from sessions_app.services.jobs import job_event, job_record_usage

# A model's answers that are neither a tool call nor a final answer, in a row, before the
# job stops (ACODE-LLM-002); the first is answered with what was wrong, for a second try.
UNPARSEABLE_LIMIT = 2


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
    max_tokens = settings.ACODE_LLM_MAX_ANSWER_TOKENS
    if override is not None:
        return override.complete(
            messages,
            tools,
            call_index=job.llm_calls,
            max_tokens=max_tokens,
            job_ordinal=ordinal,
            answer_schema=answer_schema,
        )
    failures = []
    for index, endpoint in enumerate(endpoints):
        try:
            completion = provider_for(endpoint).complete(
                messages,
                tools,
                call_index=job.llm_calls,
                max_tokens=max_tokens,
                job_ordinal=ordinal,
                answer_schema=answer_schema,
            )
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
