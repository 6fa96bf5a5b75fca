"""REST API of sessions, transitions, plans, changes, jobs and the audit log."""
