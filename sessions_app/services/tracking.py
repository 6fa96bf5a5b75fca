"""How a change the server made is tracked as a pending change: the one rule for a single
write (``changes.change_track``) and a command's writes at once (``applies``).

Pending changes are cumulative since the last approved review: the diff is against the
file as it was before the cycle, so a file created and then edited stays "created", one
created then deleted leaves nothing, and one changed back to exactly its content and mode
before the cycle is reverted (a mode change alone is a change).
"""

from __future__ import annotations

import difflib
from typing import Any

from acode.errors import AcodeError
from roles.gitpaths import git_path_problem
from sessions_app.containment import CONTROL, RecordedWrite
from sessions_app.models import ChangeKind, PendingChange

PLACEHOLDER = "["  # binary, large or special content is shown as "[... bytes]" text
PATH_MAX_CHARS = 1000  # PendingChange.path holds this much


def change_path_check(path: str) -> None:
    """A diff shown to a reviewer cannot be forged through a file name, and the commit can
    hold every path a pending change names."""
    if CONTROL.search(path):
        raise AcodeError(
            "ACODE-INP-010",
            "File names with control characters (newline, carriage return, escape...) are "
            "refused as pending changes.",
            {"path": path.encode("unicode_escape").decode("ascii")[:1000]},
        )
    if len(path) > PATH_MAX_CHARS:
        raise AcodeError(
            "ACODE-INP-001",
            f"A pending change's path has at most {PATH_MAX_CHARS} characters.",
            {"path": path[:200]},
        )
    if problem := git_path_problem(path):
        raise AcodeError(
            "ACODE-CHG-001",
            f"A pending change cannot name a path git cannot store: {problem}.",
            {"path": path[:1000]},
        )


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}" if before else "/dev/null",
            tofile=f"b/{path}" if after else "/dev/null",
        )
    )


def track_decision(
    existing: PendingChange | None, write: RecordedWrite, role_id: Any
) -> tuple[str, dict[str, Any] | None]:
    """What ``write`` makes of the path's pending change: its kind, and the row's fields
    (None: no pending change is left, "discarded" or "reverted")."""
    if existing is not None:
        baseline = existing.baseline
        base_content, base_mode = existing.baseline_content, existing.baseline_mode
    else:
        baseline, base_content, base_mode = write.before, write.before_content, write.before_mode
    after = write.after
    if baseline is None and after is None:
        return "discarded", None
    if base_content and write.content:  # both known: content and mode decide
        reverted = (base_content, base_mode) == (write.content, write.mode)
    else:  # placeholder text ("[binary ... bytes]") says nothing about equal content
        reverted = baseline == after and not (after or "").startswith(PLACEHOLDER)
    if reverted:
        return "reverted", None
    kind = (
        ChangeKind.CREATED
        if baseline is None
        else (ChangeKind.DELETED if after is None else ChangeKind.MODIFIED)
    )
    diff = unified_diff(write.path, baseline or "", after or "")
    if base_mode and write.mode and base_mode != write.mode:
        diff = f"old mode {base_mode:o}\nnew mode {write.mode:o}\n{diff}"
    return kind, {
        "kind": kind, "diff": diff, "baseline": baseline, "role_id": role_id,
        "content": write.content, "mode": write.mode, "content_recorded": True,
        "baseline_content": base_content, "baseline_mode": base_mode,
    }  # fmt: skip
