"""One LLM client for every OpenAI-compatible server, plus a scripted provider for tests.

An :class:`Endpoint` comes from the settings (``default_endpoint``) or a row of admin's
model table (``endpoint_from_row``; ``roles.selectors.endpoint_for`` picks one by name).
``complete_with_fallback`` tries the preferred endpoint, then the fallback on connection
errors, timeouts and 5xx.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.conf import settings

from acode.errors import AcodeError


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask a model."""

    name: str
    kind: str  # openai | scripted
    base_url: str
    model: str
    api_key_env: str = ""
    context_window: int = 8192
    supports_json_schema: bool = False
    schema_format: str = (
        "json_object"  # json_object (llama.cpp) | json_schema (OpenAI, vLLM, Ollama)
    )
    script: tuple[Any, ...] = ()


@dataclass
class ToolCall:
    """A tool call the model asked for; ``arguments`` is None when they did not parse."""

    id: str
    name: str
    raw_arguments: str
    arguments: Any
    parse_error: str = ""


@dataclass
class Completion:
    """One model answer."""

    content: str
    tool_calls: list[ToolCall]
    tokens_in: int
    tokens_out: int
    model: str
    endpoint: str
    provider: str
    raw: dict[str, Any] = field(default_factory=dict)
    unparseable: str = ""  # why a JSON-protocol answer was neither a tool call nor an answer


class EndpointUnavailable(Exception):
    """Connection error, timeout or 5xx: worth trying the fallback."""


class Provider(Protocol):
    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
        max_tokens: int,
        job_ordinal: int = 0,
        answer_schema: Mapping[str, Any] | None = None,
    ) -> Completion: ...


def default_endpoint() -> Endpoint:
    """The endpoint of the settings (``ACODE_LLM_*``): what an empty model name means."""
    return Endpoint(
        name="default",
        kind="openai",
        base_url=settings.ACODE_LLM_BASE_URL,
        model=settings.ACODE_LLM_DEFAULT_MODEL,
        api_key_env=settings.ACODE_LLM_API_KEY_ENV,
        context_window=settings.ACODE_LLM_CONTEXT_WINDOW,
        supports_json_schema=settings.ACODE_LLM_JSON_SCHEMA,
        schema_format=settings.ACODE_LLM_SCHEMA_FORMAT,
    )


def endpoint_from_row(row: Any) -> Endpoint:
    """An :class:`Endpoint` from a row of admin's model table (``roles.ModelEndpoint``)."""
    return Endpoint(
        name=row.name,
        kind=row.kind,
        base_url=row.base_url or settings.ACODE_LLM_BASE_URL,
        model=row.model,
        api_key_env=row.api_key_env,
        context_window=row.context_window,
        supports_json_schema=row.supports_json_schema,
        schema_format=row.schema_format,
        script=tuple(row.script or ()),
    )


def _parse_arguments(raw: Any) -> tuple[Any, str]:
    if isinstance(raw, dict):
        return raw, ""
    try:
        # strict=False: llama.cpp grammars let raw newlines into strings; the model meant them.
        return json.loads(raw or "{}", strict=False), ""
    except (TypeError, ValueError) as exc:
        return None, f"arguments are not valid JSON: {exc}"


# A JSON-schema protocol for servers that can constrain output (llama.cpp grammars, and
# any server taking ``response_format`` with a schema): every answer is one JSON object,
# either a call of one of the offered tools with that tool's own arguments or the final
# answer, so the model cannot call a tool with empty or made-up arguments.
CALL_TOOL = "call_tool"
FINAL_ANSWER = "final_answer"


WORKSPACE_PATH_PATTERN = r"^[A-Za-z0-9_.][A-Za-z0-9_./-]*$"


def grammar_ready(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON schema as a grammar should enforce it: objects hold only the properties
    they declare, required strings and lists are not empty (``{}`` or ``""`` for a
    required path is what small models produce otherwise) and a ``path`` holds path
    characters only. The executor still validates the arguments against the tool's own
    schema."""
    out = dict(schema)
    if isinstance(out.get("items"), Mapping):
        out["items"] = grammar_ready(out["items"])
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [grammar_ready(s) if isinstance(s, Mapping) else s for s in out[key]]
    properties = out.get("properties")
    if out.get("type") == "object" or isinstance(properties, Mapping):
        required = [str(name) for name in out.get("required") or []]
        props: dict[str, Any] = {}
        for name, prop in (properties or {}).items():
            if not isinstance(prop, Mapping):
                continue
            prop = grammar_ready(prop)
            if name == "path" and prop.get("type") == "string" and "pattern" not in prop:
                # A tool's path is workspace-relative (the executor's rule): path characters only.
                prop["pattern"] = WORKSPACE_PATH_PATTERN
            if name in required and prop.get("type") == "string":
                prop.setdefault("minLength", 1)
            if name in required and prop.get("type") == "array":
                prop.setdefault("minItems", 1)
            props[str(name)] = prop
        out["properties"] = props
        out.setdefault("additionalProperties", False)
    return out


def action_schema(
    tools: Sequence[Mapping[str, Any]], *, answer_schema: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The union of the offered tools, each with its own argument schema and required
    fields, and the final answer (free text, or ``answer_schema`` when the answer has a
    structure, such as a plan)."""
    choices: list[dict[str, Any]] = []
    for tool in tools:
        fn = tool["function"]
        parameters = fn.get("parameters") or {"type": "object", "properties": {}}
        choices.append(
            {
                "type": "object",
                "properties": {
                    "action": {"const": CALL_TOOL},
                    "tool": {"const": fn["name"]},
                    "arguments": grammar_ready(parameters),
                },
                "required": ["action", "tool", "arguments"],
                "additionalProperties": False,
            }
        )
    answer = grammar_ready(answer_schema) if answer_schema else {"type": "string", "minLength": 1}
    choices.append(
        {
            "type": "object",
            "properties": {"action": {"const": FINAL_ANSWER}, "answer": answer},
            "required": ["action", "answer"],
            "additionalProperties": False,
        }
    )
    return {"anyOf": choices}


def json_protocol_instructions(
    tools: list[dict[str, Any]], *, answer_schema: Mapping[str, Any] | None = None
) -> str:
    answer = f"<an object matching {json.dumps(answer_schema)}>" if answer_schema else '"<text>"'
    lines = [
        "Answer with one JSON object only.",
        'To call a tool: {"action": "call_tool", "tool": "<name>", "arguments": {...}}.',
        f'To finish: {{"action": "final_answer", "answer": {answer}}}.',
        "Tools:",
    ]
    for t in tools:
        fn = t["function"]
        lines.append(
            f"- {fn['name']}: {fn['description']} arguments schema {json.dumps(fn['parameters'])}"
        )
    return "\n".join(lines)


def response_format(schema: dict[str, Any], schema_format: str) -> dict[str, Any]:
    """``response_format`` as the server takes a schema: llama.cpp's server and
    llama-cpp-python read ``{"type": "json_object", "schema": ...}``; OpenAI, vLLM and
    Ollama read ``{"type": "json_schema", "json_schema": {...}}``."""
    if schema_format == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "action", "schema": schema}}
    return {"type": "json_object", "schema": schema}


def as_plain_chat(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool-call turns as plain chat, for servers driven by the JSON protocol."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") == "assistant" and m.get("tool_calls"):
            for call in m["tool_calls"]:
                fn = call["function"]
                args, _ = _parse_arguments(fn.get("arguments"))
                action = {"action": "call_tool", "tool": fn["name"], "arguments": args or {}}
                out.append({"role": "assistant", "content": json.dumps(action)})
        elif m.get("role") == "tool":
            out.append({"role": "user", "content": f"Tool result:\n{m.get('content', '')}"})
        else:
            out.append(m)
    return out


def _from_action(text: str) -> tuple[str, list[ToolCall], str]:
    """An answer of the JSON protocol as (final text, tool calls, why it did not parse)."""
    try:
        data = json.loads(text, strict=False)
    except ValueError as exc:
        return text, [], f"not valid JSON ({exc})"
    if not isinstance(data, dict):
        return text, [], "not a JSON object"
    if data.get("action") == CALL_TOOL and data.get("tool"):
        args = data.get("arguments", {})
        return (
            "",
            [ToolCall(f"call_{uuid.uuid4().hex[:8]}", str(data["tool"]), json.dumps(args), args)],
            "",
        )
    if data.get("action") == FINAL_ANSWER and "answer" in data:
        answer = data["answer"]
        return (answer if isinstance(answer, str) else json.dumps(answer)), [], ""
    return text, [], 'neither a tool call nor a final answer (no "action")'


class OpenAIProvider:
    """Any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI) via the ``openai`` package."""

    def __init__(self, endpoint: Endpoint) -> None:
        import openai

        self.endpoint = endpoint
        self._openai = openai
        self.client = openai.OpenAI(
            base_url=endpoint.base_url,
            api_key=os.environ.get(endpoint.api_key_env or "", "") or "not-needed",
            timeout=settings.ACODE_LLM_TIMEOUT,
            max_retries=0,
        )

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
        max_tokens: int,
        job_ordinal: int = 0,
        answer_schema: Mapping[str, Any] | None = None,
    ) -> Completion:
        openai = self._openai
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "max_tokens": max_tokens,
        }
        if self.endpoint.supports_json_schema:
            # One system message: several chat templates keep only the first one.
            protocol = json_protocol_instructions(tools, answer_schema=answer_schema)
            head = messages[:1]
            if head and head[0].get("role") == "system":
                system = f"{head[0].get('content') or ''}\n\n{protocol}"
                head = [{"role": "system", "content": system}]
            else:
                head = [{"role": "system", "content": protocol}, *head]
            kwargs["messages"] = [*head, *as_plain_chat(messages[1:])]
            kwargs["response_format"] = response_format(
                action_schema(tools, answer_schema=answer_schema), self.endpoint.schema_format
            )
        elif tools:
            kwargs["tools"] = tools
        try:
            response = self.client.chat.completions.create(**kwargs)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise EndpointUnavailable(f"{self.endpoint.name}: {exc}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise EndpointUnavailable(f"{self.endpoint.name}: HTTP {exc.status_code}") from exc
            raise
        choice = response.choices[0].message
        content = choice.content or ""
        calls: list[ToolCall] = []
        for call in choice.tool_calls or []:
            fn = getattr(call, "function", None)
            if fn is None:
                continue
            parsed, error = _parse_arguments(fn.arguments)
            calls.append(ToolCall(call.id, fn.name, fn.arguments or "", parsed, error))
        unparseable = ""
        if self.endpoint.supports_json_schema and not calls:
            content, calls, unparseable = _from_action(content)
            if unparseable and response.choices[0].finish_reason == "length":
                unparseable += f"; the answer was cut off at {max_tokens} tokens"
        usage = response.usage
        return Completion(
            content=content,
            tool_calls=calls,
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            model=response.model or self.endpoint.model,
            endpoint=self.endpoint.base_url,
            provider="openai",
            raw=response.model_dump(mode="json"),
            unparseable=unparseable,
        )


class ScriptedProvider:
    """Replays recorded responses in order (tests and demos); records every request it got.

    Each script step is ``{"content": str, "tool_calls": [{"name", "arguments"}], "usage":
    {"prompt_tokens", "completion_tokens"}, "delay": seconds, "error": "connection" |
    "timeout" | "server", "protocol": text}``; all keys optional. ``protocol`` is an answer
    in the JSON protocol (what a schema-constrained server sends), parsed as such. Past the end it answers "(script ended)".
    A script that is a list of lists holds one script per job: the n-th job of a role in a
    session (``job_ordinal``) replays the n-th list, the last one when there are fewer.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self.requests: list[dict[str, Any]] = []

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        call_index: int,
        max_tokens: int,
        job_ordinal: int = 0,
        answer_schema: Mapping[str, Any] | None = None,
    ) -> Completion:
        self.requests.append({"messages": messages, "tools": tools, "answer_schema": answer_schema})
        script: Any = self.endpoint.script
        if script and all(isinstance(item, list) for item in script):
            script = script[min(job_ordinal, len(script) - 1)]
        step: dict[str, Any] = (
            dict(script[call_index]) if call_index < len(script) else {"content": "(script ended)"}
        )
        if step.get("delay"):
            time.sleep(float(step["delay"]))
        if step.get("error"):
            raise EndpointUnavailable(f"{self.endpoint.name}: scripted {step['error']} failure")
        calls: list[ToolCall] = []
        unparseable = ""
        if "protocol" in step:  # an answer in the JSON protocol, as a constrained server sends
            step["content"], calls, unparseable = _from_action(str(step["protocol"]))
        for i, call in enumerate(step.get("tool_calls") or []):
            raw = call.get("arguments", {})
            raw_text = raw if isinstance(raw, str) else json.dumps(raw)
            parsed, error = _parse_arguments(raw)
            calls.append(
                ToolCall(
                    f"call_{call_index}_{i}", str(call.get("name", "")), raw_text, parsed, error
                )
            )
        usage = step.get("usage") or {}
        prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
        return Completion(
            content=str(step.get("content") or ""),
            tool_calls=calls,
            tokens_in=int(usage.get("prompt_tokens", prompt_chars // 4)),
            tokens_out=int(
                usage.get("completion_tokens", len(str(step.get("content") or "")) // 4 + 1)
            ),
            model=self.endpoint.model or "scripted",
            endpoint=f"scripted:{self.endpoint.name}",
            provider="scripted",
            raw=step,
            unparseable=unparseable,
        )


def provider_for(endpoint: Endpoint) -> Provider:
    if endpoint.kind == "scripted":
        return ScriptedProvider(endpoint)
    return OpenAIProvider(endpoint)


# A model endpoint's check: one tool-call probe, as a job would send it.
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
    seconds = time.monotonic() - started
    window = _server_context_window(endpoint)
    call = next((c for c in completion.tool_calls if c.name == "read_file"), None)
    path = call.arguments.get("path") if call and isinstance(call.arguments, dict) else None
    can_call = isinstance(path, str) and bool(path.strip())
    answer = f"read_file {call.raw_arguments}" if call else completion.content[:500]
    speed = f"{seconds:.1f} s, {completion.tokens_out} tokens out"
    if can_call:
        message = f"The model can call tools: it called read_file {call.raw_arguments} ({speed})."  # type: ignore[union-attr]
    elif call or completion.tool_calls:
        message = f"The model called a tool with unusable arguments ({speed})."
    else:
        message = f"The model answered in text instead of calling the tool ({speed})."
    if not can_call and not endpoint.supports_json_schema:
        message += " Constraining its answers with a JSON schema may help (JSON-schema setting)."
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
