"""The roles REST API, one module per resource: ``roles`` (roles and a role's prompt),
``portability`` (YAML export and import), ``catalog`` (tools, transition rules, prompt
packs), ``drafts``, ``replay``, ``examples``, ``mcp``, ``endpoints``, ``me``."""
