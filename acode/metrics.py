"""Prometheus metrics: what the agents do (transitions, tools, jobs, runs, LLM calls).

Most counters come from one hook, :func:`metrics_from_audit`, which the audit service
calls after the event's transaction commits: every audited fact is counted once, and a
rolled-back one never. The rest are observed where they happen (LLM latency in the agent
loop, sandbox starts, websocket clients).

This module imports neither app (only Django's lazy settings), so any process counts cheaply.
Web processes and Celery workers are separate processes: with ``PROMETHEUS_MULTIPROC_DIR``
set (before the process starts) every process writes its values there and
:func:`metrics_registry` adds them up; see README, "Metrics and logs".
"""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from prometheus_client import (
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    multiprocess,
    start_http_server,
)

logger = logging.getLogger(__name__)

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

TRANSITIONS = Counter(
    "acode_role_transitions", "Role transitions applied", ["from_role", "to_role"]
)
TRANSITION_REFUSALS = Counter(
    "acode_transition_refusals", "Role transitions refused", ["from_role", "to_role", "code"]
)
TOOL_CALLS = Counter(
    "acode_tool_calls",
    "Tool calls by outcome: ok or error (it ran), denied (it did not run)",
    ["role", "tool", "outcome"],
)
TOOL_DENIALS = Counter(
    "acode_tool_denials",
    "Tool denials: calls refused, and commands whose forbidden writes were undone",
    ["role", "tool", "code"],
)
JOBS = Counter(
    "acode_jobs", "Jobs by status: queued when created, then their final status", ["role", "status"]
)
RUN_EVENTS = Counter(
    "acode_run_events",
    "Orchestrated runs: events (started, moved, paused, ended) and decisions, by run status",
    ["event_type", "status"],
)
LLM_SECONDS = Histogram(
    "acode_llm_request_seconds",
    "Time a model took to answer one request of a job",
    ["role", "model"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300),
)
LLM_TOKENS = Counter(
    "acode_llm_tokens",
    "Tokens sent to (in) and received from (out) models",
    ["role", "model", "direction"],
)
SANDBOX_STARTS = Counter(
    "acode_sandbox_starts",
    "Agent commands started: in the bubblewrap sandbox or unsandboxed",
    ["mode"],
)
MCP_CALL_SECONDS = Histogram(
    "acode_mcp_call_seconds",
    "MCP tool calls: latency by server, tool and outcome (ok, error, timeout); counts and "
    "errors per tool are also in acode_tool_calls (tool mcp__<server>__<tool>)",
    ["server", "tool", "outcome"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
WEBSOCKET_CLIENTS = Gauge(
    "acode_websocket_clients",
    "Open dashboard websockets",
    ["consumer"],
    multiprocess_mode="livesum",
)

# Audit event types (sessions_app.models.AuditEventType), as plain strings.
_TRANSITION = "RoleTransition"
_TRANSITION_DENIED = "TransitionDenied"
_ROLE_ACTION = "RoleAction"
_TOOL_DENIED = "ToolDenied"
_JOB_EVENT = "JobEvent"
_RUN_EVENTS = ("RunEvent", "RunDecision")


def metrics_from_audit(
    *, event_type: str, role: str, target: str, result: str, details: Mapping[str, Any]
) -> None:
    """Count one committed audit event. Never raises: metrics must not break the caller."""
    try:
        _count(event_type, role, target, result, details)
    except Exception:
        logger.exception("counting audit event %s failed", event_type)


def _count(
    event_type: str, role: str, target: str, result: str, details: Mapping[str, Any]
) -> None:
    if event_type == _TRANSITION:
        from_role, _, to_role = target.partition("->")
        TRANSITIONS.labels(
            from_role=str(details.get("from_role", from_role)),
            to_role=str(details.get("to_role", to_role or role)),
        ).inc()
    elif event_type == _TRANSITION_DENIED:
        TRANSITION_REFUSALS.labels(from_role=role, to_role=target, code=result).inc()
    elif event_type == _ROLE_ACTION:
        outcome = "error" if details.get("status") == "error" else "ok"
        TOOL_CALLS.labels(role=role, tool=_tool(target, details), outcome=outcome).inc()
    elif event_type == _TOOL_DENIED:
        tool = _tool(target, details)
        TOOL_DENIALS.labels(role=role, tool=tool, code=str(details.get("code") or result)).inc()
        # A command whose writes were undone did run (and was counted when it did).
        if details.get("phase") != "command_writes":
            TOOL_CALLS.labels(role=role, tool=tool, outcome="denied").inc()
    elif event_type == _JOB_EVENT:
        JOBS.labels(role=role, status=result.split(" ", 1)[0] or "unknown").inc()
    elif event_type in _RUN_EVENTS:
        RUN_EVENTS.labels(event_type=event_type, status=result.split(" ", 1)[0] or "unknown").inc()


def _tool(target: str, details: Mapping[str, Any]) -> str:
    return str(details.get("tool") or target.split(" ", 1)[0] or "unknown")


def observe_mcp_call(*, server: str, tool: str, seconds: float, outcome: str) -> None:
    """One MCP tool call that reached its server: how long it took and how it ended."""
    MCP_CALL_SECONDS.labels(server=server, tool=tool, outcome=outcome).observe(seconds)


def observe_llm_call(
    *, role: str, model: str, seconds: float, tokens_in: int, tokens_out: int
) -> None:
    """One answered model request of a job: its latency and tokens."""
    model = model or "unknown"
    LLM_SECONDS.labels(role=role, model=model).observe(seconds)
    LLM_TOKENS.labels(role=role, model=model, direction="in").inc(tokens_in)
    LLM_TOKENS.labels(role=role, model=model, direction="out").inc(tokens_out)


def sandbox_started(*, sandboxed: bool) -> None:
    """An agent command was started (``sandboxed`` False only under ACODE_SANDBOX=off)."""
    SANDBOX_STARTS.labels(mode="bwrap" if sandboxed else "unsandboxed").inc()


def multiprocess_enabled() -> bool:
    return bool(os.environ.get(MULTIPROC_DIR_VARIABLE))


def metrics_registry() -> CollectorRegistry:
    """What to expose: this process's metrics, or every process's when multiprocess is on."""
    if not multiprocess_enabled():
        return REGISTRY
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return registry


def serve_metrics(*, port: int, addr: str) -> None:
    """Expose the metrics over HTTP on ``addr:port`` (a Celery worker's own endpoint)."""
    start_http_server(port, addr=addr, registry=metrics_registry())
    logger.info("metrics served on %s:%s", addr, port)


def connect_worker_metrics() -> None:
    """A Celery worker serves its metrics on ``ACODE_WORKER_METRICS_PORT`` once it is ready."""
    from celery.signals import worker_ready

    worker_ready.connect(_serve_worker_metrics, weak=False, dispatch_uid="acode-worker-metrics")


def _serve_worker_metrics(sender: Any = None, **kwargs: Any) -> None:
    port = settings.ACODE_WORKER_METRICS_PORT
    if not port:
        return
    pool = getattr(getattr(sender, "controller", None), "pool_cls", None)
    if not multiprocess_enabled() and "prefork" in getattr(pool, "__module__", ""):
        # Tasks run in child processes there: without the shared directory, the endpoint
        # would show the parent's metrics only, which never run a job.
        logger.warning(
            "the prefork pool counts in child processes: set %s to serve their metrics",
            MULTIPROC_DIR_VARIABLE,
        )
    try:
        serve_metrics(port=port, addr=settings.ACODE_WORKER_METRICS_ADDR)
    except OSError as exc:
        logger.error("cannot serve worker metrics on port %s: %s", port, exc)


def _forget_this_process() -> None:
    # Live gauges (open websockets) of a process that ended must not count any more.
    multiprocess.mark_process_dead(os.getpid())


if multiprocess_enabled():
    atexit.register(_forget_this_process)
