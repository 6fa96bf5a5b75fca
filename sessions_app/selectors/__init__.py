"""Reads, one module per subject; the pages and the API read through them (they import no
model). ``lookups``: a session, job or run by id; ``sessions``: what a session's page shows
of it; ``time_in_role``: time in each role and time waiting for a person; ``totals``: usage
totals; ``jobs``, ``runs``, ``board``, ``consents``; ``decisions``: recorded tool decisions.
"""
