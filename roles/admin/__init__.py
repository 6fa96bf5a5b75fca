"""Admin for role data. Every save and delete goes through ``roles.services``.

One module per area; importing them registers their models with the admin site.
"""

from roles.admin import accounts, agents, drafts, mcp, prompts, roles, tools

__all__ = ["accounts", "agents", "drafts", "mcp", "prompts", "roles", "tools"]
