"""What the LLM client works with: endpoints, completions, tool calls, the provider protocol."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings


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
    # The asking role's reasoning effort (low, medium, high), sent as the OpenAI-compatible
    # request's reasoning_effort; "": not sent.
    reasoning_effort: str = ""


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


def parse_arguments(raw: Any) -> tuple[Any, str]:
    """A tool call's arguments as sent (a dict, or JSON text) and why they did not parse."""
    if isinstance(raw, dict):
        return raw, ""
    try:
        # strict=False: llama.cpp grammars let raw newlines into strings; the model meant them.
        return json.loads(raw or "{}", strict=False), ""
    except (TypeError, ValueError) as exc:
        return None, f"arguments are not valid JSON: {exc}"
