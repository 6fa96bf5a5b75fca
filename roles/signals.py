"""The one signal the roles app sends to the sessions app, which runs MCP servers.

Audit rows and the live push of role data are not signals: ``roles.services`` record them
directly (``audit.services.audit_record``, ``acode.live.roles_changed_on_commit``).
"""

from __future__ import annotations

from django.dispatch import Signal

# Sent with ``server`` (an McpServer) and ``actor`` when an admin asks for its tools to be
# listed now; the sessions app (which runs servers) lists and pins them.
mcp_refresh_requested = Signal()
