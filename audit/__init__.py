"""The tamper-evident audit log, below both apps: every app records its facts here."""
