"""Writes to role data. Admin, API, import and management commands all come through here.

Every write moves the registry stamp (``roles.receivers`` watch the models, so even a
write from the shell is seen). A change that can alter what a role is or gets records
a new version of every role whose content moved (``role_versions_record``); the
importer writes a whole document with ``versioned=False`` and records versions once.
Checks live in ``roles.validation``; these modules raise them as ``AcodeError``.

``roles``: roles themselves; ``catalog``: tools, permissions, transition rules and prompt
packs; ``common``: who acted, the change signal and role versions; ``examples``: the
role's policy examples, checked on every role write; ``drafts``: whether a role write goes
live or becomes a draft (protected roles); ``draft_review``: publishing or rejecting one;
``protection``: no write gains a protected role anything (the policy diff, over the role
documents ``policy`` builds).
"""

from __future__ import annotations

from roles.services.catalog import (
    permission_delete,
    permission_save,
    prompt_component_delete,
    prompt_component_save,
    prompt_pack_delete,
    prompt_pack_save,
    tool_delete,
    tool_save,
    transition_rule_delete,
    transition_rule_save,
)
from roles.services.common import prompt_rejection_record, role_versions_record
from roles.services.draft_review import (
    role_draft_decision_refusal,
    role_draft_publish,
    role_draft_reject,
)
from roles.services.drafts import RoleWritten, role_draft_route, role_needs_review
from roles.services.examples import (
    catalog_examples_check,
    examples_refusal,
    policy_examples_run,
    role_examples_enforce,
)
from roles.services.roles import (
    NEW_ROLE,
    role_delete,
    role_parents_set,
    role_save,
    role_saved,
    role_upsert,
    role_write,
)

__all__ = [
    "NEW_ROLE",
    "RoleWritten",
    "catalog_examples_check",
    "examples_refusal",
    "permission_delete",
    "permission_save",
    "policy_examples_run",
    "prompt_component_delete",
    "prompt_component_save",
    "prompt_pack_delete",
    "prompt_pack_save",
    "prompt_rejection_record",
    "role_delete",
    "role_draft_decision_refusal",
    "role_draft_publish",
    "role_draft_reject",
    "role_draft_route",
    "role_examples_enforce",
    "role_needs_review",
    "role_parents_set",
    "role_save",
    "role_saved",
    "role_upsert",
    "role_versions_record",
    "role_write",
    "tool_delete",
    "tool_save",
    "transition_rule_delete",
    "transition_rule_save",
]
