"""acode: run AI coding agents under explicit, enforced roles.

The Celery app lives in ``acode.celery`` and is loaded by ``sessions_app``'s app config,
so importing ``acode`` (the CLI does) stays light and Django-free.
"""
