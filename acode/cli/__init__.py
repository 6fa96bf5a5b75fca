"""The ``acode`` command line: a typer + rich client of the REST API.

``main`` is the console script's entry point (``acode = "acode.cli:main"``).
"""

from __future__ import annotations

from acode.cli.app import app, main

__all__ = ["app", "main"]
