"""The CLI's command groups, one module per group."""
