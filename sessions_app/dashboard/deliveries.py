"""What a session delivered, as the pages show it: each commit approved work became on the
session branch (sha, message, branch, files, a patch to download) and its push.

The run panel shows its run's commit and the session page lists them all (``#delivered``
of ``dashboard/session.html``); both use the ``delivered-commit`` partial.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse

from sessions_app.dashboard.formatting import Stamp, stamp_of
from sessions_app.models import AgentSession, ChangeKind, DeliveredCommit, PushStatus
from sessions_app.selectors.sessions import session_commits

COMMITS_SHOWN = 10
KIND_LABELS = dict(ChangeKind.choices)
PUSH_LABELS = {
    PushStatus.PENDING: "Pushing",
    PushStatus.PUSHED: "Pushed",
    PushStatus.FAILED: "Push failed",
}


@dataclass(frozen=True)
class CommittedFile:
    path: str
    kind: str
    kind_label: str
    added: int
    removed: int


@dataclass(frozen=True)
class DeliveredView:
    sha: str
    short: str
    committed: bool
    subject: str
    body: str
    branch: str
    files: list[CommittedFile]
    approved_by: str
    created: Stamp
    patch_url: str
    run_short: str
    push_status: str
    push_label: str
    push_remote: str
    push_message: str


@dataclass
class DeliveredPanel:
    branch: str
    branch_patch_url: str
    commits: list[DeliveredView] = field(default_factory=list)
    more: int = 0


def _patch_url(session_id: object) -> str:
    return reverse("api-session-patch", kwargs={"pk": session_id})


def delivered_view(commit: DeliveredCommit) -> DeliveredView:
    subject, _, body = commit.message.strip().partition("\n")
    files = [
        CommittedFile(
            str(f.get("path", "")),
            str(f.get("kind", "")),
            KIND_LABELS.get(str(f.get("kind", "")), str(f.get("kind", ""))),
            int(f.get("added", 0) or 0),
            int(f.get("removed", 0) or 0),
        )
        for f in commit.files or []
        if isinstance(f, dict)
    ]
    return DeliveredView(
        sha=commit.sha,
        short=commit.sha[:12],
        committed=commit.committed,
        subject=subject,
        body=body.strip(),
        branch=commit.branch,
        files=files,
        approved_by=commit.approved_by,
        created=stamp_of(commit.created_at),
        patch_url=f"{_patch_url(commit.session_id)}?commit={commit.sha}",
        run_short=str(commit.run_id or "")[:8],
        push_status=commit.push_status,
        push_label=PUSH_LABELS.get(PushStatus(commit.push_status), ""),
        push_remote=commit.push_remote,
        push_message=commit.push_message,
    )


def delivered_panel(session: AgentSession) -> DeliveredPanel:
    """The session's delivered commits, newest first (the newest ``COMMITS_SHOWN``)."""
    rows = list(session_commits(session)[: COMMITS_SHOWN + 1])
    panel = DeliveredPanel(session.branch, _patch_url(session.pk))
    panel.commits = [delivered_view(c) for c in rows[:COMMITS_SHOWN]]
    if len(rows) > COMMITS_SHOWN:
        panel.more = session_commits(session).count() - COMMITS_SHOWN
    return panel
