"""Workspace-relative paths as tools may name them, and the refusal every check raises.

The rules are the tool decision's (``roles.decision.arguments``), so a path is judged the
same way before a call runs and while it runs; containment uses them from here.
"""

from __future__ import annotations

from roles.decision.arguments import MAX_NAME_BYTES, MAX_PATH_BYTES, Refused, split_path

__all__ = ["MAX_NAME_BYTES", "MAX_PATH_BYTES", "Refused", "split_path"]
