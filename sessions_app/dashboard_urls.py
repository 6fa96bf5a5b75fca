"""Dashboard pages (HTML). The live parts connect to the websockets in ``acode/routing.py``."""

from __future__ import annotations

from django.urls import path

from sessions_app import views

urlpatterns = [
    path("", views.board, name="dashboard-board"),
    path("sessions/<uuid:pk>/", views.session_detail, name="dashboard-session"),
    path(
        "sessions/<uuid:pk>/transition/",
        views.session_transition,
        name="dashboard-session-transition",
    ),
    path("roles/", views.roles, name="dashboard-roles"),
    path("audit/", views.audit, name="dashboard-audit"),
    path("audit/chain/", views.audit_chain, name="dashboard-audit-chain"),
    path("usage/", views.usage, name="dashboard-usage"),
]
