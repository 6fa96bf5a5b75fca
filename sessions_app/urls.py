from __future__ import annotations

from django.urls import path, re_path

from sessions_app.apis import (
    audit,
    backlog,
    consents,
    hooks,
    jobs,
    plans,
    runs,
    search,
    sessions,
    transitions,
    usage,
    workflows,
    workspaces,
)

urlpatterns = [
    re_path(
        rf"^hooks/(?P<agent>{hooks.AGENT_PATTERN})/$",
        hooks.HookEventApi.as_view(),
        name="api-hook-event",
    ),
    path("hook-tokens/", hooks.HookTokenListApi.as_view(), name="api-hook-tokens"),
    path("hook-tokens/<uuid:token_id>/", hooks.HookTokenApi.as_view(), name="api-hook-token"),
    path("backlog/projects/", backlog.ProjectListApi.as_view(), name="api-backlog-projects"),
    path(
        "backlog/projects/<slug:slug>/",
        backlog.ProjectDetailApi.as_view(),
        name="api-backlog-project",
    ),
    path(
        "backlog/projects/<slug:slug>/import/",
        backlog.ProjectImportApi.as_view(),
        name="api-backlog-import",
    ),
    path(
        "backlog/projects/<slug:slug>/plan/",
        backlog.ProjectPlanApi.as_view(),
        name="api-backlog-plan",
    ),
    path(
        "backlog/projects/<slug:slug>/tasks/",
        backlog.TaskListApi.as_view(),
        name="api-backlog-tasks",
    ),
    path(
        "backlog/projects/<slug:slug>/tasks/<slug:key>/",
        backlog.TaskDetailApi.as_view(),
        name="api-backlog-task",
    ),
    path(
        "backlog/projects/<slug:slug>/tasks/<slug:key>/accept/",
        backlog.TaskAcceptApi.as_view(),
        name="api-backlog-task-accept",
    ),
    path(
        "backlog/projects/<slug:slug>/tasks/<slug:key>/reject/",
        backlog.TaskRejectApi.as_view(),
        name="api-backlog-task-reject",
    ),
    path(
        "backlog/projects/<slug:slug>/tasks/<slug:key>/unblock/",
        backlog.TaskUnblockApi.as_view(),
        name="api-backlog-task-unblock",
    ),
    path(
        "backlog/projects/<slug:slug>/tasks/<slug:key>/priority/",
        backlog.TaskPriorityApi.as_view(),
        name="api-backlog-task-priority",
    ),
    path("sessions/", sessions.SessionListApi.as_view(), name="api-sessions"),
    path("sessions/<uuid:pk>/", sessions.SessionDetailApi.as_view(), name="api-session"),
    path(
        "sessions/<uuid:pk>/archive/",
        sessions.SessionArchiveApi.as_view(),
        name="api-session-archive",
    ),
    path(
        "sessions/<uuid:pk>/restore/",
        sessions.SessionRestoreApi.as_view(),
        name="api-session-restore",
    ),
    path(
        "sessions/<uuid:pk>/transition/",
        transitions.SessionTransitionApi.as_view(),
        name="api-session-transition",
    ),
    path(
        "sessions/<uuid:pk>/transitions/",
        transitions.SessionTransitionsAllowedApi.as_view(),
        name="api-session-transitions",
    ),
    path(
        "sessions/<uuid:pk>/history/",
        sessions.SessionHistoryApi.as_view(),
        name="api-session-history",
    ),
    path("sessions/<uuid:pk>/plan/", plans.SessionPlanApi.as_view(), name="api-session-plan"),
    path(
        "sessions/<uuid:pk>/plan/steps/<int:number>/",
        plans.SessionPlanStepApi.as_view(),
        name="api-session-plan-step",
    ),
    path(
        "sessions/<uuid:pk>/changes/", plans.SessionChangesApi.as_view(), name="api-session-changes"
    ),
    path(
        "sessions/<uuid:pk>/changes/approve/",
        plans.SessionChangesApproveApi.as_view(),
        name="api-session-approve",
    ),
    path("sessions/<uuid:pk>/stats/", sessions.SessionStatsApi.as_view(), name="api-session-stats"),
    path("sessions/<uuid:pk>/jobs/", jobs.SessionJobsApi.as_view(), name="api-session-jobs"),
    path(
        "sessions/<uuid:pk>/context/",
        sessions.SessionContextApi.as_view(),
        name="api-session-context",
    ),
    path("sessions/<uuid:pk>/tools/", sessions.SessionToolsApi.as_view(), name="api-session-tools"),
    path(
        "sessions/<uuid:pk>/search/", search.SessionSearchApi.as_view(), name="api-session-search"
    ),
    path(
        "sessions/<uuid:pk>/patch/", workspaces.SessionPatchApi.as_view(), name="api-session-patch"
    ),
    path(
        "sessions/<uuid:pk>/commits/",
        workspaces.SessionCommitsApi.as_view(),
        name="api-session-commits",
    ),
    path(
        "sessions/<uuid:pk>/consents/",
        consents.SessionConsentsApi.as_view(),
        name="api-session-consents",
    ),
    path(
        "sessions/<uuid:pk>/consents/<uuid:consent_id>/",
        consents.SessionConsentAnswerApi.as_view(),
        name="api-session-consent-answer",
    ),
    path(
        "sessions/<uuid:pk>/remembered-answers/",
        consents.SessionRememberedAnswersApi.as_view(),
        name="api-session-remembered-answers",
    ),
    path(
        "remembered-answers/<int:answer_id>/revoke/",
        consents.RememberedAnswerRevokeApi.as_view(),
        name="api-remembered-answer-revoke",
    ),
    path("repositories/", workspaces.RepositoryListApi.as_view(), name="api-repositories"),
    path("jobs/<uuid:pk>/", jobs.JobDetailApi.as_view(), name="api-job"),
    path("jobs/<uuid:pk>/events/", jobs.JobEventsApi.as_view(), name="api-job-events"),
    path("jobs/<uuid:pk>/cancel/", jobs.JobCancelApi.as_view(), name="api-job-cancel"),
    path("jobs/<uuid:pk>/resume/", jobs.JobResumeApi.as_view(), name="api-job-resume"),
    path("sessions/<uuid:pk>/runs/", runs.SessionRunsApi.as_view(), name="api-session-runs"),
    path("runs/", runs.RunListApi.as_view(), name="api-runs"),
    path("runs/<uuid:pk>/", runs.RunDetailApi.as_view(), name="api-run"),
    path("runs/<uuid:pk>/events/", runs.RunEventsApi.as_view(), name="api-run-events"),
    path("runs/<uuid:pk>/answer/", runs.RunAnswerApi.as_view(), name="api-run-answer"),
    path("runs/<uuid:pk>/approve/", runs.RunApproveApi.as_view(), name="api-run-approve"),
    path("runs/<uuid:pk>/reject/", runs.RunRejectApi.as_view(), name="api-run-reject"),
    path("runs/<uuid:pk>/cancel/", runs.RunCancelApi.as_view(), name="api-run-cancel"),
    path("workflows/", workflows.WorkflowListApi.as_view(), name="api-workflows"),
    path("workflows/export/", workflows.WorkflowExportApi.as_view(), name="api-workflows-export"),
    path("workflows/import/", workflows.WorkflowImportApi.as_view(), name="api-workflows-import"),
    path("workflows/<str:slug>/", workflows.WorkflowDetailApi.as_view(), name="api-workflow"),
    path("risk-signals/", workflows.RiskSignalListApi.as_view(), name="api-risk-signals"),
    path("usage/", sessions.UsageApi.as_view(), name="api-usage"),
    path("usage/totals/", usage.UsageTotalsApi.as_view(), name="api-usage-totals"),
    path("usage/quality/", usage.UsageQualityApi.as_view(), name="api-usage-quality"),
    path("audit/", audit.AuditListApi.as_view(), name="api-audit"),
    path("audit/export/", audit.AuditExportApi.as_view(), name="api-audit-export"),
    path("audit/verify/", audit.AuditVerifyApi.as_view(), name="api-audit-verify"),
]
