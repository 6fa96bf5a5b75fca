"""The providers: any OpenAI-compatible server, and a scripted one for tests and demos."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from acode.llm.protocol import (
    action_schema,
    as_plain_chat,
    from_action,
    json_protocol_instructions,
    response_format,
)
from acode.llm.types import (
    Completion,
    Endpoint,
    EndpointUnavailable,
    Provider,
    ToolCall,
    parse_arguments,
)


class OpenAIProvider:
    """Any OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenAI) via the ``openai`` package."""

    def __init__(self, endpoint: Endpoint, *, sampling: Mapping[str, Any] | None = None) -> None:
        import openai

        self.endpoint = endpoint
        self.sampling = dict(sampling or {})  # e.g. temperature and seed (the model check)
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
        kwargs = self._request(messages, tools, max_tokens, answer_schema)
        try:
            response = self.client.chat.completions.create(**kwargs)
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise EndpointUnavailable(f"{self.endpoint.name}: {exc}") from exc
        except openai.APIStatusError as exc:
            if exc.status_code >= 500:
                raise EndpointUnavailable(f"{self.endpoint.name}: HTTP {exc.status_code}") from exc
            raise
        return self._completion(response, max_tokens)

    def _request(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
        answer_schema: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """The chat request: tools as the server's own tool calls, or, for a server that
        constrains output, the JSON protocol in the system message and its schema."""
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "max_tokens": max_tokens,
            **self.sampling,
        }
        if self.endpoint.reasoning_effort:
            kwargs["reasoning_effort"] = self.endpoint.reasoning_effort
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
        return kwargs

    def _completion(self, response: Any, max_tokens: int) -> Completion:
        """The server's answer as a :class:`Completion` (tool calls parsed either way)."""
        choice = response.choices[0].message
        content = choice.content or ""
        calls: list[ToolCall] = []
        for call in choice.tool_calls or []:
            fn = getattr(call, "function", None)
            if fn is None:
                continue
            parsed, error = parse_arguments(fn.arguments)
            calls.append(ToolCall(call.id, fn.name, fn.arguments or "", parsed, error))
        unparseable = ""
        if self.endpoint.supports_json_schema and not calls:
            content, calls, unparseable = from_action(content)
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
    in the JSON protocol (what a schema-constrained server sends), parsed as such. Past the
    end it answers "(script ended)". The README's *Scripted model endpoints* documents it.
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
            step["content"], calls, unparseable = from_action(str(step["protocol"]))
        for i, call in enumerate(step.get("tool_calls") or []):
            raw = call.get("arguments", {})
            raw_text = raw if isinstance(raw, str) else json.dumps(raw)
            parsed, error = parse_arguments(raw)
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
