"""A model endpoint's check: one tool-call probe, as a job would send it."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, replace
from typing import Any

from acode.errors import AcodeError
from acode.llm.providers import OpenAIProvider
from acode.llm.types import Completion, Endpoint, EndpointUnavailable, ToolCall

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


def model_check(endpoint: Endpoint) -> ModelCheck:
    """Send one tool-call probe to ``endpoint`` the way a job would (its JSON-schema
    setting included) and say whether the model called the tool with usable arguments,
    how long it took, and the context window the server reports."""
    if endpoint.kind != "openai":
        raise AcodeError(
            "ACODE-LLM-003",
            f"Model endpoint {endpoint.name!r} is {endpoint.kind}; only OpenAI-compatible "
            "endpoints can be checked.",
            {"endpoint": endpoint.name, "kind": endpoint.kind},
        )
    import openai

    found = ModelCheck(
        endpoint=endpoint.name,
        model=endpoint.model,
        base_url=endpoint.base_url,
        constrained=endpoint.supports_json_schema,
        reachable=False,
        can_call_tools=False,
        seconds=0.0,
        tokens_out=0,
        context_window=None,
        configured_context_window=endpoint.context_window,
        answer="",
        message="",
    )
    started = time.monotonic()
    try:
        completion = OpenAIProvider(endpoint).complete(
            [dict(m) for m in PROBE_MESSAGES],
            [PROBE_TOOL],
            call_index=0,
            max_tokens=PROBE_MAX_TOKENS,
        )
    except (EndpointUnavailable, openai.APIError) as exc:
        return replace(
            found,
            reachable=not isinstance(exc, EndpointUnavailable),
            seconds=time.monotonic() - started,
            message=f"The server did not answer the probe: {exc}",
        )
    return _verdict(found, endpoint, completion, time.monotonic() - started)


def _verdict(
    found: ModelCheck, endpoint: Endpoint, completion: Completion, seconds: float
) -> ModelCheck:
    """What the probe's answer says about the model, and the server's context window."""
    window = _server_context_window(endpoint)
    call = next((c for c in completion.tool_calls if c.name == "read_file"), None)
    path = call.arguments.get("path") if call and isinstance(call.arguments, dict) else None
    can_call = isinstance(path, str) and bool(path.strip())
    answer = f"read_file {call.raw_arguments}" if call else completion.content[:500]
    message = _verdict_message(endpoint, completion, call, can_call, seconds)
    if window and window < endpoint.context_window:
        message += (
            f" The server's context window ({window}) is smaller than the configured one "
            f"({endpoint.context_window}): lower the endpoint's setting."
        )
    return replace(
        found,
        reachable=True,
        can_call_tools=can_call,
        seconds=seconds,
        tokens_out=completion.tokens_out,
        context_window=window,
        answer=answer,
        message=message,
    )


def _verdict_message(
    endpoint: Endpoint,
    completion: Completion,
    call: ToolCall | None,
    can_call: bool,
    seconds: float,
) -> str:
    speed = f"{seconds:.1f} s, {completion.tokens_out} tokens out"
    if can_call:
        message = f"The model can call tools: it called read_file {call.raw_arguments} ({speed})."  # type: ignore[union-attr]
    elif call or completion.tool_calls:
        message = f"The model called a tool with unusable arguments ({speed})."
    else:
        message = f"The model answered in text instead of calling the tool ({speed})."
    if not can_call and not endpoint.supports_json_schema:
        message += " Constraining its answers with a JSON schema may help (JSON-schema setting)."
    return message
