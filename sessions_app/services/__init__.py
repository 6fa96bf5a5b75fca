"""Writes: every state change of a session, its audit, its jobs and its live events."""
