"""Dashboard pages (HTML). The live parts connect to the websockets in ``acode/routing.py``."""

from __future__ import annotations

from django.urls import path

from sessions_app.dashboard import (
    agents,
    audit,
    backlog,
    board,
    consents,
    roles,
    search,
    session,
    usage,
)
from sessions_app.dashboard.runs import views as runs

urlpatterns = [
    path("", board.board, name="dashboard-board"),
    path("sessions/new/", board.session_new, name="dashboard-session-new"),
    path("sessions/<uuid:pk>/", session.session_detail, name="dashboard-session"),
    path(
        "sessions/<uuid:pk>/transition/",
        session.session_transition,
        name="dashboard-session-transition",
    ),
    path(
        "sessions/<uuid:pk>/archive/",
        session.session_archiving,
        name="dashboard-session-archive",
    ),
    path(
        "sessions/<uuid:pk>/consents/<uuid:consent_id>/",
        consents.consent_answer,
        name="dashboard-consent-answer",
    ),
    path(
        "sessions/<uuid:pk>/search-index/",
        search.search_index,
        name="dashboard-session-search-index",
    ),
    path("sessions/<uuid:pk>/runs/", runs.run_start, name="dashboard-run-start"),
    path("sessions/<uuid:pk>/jobs/<uuid:job_id>/", runs.stage_job, name="dashboard-session-job"),
    path("jobs/<uuid:pk>/resume/", session.job_resuming, name="dashboard-job-resume"),
    path("runs/<uuid:pk>/answer/", runs.run_answer, name="dashboard-run-answer"),
    path("runs/<uuid:pk>/approve/", runs.run_approve, name="dashboard-run-approve"),
    path("runs/<uuid:pk>/reject/", runs.run_reject, name="dashboard-run-reject"),
    path("runs/<uuid:pk>/cancel/", runs.run_cancel, name="dashboard-run-cancel"),
    path("roles/", roles.roles, name="dashboard-roles"),
    path("agents/", agents.agents, name="dashboard-agents"),
    path("backlog/", backlog.backlog_projects, name="dashboard-backlogs"),
    path("backlog/<slug:slug>/", backlog.backlog_board, name="dashboard-backlog"),
    path("backlog/<slug:slug>/plan/", backlog.backlog_plan, name="dashboard-backlog-plan"),
    path(
        "backlog/<slug:slug>/tasks/<slug:key>/<str:action>/",
        backlog.backlog_task_action,
        name="dashboard-backlog-action",
    ),
    path("audit/", audit.audit, name="dashboard-audit"),
    path("audit/chain/", audit.audit_chain, name="dashboard-audit-chain"),
    path("usage/", usage.usage, name="dashboard-usage"),
]
