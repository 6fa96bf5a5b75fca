"""The agent: the loop, the executor that enforces every call, tools, workspace, context."""
