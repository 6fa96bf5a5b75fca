"""Dashboard pages (HTML). The live parts connect to the websockets in ``acode/routing.py``."""

from __future__ import annotations

from django.urls import path

from sessions_app.dashboard import audit, board, roles, session, usage

urlpatterns = [
    path("", board.board, name="dashboard-board"),
    path("sessions/<uuid:pk>/", session.session_detail, name="dashboard-session"),
    path(
        "sessions/<uuid:pk>/transition/",
        session.session_transition,
        name="dashboard-session-transition",
    ),
    path("roles/", roles.roles, name="dashboard-roles"),
    path("audit/", audit.audit, name="dashboard-audit"),
    path("audit/chain/", audit.audit_chain, name="dashboard-audit-chain"),
    path("usage/", usage.usage, name="dashboard-usage"),
]
