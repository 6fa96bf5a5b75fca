"""Checks on role data: the one place admin forms, the API, imports and services ask.

Below the services and the registry: it imports only the models, ``roles.access``,
``roles.writes`` and the tool declarations, so every other module of the app can use it without an import cycle.
Checks return problems as plain strings (or dangerous-text findings as dicts); callers
decide whether that is a form error or an ``AcodeError``.

``text``: dangerous prompt text; ``roles``: one role's own fields; ``relations``: what a
role names (permissions, tools, model endpoints, parent, a name another role holds), tools
named by a document, transition rules, what still uses a role; ``custom``: the lock on
custom agents.
"""

from __future__ import annotations

from roles.validation.custom import CUSTOM_LOCKED_CODE, custom_lock_problems
from roles.validation.relations import (
    model_name_problems,
    parent_chain_problems,
    role_delete_refusal,
    role_name_problems,
    role_parent_problems,
    role_reference_problems,
    role_uses,
    tool_name_problems,
    transition_rule_problems,
)
from roles.validation.roles import (
    RESERVED_SLUGS,
    ROLE_CONTENT_SCHEMA,
    ROLE_FIELDS,
    ROLE_LISTS,
    ROLE_PROPERTIES,
    ROLE_SCALARS,
    role_field_problems,
    role_format_problems,
    role_schema,
    role_spec,
    role_text_findings,
)
from roles.validation.text import (
    PromptFinding,
    check_prompt_text,
    describe_findings,
    find_dangerous,
    text_findings,
)

__all__ = [
    "CUSTOM_LOCKED_CODE",
    "RESERVED_SLUGS",
    "ROLE_CONTENT_SCHEMA",
    "ROLE_FIELDS",
    "ROLE_LISTS",
    "ROLE_PROPERTIES",
    "ROLE_SCALARS",
    "PromptFinding",
    "check_prompt_text",
    "custom_lock_problems",
    "describe_findings",
    "find_dangerous",
    "model_name_problems",
    "parent_chain_problems",
    "role_delete_refusal",
    "role_field_problems",
    "role_format_problems",
    "role_name_problems",
    "role_parent_problems",
    "role_reference_problems",
    "role_schema",
    "role_spec",
    "role_text_findings",
    "role_uses",
    "text_findings",
    "tool_name_problems",
    "transition_rule_problems",
]
