"""Dashboard pages (HTML). Filled in by the dashboard work."""

from __future__ import annotations

from typing import Any

urlpatterns: list[Any] = []
