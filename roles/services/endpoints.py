"""Writes to model endpoints (issue 34): admin's form, the API and ``acode model add``
save through :func:`model_endpoint_save`, which keeps only what the endpoint's kind uses.

An OpenAI-compatible endpoint needs a model name (its base URL may stay empty: the
``ACODE_LLM_BASE_URL`` setting); a scripted one needs a script (README, *Scripted model
endpoints*) and nothing of a server. A refusal is ACODE-LLM-004 naming every problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction

from acode.errors import AcodeError
from roles.models import EndpointKind, ModelEndpoint, SchemaFormat
from roles.services.common import actor_label, data_changed

ENDPOINT_KINDS = tuple(EndpointKind.values)
DEFAULT_NAME = "default"  # what an empty model name means: the settings' endpoint
# What one step of a script may hold (acode.llm.providers.ScriptedProvider replays them).
SCRIPT_STEP_KEYS = frozenset({"content", "tool_calls", "usage", "delay", "error", "protocol"})
SCRIPT_ERRORS = ("connection", "timeout", "server")
MAX_SCRIPT_DELAY = 600
# The fields each kind uses; the others are cleared when an endpoint is saved.
SERVER_FIELDS = ("base_url", "model", "api_key_env", "supports_json_schema", "schema_format")
EDITABLE = (
    "kind", "base_url", "model", "api_key_env", "context_window", "supports_json_schema",
    "schema_format", "script", "input_price", "output_price", "enabled",
)  # fmt: skip


def _step_problems(step: Any, where: str) -> list[str]:
    if not isinstance(step, Mapping):
        return [f'{where}: a step is an object such as {{"content": "…"}}']
    problems = [f"{where}: unknown key {key!r}" for key in step if key not in SCRIPT_STEP_KEYS]
    calls = step.get("tool_calls", [])
    if not isinstance(calls, list) or not all(
        isinstance(c, Mapping) and isinstance(c.get("name"), str) and c["name"] for c in calls
    ):
        problems.append(f'{where}: tool_calls is a list of {{"name": …, "arguments": {{…}}}}')
    delay = step.get("delay", 0)
    if (
        not isinstance(delay, int | float)
        or isinstance(delay, bool)
        or not 0 <= delay <= MAX_SCRIPT_DELAY
    ):
        problems.append(f"{where}: delay is a number of seconds from 0 to {MAX_SCRIPT_DELAY}")
    if "error" in step and step["error"] not in SCRIPT_ERRORS:
        problems.append(f"{where}: error is one of {', '.join(SCRIPT_ERRORS)}")
    for key in ("content", "protocol"):
        if key in step and not isinstance(step[key], str):
            problems.append(f"{where}: {key} is text")
    return problems


def script_problems(script: Any) -> list[str]:
    """What is wrong with a scripted endpoint's script: a list of steps (one per model call
    of a job), or a list of such lists (one per job of a role in a session)."""
    if not isinstance(script, list) or not script:
        return [
            "script: a scripted endpoint needs a non-empty list of steps (or of lists of steps)"
        ]
    if all(isinstance(item, list) for item in script):
        return [
            problem
            for j, steps in enumerate(script, start=1)
            for i, step in enumerate(steps, start=1)
            for problem in _step_problems(step, f"script job {j} step {i}")
        ]
    return [
        p
        for i, step in enumerate(script, start=1)
        for p in _step_problems(step, f"script step {i}")
    ]


def model_endpoint_problems(endpoint: ModelEndpoint) -> list[str]:
    """What the endpoint's kind needs and it lacks."""
    problems = []
    if endpoint.name == DEFAULT_NAME:
        problems.append(f"name: {DEFAULT_NAME!r} names the settings' endpoint (ACODE_LLM_*)")
    if endpoint.kind == EndpointKind.SCRIPTED:
        problems += script_problems(endpoint.script)
    elif endpoint.kind == EndpointKind.OPENAI:
        if not endpoint.model.strip():
            problems.append(
                "model: an OpenAI-compatible endpoint needs the model name its server serves"
            )
    else:
        problems.append(f"kind: one of {', '.join(EndpointKind.values)}")
    for field in ("input_price", "output_price"):
        price = getattr(endpoint, field)
        if price is not None and price < 0:
            problems.append(f"{field}: a price is 0 or more")
    return problems


def model_endpoint_fit(endpoint: ModelEndpoint) -> ModelEndpoint:
    """Clear what the endpoint's kind does not use (a scripted endpoint keeps no server, an
    OpenAI-compatible one no script); refuse it with ACODE-LLM-004 if its kind lacks
    something it needs."""
    if endpoint.kind == EndpointKind.SCRIPTED:
        endpoint.base_url = endpoint.model = endpoint.api_key_env = ""
        endpoint.supports_json_schema = False
        endpoint.schema_format = SchemaFormat.JSON_OBJECT
    else:
        endpoint.script = []
    problems = model_endpoint_problems(endpoint)
    if problems:
        raise AcodeError(
            "ACODE-LLM-004",
            f"Invalid model endpoint {endpoint.name!r}: " + "; ".join(problems),
            {"endpoint": endpoint.name, "problems": problems},
        )
    return endpoint


def _price(value: Any, field: str) -> Decimal | None:
    if value is None or value == "":
        return None
    try:
        return Decimal(str(value))
    except InvalidOperation:
        raise AcodeError(
            "ACODE-LLM-004", f"{field}: a price is a number.", {"field": field}
        ) from None


@transaction.atomic
def model_endpoint_store(
    *, endpoint: ModelEndpoint, actor: str | None = None, user: AbstractBaseUser | None = None
) -> ModelEndpoint:
    """Save an endpoint (admin's form hands its row here): what its kind does not use is
    cleared, what it lacks refused (ACODE-LLM-004)."""
    created = endpoint.pk is None
    model_endpoint_fit(endpoint)
    try:
        endpoint.full_clean()
    except ValidationError as exc:
        problems = [f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()]
        raise AcodeError(
            "ACODE-LLM-004",
            f"Invalid model endpoint {endpoint.name!r}: " + "; ".join(problems),
            {"endpoint": endpoint.name, "problems": problems},
        ) from None
    endpoint.save()
    action = "created" if created else "changed"
    data_changed("model endpoint", action, endpoint.name, actor_label(actor, user), live=False)
    return endpoint


@transaction.atomic
def model_endpoint_save(
    *,
    name: str,
    data: Mapping[str, Any],
    actor: str | None = None,
    user: AbstractBaseUser | None = None,
) -> tuple[ModelEndpoint, bool]:
    """Create the endpoint ``name`` or change it (``data`` over what it holds): the API's
    and ``acode model add``'s write; (the endpoint, whether it was created)."""
    endpoint = ModelEndpoint.objects.select_for_update().filter(name=name).first()
    created = endpoint is None
    endpoint = endpoint or ModelEndpoint(name=name)
    for field in EDITABLE:
        if field in data:
            value = data[field]
            if field in ("input_price", "output_price"):
                value = _price(value, field)
            setattr(endpoint, field, value)
    return model_endpoint_store(endpoint=endpoint, actor=actor, user=user), created
