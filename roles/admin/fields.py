"""Form fields of the role admin: lists edited one item per line."""

from __future__ import annotations

import json
from typing import Any

from django import forms


class LinesField(forms.CharField):
    """An ordered list of strings edited as one item per line."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 80})

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value: Any) -> list[str]:  # type: ignore[override]
        if isinstance(value, list):
            return [str(v).strip() for v in value if str(v).strip()]
        text = super().to_python(value) or ""
        return [line.strip() for line in text.splitlines() if line.strip()]


class CommandRulesField(LinesField):
    """Command rules, one per line: a JSON object (a structured rule) or a legacy glob."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list):
            return "\n".join(
                json.dumps(v, sort_keys=True) if isinstance(v, dict) else str(v) for v in value
            )
        return value

    def to_python(self, value: Any) -> list[Any]:  # type: ignore[override]
        rules: list[Any] = []
        for line in super().to_python(value):
            if not isinstance(line, str) or not line.startswith("{"):
                rules.append(line)
                continue
            try:
                rules.append(json.loads(line))
            except ValueError as exc:
                raise forms.ValidationError(f"not a JSON object: {line[:80]} ({exc})") from exc
        return rules
