"""Turning a planning role's final answer into plan steps."""

from __future__ import annotations

import json
import re
from typing import Any

# What a planning role's final answer must look like when the server constrains answers
# with a JSON schema (ACODE_LLM_JSON_SCHEMA): a plan ``plan_from_answer`` always reads.
PLAN_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "minItems": 1,
            "maxItems": 20,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1, "maxLength": 300},
                    "files": {
                        "type": "array",
                        "items": {"type": "string"},
                        "minItems": 0,
                        "maxItems": 20,
                    },
                    "acceptance": {
                        "type": "array",
                        "items": {"type": "string", "minLength": 1, "maxLength": 300},
                        "minItems": 0,
                        "maxItems": 10,
                    },
                },
                "required": ["title", "files"],
            },
        },
        "complexity": {"type": "string", "enum": ["low", "medium", "high"]},
        "risks": {"type": "array", "items": {"type": "string", "maxLength": 300}, "maxItems": 10},
    },
    "required": ["steps"],
}


def _criteria(value: Any) -> list[str]:
    """A step's acceptance criteria: a list of texts (one text is one criterion)."""
    items = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    return [str(c).strip()[:1000] for c in items if isinstance(c, str) and c.strip()][:20]


def plan_from_answer(text: str) -> list[dict[str, Any]]:
    """Structured steps when the answer holds them (JSON, numbered steps or a list of at
    least two bullets); none when it is free text, which is not a plan."""
    match = re.search(r"\{.*\}|\[.*\]", text, re.DOTALL)
    if match:
        try:
            data = json.loads(match.group(0))
            steps = data.get("steps") if isinstance(data, dict) else data
            if isinstance(steps, list) and steps:
                out: list[dict[str, Any]] = []
                for s in steps:
                    if isinstance(s, str) and s.strip():
                        out.append({"title": s.strip()[:300]})
                    elif isinstance(s, dict) and str(s.get("title", "")).strip():
                        out.append(
                            {
                                "title": str(s["title"]).strip()[:300],
                                "detail": str(s.get("detail", ""))[:20_000],
                                "files": [
                                    f[:1000] for f in s.get("files", []) if isinstance(f, str)
                                ][:100],
                                "depends_on": [
                                    int(d) for d in s.get("depends_on", []) if isinstance(d, int)
                                ],
                                "acceptance": _criteria(s.get("acceptance")),
                            }
                        )
                if out:
                    return out[:200]  # the plan's limits (services/plans.py)
        except (ValueError, TypeError):
            pass
    numbered = re.findall(r"^\s*(?:step\s*)?\d+[.):]\s+(.+)$", text, re.IGNORECASE | re.MULTILINE)
    bullets = re.findall(r"^\s*[-*]\s+(.+)$", text, re.MULTILINE)
    lines = numbered or (bullets if len(bullets) >= 2 else [])
    return [{"title": line.strip()[:300]} for line in lines][:200]
