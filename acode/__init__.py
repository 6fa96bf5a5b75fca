"""acode: run AI coding agents under explicit, enforced roles."""

from __future__ import annotations

from acode.celery import app as celery_app

__all__ = ["celery_app"]
