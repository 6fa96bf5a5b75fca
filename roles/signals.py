"""Signals the roles app sends; other apps (the sessions app's audit) receive them.

Receivers of this app's own signals and of Django's model signals are in
``roles.receivers``.
"""

from __future__ import annotations

from django.dispatch import Signal

# Sent with ``version`` (a RoleVersion) when a role's content changed and was versioned.
role_version_created = Signal()
# Sent with ``where``, ``actor`` and ``findings`` when dangerous prompt text was refused.
prompt_rejected = Signal()
# Sent with ``kind`` ("role", "tool", "permission", "transition rule", "prompt pack",
# "prompt", "role draft"), ``action`` ("saved" or "deleted"; for a draft "drafted",
# "published" or "rejected"), ``name`` and ``actor`` whenever role data is written through
# ``roles.services``: the audit keeps every change, deletions included.
role_data_changed = Signal()
# Sent (with no arguments) once after a transaction that wrote role data commits, never
# for one that rolled back, whatever wrote it (admin, API, CLI, YAML import, shell): the
# sessions app pushes the change to every open page that shows roles.
role_data_committed = Signal()
# Sent with ``server`` (an McpServer) and ``actor`` when an admin asks for its tools to be
# listed now; the sessions app (which runs servers) lists and pins them.
mcp_refresh_requested = Signal()
