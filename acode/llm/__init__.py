"""One LLM client for every OpenAI-compatible server, plus a scripted provider for tests.

An :class:`Endpoint` comes from the settings (``default_endpoint``) or a row of admin's
model table (``endpoint_from_row``; ``roles.selectors.endpoint_for`` picks one by name).
``provider_for`` gives the provider that asks it; one that cannot be reached raises
``EndpointUnavailable`` (connection errors, timeouts and 5xx), so the agent loop tries
the fallback endpoint. ``model_check`` probes an endpoint the way a job would ask it.

The modules: ``types`` (endpoints, completions, the provider protocol), ``protocol`` (the
JSON-schema protocol for servers that constrain output), ``providers`` (the OpenAI-
compatible and scripted providers) and ``check`` (the endpoint probe). Callers import
from ``acode.llm``.
"""

from __future__ import annotations

from acode.llm.check import PROBE_MAX_TOKENS, PROBE_MESSAGES, PROBE_TOOL, ModelCheck, model_check
from acode.llm.protocol import (
    CALL_TOOL,
    FINAL_ANSWER,
    WORKSPACE_PATH_PATTERN,
    action_schema,
    as_plain_chat,
    grammar_ready,
    json_protocol_instructions,
    response_format,
)
from acode.llm.providers import OpenAIProvider, ScriptedProvider, provider_for
from acode.llm.types import (
    Completion,
    Endpoint,
    EndpointUnavailable,
    Provider,
    ToolCall,
    default_endpoint,
    endpoint_from_row,
)

__all__ = [
    "CALL_TOOL",
    "FINAL_ANSWER",
    "PROBE_MAX_TOKENS",
    "PROBE_MESSAGES",
    "PROBE_TOOL",
    "WORKSPACE_PATH_PATTERN",
    "Completion",
    "Endpoint",
    "EndpointUnavailable",
    "ModelCheck",
    "OpenAIProvider",
    "Provider",
    "ScriptedProvider",
    "ToolCall",
    "action_schema",
    "as_plain_chat",
    "default_endpoint",
    "endpoint_from_row",
    "grammar_ready",
    "json_protocol_instructions",
    "model_check",
    "provider_for",
    "response_format",
]
