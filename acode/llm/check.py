"""A model endpoint's check: several tool-call probes, as a job would send them, with
deterministic sampling (temperature 0, a fixed seed), so the same model gives the same
verdict: "k of n probes called the tool" (issue 34: one probe said "cannot call tools",
the next "can"). A scripted endpoint is checked by replaying its script's first step."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, replace
from typing import Any

from acode.errors import AcodeError
from acode.llm.providers import OpenAIProvider, provider_for
from acode.llm.types import Completion, Endpoint, EndpointUnavailable, Provider, ToolCall

PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file of the workspace",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "Path in the workspace"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
PROBE_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a coding agent. You act only through your tools."},
    {"role": "user", "content": "Read the file README.md with the read_file tool."},
]
PROBE_MAX_TOKENS = 128
PROBES = 3  # probes per check by default
MAX_PROBES = 10
# What makes a server answer the same probe the same way (servers that ignore one of
# them still get the others).
DETERMINISTIC: dict[str, Any] = {"temperature": 0, "seed": 0}


@dataclass(frozen=True)
class ModelCheck:
    """What a tool-call probe found out about a model endpoint."""

    endpoint: str
    model: str
    base_url: str
    constrained: bool  # answers constrained by a JSON schema
    reachable: bool
    can_call_tools: bool
    seconds: float
    tokens_out: int
    context_window: int | None  # what the server reports, when it does
    configured_context_window: int
    answer: str  # what the model answered (its tool call, or its text)
    message: str  # the verdict, in words
    probes: int = 1  # probes sent
    tool_probes: int = 0  # probes in which the model called the tool with usable arguments


def _server_context_window(endpoint: Endpoint) -> int | None:
    """The context window the server reports: vLLM's ``max_model_len``, llama.cpp's
    ``n_ctx`` (``/props``, or ``meta`` in ``/models``), ``context_length`` elsewhere."""
    import httpx

    key = os.environ.get(endpoint.api_key_env or "", "")
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    base = endpoint.base_url.rstrip("/")
    with httpx.Client(timeout=5.0, headers=headers) as client:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            models = client.get(f"{base}/models").json().get("data") or []
            ours = [m for m in models if m.get("id") == endpoint.model] or models[:1]
            for model in ours:
                meta = model.get("meta") or {}
                for value in (
                    model.get("max_model_len"),
                    model.get("context_length"),
                    model.get("context_window"),
                    meta.get("n_ctx"),
                    meta.get("n_ctx_train"),
                ):
                    if isinstance(value, int) and value > 0:
                        return value
        root = base.removesuffix("/v1")
        with contextlib.suppress(httpx.HTTPError, ValueError):
            props = client.get(f"{root}/props").json()
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx") or props.get(
                "n_ctx"
            )
            if isinstance(n_ctx, int) and n_ctx > 0:
                return n_ctx
    return None


def _prober(endpoint: Endpoint) -> Provider:
    if endpoint.kind == "openai":
        return OpenAIProvider(endpoint, sampling=DETERMINISTIC)
    if endpoint.kind == "scripted":
        return provider_for(endpoint)
    raise AcodeError(
        "ACODE-LLM-003",
        f"Model endpoint {endpoint.name!r} is {endpoint.kind}; only OpenAI-compatible and "
        "scripted endpoints can be checked.",
        {"endpoint": endpoint.name, "kind": endpoint.kind},
    )


def model_check(endpoint: Endpoint, *, probes: int = PROBES) -> ModelCheck:
    """Send ``probes`` tool-call probes to ``endpoint`` the way a job would (its JSON-schema
    setting included, sampling made deterministic) and say in how many the model called the
    tool with usable arguments, how long a probe took, and the context window the server
    reports. The model can call tools when every probe did."""
    import openai

    probes = max(1, min(probes, MAX_PROBES))
    provider = _prober(endpoint)
    found = ModelCheck(
        endpoint=endpoint.name,
        model=endpoint.model or ("scripted" if endpoint.kind == "scripted" else ""),
        base_url=endpoint.base_url if endpoint.kind == "openai" else f"scripted:{endpoint.name}",
        constrained=endpoint.supports_json_schema,
        reachable=False,
        can_call_tools=False,
        seconds=0.0,
        tokens_out=0,
        context_window=None,
        configured_context_window=endpoint.context_window,
        answer="",
        message="",
        probes=probes,
    )
    started = time.monotonic()
    answers: list[Completion] = []
    try:
        for _ in range(probes):
            answers.append(
                provider.complete(
                    [dict(m) for m in PROBE_MESSAGES],
                    [PROBE_TOOL],
                    call_index=0,
                    max_tokens=PROBE_MAX_TOKENS,
                )
            )
    except (EndpointUnavailable, openai.APIError) as exc:
        return replace(
            found,
            reachable=bool(answers) or not isinstance(exc, EndpointUnavailable),
            seconds=time.monotonic() - started,
            message=f"The server did not answer probe {len(answers) + 1} of {probes}: {exc}",
        )
    return _verdict(found, endpoint, answers, (time.monotonic() - started) / probes)


def _probe_call(completion: Completion) -> tuple[ToolCall | None, bool]:
    """The probe's read_file call, and whether its arguments are usable (a path)."""
    call = next((c for c in completion.tool_calls if c.name == "read_file"), None)
    path = call.arguments.get("path") if call and isinstance(call.arguments, dict) else None
    return call, isinstance(path, str) and bool(path.strip())


def _verdict(
    found: ModelCheck, endpoint: Endpoint, answers: list[Completion], seconds: float
) -> ModelCheck:
    """What the probes' answers say about the model, and the server's context window."""
    window = _server_context_window(endpoint) if endpoint.kind == "openai" else None
    calls = [_probe_call(c) for c in answers]
    good = sum(1 for _, usable in calls if usable)
    # The answer shown: the first usable call, else the first answer.
    index = next((i for i, (_, usable) in enumerate(calls) if usable), 0)
    completion, (call, _) = answers[index], calls[index]
    answer = f"read_file {call.raw_arguments}" if call else completion.content[:500]
    message = _verdict_message(endpoint, completion, call, good, len(answers), seconds)
    if window and window < endpoint.context_window:
        message += (
            f" The server's context window ({window}) is smaller than the configured one "
            f"({endpoint.context_window}): lower the endpoint's setting."
        )
    return replace(
        found,
        reachable=True,
        can_call_tools=good == len(answers),
        seconds=seconds,
        tokens_out=completion.tokens_out,
        context_window=window,
        answer=answer,
        message=message,
        tool_probes=good,
    )


def _verdict_message(
    endpoint: Endpoint,
    completion: Completion,
    call: ToolCall | None,
    good: int,
    probes: int,
    seconds: float,
) -> str:
    speed = f"{seconds:.1f} s a probe, {completion.tokens_out} tokens out"
    tally = f"{good} of {probes} probes called a tool"
    if good == probes:
        message = f"The model can call tools: {tally} ({speed}); it called read_file {call.raw_arguments}."  # type: ignore[union-attr]
    elif good:
        message = f"The model calls tools unreliably: {tally} with usable arguments ({speed})."
    elif call or completion.tool_calls:
        message = f"The model called a tool with unusable arguments: {tally} ({speed})."
    else:
        message = f"The model answered in text instead of calling the tool: {tally} ({speed})."
    if good < probes and endpoint.kind == "openai" and not endpoint.supports_json_schema:
        message += " Constraining its answers with a JSON schema may help (JSON-schema setting)."
    return message
