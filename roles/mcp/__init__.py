"""MCP as role data: the servers, their pinned tool definitions and the argument limits
roles set (``models``), and the tools as the one registry sees them (``tools``).

It sits below the role models (``roles.models`` re-exports its models), so the registry,
validation and every role service read MCP tools as they read built-in ones; what acts on
this data keeps its kind's place, as every part of a role does: ``roles.services.mcp``
(writes: register, list, approve), ``roles.apis.mcp``, ``roles.admin.mcp`` and
``roles.portability.mcp``. Talking to a server is the session side's
(``sessions_app.agent.mcp``).
"""
