from __future__ import annotations

from django.urls import path

from sessions_app import apis

urlpatterns = [
    path("sessions/", apis.SessionListApi.as_view(), name="api-sessions"),
    path("sessions/<uuid:pk>/", apis.SessionDetailApi.as_view(), name="api-session"),
    path(
        "sessions/<uuid:pk>/transition/",
        apis.SessionTransitionApi.as_view(),
        name="api-session-transition",
    ),
    path(
        "sessions/<uuid:pk>/transitions/",
        apis.SessionTransitionsAllowedApi.as_view(),
        name="api-session-transitions",
    ),
    path(
        "sessions/<uuid:pk>/history/", apis.SessionHistoryApi.as_view(), name="api-session-history"
    ),
    path("sessions/<uuid:pk>/plan/", apis.SessionPlanApi.as_view(), name="api-session-plan"),
    path(
        "sessions/<uuid:pk>/plan/steps/<int:number>/",
        apis.SessionPlanStepApi.as_view(),
        name="api-session-plan-step",
    ),
    path(
        "sessions/<uuid:pk>/changes/", apis.SessionChangesApi.as_view(), name="api-session-changes"
    ),
    path(
        "sessions/<uuid:pk>/changes/approve/",
        apis.SessionChangesApproveApi.as_view(),
        name="api-session-approve",
    ),
    path("sessions/<uuid:pk>/stats/", apis.SessionStatsApi.as_view(), name="api-session-stats"),
    path("sessions/<uuid:pk>/jobs/", apis.SessionJobsApi.as_view(), name="api-session-jobs"),
    path(
        "sessions/<uuid:pk>/context/", apis.SessionContextApi.as_view(), name="api-session-context"
    ),
    path("sessions/<uuid:pk>/tools/", apis.SessionToolsApi.as_view(), name="api-session-tools"),
    path("jobs/<uuid:pk>/", apis.JobDetailApi.as_view(), name="api-job"),
    path("jobs/<uuid:pk>/events/", apis.JobEventsApi.as_view(), name="api-job-events"),
    path("jobs/<uuid:pk>/cancel/", apis.JobCancelApi.as_view(), name="api-job-cancel"),
    path("usage/", apis.UsageApi.as_view(), name="api-usage"),
    path("audit/", apis.AuditListApi.as_view(), name="api-audit"),
    path("audit/export/", apis.AuditExportApi.as_view(), name="api-audit-export"),
    path("audit/verify/", apis.AuditVerifyApi.as_view(), name="api-audit-verify"),
]
