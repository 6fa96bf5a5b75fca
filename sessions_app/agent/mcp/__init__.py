"""MCP servers at work for the agent: the protocol client (``client``: one server over
stdio or HTTP, behind a small synchronous interface), a job's servers and the listing of a
server's tools (``servers``), and the one implementation every MCP tool runs (``tool``).

A stdio server's process is containment's (``sessions_app.containment``'s ``mcpserver``:
started in the command sandbox with the one view of the workspace); this package speaks
to it.
"""
