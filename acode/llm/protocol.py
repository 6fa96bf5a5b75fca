"""The JSON-schema protocol, for servers that can constrain output.

llama.cpp grammars, and any server taking ``response_format`` with a schema: every answer
is one JSON object, either a call of one of the offered tools with that tool's own
arguments or the final answer, so the model cannot call a tool with empty or made-up
arguments.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from acode.llm.types import ToolCall, parse_arguments

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
                args, _ = parse_arguments(fn.get("arguments"))
                action = {"action": "call_tool", "tool": fn["name"], "arguments": args or {}}
                out.append({"role": "assistant", "content": json.dumps(action)})
        elif m.get("role") == "tool":
            out.append({"role": "user", "content": f"Tool result:\n{m.get('content', '')}"})
        else:
            out.append(m)
    return out


def from_action(text: str) -> tuple[str, list[ToolCall], str]:
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
