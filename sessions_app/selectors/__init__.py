"""Reads, one module per subject; the pages and the API read through them (they import no
model). ``lookups``: a session read again by id (a view finds one, and whether the user may, with
``permissions.session_for``); ``sessions``: what a session's page shows
of it; ``time_in_role``: time in each role and time waiting for a person; ``totals``: usage
totals; ``jobs``, ``runs``, ``board``, ``consents``; ``decisions``: recorded tool decisions.
"""
