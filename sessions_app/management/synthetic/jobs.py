"""A synthetic job's events: which kinds, in order, and what each one holds."""

from __future__ import annotations

import random

from sessions_app.management.synthetic.vocabulary import PATHS, Row
from sessions_app.models import JobEventKind, JobStatus


def job_event_kinds(size: int, *, running: bool) -> list[str]:
    """A job's event kinds: start, prompt, context, tool rounds, final answer, final status."""
    head = [JobEventKind.STATUS, JobEventKind.PROMPT, JobEventKind.CONTEXT]
    rounds = [
        JobEventKind.LLM_REQUEST, JobEventKind.LLM_RESPONSE,
        JobEventKind.TOOL_CALL, JobEventKind.TOOL_RESULT,
    ]  # fmt: skip
    tail = [JobEventKind.LLM_REQUEST, JobEventKind.LLM_RESPONSE, JobEventKind.STATUS]
    middle = max(0, size - len(head) - len(tail))
    kinds = head + (rounds * (middle // len(rounds) + 1))[:middle] + tail
    kinds = [*kinds[: size - 1], JobEventKind.STATUS] if size < len(kinds) else kinds
    if running:  # still working: no final status yet
        kinds[-1] = JobEventKind.LLM_REQUEST
    return [str(k) for k in kinds]


def job_event_data(
    kind: str,
    seq: int,
    *,
    role: str,
    tool: str,
    path: str,
    tools: list[str],
    final: str,
    last: bool,
    rng: random.Random,
) -> Row:
    """The data of the ``seq``-th event of a job in ``role`` that ends ``final``; ``last``
    is the model's last answer (no tool call). A model answer's data holds its tokens."""
    if kind == JobEventKind.STATUS:
        return {"status": JobStatus.RUNNING if seq == 1 else final}
    if kind == JobEventKind.PROMPT:
        return {"components": ["system", f"roles/{role}"], "notes": []}
    if kind == JobEventKind.CONTEXT:
        files = [{"path": p, "tokens": rng.randint(50, 900)} for p in PATHS[:4]]
        return {"strategy": "focused", "token_count": rng.randint(800, 6000), "files": files}
    if kind == JobEventKind.LLM_REQUEST:
        return {"message_count": seq, "tools": tools[:6]}
    if kind == JobEventKind.LLM_RESPONSE:
        got, sent = rng.randint(500, 4000), rng.randint(20, 400)
        calls = [] if last else [{"name": tool, "arguments": {"path": path}}]
        content = "Done: the change is in place and the tests pass." if last else ""
        return {"tokens_in": got, "tokens_out": sent, "tool_calls": calls, "content": content}
    if kind == JobEventKind.TOOL_CALL:
        return {"name": tool, "arguments": {"path": path}}
    return {"name": tool, "target": path, "output": f"{path}: 42 lines"}
